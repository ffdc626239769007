"""A person's own files: attached on the ask page (or ``/ingest/my-files``), private to them.

They are ordinary uploaded files in the ``my-files`` collection with visibility ``private`` and
the owner's keyed hash, so the one ACL of search (``rag.acl.Scope``) keeps them the owner's:
no other user finds, cites, opens or downloads them. Their source ids start with a prefix of the
owner hash, so two people's ``notes.pdf`` never replace each other. Quotas per person (count and
bytes) are checked before anything is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from ingestion.models import IngestedDocument, StoredFile
from ingestion.services.core import IngestError
from ingestion.services.files import (
    FilesResult,
    Upload,
    download_url,
    files_ingest,
    media_path,
    upload_source_id,
)
from rag.acl import user_hash
from rag.models import Chunk
from rag.services import source_delete

MY_FILES_COLLECTION = "my-files"


class QuotaExceeded(IngestError):
    """The upload would take the person past their file count or bytes."""


@dataclass
class UserFile:
    source_id: str
    name: str
    size: int
    sha256: str
    url: str
    chunk_uid: str  # a chunk of it, for its document page
    created_at: object

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Quota:
    count: int
    bytes: int
    max_count: int
    max_bytes: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _owner(user) -> str:
    return user_hash(user.pk)


def _prefix(owner_hash: str) -> str:
    return f"{owner_hash[:16]}/"


def _rows(owner_hash: str):
    return IngestedDocument.objects.filter(
        collection=MY_FILES_COLLECTION, source_type="file", payload__owner_hash=owner_hash
    ).order_by("-created_at", "-id")


def user_files_list(*, user) -> list[UserFile]:
    """The caller's own files, newest first (only those whose chunks are live)."""
    owner = _owner(user)
    rows = list(_rows(owner))
    first_chunk = dict(
        Chunk.objects.filter(
            collection=MY_FILES_COLLECTION, source_type="file", owner_hash=owner, deleted_at__isnull=True,
            source_id__in=[r.source_id for r in rows],
        ).order_by("source_id", "id").distinct("source_id").values_list("source_id", "chunk_uid")
    )  # fmt: skip
    out = []
    for row in rows:
        info = row.payload.get("file") or {}
        if row.source_id not in first_chunk:
            continue
        out.append(UserFile(
            source_id=row.source_id, name=info.get("name", row.source_id), size=int(info.get("size") or 0),
            sha256=info.get("sha256", ""), url=download_url(info["sha256"]) if info.get("sha256") else "",
            chunk_uid=first_chunk[row.source_id], created_at=row.created_at,
        ))  # fmt: skip
    return out


def user_files_quota(*, user) -> Quota:
    files = user_files_list(user=user)
    return Quota(
        count=len(files), bytes=sum(f.size for f in files), max_count=settings.KNOWHUB_USER_FILES_MAX_COUNT,
        max_bytes=settings.KNOWHUB_USER_FILES_MAX_BYTES,
    )  # fmt: skip


def user_files_upload(*, user, uploads: list[Upload]) -> FilesResult:
    """Index the person's files privately to them; over quota → ``QuotaExceeded``, nothing read.

    A file with the name of one they already have replaces it (and does not count twice)."""
    owner = _owner(user)
    existing = {f.source_id: f for f in user_files_list(user=user)}
    prefix = _prefix(owner)
    ids = {(prefix + upload_source_id(u.name))[:300] for u in uploads}
    replaced = [existing[i] for i in ids if i in existing]
    count = len(existing) - len(replaced) + len(uploads)
    size = sum(f.size for f in existing.values()) - sum(f.size for f in replaced) + sum(u.size for u in uploads)
    max_count, max_bytes = settings.KNOWHUB_USER_FILES_MAX_COUNT, settings.KNOWHUB_USER_FILES_MAX_BYTES
    if count > max_count:
        raise QuotaExceeded(f"you may keep at most {max_count} files; delete some under 'Your files' first")
    if size > max_bytes:
        raise QuotaExceeded(
            f"your files would take {size} bytes; at most {max_bytes} bytes ({max_bytes / (1024 * 1024):g} MB) "
            "per person: delete some under 'Your files' first"
        )
    return files_ingest(uploads=uploads, collection=MY_FILES_COLLECTION, visibility="private", owner_hash=owner,
                        user=user, source_prefix=prefix)  # fmt: skip


@transaction.atomic
def user_file_delete(*, user, source_id: str) -> bool:
    """Delete one of the caller's files: its chunks, its record, and the original if nothing else
    names it. False when it is not theirs (or not there): the same answer either way."""
    owner = _owner(user)
    row = _rows(owner).filter(source_id=source_id).first()
    if row is None:
        return False
    sha = (row.payload.get("file") or {}).get("sha256", "")
    source_delete(collection=MY_FILES_COLLECTION, source_type="file", source_ids=[source_id])
    row.delete()
    if sha and not Chunk.objects.filter(metadata__file__sha256=sha).exists():
        StoredFile.objects.filter(sha256=sha).delete()
        path = media_path(sha)
        transaction.on_commit(lambda: path.unlink(missing_ok=True))
    return True
