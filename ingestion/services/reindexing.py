"""``reindex``: every source type, one recorded run."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ingestion.models import (
    IngestRun,
    SourceRoot,
)
from ingestion.services.cms import sync_cms
from ingestion.services.core import (
    ALL_TYPES,
    CMS_TYPES,
    IngestError,
    RunRecorder,
    _Running,
    run_create,
)
from ingestion.services.documents import _reindex_posted_documents, ingest_document_paths
from ingestion.services.folders import sync_markdown
from ingestion.services.notion import _reindex_deliveries, notion_sync
from rag.embeddings import Embedder, get_embedder

logger = logging.getLogger(__name__)

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
