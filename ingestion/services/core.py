"""Ingestion runs, the shared upsert path and removals.

What every source goes through (``IngestRun`` bookkeeping, dry runs, the removal rules) is told
once, in the package docstring of ``ingestion.services``.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from ingestion.models import (
    IngestRun,
)
from knowhub import locks
from rag.embeddings import Embedder, TransientEmbeddingError, get_embedder
from rag.models import Chunk
from rag.services import (
    SourceError,
    UpsertResult,
    chunk_upsert,
    project_ids_for,
    source_check,
    source_delete,
    source_soft_delete,
)
from rag.tasks import check_bm25_index
from rag.units import SourceDocument

logger = logging.getLogger(__name__)

CMS_TYPES = ("pages", "imagimodels", "reflections")
ALL_TYPES = (*CMS_TYPES, "notion", "markdown", "documents", "demo")
# What each type re-indexes, in an operator's words (the admin's reindex form shows them).
TYPE_HELP = {
    "pages": "Course pages written in this admin (Courses → Pages) with their content blocks.",
    "imagimodels": "Imagimodels — the layered concept pictures written in this admin.",
    "reflections": "Learners' reflections saved on course pages.",
    "notion": "Notion pages: pushed notes rebuilt from their last delivery, and a pull of the shared "
    "databases when NOTION_TOKEN is set.",
    "markdown": "Markdown and Logseq folders that sync_markdown indexed before (listed under Source roots).",
    "documents": "Documents posted to the API or uploaded, and the folders ingest_documents indexed before "
    "(meeting transcripts, PDFs, Word and text files).",
    "demo": "The demo corpus of load_demo — team handbook, engineering notes and meeting notes (only what "
    "was loaded; nothing is added).",
}
NOTION_COLLECTION = "notion"
# Version of how this module shapes sources (and how rag.chunking cuts them): bump to make every
# folder sync redo every file.
SHAPE_VERSION = "3"
_FLUSH_SECONDS = 1.0
_UPSERT_BATCH_DOCS = 32


class IngestError(ValueError):
    """A request for a run that cannot be done as asked (unknown type, missing folder…).

    ``code`` is the ``error`` an API answers it with."""

    code = "invalid"


class UnknownProject(IngestError):
    """A project slug that does not exist (the API answers 404)."""

    code = "unknown_project"


class AccessWidening(IngestError):
    """A delivery asking for a wider audience than its source's setting allows."""

    code = "access_widening"


class InvalidAccess(IngestError):
    """A visibility and project that do not go together (a public page in a project…)."""

    code = "invalid_access"


# --- run recording ------------------------------------------------------------------------------


