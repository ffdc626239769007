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
    Running,
    RunRecorder,
    run_create,
    this_worker,
)
from ingestion.services.demo_corpus import demo_corpus_reindex
from ingestion.services.documents import ingest_document_paths, posted_documents_reindex
from ingestion.services.folders import sync_markdown
from ingestion.services.notion import notion_deliveries_reindex, notion_sync
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
    API from their stored payloads; ``demo`` rebuilds the loaded demo corpus (meeting notes too).
    """
    chosen = normalise_types(types)
    embedder = embedder or get_embedder()
    if run is None:
        run = run_create(source="reindex", types=chosen, since=since, dry_run=dry_run, prune=prune)
    elif run.status != IngestRun.Status.QUEUED:
        _reset(run)
    run.types = chosen
    with Running(run) as recorder:
        for kind in chosen:
            logger.info("reindex %s (run %s, dry_run=%s)", kind, run.pk, dry_run)
            progress = progress_factory(0) if progress_factory else None
            if kind in CMS_TYPES:
                sync_cms(
                    kind=kind, recorder=recorder, since=since, dry_run=dry_run, prune=prune, embedder=embedder,
                    progress=progress,
                )  # fmt: skip
            elif kind == "notion":
                notion_deliveries_reindex(recorder=recorder, since=since, dry_run=dry_run, embedder=embedder)
                if notion_client is not None or settings.NOTION_TOKEN:
                    _nested(run, recorder, lambda r: notion_sync(
                        client=notion_client, full=since is None, since=since, dry_run=dry_run, prune=prune,
                        run=r, embedder=embedder,
                    ))  # fmt: skip
            elif kind == "markdown":
                for root in SourceRoot.objects.filter(kind=SourceRoot.Kind.MARKDOWN):
                    if not Path(root.path).is_dir():
                        recorder.fail(
                            root.path, "folder no longer exists; its chunks are kept (remove the root to drop them)"
                        )
                        continue
                    _nested(run, recorder, lambda r, root=root: sync_markdown(
                        path=root.path, fmt=root.options.get("format", "logseq"), collection=root.collection,
                        project=root.options.get("project"), visibility=root.options.get("visibility", "public"),
                        since=since, dry_run=dry_run, prune=prune, force=True, run=r, embedder=embedder,
                    ))  # fmt: skip
            elif kind == "demo":
                demo_corpus_reindex(recorder=recorder, dry_run=dry_run, embedder=embedder)
            elif kind == "documents":
                posted_documents_reindex(recorder=recorder, since=since, dry_run=dry_run, embedder=embedder)
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
    except Exception:  # recorded on the scratch run by Running; the reindex goes on
        logger.exception("reindex step failed")
    finally:
        for name in (*IngestRun.COUNTS, "total"):
            setattr(run, name, getattr(run, name) + getattr(scratch, name))
        run.errors.extend(scratch.errors)
        if scratch.status == IngestRun.Status.FAILED and scratch.message:
            run.errors.append({"source": scratch.options.get("path", scratch.source), "error": scratch.message})
            run.failed += 1
        recorder.flush(force=True)


# The message of a run the broker could not take; the sweeper queues such runs again.
WAITING_FOR_BROKER = "waiting for the broker: the run is stored and will be queued when it answers"


def reindex_enqueue(*, run: IngestRun) -> None:
    """Queue a run once the transaction that created it commits. The run row is the durable
    record: if the broker cannot take it, the run stays queued, says so, and
    ``runs_sweep`` (a periodic task) queues it again once the broker answers."""
    from ingestion.tasks import run_reindex

    def send() -> None:
        try:
            run_reindex.delay(run.pk)
        except Exception as exc:  # broker down: keep the run, record why it waits
            logger.error("could not queue reindex run %s: %s", run.pk, exc)
            IngestRun.objects.filter(pk=run.pk, status=IngestRun.Status.QUEUED).update(
                message=f"{WAITING_FOR_BROKER} ({type(exc).__name__})"
            )

    transaction.on_commit(send)


def _process_gone(worker: str) -> bool:
    """True when ``worker`` (host:pid) names a process of this host that no longer exists."""
    import os
    import socket

    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def runs_mark_interrupted(*, now: dt.datetime | None = None) -> list[int]:
    """Mark running runs whose process died as ``interrupted``; returns their ids.

    Dead means: no heartbeat for ``KNOWHUB_RUN_STALE_SECONDS``, or the recorded process is on
    this host and gone. Idempotent; the admin and the API call it before showing runs, the
    periodic sweep calls it too.
    """
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=settings.KNOWHUB_RUN_STALE_SECONDS)
    me = this_worker()
    interrupted = []
    for run in IngestRun.objects.filter(status=IngestRun.Status.RUNNING).only(
        "id", "worker", "heartbeat_at", "started_at"
    ):
        beat = run.heartbeat_at or run.started_at
        dead = (beat is not None and beat < stale_before) or (run.worker != me and _process_gone(run.worker))
        if not dead:
            continue
        updated = IngestRun.objects.filter(pk=run.pk, status=IngestRun.Status.RUNNING).update(
            status=IngestRun.Status.INTERRUPTED, finished_at=now,
            message=f"interrupted: the process running it ({run.worker or 'unknown'}) stopped without finishing; "
            "resume it to run its sources again (unchanged chunks are kept)",
        )  # fmt: skip
        if updated:
            logger.warning("ingest run %s interrupted (worker %s gone)", run.pk, run.worker)
            interrupted.append(run.pk)
    return interrupted


@transaction.atomic
def run_resume(*, run: IngestRun, user=None) -> IngestRun:
    """Run an interrupted (or failed) run's sources again, as a new queued reindex run.

    Runs are idempotent (``chunk_upsert`` keeps unchanged chunks and re-embeds nothing), so
    re-running the whole source finishes what the dead process started.
    """
    run = IngestRun.objects.select_for_update().get(pk=run.pk)
    if run.status not in (IngestRun.Status.INTERRUPTED, IngestRun.Status.FAILED):
        raise IngestError(f"run #{run.pk} is {run.status}; only interrupted or failed runs can be resumed")
    if run.resumed_as_id:
        raise IngestError(f"run #{run.pk} was already resumed as run #{run.resumed_as_id}")
    new = run_create(
        source="reindex", types=normalise_types(run.types), since=run.since, dry_run=run.dry_run, prune=run.prune,
        options={"resumes": run.pk}, user=user,
    )  # fmt: skip
    run.resumed_as = new
    run.save(update_fields=["resumed_as", "updated_at"])
    reindex_enqueue(run=new)
    return new


def runs_sweep() -> dict:
    """The periodic sweep: interrupted runs marked, runs the broker refused queued again."""
    from ingestion.tasks import run_reindex

    interrupted = runs_mark_interrupted()
    requeued = []
    for run_id in IngestRun.objects.filter(
        status=IngestRun.Status.QUEUED, message__startswith=WAITING_FOR_BROKER
    ).values_list("id", flat=True):
        try:
            run_reindex.delay(run_id)
        except Exception as exc:
            logger.error("broker still unavailable, run %s keeps waiting: %s", run_id, exc)
            break
        IngestRun.objects.filter(pk=run_id).update(message="")
        requeued.append(run_id)
    return {"interrupted": interrupted, "requeued": requeued}
