"""Admin for realms, topics, sessions (with their events) and progress."""

from __future__ import annotations

from django.contrib import admin, messages

from feedback.models import GradeContest
from sessions.models import LearningSession, Realm, SessionEvent, SessionProgress, Topic
from sessions.services import grade_contest_review


@admin.register(Realm)
class RealmAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "symbol_count", "order", "is_active", "updated_at")
    list_editable = ("order", "is_active")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}

    @admin.display(description="symbols")
    def symbol_count(self, obj: Realm) -> int:
        return len(obj.symbols or [])


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("title", "slug", "domain", "realm_list", "entity_count", "test_count", "order", "is_active")
    list_filter = ("domain", "is_active", "realms")
    list_editable = ("order", "is_active")
    search_fields = ("title", "slug", "summary")
    filter_horizontal = ("realms",)
    prepopulated_fields = {"slug": ("title",)}

    @admin.display(description="realms")
    def realm_list(self, obj: Topic) -> str:
        return ", ".join(r.slug for r in obj.realms.all()) or "all"

    @admin.display(description="entities")
    def entity_count(self, obj: Topic) -> int:
        return len(obj.entities or [])

    @admin.display(description="tests")
    def test_count(self, obj: Topic) -> int:
        return len(obj.tests or [])

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("realms")


class SessionEventInline(admin.TabularInline):
    model = SessionEvent
    extra = 0
    fields = ("created_at", "role", "content", "data")
    readonly_fields = fields
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(LearningSession)
class LearningSessionAdmin(admin.ModelAdmin):
    list_display = (
        "id", "user", "realm_id", "topic_id", "status", "guide", "score", "artifact_source", "indexed_at", "created_at"
    )
    list_filter = ("status", "guide", "artifact_source", "realm_id")
    search_fields = ("user__username", "topic_id", "realm_id")
    readonly_fields = ("created_at", "updated_at", "finished_at", "indexed_at")
    inlines = [SessionEventInline]
    actions = ["reindex_artifacts"]

    def has_add_permission(self, request):
        return False  # sessions are started by learners on /learn/

    @admin.action(description="Re-index the artifacts of the selected finished sessions")
    def reindex_artifacts(self, request, queryset):
        from sessions.services import session_artifact_index

        done = 0
        for session in queryset.filter(status=LearningSession.Status.FINISHED):
            session_artifact_index(session=session)
            done += 1
        self.message_user(request, f"{done} artifact(s) indexed.", messages.SUCCESS)


@admin.register(SessionProgress)
class SessionProgressAdmin(admin.ModelAdmin):
    list_display = ("user", "realm_id", "topic_id", "best_score", "completed_at")
    list_filter = ("realm_id",)
    search_fields = ("user__username", "topic_id")
    raw_id_fields = ("session",)

    def has_add_permission(self, request):
        return False  # written when a learner finishes a session


# --- contested grades (feedback's review queue) -----------------------------------------------
# The model is feedback's (it is listed there in the admin); its review re-scores a session, so
# the admin that runs it lives here, above both apps.


@admin.register(GradeContest)
class GradeContestAdmin(admin.ModelAdmin):
    """Learners' objections to a test grade: accept the answer (re-scores the session) or uphold."""

    list_display = ("created_at", "status", "learner", "topic", "short_question", "answer", "score", "reason")
    list_filter = ("status",)
    search_fields = ("question", "answer", "reason")
    ordering = ("status", "-created_at")
    readonly_fields = (
        "session", "learner", "test_index", "question", "answer", "expected", "score", "passed",
        "explanation", "reason", "status", "reviewed_by", "reviewed_at", "created_at",
    )
    fields = (*readonly_fields[:10], "review_note", *readonly_fields[10:])
    actions = ("accept_answers", "uphold_grades")

    def has_add_permission(self, request):
        return False

    @admin.display(description="topic")
    def topic(self, obj):
        return obj.session.topic_id

    @admin.display(description="question")
    def short_question(self, obj):
        return obj.question[:80]

    def _review(self, request, queryset, *, accept: bool) -> None:
        n = 0
        for contest in queryset.filter(status=GradeContest.Status.OPEN):
            grade_contest_review(contest=contest, reviewer=request.user, accept=accept, note=contest.review_note)
            n += 1
        self.message_user(
            request,
            f"{n} contest(s) {'accepted' if accept else 'upheld'}; reviewed ones were left as they were.",
            messages.SUCCESS,
        )

    @admin.action(description="Accept the answer (re-grade as passed)")
    def accept_answers(self, request, queryset):
        self._review(request, queryset, accept=True)

    @admin.action(description="Uphold the grade")
    def uphold_grades(self, request, queryset):
        self._review(request, queryset, accept=False)
