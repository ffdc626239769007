"""Admin for course content (re-indexed after every save), and for runs and deliveries."""

from __future__ import annotations

import logging

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from ingestion import services
from ingestion.models import (
    Chapter,
    ContentBlock,
    Course,
    Imagimodel,
    IngestedDocument,
    IngestRun,
    Layer,
    NotionDelivery,
    NotionSyncState,
    Page,
    Reflection,
    SourceRoot,
    SourceSetting,
    SourceState,
    StoredFile,
    Subchapter,
    Zone,
)

logger = logging.getLogger(__name__)


class ReindexOnSaveMixin:
    """Queue re-indexing of what an admin save or delete touched, after the commit.

    ``save_related`` runs after the inlines are saved, so the task sees the blocks too; deletes
    compute their targets first (the rows are gone afterwards) and the task removes the chunks.
    """

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        services.cms_enqueue(services.cms_targets(form.instance))

    def delete_model(self, request, obj):
        targets = services.cms_targets(obj)
        super().delete_model(request, obj)
        services.cms_enqueue(targets)

    def delete_queryset(self, request, queryset):
        targets = [t for obj in queryset for t in services.cms_targets(obj)]
        super().delete_queryset(request, queryset)
        services.cms_enqueue(targets)

    @admin.action(description="Re-index selected (after commit, in the worker)")
    def reindex_selected(self, request, queryset):
        targets = [t for obj in queryset for t in services.cms_targets(obj)]
        services.cms_enqueue(targets)
        count = sum(len(ids) for _, ids in targets)
        self.message_user(request, f"Queued re-indexing of {count} object(s).", messages.SUCCESS)

    actions = ["reindex_selected"]


