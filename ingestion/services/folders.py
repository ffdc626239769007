"""Fingerprinted sources (only changed ones re-done) and Logseq / markdown folders."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from ingestion.models import (
    IngestRun,
    SourceRoot,
    SourceState,
)
from ingestion.services.core import (
    SHAPE_VERSION,
    IngestError,
    Running,
    RunRecorder,
    index_documents,
    run_or_create,
    source_lock,
    sources_remove,
)
from rag.embeddings import Embedder, get_embedder
from rag.models import Project
from rag.services import (
    source_delete,
)
from rag.units import SourceDocument

logger = logging.getLogger(__name__)

# --- sources with fingerprints (folders, Notion pull) -------------------------------------------


@dataclass
class Candidate:
    """One source object a sync found: its document or why it could not be read."""

    label: str  # what errors name (a path, a page id); the document's source_id once parsed
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
    from ingestion.services.source_settings import (
        apply_setting,
        setting_fingerprint,
        setting_for_document,
    )

    changed: list[tuple[Candidate, str]] = []
    seen: set[str] = set()
    for cand in candidates:
        if cand.document is not None:
            cand.label = cand.document.source_id  # states are keyed by source id
        seen.add(cand.label)
        recorder.count(sources=1)
        if cand.error or cand.document is None:
            recorder.fail(cand.label, cand.error or "no document")
            if progress:
                progress(1)
            continue
        # The source's setting (ACL, property mapping) is part of what is stored, so of the fingerprint.
        setting = setting_for_document(cand.document, root)
        apply_setting(cand.document, setting)
        parser_fp = (cand.fingerprint or _document_fingerprint(cand.document)) + setting_fingerprint(setting)
        fingerprint = _state_fingerprint(parser_fp, embedder)
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


def source_states(
    *, collection: str | None = None, root: SourceRoot | None = None, source_types: Iterable[str] | None = None,
) -> dict[str, SourceState]:  # fmt: skip
    """``{source_id: SourceState}`` of the last successful syncs, narrowed by the arguments given."""
    qs = SourceState.objects.all()
    if collection is not None:
        qs = qs.filter(collection=collection)
    if root is not None:
        qs = qs.filter(root=root)
    if source_types is not None:
        qs = qs.filter(source_type__in=list(source_types))
    return {s.source_id: s for s in qs}


def source_states_drop(
    *, states: list[SourceState], hard: bool, dry_run: bool, recorder: RunRecorder,
) -> None:  # fmt: skip
    """Remove the chunks of sources a sync no longer finds, then forget their state (if hard)."""
    by_type: dict[tuple[str, str], list[str]] = {}
    for state in states:
        by_type.setdefault((state.collection, state.source_type), []).append(state.source_id)
    for (collection, source_type), ids in by_type.items():
        sources_remove(
            collection=collection, source_type=source_type, source_ids=ids, hard=hard, dry_run=dry_run,
            recorder=recorder,
        )  # fmt: skip
    if hard and not dry_run:
        SourceState.objects.filter(pk__in=[s.pk for s in states]).delete()


# --- Logseq / markdown folders ------------------------------------------------------------------


def sync_root(
    *, candidates: list[Candidate], states: dict[str, SourceState], recorder: RunRecorder, root: SourceRoot | None,
    options: dict, dry_run: bool, force: bool, since: dt.datetime | None, embedder: Embedder,
    progress_factory: Callable[[int], Callable[[int], None]] | None, drop_gone: bool = True,
) -> None:  # fmt: skip
    """Sync a folder's candidates; delete the sources it no longer has (``drop_gone``); stamp the root."""
    progress = progress_factory(len(candidates)) if progress_factory else None
    seen = sync_candidates(
        candidates=candidates, states=states, recorder=recorder, root=root, dry_run=dry_run, force=force,
        since=since, embedder=embedder, progress=progress,
    )  # fmt: skip
    if drop_gone:
        gone = [s for label, s in states.items() if label not in seen]
        source_states_drop(states=gone, hard=True, dry_run=dry_run, recorder=recorder)
    if root is not None and not dry_run:
        root.options = options
        root.last_synced_at = timezone.now()
        root.save(update_fields=["options", "last_synced_at", "updated_at"])


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

    Files that cannot be parsed (a PDF among the pages, unreadable bytes) are recorded as failed and keep
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
    run = run_or_create(
        run, source="sync_markdown", types=["markdown"], since=since, dry_run=dry_run, prune=prune,
        options={"path": str(root_path), "format": fmt, "collection": collection, "project": project},
    )  # fmt: skip
    with Running(run) as recorder, source_lock("markdown", str(root_path), collection):
        root = SourceRoot.objects.filter(
            kind=SourceRoot.Kind.MARKDOWN, path=str(root_path), collection=collection
        ).first()
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
        states = source_states(collection=collection, root=root) if root is not None else {}
        sync_root(
            candidates=candidates, states=states, recorder=recorder, root=root, options=options, dry_run=dry_run,
            force=force, since=since, embedder=embedder, progress_factory=progress_factory,
        )  # fmt: skip
    return run
