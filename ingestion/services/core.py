"""Ingestion runs: every source → ``SourceDocument``s → ``rag.services.chunk_upsert``.

Each public function records what it did on an ``IngestRun`` (counts, per-document errors,
duration) that the admin shows while it runs. A document that fails is recorded and skipped;
the batch goes on. A dry run plans every write (compares planned chunk rows with stored ones)
and writes nothing to the index nor to the sync state.

Removal rules, the same for every source: a source that is unpublished or no longer exists is
taken out of search (soft delete: its chunks stay stored and come back when it does); with
``prune`` those chunks are deleted for good (their text stays in ``ChunkHistory``). Files a
folder sync no longer finds, and CMS objects deleted in the admin, are deleted outright.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable

from django.db.models import Q
from django.utils import timezone

from ingestion.models import (
    IngestRun,
)
from rag.embeddings import Embedder, TransientEmbeddingError, get_embedder
from rag.models import Chunk, Project
from rag.services import (
    SourceError,
    UpsertResult,
    chunk_upsert,
    plan_rows,
    source_delete,
    source_soft_delete,
)
from rag.units import SourceDocument

logger = logging.getLogger(__name__)

CMS_TYPES = ("pages", "imagimodels", "reflections")
ALL_TYPES = (*CMS_TYPES, "notion", "markdown", "documents")
NOTION_COLLECTION = "notion"
# Version of how this module shapes sources: bump to make every folder sync redo every file.
SHAPE_VERSION = "1"
_FLUSH_SECONDS = 1.0
_UPSERT_BATCH_DOCS = 32


class IngestError(ValueError):
    """A request for a run that cannot be done as asked (unknown type, missing folder…)."""


# --- run recording ------------------------------------------------------------------------------


class RunRecorder:
    """Adds counts to an ``IngestRun`` and saves them about once a second, so the admin list
    shows a long run's progress. Saves go outside any upsert transaction."""

    def __init__(self, run: IngestRun):
        self.run = run
        self._last = 0.0

    def add(self, result: UpsertResult) -> None:
        for name in ("created", "updated", "unchanged", "deleted", "embedded"):
            setattr(self.run, name, getattr(self.run, name) + getattr(result, name))
        self.flush()

    def count(self, **counts: int) -> None:
        for name, value in counts.items():
            setattr(self.run, name, getattr(self.run, name) + value)
        self.flush()

    def fail(self, source: str, error: str) -> None:
        logger.warning("ingest run %s: %s failed: %s", self.run.pk, source, error)
        self.run.failed += 1
        if len(self.run.errors) < 1000:  # a broken folder must not make the row huge
            self.run.errors.append({"source": source, "error": str(error)[:2000]})
        self.flush()

    def flush(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self.run.pk and (force or now - self._last >= _FLUSH_SECONDS):
            self._last = now
            self.run.save(update_fields=[*IngestRun.COUNTS, "total", "errors", "updated_at"])


def run_create(
    *, source: str, types: Iterable[str] = (), since: dt.datetime | None = None, dry_run: bool = False,
    prune: bool = False, options: dict | None = None, user=None,
) -> IngestRun:  # fmt: skip
    """A queued run row: what the API and admin hand to the worker."""
    return IngestRun.objects.create(
        source=source, types=list(types), since=since, dry_run=dry_run, prune=prune,
        options=options or {}, triggered_by=user if getattr(user, "pk", None) else None,
    )  # fmt: skip


class _Running:
    """Context manager: mark a run running, then done (or failed with the exception) + duration."""

    def __init__(self, run: IngestRun):
        self.run = run
        self.recorder = RunRecorder(run)
        self._t0 = 0.0

    def __enter__(self) -> RunRecorder:
        self._t0 = time.monotonic()
        self.run.status = IngestRun.Status.RUNNING
        self.run.started_at = timezone.now()
        self.run.save(update_fields=["status", "started_at", "updated_at"])
        return self.recorder

    def __exit__(self, exc_type, exc, tb) -> bool:
        run = self.run
        run.finished_at = timezone.now()
        run.duration_ms = int((time.monotonic() - self._t0) * 1000)
        if exc is None:
            run.status = IngestRun.Status.DONE
        else:
            run.status = IngestRun.Status.FAILED
            run.message = f"{type(exc).__name__}: {exc}"[:4000]
            logger.error("ingest run %s failed: %s", run.pk, run.message)
        run.save()
        return False


def _start(run: IngestRun | None, **create_kwargs) -> IngestRun:
    return run if run is not None else run_create(**create_kwargs)


# --- the one path to the index ------------------------------------------------------------------


def _project_ids(documents: Iterable[SourceDocument]) -> dict[str, int]:
    slugs = {d.project for d in documents if d.project}
    return dict(Project.objects.filter(slug__in=slugs).values_list("slug", "id")) if slugs else {}


def _source_q(keys: Iterable[tuple[str, str, str]]) -> Q:
    query = Q(pk__in=[])
    grouped: dict[tuple[str, str], list[str]] = {}
    for collection, source_type, source_id in keys:
        grouped.setdefault((collection, source_type), []).append(source_id)
    for (collection, source_type), ids in grouped.items():
        query |= Q(collection=collection, source_type=source_type, source_id__in=ids)
    return query


def plan_changes(*, documents: list[SourceDocument], embedder: Embedder | None = None) -> UpsertResult:
    """What ``chunk_upsert(documents=…)`` would do, computed without writing anything.

    Compares each planned row with the stored chunk: new → created; different text, metadata,
    ACL or embedding model, or soft-deleted → updated; surplus stored chunks → deleted.
    ``embedded`` counts the distinct texts that would be sent to the provider.
    """
    model_name = (embedder or get_embedder()).name
    result = UpsertResult()
    if not documents:
        return result
    project_ids = _project_ids(documents)
    planned = {doc.key: plan_rows(doc, project_ids) for doc in documents}
    compared = sorted({name for rows in planned.values() for row in rows for name in row})
    stored: dict[tuple, dict[str, dict]] = {}
    fields = {"chunk_uid", "deleted_at", "embedding_model", "collection", "source_type", "source_id", *compared}
    for row in Chunk.objects.filter(_source_q(planned)).values(*fields):
        stored.setdefault((row["collection"], row["source_type"], row["source_id"]), {})[row["chunk_uid"]] = row
    to_embed: set[str] = set()
    for key, rows in planned.items():
        old_rows = stored.get(key, {})
        result.sources += 1
        for row in rows:
            old = old_rows.get(row["chunk_uid"])
            if old is None:
                result.created += 1
                to_embed.add(row["content_hash"])
                continue
            needs_embedding = old["content_hash"] != row["content_hash"] or old["embedding_model"] != model_name
            if needs_embedding:
                to_embed.add(row["content_hash"])
            if needs_embedding or old["deleted_at"] is not None or any(row[n] != old[n] for n in row):
                result.updated += 1
            else:
                result.unchanged += 1
        result.deleted += len(set(old_rows) - {r["chunk_uid"] for r in rows})
    result.embedded = len(to_embed)
    return result


def _label(doc: SourceDocument) -> str:
    return ":".join(doc.key)


def index_documents(
    *, documents: list[SourceDocument], recorder: RunRecorder | None = None, dry_run: bool = False,
    embedder: Embedder | None = None, raise_transient: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[SourceDocument]:  # fmt: skip
    """Upsert ``documents`` through ``chunk_upsert``; return those that were stored.

    Documents that cannot be planned (bad visibility, unknown project…) are recorded as failed
    and skipped. A batch whose upsert fails is retried one document at a time so one bad
    document never takes its neighbours down. ``raise_transient`` lets a Celery task retry a
    provider outage instead of recording every document as failed.
    """
    embedder = embedder or get_embedder()
    recorder = recorder or RunRecorder(IngestRun())
    valid: list[SourceDocument] = []
    project_ids = _project_ids(documents)
    for doc in documents:
        try:
            plan_rows(doc, project_ids)
        except SourceError as exc:
            recorder.fail(_label(doc), str(exc))
        else:
            valid.append(doc)
    if dry_run:
        result = plan_changes(documents=valid, embedder=embedder)
        recorder.add(result)
        if progress:
            progress(len(valid))
        return valid

    stored: list[SourceDocument] = []
    for start in range(0, len(valid), _UPSERT_BATCH_DOCS):
        batch = valid[start : start + _UPSERT_BATCH_DOCS]
        try:
            recorder.add(chunk_upsert(documents=batch, embedder=embedder))
            stored.extend(batch)
        except TransientEmbeddingError:
            if raise_transient:
                raise
            _one_by_one(batch, recorder, embedder, stored)
        except Exception:
            logger.exception("upsert of a batch of %d documents failed; retrying one by one", len(batch))
            _one_by_one(batch, recorder, embedder, stored)
        if progress:
            progress(len(batch))
    return stored


def _one_by_one(batch: list[SourceDocument], recorder: RunRecorder, embedder: Embedder, stored: list) -> None:
    for doc in batch:
        try:
            recorder.add(chunk_upsert(documents=[doc], embedder=embedder))
            stored.append(doc)
        except Exception as exc:
            recorder.fail(_label(doc), f"{type(exc).__name__}: {exc}")


def _live_source_ids(collection: str, source_type: str | None = None) -> set[str]:
    qs = Chunk.objects.filter(collection=collection, deleted_at__isnull=True)
    if source_type:
        qs = qs.filter(source_type=source_type)
    return set(qs.values_list("source_id", flat=True).distinct())


def _remove(
    *, collection: str, source_type: str, source_ids: list[str], hard: bool, dry_run: bool, recorder: RunRecorder,
) -> int:  # fmt: skip
    """Take sources out of search (soft) or delete their chunks (hard); count what went."""
    if not source_ids:
        return 0
    qs = Chunk.objects.filter(collection=collection, source_type=source_type, source_id__in=source_ids)
    if not hard:
        qs = qs.filter(deleted_at__isnull=True)
    affected_sources = len(set(qs.values_list("source_id", flat=True)))
    if dry_run:
        recorder.count(deleted=qs.count(), removed=affected_sources)
        return affected_sources
    if hard:
        n = source_delete(collection=collection, source_type=source_type, source_ids=source_ids)
    else:
        n = source_soft_delete(collection=collection, source_type=source_type, source_ids=source_ids)
    recorder.count(deleted=n, removed=affected_sources)
    return affected_sources
