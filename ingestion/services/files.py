"""Files (PDF, DOCX, HTML, PPTX, PNG/JPEG): uploads and folder files → chunks, originals kept for download.

Files travel as paths, never as bytes in the web process: the upload is a temporary file, its
hash is read in blocks, its text comes from the bounded extraction child, and the kept original
is a copy of the file on disk.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.urls import reverse

from ingestion.models import IngestedDocument, IngestRun, StoredFile
from ingestion.services.core import IngestError, Running, index_documents, run_create
from rag.acl import Scope
from rag.embeddings import Embedder
from rag.models import Project
from rag.units import SourceDocument

logger = logging.getLogger(__name__)


def media_path(sha256: str) -> Path:
    return Path(settings.KNOWHUB_MEDIA_ROOT) / "files" / sha256[:2] / sha256


def download_url(sha256: str) -> str:
    return reverse("ingestion:file-download", kwargs={"sha256": sha256})


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def store_original(*, path: Path, name: str, content_type: str, sha256: str = "") -> StoredFile:
    """Keep a file (once per content) and its row; copied block by block, atomically (temp + rename)."""
    sha = sha256 or sha256_of(path)
    size = Path(path).stat().st_size
    target = media_path(sha)
    if not target.exists() or target.stat().st_size != size:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
                shutil.copyfileobj(src, out, 1024 * 1024)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    stored, _ = StoredFile.objects.update_or_create(
        sha256=sha, defaults={"name": name.rsplit("/", 1)[-1][:500], "size": size, "content_type": content_type}
    )
    return stored


def original_path(sha256: str) -> Path | None:
    path = media_path(sha256)
    return path if path.exists() else None


# --- reads: which originals a caller may download -----------------------------------------------


@dataclass
class Downloadable:
    file: StoredFile
    path: Path


def file_for_download(*, sha256: str, scope: Scope) -> Downloadable | None:
    """The stored original, if a live chunk naming it is visible to ``scope`` (same ACL as search).

    ``None`` both when the file is unknown and when the caller may not see it: a download link
    must not reveal that a hidden document exists.
    """
    if len(sha256) != 64 or any(ch not in "0123456789abcdef" for ch in sha256):
        return None
    acl_sql, params = scope.sql("c")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM rag_chunk c WHERE c.deleted_at IS NULL AND c.metadata @> %s::jsonb "
            f"AND {acl_sql} LIMIT 1",
            [json.dumps({"file": {"sha256": sha256}}), *params],
        )
        if cursor.fetchone() is None:
            return None
    stored = StoredFile.objects.filter(sha256=sha256).first()
    path = media_path(sha256)
    if stored is None or not path.exists():
        return None
    return Downloadable(file=stored, path=path)


def chunk_file(*, chunk_uid: str, scope: Scope) -> dict | None:
    """``metadata.file`` (name, sha256, size, content_type, url) of a chunk the scope may see."""
    acl_sql, params = scope.sql("c")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.metadata -> 'file' FROM rag_chunk c WHERE c.chunk_uid = %s AND c.deleted_at IS NULL "
            f"AND {acl_sql}",
            [chunk_uid, *params],
        )
        row = cursor.fetchone()
    if not row or not row[0]:
        return None
    return json.loads(row[0]) if isinstance(row[0], str) else row[0]


# --- writes: uploads ----------------------------------------------------------------------------


@dataclass
class Upload:
    """An uploaded file on disk (``ingestion.uploads.uploads_on_disk`` makes these)."""

    name: str
    path: Path
    size: int = 0


@dataclass
class FileOutcome:
    name: str
    source_id: str
    sha256: str
    status: str  # indexed | failed | planned (dry run)
    error: str = ""
    units: int = 0
    url: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class FilesResult:
    run: IngestRun
    files: list[FileOutcome] = field(default_factory=list)


def upload_source_id(name: str) -> str:
    """Uploads are keyed by file name: uploading a new version of ``handbook.pdf`` replaces it."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    return base[:300] or "upload"


def _check_length(doc: SourceDocument) -> None:
    """An upload is indexed while its sender waits: text beyond what the posted-documents API takes
    (``KNOWHUB_INGEST_MAX_CHARS``) is refused with the figure, rather than embedded for minutes."""
    from ingestion.sources.files import FileExtractError

    chars, limit = sum(len(u.content) for u in doc.units), settings.KNOWHUB_INGEST_MAX_CHARS
    if chars > limit:
        raise FileExtractError(
            f"the file holds {chars} characters of text, more than {limit} (KNOWHUB_INGEST_MAX_CHARS) for an upload: "
            "split it, or index it with manage.py ingest_documents"
        )


