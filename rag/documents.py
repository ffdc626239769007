"""The document view: a chunk's whole parent document, read through the same ACL as search.

A document is every live chunk sharing the cited chunk's ``(collection, source_type,
source_id)``. The WHERE clause is ``rag.search``'s own (liveness + ``Scope``), so the view never
shows a chunk search would hide: a restricted chunk for a non-member, another user's private
chunk, a soft-deleted chunk. A chunk the caller may not see is reported as absent (404), never
as forbidden, so its existence does not leak either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from knowhub import replicas
from rag.acl import Scope
from rag.models import ChunkHistory
from rag.search import SearchFilters
from rag.search import filter_sql as search_filter_sql

HISTORY_LIMIT = 100

# Links a page may open. Anything else (``javascript:``, ``data:``…) is not offered as a link. A
# path on this site (an uploaded file's download) is safe too; ``//host`` is not a path.
_SAFE_URL = re.compile(r"^(?:https?://|logseq://|notion://)[^\s]+$|^/(?![/\\])[^\s]*$", re.I)


def safe_url(url: str | None) -> str:
    """``url`` when it is a link worth opening (web, Notion app, Logseq app, this site), else ""."""
    url = (url or "").strip()
    return url if _SAFE_URL.match(url) else ""


@dataclass
class DocumentChunk:
    chunk_uid: str
    unit_anchor: str
    chunk_idx: int
    title: str
    breadcrumb: str
    content: str
    url: str
    date: object
    updated_at: object
    cited: bool = False
    ocr: bool = False  # its text was read by OCR from a scanned page


@dataclass
class Document:
    chunk_uid: str  # the chunk the caller asked for
    collection: str
    source_type: str
    source_id: str
    title: str
    breadcrumb: str
    url: str  # the original, when there is a link worth opening
    date: object
    updated_at: object
    visibility: str
    metadata: dict
    chunks: list[DocumentChunk] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)


@replicas.read_only
def document_for_chunk(*, scope: Scope, chunk_uid: str) -> Document | None:
    """The parent document of ``chunk_uid`` as ``scope`` may see it, or None (→ 404)."""
    where, params = search_filter_sql(SearchFilters(), scope)
    params = {**params, "uid": chunk_uid}
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT c.collection, c.source_type, c.source_id FROM rag_chunk c WHERE c.chunk_uid = %(uid)s AND {where}",
            params,
        )
        row = cursor.fetchone()
        if row is None:
            return None
        collection, source_type, source_id = row
        # Chunks in document order: units in the order they were first stored, chunks by index.
        cursor.execute(
            f"""SELECT c.chunk_uid, c.unit_anchor, c.chunk_idx, c.title, c.breadcrumb, c.content, c.url, c.date,
                       c.updated_at, c.visibility, c.metadata::text
                FROM rag_chunk c
                WHERE c.collection = %(col)s AND c.source_type = %(st)s AND c.source_id = %(sid)s AND {where}
                ORDER BY min(c.id) OVER (PARTITION BY c.unit_anchor), c.chunk_idx, c.id""",
            {**params, "col": collection, "st": source_type, "sid": source_id},
        )
        rows = cursor.fetchall()
    chunks = [
        DocumentChunk(
            chunk_uid=r[0], unit_anchor=r[1], chunk_idx=r[2], title=r[3], breadcrumb=r[4], content=r[5],
            url=r[6], date=r[7], updated_at=r[8], cited=r[0] == chunk_uid,
            ocr=bool(r[10] and json.loads(r[10]).get("ocr")),
        )
        for r in rows
    ]  # fmt: skip
    cited = next(r for r in rows if r[0] == chunk_uid)
    metadata = json.loads(cited[10]) if cited[10] else {}
    first = chunks[0]
    dates = [c.date for c in chunks if c.date]
    doc = Document(
        chunk_uid=chunk_uid,
        collection=collection,
        source_type=source_type,
        source_id=source_id,
        title=first.title or next((c.title for c in chunks if c.title), "") or source_id,
        breadcrumb=first.breadcrumb,
        url=next((safe_url(c.url) for c in chunks if safe_url(c.url)), ""),
        date=min(dates) if dates else None,
        updated_at=max(c.updated_at for c in chunks),
        visibility=cited[9],
        metadata=metadata,
        chunks=chunks,
    )
    doc.history = [
        {
            "chunk_uid": h.chunk_uid, "change": h.change, "title": h.title, "content": h.content,
            "content_hash": h.content_hash, "created_at": h.created_at,
        }
        for h in ChunkHistory.objects.filter(
            chunk_uid__in=[c.chunk_uid for c in chunks]
        ).order_by("-created_at", "-id")[:HISTORY_LIMIT]
    ]
    return doc
