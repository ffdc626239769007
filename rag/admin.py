"""Admin for the index: browse chunks and their history, manage projects and their members."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.utils.html import format_html, format_html_join

from rag.models import Chunk, ChunkHistory, Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "member_count", "created_at")
    search_fields = ("slug", "name")
    filter_horizontal = ("members",)
    prepopulated_fields = {"slug": ("name",)}

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.members.count()


class LiveFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return (("live", "Live"), ("deleted", "Soft-deleted"))

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.filter(deleted_at__isnull=True)
        if self.value() == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = (
        "title_or_uid", "collection", "source_type", "domain", "visibility", "pii_level", "date", "updated_at", "live",
    )  # fmt: skip
    # pii_level: 0 none, 1 names/mentions, 2 a person's own words (reflections, session artifacts);
    # exports leave out level 2 unless asked for.
    list_filter = (
        LiveFilter, "collection", "source_type", "visibility", "pii_level", "has_image", "domain", "embedding_model",
    )  # fmt: skip
    search_fields = ("chunk_uid", "title", "content", "source_id")
    date_hierarchy = "updated_at"
    list_select_related = ("project",)
    exclude = ("embedding",)
    readonly_fields = [f.name for f in Chunk._meta.fields if f.name not in ("embedding", "tsv")] + ["history"]

    def has_add_permission(self, request):
        return False  # chunks come from sources, through the upsert service

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="chunk", ordering="title")
    def title_or_uid(self, obj):
        return obj.title or obj.chunk_uid

    @admin.display(boolean=True, description="live")
    def live(self, obj):
        return obj.deleted_at is None

    @admin.display(description="content versions")
    def history(self, obj):
        rows = ChunkHistory.objects.filter(chunk_uid=obj.chunk_uid)[:20]
        items = ((f"{r.created_at:%Y-%m-%d %H:%M}", r.change, r.content_hash[:10]) for r in rows)
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} {} {}</li>", items))


@admin.register(ChunkHistory)
class ChunkHistoryAdmin(admin.ModelAdmin):
    list_display = ("chunk_uid", "change", "content_hash", "created_at")
    list_filter = ("change",)
    search_fields = ("chunk_uid", "content")
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ForgetfulUserAdmin(UserAdmin):
    """Deleting a user in the admin forgets them: private chunks and their history go, their
    interactions and judgments are anonymised (rag.privacy.user_forget), in one transaction."""

    def delete_model(self, request, obj):
        from rag.privacy import user_forget

        user_forget(user=obj)

    def delete_queryset(self, request, queryset):
        from rag.privacy import user_forget

        with transaction.atomic():
            for user in queryset:
                user_forget(user=user)


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, ForgetfulUserAdmin)
