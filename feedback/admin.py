"""The review queue: staff label retrieved chunks, correct judgments, export, restore rankings."""

from __future__ import annotations

import io
import logging
import zipfile

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from feedback import selectors, services
from feedback.models import (
    ClickEvent,
    Interaction,
    Judgment,
    JudgmentLog,
)

logger = logging.getLogger(__name__)


# --- list filters -----------------------------------------------------------------------------


class CollectionFilter(admin.SimpleListFilter):
    title = "collection"
    parameter_name = "collection"

    def lookups(self, request, model_admin):
        from rag.models import Chunk

        names = Chunk.objects.filter(deleted_at__isnull=True).values_list("collection", flat=True).distinct()
        return [(n, n) for n in sorted(names)[:200]]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(retrieved__contains=[{"collection": self.value()}])
        return queryset


class LabelledFilter(admin.SimpleListFilter):
    title = "labels"
    parameter_name = "labelled"

    def lookups(self, request, model_admin):
        return [("no", "No labels"), ("partly", "Partly labelled"), ("yes", "Every result labelled")]

    def queryset(self, request, queryset):
        from django.db.models.expressions import RawSQL

        n = RawSQL("jsonb_array_length(feedback_interaction.retrieved)", [])
        if self.value() == "no":
            return queryset.filter(n_labelled=0)
        if self.value() == "partly":
            return queryset.filter(n_labelled__gt=0, n_labelled__lt=n)
        if self.value() == "yes":
            return queryset.filter(n_labelled__gt=0, n_labelled__gte=n)
        return queryset


class ReviewerFilter(admin.SimpleListFilter):
    title = "reviewer"
    parameter_name = "reviewer"

    def lookups(self, request, model_admin):
        users = get_user_model().objects.filter(Q(reviewed_interactions__isnull=False) | Q(judgments__isnull=False))
        return [(u.pk, u.get_username()) for u in users.distinct().order_by("username")[:100]]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(
                Q(reviewed_by_id=self.value()) | Q(judgments__labelled_by_id=self.value())
            ).distinct()
        return queryset


# --- interactions: the review queue -----------------------------------------------------------


def _judgment_save(judgment: Judgment, *, interaction: Interaction, actor) -> None:
    """An admin form's judgment goes through the service, so it is logged like any other."""
    services.judgment_set(
        interaction=interaction,
        chunk_uid=judgment.chunk_uid,
        preferred_over=judgment.preferred_over,
        label=judgment.label,
        reason=judgment.reason,
        actor=actor,
        source="admin",
    )


class JudgmentInline(admin.TabularInline):
    """Every judgment of the interaction (pairs included): correct the label or reason, or delete."""

    model = Judgment
    extra = 0
    fields = ("chunk_uid", "preferred_over", "label", "reason", "labelled_by", "updated_at")
    readonly_fields = ("chunk_uid", "preferred_over", "labelled_by", "updated_at")
    can_delete = True
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False  # new labels come from the review panel above, chosen among the results


def filters_in_words(filters: dict | None) -> str:
    """A search's filters as an operator reads them ("collection meetings · from 2024-01-01")."""
    parts = []
    for key, value in (filters or {}).items():
        if value in (None, "", [], {}):
            continue
        name = {"date_from": "from", "date_to": "until", "collections": "collection"}.get(key, key.replace("_", " "))
        if isinstance(value, list | tuple):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        parts.append(f"{name} {value}")
    return " · ".join(parts) or "none (all the user may see)"


