"""What ingestion owns: admin-managed course content, and the bookkeeping of every sync.

Content models (Course → Chapter → Subchapter → Page → ContentBlock, Imagimodel → Layer/Zone,
Reflection) are edited in the Django admin and shaped into ``SourceDocument``s by
``ingestion.sources.cms``. Bookkeeping models (NotionDelivery, NotionSyncState, SourceState,
IngestedDocument, IngestRun) make syncs incremental, replay-safe and visible.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class PublishableQuerySet(models.QuerySet):
    def published(self, *, now=None):
        now = now or timezone.now()
        return self.filter(visible=True, published_at__isnull=False, published_at__lte=now)


class Publishable(models.Model):
    """``visible`` and ``published_at``: what the seed's CMS used to decide what is indexed."""

    visible = models.BooleanField(default=True)
    published_at = models.DateTimeField(
        null=True, blank=True, default=timezone.now,
        help_text="Empty or in the future: not published, so not searchable.",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PublishableQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def is_published(self) -> bool:
        return bool(self.visible and self.published_at and self.published_at <= timezone.now())


class Course(Publishable):
    """A course. The canon course derives each page's domain from its subchapter title."""

    slug = models.SlugField(max_length=100, unique=True, help_text="Also the domain of non-canon courses.")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    is_canon = models.BooleanField(
        default=False,
        help_text="Canon course: domain = slugified subchapter title (javascript, react…). "
        "Other courses: domain = course slug.",
    )

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class OrderedSection(models.Model):
    """A titled, ordered section of its parent (fields shared by Chapter and Subchapter)."""

    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    order = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Chapter(OrderedSection):
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="chapters")

    class Meta:
        ordering = ["course", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="chapter_course_slug_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.course} › {self.title}"


class Subchapter(OrderedSection):
    chapter = models.ForeignKey(Chapter, on_delete=models.CASCADE, related_name="subchapters")

    class Meta:
        ordering = ["chapter", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["chapter", "slug"], name="subchapter_chapter_slug_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.chapter} › {self.title}"


class Page(Publishable):
    """A lesson page: an ordered list of typed content blocks."""

    class PageType(models.TextChoices):
        TEXT = "text", "Text"
        TEXT_IMAGE = "text_image", "Text + image"
        TEXT_CODE = "text_code", "Text + code"
        TEXT_IMAGE_CODE = "text_image_code", "Text + image + code"
        VIDEO = "video", "Video"
        BLOCKS = "blocks", "Mixed blocks"

    subchapter = models.ForeignKey(Subchapter, on_delete=models.CASCADE, related_name="pages")
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    page_type = models.CharField(max_length=30, choices=PageType.choices, default=PageType.BLOCKS)
    order = models.PositiveIntegerField(default=0)
    summary = models.TextField(blank=True, default="")
    concepts = ArrayField(
        models.CharField(max_length=100), default=list, blank=True,
        help_text="Comma-separated concept tags (closures, event-loop…).",
    )  # fmt: skip

    class Meta:
        ordering = ["subchapter", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["subchapter", "slug"], name="page_subchapter_slug_uniq"),
        ]
        indexes = [models.Index(name="page_updated_idx", fields=["updated_at"])]

    def __str__(self) -> str:
        return self.title


class ContentBlock(models.Model):
    """One typed block of a page (the seed's dynamic-zone components)."""

    class Kind(models.TextChoices):
        TEXT = "text", "Text"
        TEXT_IMAGE = "text_image", "Text + image"
        TEXT_IMAGE_CODE = "text_image_code", "Text + image + code"
        CODE_EDITOR = "code_editor", "Code editor (several files)"
        VIDEO = "video", "Video"
        IMAGE = "image", "Image"

    page = models.ForeignKey(Page, on_delete=models.CASCADE, related_name="blocks")
    order = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=30, choices=Kind.choices, default=Kind.TEXT)
    heading = models.CharField(max_length=200, blank=True, default="")
    text = models.TextField(blank=True, default="", help_text="Markdown.")
    image_url = models.URLField(max_length=500, blank=True, default="")
    image_alt = models.CharField(max_length=500, blank=True, default="")
    image_caption = models.CharField(max_length=500, blank=True, default="")
    image_classification = models.CharField(
        max_length=100, blank=True, default="", help_text="diagram, screenshot, mnemonic, photo…"
    )
    code = models.TextField(blank=True, default="")
    language = models.CharField(max_length=50, blank=True, default="")
    files = models.JSONField(
        default=list, blank=True,
        help_text='Code editor files: [{"name": "index.js", "language": "javascript", "code": "…"}]',
    )  # fmt: skip
    video_url = models.URLField(max_length=500, blank=True, default="")
    video_title = models.CharField(max_length=200, blank=True, default="")
    transcript = models.TextField(blank=True, default="", help_text="Video transcript, indexed.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["page", "order", "id"]
        indexes = [models.Index(name="contentblock_updated_idx", fields=["updated_at"])]

    def __str__(self) -> str:
        return f"{self.page} #{self.order} {self.kind}"


class Imagimodel(Publishable):
    """A visual mnemonic: a picture in layers, with zones to zoom into."""

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    image_url = models.URLField(max_length=500, blank=True, default="")
    course = models.OneToOneField(
        Course, null=True, blank=True, on_delete=models.SET_NULL, related_name="imagimodel"
    )
    concepts = ArrayField(models.CharField(max_length=100), default=list, blank=True)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class Layer(models.Model):
    imagimodel = models.ForeignKey(Imagimodel, on_delete=models.CASCADE, related_name="layers")
    order = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=200, help_text="Its words become mnemonic tags.")
    description = models.TextField(blank=True, default="")
    image_url = models.URLField(max_length=500, blank=True, default="")
    image_alt = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["imagimodel", "order", "id"]

    def __str__(self) -> str:
        return self.name


