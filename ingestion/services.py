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
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ingestion import shapers
from ingestion.models import (
    Imagimodel,
    IngestedDocument,
    IngestRun,
    NotionDelivery,
    NotionSyncState,
    Page,
    Reflection,
    SourceRoot,
    SourceState,
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


# --- admin-managed content ----------------------------------------------------------------------


@dataclass(frozen=True)
class CmsKind:
    name: str
    model: type
    collection: str
    source_type: str
    shape: Callable
    published_only: bool


CMS = {
    "pages": CmsKind("pages", Page, shapers.COURSE_COLLECTION, shapers.PAGE_TYPE, shapers.page_document, True),
    "imagimodels": CmsKind(
        "imagimodels", Imagimodel, shapers.MNEMONIC_COLLECTION, shapers.IMAGIMODEL_TYPE, shapers.imagimodel_document, True
    ),
    "reflections": CmsKind(
        "reflections", Reflection, shapers.REFLECTION_COLLECTION, shapers.REFLECTION_TYPE,
        shapers.reflection_document, False,
    ),  # fmt: skip
}


def _cms_queryset(kind: CmsKind):
    if kind.name == "pages":
        return Page.objects.select_related("subchapter__chapter__course").prefetch_related("blocks")
    if kind.name == "imagimodels":
        return Imagimodel.objects.select_related("course").prefetch_related("layers", "zones")
    return Reflection.objects.select_related("page__subchapter__chapter__course")


def _changed_since(kind: CmsKind, since: dt.datetime) -> Q:
    if kind.name == "pages":
        return (
            Q(updated_at__gte=since) | Q(blocks__updated_at__gte=since) | Q(subchapter__updated_at__gte=since)
            | Q(subchapter__chapter__updated_at__gte=since) | Q(subchapter__chapter__course__updated_at__gte=since)
        )  # fmt: skip
    if kind.name == "imagimodels":
        return (
            Q(updated_at__gte=since) | Q(layers__updated_at__gte=since) | Q(zones__updated_at__gte=since)
            | Q(course__updated_at__gte=since)
        )  # fmt: skip
    return Q(updated_at__gte=since)


def _is_published(kind: CmsKind, obj) -> bool:
    if not kind.published_only:
        return True
    if kind.name == "pages":
        course = obj.subchapter.chapter.course
        return obj.is_published and course.is_published
    return obj.is_published


def sync_cms(
    *, kind: str, recorder: RunRecorder, ids: list[int] | None = None, since: dt.datetime | None = None,
    dry_run: bool = False, prune: bool = False, embedder: Embedder | None = None, raise_transient: bool = False,
    progress: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    """Index published objects of one CMS kind; take unpublished and vanished ones out of search.

    With ``ids`` (an admin save or delete), ids that no longer exist are deleted outright.
    Without, the whole kind is reconciled: unpublished and vanished objects are soft-deleted,
    or deleted for good with ``prune``.
    """
    spec = CMS[kind]
    qs = _cms_queryset(spec)
    if ids is not None:
        qs = qs.filter(pk__in=ids)
    if since is not None:
        qs = qs.filter(_changed_since(spec, since)).distinct()
    documents: list[SourceDocument] = []
    hidden: list[str] = []
    seen: set[str] = set()
    objects = list(qs)
    recorder.count(total=len(objects))
    for obj in objects:
        seen.add(str(obj.pk))
        recorder.count(sources=1)
        if not _is_published(spec, obj):
            hidden.append(str(obj.pk))
            continue
        try:
            doc = spec.shape(obj)
        except Exception as exc:
            logger.exception("could not shape %s %s", kind, obj.pk)
            recorder.fail(f"{spec.collection}:{spec.source_type}:{obj.pk}", f"{type(exc).__name__}: {exc}")
            continue
        documents.append(doc)
    index_documents(
        documents=documents, recorder=recorder, dry_run=dry_run, embedder=embedder,
        raise_transient=raise_transient, progress=progress,
    )  # fmt: skip
    _remove(
        collection=spec.collection, source_type=spec.source_type, source_ids=hidden, hard=prune,
        dry_run=dry_run, recorder=recorder,
    )  # fmt: skip
    if ids is not None:
        gone = [str(i) for i in ids if str(i) not in seen and not spec.model.objects.filter(pk=i).exists()]
        _remove(
            collection=spec.collection, source_type=spec.source_type, source_ids=gone, hard=True,
            dry_run=dry_run, recorder=recorder,
        )  # fmt: skip
    elif since is None:
        existing = {str(pk) for pk in spec.model.objects.values_list("pk", flat=True)}
        orphans = sorted(_live_source_ids(spec.collection, spec.source_type) - existing)
        if prune:
            orphans = sorted(
                set(Chunk.objects.filter(collection=spec.collection, source_type=spec.source_type)
                    .values_list("source_id", flat=True).distinct()) - existing
            )  # fmt: skip
        _remove(
            collection=spec.collection, source_type=spec.source_type, source_ids=orphans, hard=prune,
            dry_run=dry_run, recorder=recorder,
        )  # fmt: skip


def cms_reindex_objects(
    *, kind: str, ids: list[int], embedder: Embedder | None = None, raise_transient: bool = False,
) -> IngestRun:  # fmt: skip
    """Re-index a few CMS objects (after an admin save/delete): a small recorded run."""
    run = run_create(source="admin", types=[kind], options={"ids": ids})
    with _Running(run) as recorder:
        sync_cms(kind=kind, recorder=recorder, ids=ids, embedder=embedder, raise_transient=raise_transient)
    return run


def page_ids_for(obj) -> list[int]:
    """The pages whose chunks depend on a course, chapter, subchapter or page (breadcrumb, domain)."""
    from ingestion.models import Chapter, Course, Subchapter

    if isinstance(obj, Page):
        return [obj.pk]
    if isinstance(obj, Subchapter):
        return list(obj.pages.values_list("pk", flat=True))
    if isinstance(obj, Chapter):
        return list(Page.objects.filter(subchapter__chapter=obj).values_list("pk", flat=True))
    if isinstance(obj, Course):
        return list(Page.objects.filter(subchapter__chapter__course=obj).values_list("pk", flat=True))
    return []


def cms_targets(obj) -> list[tuple[str, list[int]]]:
    """(kind, ids) to re-index when ``obj`` is saved or deleted in the admin."""
    from ingestion.models import Course

    targets: list[tuple[str, list[int]]] = []
    pages = page_ids_for(obj)
    if pages:
        targets.append(("pages", pages))
    if isinstance(obj, Imagimodel):
        targets.append(("imagimodels", [obj.pk]))
    if isinstance(obj, Course):
        model_ids = list(Imagimodel.objects.filter(course=obj).values_list("pk", flat=True))
        if model_ids:
            targets.append(("imagimodels", model_ids))
    if isinstance(obj, Reflection):
        targets.append(("reflections", [obj.pk]))
    if isinstance(obj, Page):
        reflection_ids = list(obj.reflections.values_list("pk", flat=True))
        if reflection_ids:
            targets.append(("reflections", reflection_ids))
    return targets


def cms_enqueue(targets: list[tuple[str, list[int]]]) -> None:
    """Queue re-indexing of ``targets`` once the current transaction commits."""
    from ingestion.tasks import reindex_objects

    for kind, ids in targets:
        if ids:
            transaction.on_commit(lambda k=kind, i=list(ids): reindex_objects.delay(k, i), robust=True)


# --- sources with fingerprints (folders, Notion pull) -------------------------------------------


@dataclass
class Candidate:
    """One source object a sync found: its document or why it could not be read."""

    label: str  # what errors name: a path or a page id; equals the document's source_id
    fingerprint: str
    document: SourceDocument | None = None
    error: str | None = None
    remote_version: str = ""
    modified: dt.datetime | None = None


def _state_fingerprint(parser_fingerprint: str, embedder: Embedder) -> str:
    """The parser's fingerprint plus everything else that changes the stored chunks."""
    raw = "\x1f".join([
        parser_fingerprint, SHAPE_VERSION, str(settings.KNOWHUB_CHUNK_SIZE), str(settings.KNOWHUB_CHUNK_OVERLAP),
        embedder.name,
    ])  # fmt: skip
    return hashlib.sha256(raw.encode()).hexdigest()


def _document_fingerprint(doc: SourceDocument) -> str:
    """A sha256 of everything a document says (for sources whose parser gives none)."""
    payload = {
        "key": doc.key, "visibility": doc.visibility, "project": doc.project, "owner": doc.owner_hash,
        "author": doc.author_hash, "pii": doc.pii_level, "size": doc.chunk_size, "overlap": doc.chunk_overlap,
        "units": [
            [u.unit_anchor, u.title, u.breadcrumb, u.url, u.domain, u.concepts, u.mnemonic_tags, u.code_languages,
             u.has_image, u.date.isoformat() if u.date else None, u.metadata, u.content]
            for u in doc.units
        ],
    }  # fmt: skip
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def sync_candidates(
    *, candidates: list[Candidate], states: dict[str, SourceState], recorder: RunRecorder, root: SourceRoot | None,
    dry_run: bool, force: bool, since: dt.datetime | None = None, embedder: Embedder,
    progress: Callable[[int], None] | None = None,
) -> set[str]:  # fmt: skip
    """Upsert candidates whose fingerprint changed; record the new fingerprints. Returns labels seen.

    ``states`` maps label → the ``SourceState`` of the last successful sync.
    """
    changed: list[tuple[Candidate, str]] = []
    seen: set[str] = set()
    for cand in candidates:
        seen.add(cand.label)
        recorder.count(sources=1)
        if cand.error or cand.document is None:
            recorder.fail(cand.label, cand.error or "no document")
            if progress:
                progress(1)
            continue
        fingerprint = _state_fingerprint(cand.fingerprint or _document_fingerprint(cand.document), embedder)
        state = states.get(cand.label)
        if state is not None and state.source_type != cand.document.source_type:
            state = None  # e.g. a page that became a journal: a new source
        recent = since is None or cand.modified is None or cand.modified >= since
        if not force and state is not None and (state.fingerprint == fingerprint or not recent):
            recorder.count(skipped=1)
            if progress:
                progress(1)
            continue
        changed.append((cand, fingerprint))
    docs = [c.document for c, _ in changed]
    stored = index_documents(documents=docs, recorder=recorder, dry_run=dry_run, embedder=embedder, progress=progress)
    if dry_run:
        return seen
    stored_keys = {d.key for d in stored}
    for cand, fingerprint in changed:
        doc = cand.document
        if doc.key not in stored_keys:
            continue
        old = states.get(cand.label)
        if old is not None and old.source_type != doc.source_type:
            # The same file now yields another source type: drop what the old one stored.
            source_delete(collection=old.collection, source_type=old.source_type, source_ids=[old.source_id])
            old.delete()
        SourceState.objects.update_or_create(
            collection=doc.collection, source_type=doc.source_type, source_id=doc.source_id,
            defaults={
                "root": root, "fingerprint": fingerprint, "remote_version": cand.remote_version,
                "units": len(doc.units),
            },
        )  # fmt: skip
    return seen


def _states_for(
    *, collection: str | None = None, root: SourceRoot | None = None, source_types: Iterable[str] | None = None,
) -> dict[str, SourceState]:  # fmt: skip
    qs = SourceState.objects.all()
    if collection is not None:
        qs = qs.filter(collection=collection)
    if root is not None:
        qs = qs.filter(root=root)
    if source_types is not None:
        qs = qs.filter(source_type__in=list(source_types))
    return {s.source_id: s for s in qs}


def _drop_states(
    *, states: list[SourceState], hard: bool, dry_run: bool, recorder: RunRecorder,
) -> None:  # fmt: skip
    """Remove the chunks of sources a sync no longer finds, then forget their state (if hard)."""
    by_type: dict[tuple[str, str], list[str]] = {}
    for state in states:
        by_type.setdefault((state.collection, state.source_type), []).append(state.source_id)
    for (collection, source_type), ids in by_type.items():
        _remove(
            collection=collection, source_type=source_type, source_ids=ids, hard=hard, dry_run=dry_run,
            recorder=recorder,
        )  # fmt: skip
    if hard and not dry_run:
        SourceState.objects.filter(pk__in=[s.pk for s in states]).delete()


# --- Logseq / markdown folders ------------------------------------------------------------------


def _file_mtime(root: Path, rel: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromtimestamp((root / rel).stat().st_mtime, tz=dt.UTC)
    except OSError:
        return None


def sync_markdown(
    *, path: str | Path, fmt: str = "logseq", collection: str | None = None, project: str | None = None,
    visibility: str = "public", since: dt.datetime | None = None, dry_run: bool = False, prune: bool = False,
    force: bool = False, run: IngestRun | None = None, embedder: Embedder | None = None,
    progress_factory: Callable[[int], Callable[[int], None]] | None = None,
) -> IngestRun:  # fmt: skip
    """Sync a Logseq graph or a folder of markdown notes; only changed files are re-done.

    Files that cannot be parsed (``.org``, unreadable bytes) are recorded as failed and keep
    whatever they had indexed before; files that are gone have their chunks deleted.
    """
    from ingestion.sources.logseq import parse_graph

    root_path = Path(path).expanduser().resolve()
    if not root_path.is_dir():
        raise IngestError(f"{root_path} is not a folder")
    if fmt not in ("logseq", "markdown"):
        raise IngestError(f"unknown format {fmt!r}: expected 'logseq' or 'markdown'")
    collection = collection or fmt
    if project and not Project.objects.filter(slug=project).exists():
        raise IngestError(f"unknown project {project!r}")
    embedder = embedder or get_embedder()
    run = _start(
        run, source="sync_markdown", types=["markdown"], since=since, dry_run=dry_run, prune=prune,
        options={"path": str(root_path), "format": fmt, "collection": collection, "project": project},
    )  # fmt: skip
    with _Running(run) as recorder:
        root = SourceRoot.objects.filter(kind=SourceRoot.Kind.MARKDOWN, path=str(root_path), collection=collection).first()
        options = {"format": fmt, "project": project, "visibility": visibility}
        if root is None and not dry_run:
            root = SourceRoot.objects.create(
                kind=SourceRoot.Kind.MARKDOWN, path=str(root_path), collection=collection, options=options
            )
        parsed = parse_graph(root_path, fmt=fmt, collection=collection, project=project, visibility=visibility)
        recorder.count(total=len(parsed))
        candidates = [
            Candidate(
                label=p.path, fingerprint=p.fingerprint, document=p.document, error=p.error,
                modified=_file_mtime(root_path, p.path),
            )
            for p in parsed
        ]  # fmt: skip
        states = _states_for(collection=collection, root=root) if root is not None else {}
        progress = progress_factory(len(candidates)) if progress_factory else None
        seen = sync_candidates(
            candidates=candidates, states=states, recorder=recorder, root=root, dry_run=dry_run, force=force,
            since=since, embedder=embedder, progress=progress,
        )  # fmt: skip
        gone = [s for label, s in states.items() if label not in seen]
        _drop_states(states=gone, hard=True, dry_run=dry_run, recorder=recorder)
        if root is not None and not dry_run:
            root.options = options
            root.last_synced_at = timezone.now()
            root.save(update_fields=["options", "last_synced_at", "updated_at"])
    return run


# --- Notion: pushed (n8n webhook) ---------------------------------------------------------------


def notion_webhook_secret() -> str:
    return getattr(settings, "KNOWHUB_NOTION_WEBHOOK_SECRET", "") or ""


@dataclass
class DeliveryReceipt:
    delivery: NotionDelivery
    replay: bool


def notion_delivery_receive(*, body: bytes, page_id: str) -> DeliveryReceipt:
    """Store a validated webhook body, then queue its processing once the row is committed.

    The sha256 of the raw body is unique: a replayed delivery returns the row it created the
    first time and queues nothing (unless that one failed), so replays change nothing.
    """
    from ingestion.tasks import process_notion_delivery

    digest = hashlib.sha256(body).hexdigest()
    with transaction.atomic():
        delivery, created = NotionDelivery.objects.get_or_create(
            body_hash=digest, defaults={"body": body.decode("utf-8"), "page_id": page_id[:200]}
        )
        if not created:
            NotionDelivery.objects.filter(pk=delivery.pk).update(replays=delivery.replays + 1)
        if created or delivery.status == NotionDelivery.Status.FAILED:
            # robust: a broker outage must not turn a stored delivery into a 500; the sweeper
            # (sweep_notion_deliveries) picks up whatever stayed pending.
            transaction.on_commit(lambda: process_notion_delivery.delay(delivery.pk), robust=True)
    return DeliveryReceipt(delivery=delivery, replay=not created)


def notion_delivery_process(
    *, delivery_id: int, embedder: Embedder | None = None, raise_transient: bool = False,
) -> NotionDelivery | None:  # fmt: skip
    """Index one stored delivery. Idempotent: a delivery already done is left alone, and one
    superseded by a newer delivery of the same page that is already done is not applied."""
    from ingestion.sources.notion import webhook_to_document

    with transaction.atomic():
        delivery = NotionDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status == NotionDelivery.Status.DONE:
            return delivery
        delivery.status = NotionDelivery.Status.PROCESSING
        delivery.attempts += 1
        delivery.save(update_fields=["status", "attempts", "updated_at"])
    newer_done = NotionDelivery.objects.filter(
        page_id=delivery.page_id, status=NotionDelivery.Status.DONE, received_at__gt=delivery.received_at
    ).exists()
    recorder = RunRecorder(IngestRun(source="notion_webhook"))
    error = ""
    if newer_done:
        delivery.result = {"superseded": True}
    else:
        try:
            doc = webhook_to_document(json.loads(delivery.body), collection=NOTION_COLLECTION)
        except (ValueError, TypeError) as exc:
            error = f"invalid payload: {exc}"
        else:
            try:
                index_documents(documents=[doc], recorder=recorder, embedder=embedder, raise_transient=raise_transient)
            except TransientEmbeddingError:
                NotionDelivery.objects.filter(pk=delivery.pk).update(status=NotionDelivery.Status.PENDING)
                raise
            if recorder.run.errors:
                error = "; ".join(e["error"] for e in recorder.run.errors)
            delivery.result = recorder.run.counts()
    delivery.status = NotionDelivery.Status.FAILED if error else NotionDelivery.Status.DONE
    delivery.error = error
    delivery.processed_at = timezone.now()
    delivery.save(update_fields=["status", "error", "result", "processed_at", "updated_at"])
    return delivery


def notion_deliveries_due(*, older_than: dt.timedelta = dt.timedelta(minutes=2), max_attempts: int = 5) -> list[int]:
    """Deliveries that should have been processed by now (lost task, broker outage, crash)."""
    cutoff = timezone.now() - older_than
    return list(
        NotionDelivery.objects.filter(
            Q(status=NotionDelivery.Status.PENDING) | Q(status=NotionDelivery.Status.PROCESSING)
            | Q(status=NotionDelivery.Status.FAILED, attempts__lt=max_attempts),
            updated_at__lt=cutoff,
        ).values_list("pk", flat=True)[:500]
    )  # fmt: skip


def _latest_deliveries(since: dt.datetime | None) -> list[NotionDelivery]:
    qs = NotionDelivery.objects.exclude(status=NotionDelivery.Status.FAILED, attempts__gte=5)
    if since is not None:
        qs = qs.filter(received_at__gte=since)
    latest: dict[str, NotionDelivery] = {}
    for delivery in qs.order_by("page_id", "-received_at"):
        latest.setdefault(delivery.page_id, delivery)
    return list(latest.values())


def _reindex_deliveries(
    *, recorder: RunRecorder, since: dt.datetime | None, dry_run: bool, embedder: Embedder,
) -> None:  # fmt: skip
    """Rebuild pushed Notion notes from the newest stored delivery of each page."""
    from ingestion.sources.notion import webhook_to_document

    documents = []
    for delivery in _latest_deliveries(since):
        recorder.count(sources=1, total=1)
        try:
            documents.append(webhook_to_document(json.loads(delivery.body), collection=NOTION_COLLECTION))
        except (ValueError, TypeError) as exc:
            recorder.fail(f"delivery {delivery.pk}", str(exc))
    index_documents(documents=documents, recorder=recorder, dry_run=dry_run, embedder=embedder)


# --- Notion: pulled (notion-client) -------------------------------------------------------------


def notion_client_from_settings():
    """A ``notion_client.Client`` for ``NOTION_TOKEN``, or an ``IngestError`` saying what to set."""
    token = getattr(settings, "NOTION_TOKEN", "")
    if not token:
        raise IngestError(
            "NOTION_TOKEN is not set: create an internal integration at https://www.notion.so/my-integrations, "
            "share your databases with it, and set NOTION_TOKEN (and KNOWHUB_NOTION_DATABASES)."
        )
    from notion_client import Client

    return Client(auth=token, timeout_ms=getattr(settings, "KNOWHUB_NOTION_TIMEOUT_MS", 60_000))


def notion_sync(
    *, client=None, database_ids: list[str] | None = None, full: bool = False, since: dt.datetime | None = None,
    dry_run: bool = False, prune: bool = False, run: IngestRun | None = None, embedder: Embedder | None = None,
    sleep: Callable[[float], None] = time.sleep, progress_factory: Callable[[int], Callable[[int], None]] | None = None,
) -> IngestRun:  # fmt: skip
    """Pull Notion pages; fetch blocks only of pages edited since their last sync.

    Every page of the databases (or, with none given, every page the integration sees) is
    listed — page objects are cheap, block trees are not — so a page that is no longer listed
    (deleted, archived, unshared) is known to have vanished and is soft-deleted (deleted for
    good with ``prune``). Nothing is removed unless the listing completed.
    """
    from ingestion.sources.notion import NotionPuller, page_to_document

    if database_ids is None:
        database_ids = list(getattr(settings, "KNOWHUB_NOTION_DATABASES", []) or [])
    client = client if client is not None else notion_client_from_settings()
    embedder = embedder or get_embedder()
    run = _start(
        run, source="notion_sync", types=["notion"], since=since, dry_run=dry_run, prune=prune,
        options={"databases": database_ids, "full": full},
    )  # fmt: skip
    with _Running(run) as recorder:
        puller = NotionPuller(client, sleep=sleep)
        key = ",".join(sorted(database_ids)) or "*"
        state = NotionSyncState.objects.filter(key=key).first()
        started = timezone.now()
        pages = list(puller.iter_pages(database_ids=database_ids or None, since=None))
        recorder.count(total=len(pages))
        states = _states_for(collection=NOTION_COLLECTION, source_types=["notion_page"])
        progress = progress_factory(len(pages)) if progress_factory else None
        candidates: list[Candidate] = []
        seen: set[str] = set()
        for page in pages:
            page_id = page.get("id") or ""
            seen.add(page_id)
            version = str(page.get("last_edited_time") or "")
            old = states.get(page_id)
            edited = _parse_iso(version)
            stale = since is not None and edited is not None and edited < since
            if not full and old is not None and (old.remote_version == version or stale):
                recorder.count(sources=1, skipped=1)
                if progress:
                    progress(1)
                continue
            try:
                document = page_to_document(page, puller.fetch_blocks(page_id), collection=NOTION_COLLECTION)
            except Exception as exc:  # one page failing (permissions, a 404 mid-sync) is recorded
                logger.warning("Notion page %s: %s", page_id, exc)
                candidates.append(Candidate(label=page_id, fingerprint="", error=f"{type(exc).__name__}: {exc}"))
                continue
            candidates.append(Candidate(label=page_id, fingerprint="", document=document, remote_version=version))
        sync_candidates(
            candidates=candidates, states=states, recorder=recorder, root=None, dry_run=dry_run, force=full,
            embedder=embedder, progress=progress,
        )  # fmt: skip
        if not dry_run:
            # A page whose blocks were unchanged still records its new version (no re-fetch next time).
            for cand in candidates:
                if cand.document is not None:
                    SourceState.objects.filter(
                        collection=NOTION_COLLECTION, source_type="notion_page", source_id=cand.label
                    ).update(remote_version=cand.remote_version)
        known = set(state.known_page_ids) if state else set()
        vanished = sorted(known - seen)
        _remove(
            collection=NOTION_COLLECTION, source_type="notion_page", source_ids=vanished, hard=prune,
            dry_run=dry_run, recorder=recorder,
        )  # fmt: skip
        if vanished and not dry_run:
            gone = SourceState.objects.filter(
                collection=NOTION_COLLECTION, source_type="notion_page", source_id__in=vanished
            )
            if prune:
                gone.delete()
            else:  # a page that comes back must be fetched and revived, whatever its version
                gone.update(fingerprint="", remote_version="")
        if not dry_run:
            NotionSyncState.objects.update_or_create(
                key=key, defaults={"last_synced_at": started, "known_page_ids": sorted(seen)}
            )
    return run


def _parse_iso(value: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


# --- reindex ------------------------------------------------------------------------------------


def normalise_types(types: Iterable[str] | None) -> list[str]:
    """``["all"]`` / empty → every type; unknown names are an ``IngestError``."""
    names = [t.strip().lower() for t in (types or []) if t and t.strip()]
    unknown = sorted(set(names) - {*ALL_TYPES, "all"})
    if unknown:
        raise IngestError(f"unknown type(s): {', '.join(unknown)}; expected {', '.join((*ALL_TYPES, 'all'))}")
    if not names or "all" in names:
        return list(ALL_TYPES)
    return [t for t in ALL_TYPES if t in names]


def _reset(run: IngestRun) -> None:
    for name in IngestRun.COUNTS:
        setattr(run, name, 0)
    run.total = 0
    run.errors = []
    run.message = ""


def reindex(
    *, types: Iterable[str] | None = None, since: dt.datetime | None = None, dry_run: bool = False,
    prune: bool = False, run: IngestRun | None = None, embedder: Embedder | None = None,
    notion_client=None, progress_factory: Callable[[int], Callable[[int], None]] | None = None,
) -> IngestRun:  # fmt: skip
    """Rebuild the chosen sources against the index, recording everything on one run.

    Unlike the folder and Notion syncs, a reindex does not trust fingerprints: every source is
    shaped again and compared with its stored chunks (which ``chunk_upsert`` does cheaply —
    nothing unchanged is re-embedded). ``markdown`` and ``documents`` re-read every folder a
    command synced before; ``notion`` pulls (when ``NOTION_TOKEN`` is set) and rebuilds pushed
    notes from their newest stored delivery; ``documents`` also rebuilds documents POSTed to the
    API from their stored payloads.
    """
    chosen = normalise_types(types)
    embedder = embedder or get_embedder()
    if run is None:
        run = run_create(source="reindex", types=chosen, since=since, dry_run=dry_run, prune=prune)
    elif run.status != IngestRun.Status.QUEUED:
        _reset(run)
    run.types = chosen
    with _Running(run) as recorder:
        for kind in chosen:
            logger.info("reindex %s (run %s, dry_run=%s)", kind, run.pk, dry_run)
            progress = progress_factory(0) if progress_factory else None
            if kind in CMS_TYPES:
                sync_cms(
                    kind=kind, recorder=recorder, since=since, dry_run=dry_run, prune=prune, embedder=embedder,
                    progress=progress,
                )  # fmt: skip
            elif kind == "notion":
                _reindex_deliveries(recorder=recorder, since=since, dry_run=dry_run, embedder=embedder)
                if notion_client is not None or getattr(settings, "NOTION_TOKEN", ""):
                    _nested(run, recorder, lambda r: notion_sync(
                        client=notion_client, full=since is None, since=since, dry_run=dry_run, prune=prune,
                        run=r, embedder=embedder,
                    ))  # fmt: skip
            elif kind == "markdown":
                for root in SourceRoot.objects.filter(kind=SourceRoot.Kind.MARKDOWN):
                    if not Path(root.path).is_dir():
                        recorder.fail(root.path, "folder no longer exists; its chunks are kept (remove the root to drop them)")
                        continue
                    _nested(run, recorder, lambda r, root=root: sync_markdown(
                        path=root.path, fmt=root.options.get("format", "logseq"), collection=root.collection,
                        project=root.options.get("project"), visibility=root.options.get("visibility", "public"),
                        since=since, dry_run=dry_run, prune=prune, force=True, run=r, embedder=embedder,
                    ))  # fmt: skip
            elif kind == "documents":
                _reindex_posted_documents(recorder=recorder, since=since, dry_run=dry_run, embedder=embedder)
                for root in SourceRoot.objects.filter(kind=SourceRoot.Kind.DOCUMENTS):
                    if not Path(root.path).exists():
                        recorder.fail(root.path, "path no longer exists; its chunks are kept")
                        continue
                    _nested(run, recorder, lambda r, root=root: ingest_document_paths(
                        paths=[root.path], since=since, dry_run=dry_run, force=True, run=r, embedder=embedder,
                        **root.options,
                    ))  # fmt: skip
        recorder.flush(force=True)
    return run


def _nested(run: IngestRun, recorder: RunRecorder, call: Callable[[IngestRun], IngestRun]) -> None:
    """Run a sub-sync on a scratch run and fold its counts into ``run`` (one row per reindex)."""
    scratch = IngestRun(source=run.source, dry_run=run.dry_run, prune=run.prune)
    scratch.save = lambda *a, **k: None  # not recorded separately: the reindex row holds it all
    try:
        call(scratch)
    except Exception:  # recorded on the scratch run by _Running; the reindex goes on
        logger.exception("reindex step failed")
    finally:
        for name in (*IngestRun.COUNTS, "total"):
            setattr(run, name, getattr(run, name) + getattr(scratch, name))
        run.errors.extend(scratch.errors)
        if scratch.status == IngestRun.Status.FAILED and scratch.message:
            run.errors.append({"source": scratch.options.get("path", scratch.source), "error": scratch.message})
            run.failed += 1
        recorder.flush(force=True)


def reindex_enqueue(*, run: IngestRun) -> None:
    """Queue a run once the transaction that created it commits; say so on the run if the broker
    cannot take it (the run would otherwise look queued forever)."""
    from ingestion.tasks import run_reindex

    def send() -> None:
        try:
            run_reindex.delay(run.pk)
        except Exception as exc:  # broker down: record it where the admin and API show it
            logger.error("could not queue reindex run %s: %s", run.pk, exc)
            IngestRun.objects.filter(pk=run.pk, status=IngestRun.Status.QUEUED).update(
                status=IngestRun.Status.FAILED, message=f"could not queue the run (broker unavailable?): {exc}",
                finished_at=timezone.now(),
            )  # fmt: skip

    transaction.on_commit(send)


# --- documents and meeting notes ----------------------------------------------------------------

DOCUMENT_EXTENSIONS = {".json", ".md", ".markdown", ".txt", ".text"}


@dataclass
class ParsedPayload:
    payload: dict
    document: SourceDocument


def documents_from_payloads(
    *, payloads: list[dict], project: str | None = None, visibility: str = "public", owner_hash: str = "",
) -> list[ParsedPayload]:  # fmt: skip
    """Validate every posted document before anything is stored: one bad document → ``IngestError``
    naming it, and nothing of the request is written."""
    from ingestion.sources.documents import parse_document_payload

    limit = settings.KNOWHUB_INGEST_MAX_CHARS
    if project and not Project.objects.filter(slug=project).exists():
        raise IngestError(f"unknown project {project!r}")
    out: list[ParsedPayload] = []
    keys: set[tuple[str, str, str]] = set()
    for i, payload in enumerate(payloads):
        try:
            doc = parse_document_payload(payload)
        except ValueError as exc:
            raise IngestError(f"documents[{i}]: {exc}") from exc
        size = sum(len(u.content) for u in doc.units)
        if size > limit:
            raise IngestError(f"documents[{i}]: {size} characters; at most {limit} per document")
        if doc.key in keys:
            raise IngestError(f"documents[{i}]: id {doc.source_id!r} appears twice in this request")
        keys.add(doc.key)
        doc.project, doc.visibility, doc.owner_hash = project, visibility, owner_hash
        try:
            plan_rows(doc, _project_ids([doc]))
        except SourceError as exc:
            raise IngestError(f"documents[{i}]: {exc}") from exc
        out.append(ParsedPayload(payload=payload, document=doc))
    return out


def documents_ingest(
    *, parsed: list[ParsedPayload], user=None, dry_run: bool = False, embedder: Embedder | None = None,
) -> IngestRun:  # fmt: skip
    """Index posted documents and keep their payloads (so ``reindex documents`` can rebuild them)."""
    run = run_create(source="ingest_documents_api", types=["documents"], dry_run=dry_run, user=user)
    with _Running(run) as recorder:
        recorder.count(total=len(parsed), sources=len(parsed))
        stored = index_documents(
            documents=[p.document for p in parsed], recorder=recorder, dry_run=dry_run, embedder=embedder
        )
        if not dry_run:
            stored_keys = {d.key for d in stored}
            for item in parsed:
                doc = item.document
                if doc.key not in stored_keys:
                    continue
                payload = {
                    "payload": item.payload, "project": doc.project, "visibility": doc.visibility,
                    "owner_hash": doc.owner_hash,
                }  # fmt: skip
                IngestedDocument.objects.update_or_create(
                    collection=doc.collection, source_type=doc.source_type, source_id=doc.source_id,
                    defaults={
                        "payload": payload,
                        "payload_hash": hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest(),
                    },
                )  # fmt: skip
    return run


def _reindex_posted_documents(
    *, recorder: RunRecorder, since: dt.datetime | None, dry_run: bool, embedder: Embedder,
) -> None:  # fmt: skip
    from ingestion.sources.documents import parse_document_payload

    qs = IngestedDocument.objects.all()
    if since is not None:
        qs = qs.filter(updated_at__gte=since)
    documents = []
    for item in qs:
        recorder.count(sources=1, total=1)
        stored = item.payload
        try:
            doc = parse_document_payload(stored["payload"])
        except (ValueError, KeyError, TypeError) as exc:
            recorder.fail(f"{item.collection}:{item.source_id}", str(exc))
            continue
        doc.project, doc.visibility, doc.owner_hash = stored.get("project"), stored.get("visibility", "public"), stored.get("owner_hash", "")
        documents.append(doc)
    index_documents(documents=documents, recorder=recorder, dry_run=dry_run, embedder=embedder)


def _first_heading(text: str) -> str:
    for line in text.splitlines()[:50]:
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _document_candidate(path: Path, source_id: str, options: dict) -> Candidate:
    """One file → a candidate: QMSum JSON, a document-payload JSON, markdown or plain text."""
    from ingestion.sources import documents as parsers

    suffix = path.suffix.lower()
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Candidate(label=source_id, fingerprint="", error=str(exc))
    fingerprint = hashlib.sha256(data + json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()
    common = {
        "date": options.get("date") or None, "entity": options.get("entity") or "",
        "tags": options.get("tags") or (), "project": options.get("project"),
        "visibility": options.get("visibility") or "public",
    }  # fmt: skip
    people = options.get("people") or None
    collection = options.get("collection") or None
    try:
        if suffix not in DOCUMENT_EXTENSIONS:
            raise ValueError(f"unsupported file type {suffix or '(none)'}: expected {', '.join(sorted(DOCUMENT_EXTENSIONS))}")
        if suffix == ".json":
            try:
                payload = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ValueError(f"not valid UTF-8 JSON: {exc}") from exc
            if isinstance(payload, dict) and "meeting_transcripts" in payload:
                doc = parsers.qmsum_to_document(
                    path, source_id=source_id, people=people, collection=collection or "meetings", **common
                )
            else:
                doc = parsers.parse_document_payload(payload)
                doc.project, doc.visibility = common["project"], common["visibility"]
        else:
            text = data.decode("utf-8")
            fmt = "markdown" if suffix in (".md", ".markdown") else "text"
            title = _first_heading(text) or path.stem.replace("_", " ").replace("-", " ").strip()
            doc = parsers.text_to_document(
                source_id=source_id, text=text, title=title, fmt=fmt, people=people or (),
                collection=collection or "documents", **common,
            )  # fmt: skip
    except (ValueError, UnicodeDecodeError) as exc:
        return Candidate(label=source_id, fingerprint=fingerprint, error=str(exc))
    modified = dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC)
    return Candidate(label=source_id, fingerprint=fingerprint, document=doc, modified=modified)


def _document_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )  # fmt: skip


def ingest_document_paths(
    *, paths: list[str | Path], collection: str | None = None, date: str | None = None, entity: str = "",
    people: Iterable[str] = (), tags: Iterable[str] = (), project: str | None = None, visibility: str = "public",
    since: dt.datetime | None = None, dry_run: bool = False, prune: bool = False, force: bool = False,
    run: IngestRun | None = None, embedder: Embedder | None = None,
    progress_factory: Callable[[int], Callable[[int], None]] | None = None,
) -> IngestRun:  # fmt: skip
    """Index documents from files or folders (QMSum meetings, payload JSON, markdown, text).

    Only files whose bytes (or the options applied to them) changed are re-done; a folder's
    files that are gone have their chunks deleted. ``source_id`` is the path inside the folder
    without its extension (``Bed002`` for ``qmsum-val/Bed002.json``).
    """
    if project and not Project.objects.filter(slug=project).exists():
        raise IngestError(f"unknown project {project!r}")
    if visibility not in ("public", "restricted"):
        raise IngestError("visibility must be 'public' or 'restricted' for documents read from files")
    if visibility == "restricted" and not project:
        raise IngestError("restricted documents need --project")
    resolved = [Path(p).expanduser().resolve() for p in paths]
    for p in resolved:
        if not p.exists():
            raise IngestError(f"{p} does not exist")
    embedder = embedder or get_embedder()
    options = {
        "collection": collection, "date": date, "entity": entity, "people": list(people), "tags": list(tags),
        "project": project, "visibility": visibility,
    }  # fmt: skip
    run = _start(
        run, source="ingest_documents", types=["documents"], since=since, dry_run=dry_run, prune=prune,
        options={"paths": [str(p) for p in resolved], **options},
    )  # fmt: skip
    with _Running(run) as recorder:
        for base in resolved:
            root = SourceRoot.objects.filter(kind=SourceRoot.Kind.DOCUMENTS, path=str(base), collection=collection or "").first()
            if root is None and not dry_run:
                root = SourceRoot.objects.create(
                    kind=SourceRoot.Kind.DOCUMENTS, path=str(base), collection=collection or "", options=options
                )
            files = _document_files(base)
            recorder.count(total=len(files))
            candidates = []
            for file in files:
                rel = file.name if base.is_file() else file.relative_to(base).as_posix()
                source_id = rel.rsplit(".", 1)[0] if "." in rel else rel
                candidates.append(_document_candidate(file, source_id, options))
            states = _states_for(root=root) if root is not None else {}
            progress = progress_factory(len(candidates)) if progress_factory else None
            seen = sync_candidates(
                candidates=candidates, states=states, recorder=recorder, root=root, dry_run=dry_run, force=force,
                since=since, embedder=embedder, progress=progress,
            )  # fmt: skip
            if base.is_dir():
                gone = [s for label, s in states.items() if label not in seen]
                _drop_states(states=gone, hard=True, dry_run=dry_run, recorder=recorder)
            if root is not None and not dry_run:
                root.options = options
                root.last_synced_at = timezone.now()
                root.save(update_fields=["options", "last_synced_at", "updated_at"])
    return run