@admin.register(Interaction)
class InteractionAdmin(admin.ModelAdmin):
    """The judgment review queue: negative outcomes first, then interactions with unlabelled
    results, newest first. "Label and next" saves the labels and opens the next one to label."""

    change_form_template = "admin/feedback/interaction/change_form.html"
    change_list_template = "admin/feedback/interaction/change_list.html"
    list_display = (
        "short_query",
        "needs",
        "kind",
        "user",
        "outcome_badge",
        "labelled_summary",
        "collections",
        "reviewed_by",
        "created_at",
    )
    list_filter = (
        "outcome", CollectionFilter, ("created_at", admin.DateFieldListFilter), ReviewerFilter, LabelledFilter, "kind"
    )
    search_fields = ("query", "answer", "comment")
    list_per_page = 50
    inlines = [JudgmentInline]
    fields = (
        "query", "kind", "user", "answer", "outcome", "comment", "search_filters", "strategy", "model", "cost_usd",
        "latency_ms", "reviewed_by", "reviewed_at", "created_at",
    )
    readonly_fields = (
        "query", "kind", "user", "answer", "search_filters", "strategy", "model", "cost_usd", "latency_ms",
        "reviewed_by", "reviewed_at", "created_at",
    )
    actions = [
        "mark_reviewed",
        "label_used_sources_positive",
        "label_unlabelled_negative",
        "clear_judgments",
        "export_jsonl",
        "export_qrels",
    ]

    def get_queryset(self, request):
        return selectors.review_queue().select_related("user", "reviewed_by")

    def get_ordering(self, request):
        # Other admins order their interaction choices with this too, on a queryset without the
        # queue's annotation: only the queue's own pages sort by what needs review.
        match = getattr(request, "resolver_match", None)
        if match is not None and (match.url_name or "").startswith("feedback_interaction_"):
            return ["needs_review", "-created_at", "-id"]
        return ["-created_at", "-id"]

    def has_add_permission(self, request):
        return False  # interactions are logged by search and ask

    @admin.display(description="query", ordering="query")
    def short_query(self, obj):
        return obj.query[:90]

    @admin.display(description="search filters")
    def search_filters(self, obj):
        return filters_in_words(obj.filters)

    @admin.display(description="why it is here", ordering="needs_review")
    def needs(self, obj):
        unlabelled = max(0, (obj.n_retrieved or 0) - (obj.n_labelled or 0))
        reasons = []
        if obj.outcome == -1:
            reasons.append("the user found it not useful")
        if unlabelled:
            reasons.append(f"{unlabelled} source{'s' if unlabelled != 1 else ''} without a label")
        return "; ".join(reasons) or "labelled"

    def changelist_view(self, request, extra_context=None):
        extra_context = {
            "title": "Judgment review queue — what needs a label first",
            "rankings_url": reverse("admin:feedback_rankingconfig_changelist")
            if request.user.has_perm("feedback.view_rankingconfig") else None,
            **(extra_context or {}),
        }  # fmt: skip
        return super().changelist_view(request, extra_context=extra_context)

    def response_change(self, request, obj):
        """"Label and next": the labels are saved; open the next interaction that needs them."""
        if "_label_next" not in request.POST:
            return super().response_change(request, obj)
        following = (
            self.get_queryset(request)
            .exclude(pk=obj.pk)
            .filter(Q(needs_review=1) | Q(needs_review=0, reviewed_at__isnull=True))
            .order_by(*self.get_ordering(request))
        )
        nxt = following.first()
        if nxt is None:
            self.message_user(request, "Labels saved. Nothing else in the queue needs a label.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:feedback_interaction_changelist"))
        self.message_user(request, f"Labels saved. Next: “{nxt.query[:80]}”.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:feedback_interaction_change", args=[nxt.pk]))

    @admin.display(description="outcome", ordering="outcome")
    def outcome_badge(self, obj):
        symbol = {-1: "👎", 0: "·", 1: "👍"}.get(obj.outcome, "–")
        return symbol

    @admin.display(description="labelled")
    def labelled_summary(self, obj):
        return f"{obj.n_labelled}/{obj.n_retrieved}"

    @admin.display(description="collections")
    def collections(self, obj):
        names = sorted({r.get("collection") or "" for r in obj.retrieved or []} - {""})
        return ", ".join(names[:3]) + ("…" if len(names) > 3 else "")

    # -- the review panel: labels on the retrieved chunks, saved with the form --

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = extra_context or {}
        interaction = Interaction.objects.filter(pk=object_id).first()
        if interaction is not None:
            extra_context["review_rows"] = selectors.interaction_review_rows(interaction)
            extra_context["label_choices"] = Judgment.Label.choices
            extra_context["judgment_log"] = interaction.judgment_logs.select_related("actor")[:30]
        return super().change_view(request, object_id, form_url, extra_context=extra_context)

    def save_formset(self, request, form, formset, change):
        """Inline corrections go through the services, so every change is logged."""
        if formset.model is not Judgment:
            return super().save_formset(request, form, formset, change)
        instances = formset.save(commit=False)
        for judgment in formset.deleted_objects:
            services.judgment_delete(judgment=judgment, actor=request.user, source="admin")
        for judgment in instances:
            _judgment_save(judgment, interaction=form.instance, actor=request.user)
        return None

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        self._save_panel_labels(request, form.instance)

    def _save_panel_labels(self, request, interaction: Interaction) -> None:
        retrieved = sorted(interaction.retrieved or [], key=lambda r: r.get("rank") or 0)
        to_set, to_delete = [], []
        for i, row in enumerate(retrieved):
            key = f"label__{i}"
            if key not in request.POST:
                continue
            label = request.POST.get(key, "")
            original = request.POST.get(f"orig_label__{i}", "")
            reason = request.POST.get(f"reason__{i}", "").strip()
            original_reason = request.POST.get(f"orig_reason__{i}", "")
            if label == original and reason == original_reason:
                continue
            uid = row.get("chunk_uid")
            if label in Judgment.Label.values:
                to_set.append({"chunk_uid": uid, "label": label, "reason": reason})
            elif label == "":
                to_delete.append(uid)
        if not to_set and not to_delete:
            return
        with transaction.atomic():
            if to_set:
                services.judgments_apply(interaction=interaction, judgments=to_set, actor=request.user, source="admin")
            for judgment in interaction.judgments.filter(chunk_uid__in=to_delete, preferred_over=""):
                services.judgment_delete(judgment=judgment, actor=request.user, source="admin")
            services.interaction_mark_reviewed(interaction=interaction, reviewer=request.user)
        services.interaction_embed_queries(interactions=[interaction])
        messages.info(request, f"Saved {len(to_set)} label(s), removed {len(to_delete)}.")

    # -- bulk actions --

    @admin.action(description="Mark selected as reviewed")
    def mark_reviewed(self, request, queryset):
        n = Interaction.objects.filter(pk__in=queryset.values("pk")).update(
            reviewed_by=request.user, reviewed_at=timezone.now()
        )
        self.message_user(request, f"{n} interaction(s) marked reviewed.")

    @admin.action(description="Label the used/opened sources of selected as relevant")
    def label_used_sources_positive(self, request, queryset):
        self._bulk_label(request, queryset, label=Judgment.Label.POSITIVE, which="selected")

    @admin.action(description="Label every still-unlabelled result of selected as not relevant")
    def label_unlabelled_negative(self, request, queryset):
        self._bulk_label(request, queryset, label=Judgment.Label.NEGATIVE, which="unlabelled")

    def _bulk_label(self, request, queryset, *, label: str, which: str) -> None:
        total = 0
        interactions = list(Interaction.objects.filter(pk__in=queryset.values("pk")))
        with transaction.atomic():
            for interaction in interactions:
                labelled = set(interaction.judgments.filter(preferred_over="").values_list("chunk_uid", flat=True))
                if which == "selected":
                    uids = [u for u in interaction.selected or [] if u not in labelled]
                else:
                    uids = [
                        r.get("chunk_uid") for r in interaction.retrieved or [] if r.get("chunk_uid") not in labelled
                    ]
                if not uids:
                    continue
                result = services.judgments_apply(
                    interaction=interaction,
                    judgments=[{"chunk_uid": u, "label": label} for u in uids],
                    actor=request.user,
                    source="admin",
                )
                services.interaction_mark_reviewed(interaction=interaction, reviewer=request.user)
                total += result.created + result.updated
        services.interaction_embed_queries(interactions=interactions)
        self.message_user(request, f"{total} label(s) written on {len(interactions)} interaction(s).")

    @admin.action(description="Delete the judgments of selected (logged)")
    def clear_judgments(self, request, queryset):
        n = 0
        with transaction.atomic():
            for judgment in Judgment.objects.filter(interaction__in=queryset.values("pk")):
                services.judgment_delete(judgment=judgment, actor=request.user, source="admin")
                n += 1
        self.message_user(request, f"{n} judgment(s) deleted.", level=messages.WARNING)

    @admin.action(description="Export judgments of selected as JSONL")
    def export_jsonl(self, request, queryset):
        body = "\n".join(selectors.judgments_export_jsonl(interactions=queryset.values("pk"))) + "\n"
        response = HttpResponse(body, content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="judgments.jsonl"'
        return response

    @admin.action(description="Export judgments of selected as a BEIR folder (zip)")
    def export_qrels(self, request, queryset):
        from feedback.exports import write_beir_zip

        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            write_beir_zip(archive, interactions=queryset.values("pk"), corpus="retrieved")
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
        response["Content-Disposition"] = 'attachment; filename="judgments-beir.zip"'
        return response


# --- judgments, their history, clicks ---------------------------------------------------------


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("chunk_uid", "label", "preferred_over", "query", "labelled_by", "updated_at")
    list_filter = ("label", ("updated_at", admin.DateFieldListFilter), "labelled_by")
    search_fields = ("chunk_uid", "interaction__query", "reason")
    raw_id_fields = ("interaction",)
    fields = (
        "interaction", "chunk_uid", "preferred_over", "label", "reason", "document_key", "labelled_by", "created_at",
        "updated_at",
    )
    readonly_fields = (
        "interaction", "chunk_uid", "preferred_over", "document_key", "labelled_by", "created_at", "updated_at"
    )
    actions = ["flip_label", "delete_logged"]

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # deletions go through the logged action
        return actions

    def has_add_permission(self, request):
        return False

    @admin.display(description="query")
    def query(self, obj):
        return obj.interaction.query[:80]

    def save_model(self, request, obj, form, change):
        _judgment_save(obj, interaction=obj.interaction, actor=request.user)

    def delete_model(self, request, obj):
        services.judgment_delete(judgment=obj, actor=request.user, source="admin")

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for judgment in queryset:
                services.judgment_delete(judgment=judgment, actor=request.user, source="admin")

    @admin.action(description="Flip the label of selected")
    def flip_label(self, request, queryset):
        with transaction.atomic():
            for j in queryset.select_related("interaction"):
                services.judgment_set(
                    interaction=j.interaction,
                    chunk_uid=j.chunk_uid,
                    preferred_over=j.preferred_over,
                    label=Judgment.Label.NEGATIVE if j.label == Judgment.Label.POSITIVE else Judgment.Label.POSITIVE,
                    reason=j.reason,
                    actor=request.user,
                    source="admin",
                )
        self.message_user(request, "Labels flipped.")

    @admin.action(description="Delete selected judgments (logged)")
    def delete_logged(self, request, queryset):
        n = queryset.count()
        self.delete_queryset(request, queryset)
        self.message_user(request, f"{n} judgment(s) deleted.", level=messages.WARNING)


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(JudgmentLog)
class JudgmentLogAdmin(_ReadOnly):
    list_display = ("created_at", "action", "chunk_uid", "previous_label", "label", "actor", "source", "interaction")
    list_filter = ("action", "source", ("created_at", admin.DateFieldListFilter), "actor")
    search_fields = ("chunk_uid", "interaction__query")


@admin.register(ClickEvent)
class ClickEventAdmin(_ReadOnly):
    list_display = ("created_at", "chunk_uid", "rank", "user", "interaction")
    list_filter = (("created_at", admin.DateFieldListFilter),)
    search_fields = ("chunk_uid", "interaction__query")


# The ranking configurations' admin is a module of its own; importing it registers it.
from feedback import admin_ranking  # noqa: E402, F401