def files_ingest(
    *, uploads: list[Upload], collection: str = "documents", project: str | None = None, visibility: str = "public",
    owner_hash: str = "", date: dt.date | None = None, entity: str = "", people: Iterable[str] = (),
    tags: Iterable[str] = (), user=None, dry_run: bool = False, embedder: Embedder | None = None,
    source_prefix: str = "",
) -> FilesResult:  # fmt: skip
    """Extract, index and keep uploaded files. A file that cannot give text is reported with the
    reason and the others go on; a file is only kept once its chunks are stored."""
    from ingestion.extraction import extract_file
    from ingestion.sources.files import FILE_TYPES, FileExtractError, document_from_extracted, suffix_of

    if project and not Project.objects.filter(slug=project).exists():
        raise IngestError(f"unknown project {project!r}")
    options = {"collection": collection, "project": project, "visibility": visibility, "owner_hash": owner_hash,
               "date": date.isoformat() if date else None, "entity": entity, "people": list(people),
               "tags": list(tags)}  # fmt: skip
    run = run_create(source="ingest_files_api", types=["documents"], dry_run=dry_run, user=user,
                     options={k: v for k, v in options.items() if k != "owner_hash"})  # fmt: skip
    result = FilesResult(run=run)
    with Running(run) as recorder:
        recorder.count(total=len(uploads), sources=len(uploads))
        documents: list[tuple[Upload, FileOutcome, SourceDocument]] = []
        for upload in uploads:
            sha = sha256_of(upload.path)
            source_id = (source_prefix + upload_source_id(upload.name))[:300]
            outcome = FileOutcome(name=upload.name, source_id=source_id, sha256=sha, status="failed")
            result.files.append(outcome)
            try:
                doc = document_from_extracted(
                    extract_file(upload.path, name=upload.name), name=upload.name, sha256=sha,
                    size=upload.path.stat().st_size, source_id=outcome.source_id, collection=collection,
                    download_url=download_url(sha), date=date, entity=entity, people=people, tags=tags,
                    project=project, visibility=visibility, owner_hash=owner_hash,
                )  # fmt: skip
                _check_length(doc)
            except FileExtractError as exc:
                outcome.error = str(exc)
                recorder.fail(upload.name, str(exc))
                continue
            documents.append((upload, outcome, doc))
        stored = index_documents(documents=[d for _, _, d in documents], recorder=recorder, dry_run=dry_run,
                                 embedder=embedder)  # fmt: skip
        stored_keys = {d.key for d in stored}
        errors = {e["source"]: e["error"] for e in recorder.run.errors}
        for upload, outcome, doc in documents:
            if doc.key not in stored_keys:
                outcome.error = errors.get(":".join(doc.key), "not stored")
                continue
            outcome.units = len(doc.units)
            if dry_run:
                outcome.status = "planned"
                continue
            content_type = FILE_TYPES[suffix_of(upload.name)]
            store_original(path=upload.path, name=upload.name, content_type=content_type, sha256=outcome.sha256)
            outcome.status, outcome.url = "indexed", download_url(outcome.sha256)
            # Kept so ``reindex documents`` can rebuild the chunks from the stored original.
            payload = {"file": {"sha256": outcome.sha256, "name": upload.name, "source_id": outcome.source_id,
                                "size": upload.path.stat().st_size}, **options}  # fmt: skip
            IngestedDocument.objects.update_or_create(
                collection=doc.collection, source_type=doc.source_type, source_id=doc.source_id,
                defaults={"payload": payload,
                          "payload_hash": hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()},
            )  # fmt: skip
    return result


def document_from_stored_file(stored: dict) -> SourceDocument:
    """Rebuild an uploaded file's document from its ``IngestedDocument`` payload (for reindex)."""
    from ingestion.extraction import extract_file
    from ingestion.sources.files import document_from_extracted

    info = stored["file"]
    path = original_path(info["sha256"])
    if path is None:
        raise ValueError(f"the stored original of {info['name']} is missing from KNOWHUB_MEDIA_ROOT")
    return document_from_extracted(
        extract_file(path, name=info["name"]), name=info["name"], sha256=info["sha256"], size=path.stat().st_size,
        source_id=info.get("source_id") or upload_source_id(info["name"]),
        collection=stored.get("collection") or "documents", download_url=download_url(info["sha256"]),
        date=stored.get("date"), entity=stored.get("entity") or "", people=stored.get("people") or (),
        tags=stored.get("tags") or (), project=stored.get("project"), visibility=stored.get("visibility") or "public",
        owner_hash=stored.get("owner_hash") or "",
    )  # fmt: skip