class Zone(models.Model):
    imagimodel = models.ForeignKey(Imagimodel, on_delete=models.CASCADE, related_name="zones")
    order = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    x = models.FloatField(default=0.5, help_text="Focus centre, 0–1 of the width.")
    y = models.FloatField(default=0.5, help_text="Focus centre, 0–1 of the height.")
    zoom = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["imagimodel", "order", "id"]

    def __str__(self) -> str:
        return self.name


class Reflection(models.Model):
    """A learner's free-text reflection. Indexed private to its author, with a hashed user id."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reflections")
    page = models.ForeignKey(Page, null=True, blank=True, on_delete=models.SET_NULL, related_name="reflections")
    title = models.CharField(max_length=200, blank=True, default="")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or self.text[:60]


class NotionDelivery(models.Model):
    """One body POSTed to ``/notion/ingest``, stored before it is processed.

    A broker or worker outage loses nothing: pending rows are swept and processed later. A body
    equal to the page's latest delivery is a replay and maps to that row; any other body is a new
    row, even one received before (a revert, a restore), so the page ends as it was last sent.
    ``edited_at`` is the page's ``last_edited_time`` when the delivery gives it: an older edit
    never overwrites a newer one.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PROCESSING = "processing", "Processing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    body = models.TextField()
    body_hash = models.CharField(max_length=64, db_index=True)
    page_id = models.CharField(max_length=200, db_index=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    gone = models.BooleanField(default=False, help_text="Archived or in the trash: the page's chunks are hidden.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    replays = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    result = models.JSONField(default=dict, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-received_at"]
        verbose_name_plural = "Notion deliveries"
        indexes = [models.Index(name="notiondelivery_status_idx", fields=["status", "received_at"])]

    def __str__(self) -> str:
        return f"{self.page_id} ({self.status})"


class NotionSyncState(models.Model):
    """Where the Notion pull left off, per set of databases."""

    key = models.CharField(max_length=200, unique=True, default="default")
    last_synced_at = models.DateTimeField(null=True, blank=True)
    known_page_ids = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.key} @ {self.last_synced_at}"


class SourceRoot(models.Model):
    """A folder synced by a command, remembered so ``reindex`` can sync it again."""

    class Kind(models.TextChoices):
        MARKDOWN = "markdown", "Markdown / Logseq"
        DOCUMENTS = "documents", "Documents"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    path = models.CharField(max_length=1000)
    collection = models.CharField(max_length=100)
    options = models.JSONField(default=dict, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "path", "collection"], name="sourceroot_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.collection} ← {self.path}"


class SourceState(models.Model):
    """The fingerprint of what a source looked like when it was last indexed.

    A file or page whose fingerprint has not changed is not re-shaped nor re-upserted.
    """

    collection = models.CharField(max_length=100)
    source_type = models.CharField(max_length=100)
    source_id = models.CharField(max_length=300)
    root = models.ForeignKey(SourceRoot, null=True, blank=True, on_delete=models.CASCADE, related_name="states")
    fingerprint = models.CharField(max_length=64)
    remote_version = models.CharField(max_length=100, blank=True, default="", help_text="e.g. Notion last_edited_time")
    units = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["collection", "source_type", "source_id"], name="sourcestate_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.collection}:{self.source_type}:{self.source_id}"


class IngestedDocument(models.Model):
    """A document POSTed to ``/ingest/documents``, kept so ``reindex documents`` can rebuild it."""

    collection = models.CharField(max_length=100)
    source_type = models.CharField(max_length=100)
    source_id = models.CharField(max_length=300)
    payload = models.JSONField()
    payload_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["collection", "source_type", "source_id"], name="ingesteddocument_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.collection}:{self.source_id}"


