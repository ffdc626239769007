"""Documents and meeting notes: posted payloads, files and folders."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from ingestion.models import (
    IngestedDocument,
    IngestRun,
    SourceRoot,
)
from ingestion.services.core import (
    IngestError,
    Running,
    RunRecorder,
    UnknownProject,
    index_documents,
    run_create,
    run_or_create,
)
from ingestion.services.folders import Candidate, source_states, sync_root
from rag.embeddings import Embedder, get_embedder
from rag.models import Project
from rag.services import SourceError, project_ids_for, source_check
from rag.units import SourceDocument

logger = logging.getLogger(__name__)

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
        raise UnknownProject(f"unknown project {project!r}")
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
            source_check(doc, project_ids_for([doc]))
        except SourceError as exc:
            raise IngestError(f"documents[{i}]: {exc}") from exc
        out.append(ParsedPayload(payload=payload, document=doc))
    return out


def documents_ingest(
    *, parsed: list[ParsedPayload], user=None, dry_run: bool = False, embedder: Embedder | None = None,
) -> IngestRun:  # fmt: skip
    """Index posted documents and keep their payloads (so ``reindex documents`` can rebuild them)."""
    run = run_create(source="ingest_documents_api", types=["documents"], dry_run=dry_run, user=user)
    with Running(run) as recorder:
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


def posted_documents_reindex(
    *, recorder: RunRecorder, since: dt.datetime | None, dry_run: bool, embedder: Embedder,
) -> None:  # fmt: skip
    """Rebuild posted documents and uploaded files from their kept payloads (``reindex documents``)."""
    from ingestion.sources.documents import parse_document_payload

    qs = IngestedDocument.objects.all()
    if since is not None:
        qs = qs.filter(updated_at__gte=since)
    documents = []
    for item in qs:
        recorder.count(sources=1, total=1)
        stored = item.payload
        if "file" in stored:  # an uploaded file: rebuilt from its kept original
            from ingestion.services.files import document_from_stored_file

            try:
                documents.append(document_from_stored_file(stored))
            except (ValueError, KeyError, TypeError) as exc:
                recorder.fail(f"{item.collection}:{item.source_id}", str(exc))
            continue
        try:
            doc = parse_document_payload(stored["payload"])
        except (ValueError, KeyError, TypeError) as exc:
            recorder.fail(f"{item.collection}:{item.source_id}", str(exc))
            continue
        doc.project, doc.visibility, doc.owner_hash = (
            stored.get("project"), stored.get("visibility", "public"), stored.get("owner_hash", "")
        )
        documents.append(doc)
    index_documents(documents=documents, recorder=recorder, dry_run=dry_run, embedder=embedder)


def _first_heading(text: str) -> str:
    for line in text.splitlines()[:50]:
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def _file_candidate(path: Path, source_id: str, options: dict, *, store: bool) -> Candidate:
    """A PDF / DOCX / HTML / PPTX file → a candidate; its original is kept for download."""
    from ingestion.extraction import extract_file
    from ingestion.services.files import download_url, sha256_of, store_original
    from ingestion.sources.files import FILE_TYPES, FileExtractError, document_from_extracted

    try:
        sha = sha256_of(path)
        size = path.stat().st_size
    except OSError as exc:
        return Candidate(label=source_id, fingerprint="", error=str(exc))
    fingerprint = hashlib.sha256((sha + json.dumps(options, sort_keys=True, default=str)).encode()).hexdigest()
    try:
        doc = document_from_extracted(
            extract_file(path, name=path.name), name=path.name, sha256=sha, size=size, source_id=source_id,
            collection=options.get("collection") or "documents",
            download_url=download_url(sha), date=options.get("date") or None, entity=options.get("entity") or "",
            people=options.get("people") or (), tags=options.get("tags") or (), project=options.get("project"),
            visibility=options.get("visibility") or "public",
        )  # fmt: skip
    except (FileExtractError, ValueError) as exc:
        return Candidate(label=source_id, fingerprint=fingerprint, error=f"{path.name}: {exc}")
    if store:
        store_original(path=path, name=path.name, content_type=FILE_TYPES[path.suffix.lower()], sha256=sha)
    modified = dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC)
    return Candidate(label=source_id, fingerprint=fingerprint, document=doc, modified=modified)


def _document_candidate(path: Path, source_id: str, options: dict, *, store: bool = True) -> Candidate:
    """One file → a candidate: QMSum JSON, a document-payload JSON, markdown or plain text, or a
    PDF / DOCX / HTML / PPTX file."""
    from ingestion.sources import documents as parsers
    from ingestion.sources.files import FILE_TYPES

    suffix = path.suffix.lower()
    if suffix in FILE_TYPES:
        return _file_candidate(path, source_id, options, store=store)
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
            expected = ", ".join(sorted(DOCUMENT_EXTENSIONS | set(FILE_TYPES)))
            raise ValueError(f"unsupported file type {suffix or '(none)'}: expected {expected}")
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
    """Index documents from files or folders (QMSum meetings, payload JSON, markdown, text, and
    PDF / DOCX / HTML / PPTX files, whose originals are kept for download).

    Only files whose bytes (or the options applied to them) changed are re-done; a folder's
    files that are gone have their chunks deleted. ``source_id`` is the path inside the folder
    without its extension (``Bed002`` for ``qmsum-val/Bed002.json``).
    """
    if project and not Project.objects.filter(slug=project).exists():
        raise UnknownProject(f"unknown project {project!r}")
    from ingestion.sources.files import FILE_TYPES

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
    run = run_or_create(
        run, source="ingest_documents", types=["documents"], since=since, dry_run=dry_run, prune=prune,
        options={"paths": [str(p) for p in resolved], **options},
    )  # fmt: skip
    with Running(run) as recorder:
        for base in resolved:
            root = SourceRoot.objects.filter(
                kind=SourceRoot.Kind.DOCUMENTS, path=str(base), collection=collection or ""
            ).first()
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
                if file.suffix.lower() in FILE_TYPES:
                    source_id = rel  # handbook.pdf and handbook.docx side by side are two sources
                candidates.append(_document_candidate(file, source_id, options, store=not dry_run))
            states = source_states(root=root) if root is not None else {}
            sync_root(
                candidates=candidates, states=states, recorder=recorder, root=root, options=options,
                dry_run=dry_run, force=force, since=since, embedder=embedder, progress_factory=progress_factory,
                drop_gone=base.is_dir(),
            )  # fmt: skip
    return run
