"""The index: chunks, their history, and the projects that gate restricted chunks."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.functions import Cast
from pgvector.django import HalfVectorField, HnswIndex, VectorField

from rag import db_ops
from rag.units import Visibility


class Project(models.Model):
    """A group of users who may see the restricted chunks tagged with it."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="knowhub_projects", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class Chunk(models.Model):
    """One searchable piece of a source, embedded and full-text indexed.

    ``chunk_uid`` = ``{collection}:{source_type}:{source_id}:{unit_anchor}:{chunk_idx}`` makes
    every sync an idempotent upsert. ``content_hash`` is the sha256 of the text that was embedded
    (title line + content), so an unchanged chunk is never embedded again.
    """

    class VisibilityChoices(models.TextChoices):
        PUBLIC = Visibility.PUBLIC, "Public"
        RESTRICTED = Visibility.RESTRICTED, "Restricted to project"
        PRIVATE = Visibility.PRIVATE, "Private to owner"

    chunk_uid = models.CharField(max_length=600, unique=True)
    collection = models.CharField(max_length=100)
    source_type = models.CharField(max_length=100)
    source_id = models.CharField(max_length=300)
    unit_anchor = models.CharField(max_length=300)
    chunk_idx = models.PositiveIntegerField()

    title = models.CharField(max_length=500, blank=True, default="")
    breadcrumb = models.CharField(max_length=1000, blank=True, default="")
    # Not a URLField: originals include app links (logseq://, notion://) that URL validation rejects.
    url = models.CharField(max_length=1000, blank=True, default="")
    content = models.TextField()
    content_hash = models.CharField(max_length=64)

    embedding = VectorField(dimensions=settings.KNOWHUB_EMBEDDING_DIMS)
    embedding_model = models.CharField(max_length=200)
    # Title (weight A) and content (B) analysed in English; written by a database trigger with
    # every row whose text changes (rag.text_columns), never by the application.
    tsv = SearchVectorField(null=True, editable=False)

    domain = models.CharField(max_length=100, blank=True, default="")
    concepts = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    mnemonic_tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    code_languages = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    has_image = models.BooleanField(default=False)
    pii_level = models.PositiveSmallIntegerField(default=0)
    author_hash = models.CharField(max_length=64, blank=True, default="")
    date = models.DateField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    visibility = models.CharField(
        max_length=20, choices=VisibilityChoices.choices, default=VisibilityChoices.PUBLIC
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.PROTECT, related_name="chunks"
    )
    owner_hash = models.CharField(max_length=64, blank=True, default="")

    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # The graph holds the vectors at half precision: half the memory an index build
            # walks, so a large build is faster, and the neighbours it finds are the same ones
            # (the search re-orders them by the full-precision distance).
            HnswIndex(
                OpClass(
                    Cast("embedding", HalfVectorField(dimensions=settings.KNOWHUB_EMBEDDING_DIMS)),
                    name="halfvec_cosine_ops",
                ),
                name="chunk_embedding_hnsw",
                m=db_ops.HNSW_M,
                ef_construction=db_ops.HNSW_EF_CONSTRUCTION,
            ),
            GinIndex(name="chunk_tsv_gin", fields=["tsv"]),
            GinIndex(name="chunk_concepts_gin", fields=["concepts"]),
            GinIndex(name="chunk_mnemonic_tags_gin", fields=["mnemonic_tags"]),
            GinIndex(name="chunk_code_languages_gin", fields=["code_languages"]),
            models.Index(name="chunk_source_idx", fields=["collection", "source_type", "source_id"]),
            models.Index(name="chunk_domain_idx", fields=["domain"]),
            models.Index(name="chunk_date_idx", fields=["date"]),
            # Which models made the live chunks, read on every ask (rag.selectors.index_models).
            models.Index(
                name="chunk_live_model_idx", fields=["embedding_model"], condition=models.Q(deleted_at__isnull=True)
            ),
        ]
        constraints = [
            models.CheckConstraint(
                name="chunk_restricted_has_project",
                condition=~models.Q(visibility="restricted") | models.Q(project__isnull=False),
            ),
            models.CheckConstraint(
                name="chunk_private_has_owner",
                condition=~models.Q(visibility="private") | ~models.Q(owner_hash=""),
            ),
        ]

    def __str__(self) -> str:
        return self.chunk_uid


class ChunkHistory(models.Model):
    """Every content version a chunk has had. Kept when the chunk itself goes."""

    class Change(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        DELETED = "deleted", "Deleted"

    chunk_uid = models.CharField(max_length=600)
    change = models.CharField(max_length=20, choices=Change.choices)
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    title = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "chunk history"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(name="chunkhistory_uid_idx", fields=["chunk_uid", "created_at"])]

    def __str__(self) -> str:
        return f"{self.chunk_uid} {self.change} {self.content_hash[:8]}"


class TermStat(models.Model):
    """Document frequencies for BM25, kept by triggers on ``rag_chunk`` (migration 0002).

    Append-only: every statement that changes live chunks' ``tsv`` inserts signed deltas per
    lexeme and per ACL partition (collection, visibility, project, owner), so concurrent writers
    never lock a shared counter row; ``rag.term_stats.compact`` folds the deltas together. The
    row with ``lexeme = ''`` of a partition counts its live chunks (``docs``) and their total
    length in distinct lexemes (``length``). Keying by ACL partition lets a search compute IDF
    over exactly the chunks its caller may see, so hidden chunks never move visible scores.
    """

    collection = models.CharField(max_length=100)
    visibility = models.CharField(max_length=20)
    project_id = models.BigIntegerField(null=True, blank=True)
    owner_hash = models.CharField(max_length=64, blank=True, default="")
    lexeme = models.TextField()
    docs = models.BigIntegerField(default=0)
    length = models.BigIntegerField(default=0)

    class Meta:
        db_table = "rag_term_stat"
        indexes = [models.Index(name="termstat_lexeme_idx", fields=["lexeme", "collection"])]

    def __str__(self) -> str:
        return f"{self.collection}:{self.lexeme} {self.docs:+d}"


class IndexVersion(models.Model):
    """A counter of changes to the index, one row that every process reads: what a process caches
    from the index (the facet counts) is keyed by it, so a change written by a worker or another
    web process shows at once, not after the cache's timeout (``rag.index_version``)."""

    version = models.BigIntegerField(default=0)

    class Meta:
        db_table = "rag_index_version"

    def __str__(self) -> str:
        return f"index version {self.version}"


class Conversation(models.Model):
    """One person's thread of questions on the ask page.

    The turns are the ``feedback.Interaction`` rows of kind ``ask`` whose
    ``filters["conversation_id"]`` is this id, so the feedback loop keeps reading them as before.
    The id is a string rather than a UUID column because API clients may already have chosen
    their own ids (1-64 letters, digits, ``-`` or ``_``); new ids are uuid4 hex. Deleting hides
    the conversation from its owner (``deleted_at``) but keeps the interactions the feedback loop
    learns from.
    """

    id = models.CharField(max_length=64, primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-created_at"]
        indexes = [
            models.Index(
                name="conversation_user_live_idx",
                fields=["user", "-updated_at"],
                condition=models.Q(deleted_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return self.title