class IngestRun(models.Model):
    """One sync or reindex: what it did, per source, visible in the admin while it runs.

    Chunk counts (created/updated/unchanged/deleted/embedded) come from ``chunk_upsert``;
    ``sources``/``skipped``/``removed``/``failed`` count source objects (pages, files, notes).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        # The process running it died (SIGKILL, OOM, a lost machine): no heartbeat any more.
        INTERRUPTED = "interrupted", "Interrupted"

    source = models.CharField(max_length=50, help_text="reindex, notion_sync, sync_markdown, …")
    types = models.JSONField(default=list, blank=True)
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    dry_run = models.BooleanField(default=False)
    prune = models.BooleanField(default=False)
    since = models.DateTimeField(null=True, blank=True)
    triggered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    total = models.PositiveIntegerField(default=0, help_text="Sources to look at, when known.")
    sources = models.PositiveIntegerField(default=0, help_text="Sources looked at so far.")
    skipped = models.PositiveIntegerField(default=0, help_text="Sources unchanged since last sync.")
    removed = models.PositiveIntegerField(default=0, help_text="Sources taken out of search.")
    failed = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    embedded = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the process running it (every few seconds)."
    )
    worker = models.CharField(max_length=300, blank=True, default="", help_text="host:pid running it")
    resumed_as = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The run that re-ran this interrupted one.",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    COUNTS = ("sources", "skipped", "removed", "failed", "created", "updated", "unchanged", "deleted", "embedded")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(name="ingestrun_status_idx", fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.source} {self.status}"

    def counts(self) -> dict:
        return {name: getattr(self, name) for name in self.COUNTS}

    def summary(self) -> dict:
        """What ``--json`` prints and the API returns."""
        return {
            "run_id": self.pk,
            "source": self.source,
            "types": self.types,
            "status": self.status,
            "dry_run": self.dry_run,
            "prune": self.prune,
            "since": self.since.isoformat() if self.since else None,
            "total": self.total,
            **self.counts(),
            "errors": self.errors,
            "message": self.message,
            "duration_s": round(self.duration_ms / 1000, 3) if self.duration_ms is not None else None,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "heartbeat_at": self.heartbeat_at.isoformat() if self.heartbeat_at else None,
            "resumed_as": self.resumed_as_id,
        }


class StoredFile(models.Model):
    """The original of an ingested file (PDF, DOCX, HTML, PPTX), content-addressed by sha256.

    The bytes live under ``KNOWHUB_MEDIA_ROOT/files/<sha[:2]>/<sha>`` (outside git); chunks name
    the file in ``metadata.file`` and the download endpoint serves it to whoever may see one of
    those chunks.
    """

    sha256 = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=500)
    size = models.PositiveBigIntegerField()
    content_type = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.sha256[:12]})"


class SourceSetting(models.Model):
    """Who may see a source's chunks and how its properties map, per Notion database or folder.

    ``key`` is the Notion database or data source id (hex, no dashes) or the folder's absolute
    path. Webhook deliveries may narrow ``visibility`` but never widen it. Saving a changed
    setting re-applies it to the chunks already stored (metadata only, nothing re-embedded).
    """

    class Kind(models.TextChoices):
        NOTION = "notion_database", "Notion database / data source"
        FOLDER = "folder", "Synced folder"

    class Visibility(models.TextChoices):
        PUBLIC = "public", "Public"
        RESTRICTED = "restricted", "Restricted to a project"
        PRIVATE = "private", "Private to an owner"

    kind = models.CharField(max_length=30, choices=Kind.choices)
    key = models.CharField(max_length=1000, help_text="Notion database/data source id, or the folder's path.")
    name = models.CharField(max_length=200, blank=True, default="")
    collection = models.CharField(
        max_length=100, blank=True, default="",
        help_text="Folders: the collection their chunks go to. Notion pages stay in 'notion'.",
    )  # fmt: skip
    visibility = models.CharField(max_length=20, choices=Visibility.choices, default=Visibility.PUBLIC)
    project = models.ForeignKey(
        "rag.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="source_settings"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    mapping = models.JSONField(
        default=dict, blank=True,
        help_text='Which properties become people, tags, entity, date, domain: '
        '{"people": ["Family", "Friends"], "tags": ["Tags"], "entity": "Client", "date": "Day", "domain": "Area"}',
    )  # fmt: skip
    applied_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "name", "key"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "key"], name="sourcesetting_kind_key_uniq"),
            models.CheckConstraint(
                name="sourcesetting_restricted_has_project",
                condition=~models.Q(visibility="restricted") | models.Q(project__isnull=False),
            ),
            models.CheckConstraint(
                name="sourcesetting_private_has_owner",
                condition=~models.Q(visibility="private") | models.Q(owner__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.name or self.key} ({self.visibility})"