def _storable(text: str) -> str:
    """A failure report must be storable even when what failed was a name PostgreSQL refuses."""
    return text.replace("\x00", "\\0").encode("utf-8", "backslashreplace").decode("utf-8")


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
            self.run.errors.append({"source": _storable(source), "error": _storable(str(error)[:2000])})
        self.flush()

    def flush(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self.run.pk and (force or now - self._last >= _FLUSH_SECONDS):
            self._last = now
            self.run.heartbeat_at = timezone.now()
            self.run.save(update_fields=[*IngestRun.COUNTS, "total", "errors", "heartbeat_at", "updated_at"])


def run_create(
    *, source: str, types: Iterable[str] = (), since: dt.datetime | None = None, dry_run: bool = False,
    prune: bool = False, options: dict | None = None, user=None,
) -> IngestRun:  # fmt: skip
    """A queued run row: what the API and admin hand to the worker."""
    return IngestRun.objects.create(
        source=source, types=list(types), since=since, dry_run=dry_run, prune=prune,
        options=options or {}, triggered_by=user if getattr(user, "pk", None) else None,
    )  # fmt: skip


def this_worker() -> str:
    """``host:pid`` of this process, as recorded on the runs it executes."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _Heartbeat(threading.Thread):
    """Stamps ``heartbeat_at`` on a running run every few seconds from a thread of its own, so a
    long embedding batch (no count to flush for minutes) still shows the process is alive, and
    a process that dies stops stamping."""

    def __init__(self, run_id: int, interval: float):
        super().__init__(name=f"ingest-run-{run_id}-heartbeat", daemon=True)
        self.run_id, self.interval = run_id, interval
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                try:
                    IngestRun.objects.filter(pk=self.run_id, status=IngestRun.Status.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except Exception as exc:  # a database blip must not kill the run it watches
                    logger.warning("ingest run %s: heartbeat failed: %s", self.run_id, exc)
        finally:
            connection.close()  # this thread's own connection


class Running:
    """Context manager: mark a run running (with a heartbeat), then done (or failed with the
    exception) + duration. Every service executes its run as ``with Running(run) as recorder:``."""

    def __init__(self, run: IngestRun):
        self.run = run
        self.recorder = RunRecorder(run)
        self._t0 = 0.0
        self._heartbeat: _Heartbeat | None = None

    def __enter__(self) -> RunRecorder:
        self._t0 = time.monotonic()
        self.run.status = IngestRun.Status.RUNNING
        self.run.started_at = self.run.heartbeat_at = timezone.now()
        self.run.worker = this_worker()
        self.run.finished_at = None
        self.run.save(update_fields=["status", "started_at", "heartbeat_at", "worker", "finished_at", "updated_at"])
        if self.run.pk:
            self._heartbeat = _Heartbeat(self.run.pk, settings.KNOWHUB_RUN_HEARTBEAT_SECONDS)
            self._heartbeat.start()
        return self.recorder

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._heartbeat is not None:
            self._heartbeat.stopped.set()
            self._heartbeat.join(timeout=10)
        run = self.run
        run.finished_at = run.heartbeat_at = timezone.now()
        run.duration_ms = int((time.monotonic() - self._t0) * 1000)
        if exc is None:
            run.status = IngestRun.Status.DONE
        else:
            run.status = IngestRun.Status.FAILED
            run.message = f"{type(exc).__name__}: {exc}"[:4000]
            logger.error("ingest run %s failed: %s", run.pk, run.message)
        run.save()
        if not run.dry_run and (run.updated or run.deleted):
            # The keyword index keeps counting replaced and deleted chunks until it is rebuilt.
            transaction.on_commit(check_bm25_index.delay, robust=True)
        return False


def source_lock_key(*name: str) -> str:
    """The advisory-lock key of one source route; a transaction may take the same lock
    (``pg_advisory_xact_lock``) for a short write that must not interleave with a sync."""
    return "\x1f".join(("knowhub-ingest", *name))


@contextmanager
def source_lock(*name: str):
    """Hold the lock of one source route (a folder, a Notion page) while syncing it.

    Workers that ingest the same source at once (two reindexes, a reindex and a webhook delivery
    of the same page) would otherwise interleave: both create the folder's root, both record the
    state of a file, or an older version lands after a newer one. The second waits here and then
    finds the first one's work done. A PostgreSQL advisory lock at session level, because a sync
    spans many transactions; a process that dies releases it with its connection. The per-source
    transaction lock of ``chunk_upsert`` is taken inside it, never the other way round."""
    with connection.cursor() as cursor:
        key = locks.lock_key(cursor, source_lock_key(*name))
        locks.session_lock(cursor, key)
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                locks.session_unlock(cursor, key)
        except DatabaseError:  # the connection went away, and its lock with it
            logger.warning("could not release the ingest lock %r (connection lost)", name)


def run_or_create(run: IngestRun | None, **create_kwargs) -> IngestRun:
    """The queued ``run`` a worker was handed, or, when called directly, a new one made by
    ``run_create(**create_kwargs)``."""
    return run if run is not None else run_create(**create_kwargs)


# --- the one path to the index ------------------------------------------------------------------


def _label(doc: SourceDocument) -> str:
    return ":".join(doc.key)


def index_documents(
    *, documents: list[SourceDocument], recorder: RunRecorder | None = None, dry_run: bool = False,
    embedder: Embedder | None = None, raise_transient: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[SourceDocument]:  # fmt: skip
    """Upsert ``documents`` through ``chunk_upsert``; return those stored (or, dry, that would be).

    Documents that cannot be stored as given (bad visibility, unknown project…) are recorded as
    failed and skipped. A batch whose upsert fails is retried one document at a time so one bad
    document never takes its neighbours down. ``raise_transient`` lets a Celery task retry a
    provider outage instead of recording every document as failed. A dry run takes the same
    path with ``chunk_upsert(dry_run=True)``: the counts the real run would record, no writes.
    """
    embedder = embedder or get_embedder()
    recorder = recorder or RunRecorder(IngestRun())
    valid: list[SourceDocument] = []
    project_ids = project_ids_for(documents)
    for doc in documents:
        try:
            source_check(doc, project_ids)
        except SourceError as exc:
            recorder.fail(_label(doc), str(exc))
        else:
            valid.append(doc)

    stored: list[SourceDocument] = []
    for start in range(0, len(valid), _UPSERT_BATCH_DOCS):
        batch = valid[start : start + _UPSERT_BATCH_DOCS]
        try:
            recorder.add(chunk_upsert(documents=batch, embedder=embedder, dry_run=dry_run))
            stored.extend(batch)
        except TransientEmbeddingError:
            if raise_transient:
                raise
            _one_by_one(batch, recorder, embedder, stored, dry_run=dry_run)
        except Exception:
            logger.exception("upsert of a batch of %d documents failed; retrying one by one", len(batch))
            _one_by_one(batch, recorder, embedder, stored, dry_run=dry_run)
        if progress:
            progress(len(batch))
    return stored


def _one_by_one(
    batch: list[SourceDocument], recorder: RunRecorder, embedder: Embedder, stored: list, *, dry_run: bool,
) -> None:  # fmt: skip
    for doc in batch:
        try:
            recorder.add(chunk_upsert(documents=[doc], embedder=embedder, dry_run=dry_run))
            stored.append(doc)
        except Exception as exc:
            recorder.fail(_label(doc), f"{type(exc).__name__}: {exc}")


def live_source_ids(collection: str, source_type: str | None = None) -> set[str]:
    """Source ids of ``collection`` (of one ``source_type``) that have chunks in search."""
    qs = Chunk.objects.filter(collection=collection, deleted_at__isnull=True)
    if source_type:
        qs = qs.filter(source_type=source_type)
    return set(qs.values_list("source_id", flat=True).distinct())


def sources_remove(
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