class PublishedFilter(admin.SimpleListFilter):
    title = "published"
    parameter_name = "published"

    def lookups(self, request, model_admin):
        return [("yes", "Published"), ("no", "Not published")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.published()
        if self.value() == "no":
            return queryset.exclude(pk__in=queryset.published().values("pk"))
        return queryset


class ChapterInline(admin.TabularInline):
    model = Chapter
    extra = 0
    prepopulated_fields = {"slug": ("title",)}
    show_change_link = True


@admin.register(Course)
class CourseAdmin(ReindexOnSaveMixin, admin.ModelAdmin):
    list_display = ["title", "slug", "is_canon", "visible", "published_at", "updated_at"]
    list_filter = ["is_canon", "visible", PublishedFilter]
    search_fields = ["title", "slug", "description"]
    prepopulated_fields = {"slug": ("title",)}
    inlines = [ChapterInline]


class SubchapterInline(admin.TabularInline):
    model = Subchapter
    extra = 0
    prepopulated_fields = {"slug": ("title",)}
    show_change_link = True


@admin.register(Chapter)
class ChapterAdmin(ReindexOnSaveMixin, admin.ModelAdmin):
    list_display = ["title", "course", "order"]
    list_filter = ["course"]
    search_fields = ["title"]
    prepopulated_fields = {"slug": ("title",)}
    inlines = [SubchapterInline]


class PageInline(admin.TabularInline):
    model = Page
    extra = 0
    fields = ["title", "slug", "page_type", "order", "visible", "published_at"]
    prepopulated_fields = {"slug": ("title",)}
    show_change_link = True


@admin.register(Subchapter)
class SubchapterAdmin(ReindexOnSaveMixin, admin.ModelAdmin):
    list_display = ["title", "chapter", "order"]
    list_filter = ["chapter__course"]
    search_fields = ["title"]
    prepopulated_fields = {"slug": ("title",)}
    inlines = [PageInline]


class ContentBlockInline(admin.StackedInline):
    model = ContentBlock
    extra = 0
    fieldsets = [
        (None, {"fields": [("order", "kind"), "heading", "text"]}),
        ("Image", {
            "fields": ["image_url", ("image_alt", "image_caption"), "image_classification"], "classes": ["collapse"],
        }),
        ("Code", {"fields": [("language",), "code", "files"], "classes": ["collapse"]}),
        ("Video", {"fields": [("video_url", "video_title"), "transcript"], "classes": ["collapse"]}),
    ]


@admin.register(Page)
class PageAdmin(ReindexOnSaveMixin, admin.ModelAdmin):
    list_display = ["title", "breadcrumb", "page_type", "visible", "published_at", "blocks_count", "updated_at"]
    list_filter = ["page_type", "visible", PublishedFilter, "subchapter__chapter__course"]
    search_fields = ["title", "slug", "summary", "blocks__text"]
    prepopulated_fields = {"slug": ("title",)}
    list_select_related = ["subchapter__chapter__course"]
    inlines = [ContentBlockInline]
    fields = [
        ("title", "slug"), "subchapter", ("page_type", "order"), ("visible", "published_at"), "summary", "concepts"
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_blocks=Count("blocks"))

    @admin.display(description="Breadcrumb")
    def breadcrumb(self, obj):
        sub = obj.subchapter
        return f"{sub.chapter.course.title} > {sub.chapter.title} > {sub.title}"

    @admin.display(description="Blocks", ordering="_blocks")
    def blocks_count(self, obj):
        return obj._blocks


class LayerInline(admin.StackedInline):
    model = Layer
    extra = 0
    fields = [("order", "name"), "description", ("image_url", "image_alt")]


class ZoneInline(admin.TabularInline):
    model = Zone
    extra = 0
    fields = ["order", "name", "description", "x", "y", "zoom"]


@admin.register(Imagimodel)
class ImagimodelAdmin(ReindexOnSaveMixin, admin.ModelAdmin):
    list_display = ["title", "slug", "course", "visible", "published_at"]
    list_filter = ["visible", PublishedFilter]
    search_fields = ["title", "description", "layers__name"]
    prepopulated_fields = {"slug": ("title",)}
    inlines = [LayerInline, ZoneInline]


@admin.register(Reflection)
class ReflectionAdmin(ReindexOnSaveMixin, admin.ModelAdmin):
    list_display = ["__str__", "user", "page", "created_at"]
    search_fields = ["title", "text"]
    raw_id_fields = ["user", "page"]
    list_select_related = ["user", "page"]


# --- runs, deliveries, state --------------------------------------------------------------------


class ReindexForm(forms.Form):
    # Nothing ticked at first: an operator chooses what to rebuild, each type explained beside it.
    types = forms.MultipleChoiceField(
        choices=[(t, f"{t} — {services.TYPE_HELP[t]}") for t in services.ALL_TYPES],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Tick at least one type of source to re-index."},
        help_text="What to rebuild. Unchanged chunks are kept as they are (nothing is re-embedded).",
    )  # fmt: skip
    since = forms.DateTimeField(required=False, help_text="Only sources changed since (YYYY-MM-DD HH:MM).")
    dry_run = forms.BooleanField(required=False, help_text="Report what would change; write nothing.")
    prune = forms.BooleanField(
        required=False, help_text="Delete (not just hide) chunks of unpublished or vanished sources."
    )


@admin.register(IngestRun)
class IngestRunAdmin(admin.ModelAdmin):
    list_display = [
        "id", "source", "types_label", "status_badge", "dry_run", "progress", "created", "updated", "unchanged",
        "deleted", "embedded", "skipped", "removed", "failed", "duration", "started_at",
    ]  # fmt: skip
    list_filter = ["status", "source", "dry_run"]
    readonly_fields = [f.name for f in IngestRun._meta.fields]
    change_list_template = "admin/ingestion/ingestrun/change_list.html"
    actions = ["resume_selected"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Resume selected interrupted/failed runs (run their sources again)")
    def resume_selected(self, request, queryset):
        for run in queryset:
            try:
                new = services.run_resume(run=run, user=request.user)
            except services.IngestError as exc:
                self.message_user(request, str(exc), messages.WARNING)
            else:
                self.message_user(request, f"Run #{run.pk} resumed as run #{new.pk}.", messages.SUCCESS)

    @admin.display(description="Types")
    def types_label(self, obj):
        return ", ".join(obj.types)

    @admin.display(description="Status", ordering="status")
    def status_badge(self, obj):
        colour = {"running": "#2563eb", "done": "#15803d", "failed": "#b91c1c", "interrupted": "#c2410c"}.get(
            obj.status, "#6b7280"
        )
        return format_html('<b style="color:{}">{}</b>', colour, obj.get_status_display())

    @admin.display(description="Progress")
    def progress(self, obj):
        return f"{obj.sources}/{obj.total}" if obj.total else str(obj.sources)

    @admin.display(description="Duration")
    def duration(self, obj):
        return f"{obj.duration_ms / 1000:.1f} s" if obj.duration_ms is not None else "…"

    def changelist_view(self, request, extra_context=None):
        services.runs_mark_interrupted()  # a run whose process died shows as interrupted, not running
        extra_context = extra_context or {}
        extra_context["any_running"] = IngestRun.objects.filter(
            status__in=[IngestRun.Status.RUNNING, IngestRun.Status.QUEUED]
        ).exists()
        return super().changelist_view(request, extra_context=extra_context)

    def get_urls(self):
        return [
            path("reindex/", self.admin_site.admin_view(self.reindex_view), name="ingestion_ingestrun_reindex"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        services.runs_mark_interrupted()
        return super().change_view(request, object_id, form_url, extra_context)

    def reindex_view(self, request):
        """Start a reindex run: the same options as ``POST /rag/reindex`` and ``manage.py reindex``."""
        if not request.user.is_staff:
            return HttpResponseRedirect(reverse("admin:index"))
        form = ReindexForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            with transaction.atomic():
                run = services.run_create(
                    source="reindex", types=form.cleaned_data["types"], since=form.cleaned_data["since"],
                    dry_run=form.cleaned_data["dry_run"], prune=form.cleaned_data["prune"], user=request.user,
                )  # fmt: skip
                services.reindex_enqueue(run=run)
            self.message_user(request, f"Reindex run #{run.pk} queued.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:ingestion_ingestrun_changelist"))
        context = {
            **self.admin_site.each_context(request), "form": form, "title": "Start a reindex", "opts": self.model._meta
        }
        return TemplateResponse(request, "admin/ingestion/ingestrun/reindex.html", context)


@admin.register(NotionDelivery)
class NotionDeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "page_id", "status", "attempts", "replays", "received_at", "processed_at", "short_error"]
    list_filter = ["status"]
    search_fields = ["page_id", "body"]
    readonly_fields = [f.name for f in NotionDelivery._meta.fields]
    actions = ["process_again"]

    def has_add_permission(self, request):
        return False

    @admin.display(description="Error")
    def short_error(self, obj):
        return obj.error[:80]

    @admin.action(description="Process again")
    def process_again(self, request, queryset):
        from ingestion.tasks import process_notion_delivery

        ids = list(queryset.values_list("pk", flat=True))
        queryset.update(status=NotionDelivery.Status.PENDING)
        for delivery_id in ids:
            transaction.on_commit(lambda i=delivery_id: process_notion_delivery.delay(i), robust=True)
        self.message_user(request, f"Queued {len(ids)} deliveries.", messages.SUCCESS)


@admin.register(NotionSyncState)
class NotionSyncStateAdmin(admin.ModelAdmin):
    list_display = ["key", "last_synced_at", "pages"]
    readonly_fields = ["key", "last_synced_at", "known_page_ids", "created_at", "updated_at"]

    def has_add_permission(self, request):
        return False  # written by ingestion only

    @admin.display(description="Pages")
    def pages(self, obj):
        return len(obj.known_page_ids)


@admin.register(SourceRoot)
class SourceRootAdmin(admin.ModelAdmin):
    list_display = ["kind", "collection", "path", "last_synced_at"]
    list_filter = ["kind"]
    readonly_fields = ["last_synced_at", "created_at", "updated_at"]


@admin.register(SourceState)
class SourceStateAdmin(admin.ModelAdmin):
    list_display = ["collection", "source_type", "source_id", "units", "remote_version", "updated_at"]
    list_filter = ["collection", "source_type"]
    search_fields = ["source_id"]
    readonly_fields = [f.name for f in SourceState._meta.fields]

    def has_add_permission(self, request):
        return False  # written by ingestion only


@admin.register(IngestedDocument)
class IngestedDocumentAdmin(admin.ModelAdmin):
    list_display = ["collection", "source_type", "source_id", "updated_at"]
    list_filter = ["collection", "source_type"]
    search_fields = ["source_id"]
    readonly_fields = [f.name for f in IngestedDocument._meta.fields]
    change_list_template = "admin/ingestion/ingesteddocument/change_list.html"

    def get_urls(self):
        from ingestion.admin_files import upload_files_view

        def upload(request):
            return upload_files_view(self, request)

        upload.csrf_exempt = True  # upload_files_view checks CSRF itself, after choosing upload handlers
        view = self.admin_site.admin_view(upload)
        return [path("upload/", view, name="ingestion_ingesteddocument_upload"), *super().get_urls()]

    def has_add_permission(self, request):
        return False  # written by ingestion only


class SourceSettingForm(forms.ModelForm):
    """Validates the mapping and the access fields the same way the command does."""

    class Meta:
        model = SourceSetting
        fields = ["kind", "key", "name", "collection", "visibility", "project", "owner", "mapping"]

    def clean_mapping(self):
        from ingestion.sources.mapping import PropertyMapping

        try:
            return PropertyMapping.from_dict(self.cleaned_data.get("mapping") or {}).as_dict()
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_key(self):
        from ingestion.sources.notion import notion_key

        key = (self.cleaned_data.get("key") or "").strip()
        return notion_key(key) if self.data.get("kind") == SourceSetting.Kind.NOTION else key

    def clean(self):
        data = super().clean()
        visibility, project, owner = data.get("visibility"), data.get("project"), data.get("owner")
        if visibility == "restricted" and project is None:
            self.add_error("project", "Restricted sources need a project.")
        if visibility != "restricted" and project is not None:
            self.add_error("project", "A project is only used with visibility 'restricted'.")
        if visibility == "private" and owner is None:
            self.add_error("owner", "Private sources need an owner.")
        return data


@admin.register(SourceSetting)
class SourceSettingAdmin(admin.ModelAdmin):
    """Per Notion database / folder: access and property mapping. Saving re-applies it to the
    chunks already stored (metadata only: nothing is re-embedded)."""

    form = SourceSettingForm
    list_display = ("label", "kind", "visibility", "project", "owner", "applied_at")
    list_filter = ("kind", "visibility")
    search_fields = ("key", "name")
    readonly_fields = ("applied_at", "created_at", "updated_at")
    actions = ["reapply"]

    @admin.display(description="source", ordering="name")
    def label(self, obj):
        return obj.name or obj.key

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        setting_pk = obj.pk

        def apply():
            from ingestion.services.source_settings import source_setting_apply

            setting = SourceSetting.objects.filter(pk=setting_pk).first()
            if setting is not None:
                n = source_setting_apply(setting=setting)
                messages.info(request, f"Re-applied to stored chunks: {n} changed (nothing re-embedded).")

        transaction.on_commit(apply)

    @admin.action(description="Re-apply to stored chunks (metadata only)")
    def reapply(self, request, queryset):
        from ingestion.services.source_settings import source_setting_apply

        total = sum(source_setting_apply(setting=s) for s in queryset)
        messages.info(request, f"{total} chunks changed; nothing re-embedded.")


@admin.register(StoredFile)
class StoredFileAdmin(admin.ModelAdmin):
    list_display = ("name", "content_type", "size", "sha256", "created_at")
    search_fields = ("name", "sha256")
    readonly_fields = ("sha256", "name", "size", "content_type", "created_at", "updated_at")

    def has_add_permission(self, request):
        return False  # written by ingestion only
