"""Writes to the index: the one upsert path every source goes through."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from rag import db_ops, term_stats, text_search
from rag.chunking import split_text
from rag.embeddings import Embedder, EmbeddingError, get_embedder
from rag.index_version import index_changed
from rag.models import Chunk, ChunkHistory, Project
from rag.units import SourceDocument, Visibility

logger = logging.getLogger(__name__)

# Columns compared to decide whether a stored chunk already says what the source says now.
_COMPARED = (
    "title", "breadcrumb", "url", "content", "content_hash", "embedding_model", "domain", "concepts",
    "mnemonic_tags", "code_languages", "has_image", "pii_level", "author_hash", "date", "metadata",
    "visibility", "project_id", "owner_hash", "collection", "source_type", "source_id",
    "unit_anchor", "chunk_idx",
)  # fmt: skip
_UPDATED = [name for name in _COMPARED if name != "embedding_model"] + [
    "embedding", "embedding_model", "deleted_at", "updated_at",
]  # fmt: skip


class SourceError(ValueError):
    """A source document that cannot be stored as given (bad visibility, unknown project…)."""


@dataclass
class UpsertResult:
    """What an upsert did. ``embedded`` counts texts sent to the embedding provider."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    embedded: int = 0
    sources: int = 0
    errors: list[dict] = field(default_factory=list)

    def add(self, other: UpsertResult) -> None:
        for name in ("created", "updated", "unchanged", "deleted", "embedded", "sources"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.extend(other.errors)

    def as_dict(self) -> dict:
        return asdict(self)


def make_chunk_uid(collection: str, source_type: str, source_id: str, unit_anchor: str, idx: int) -> str:
    return f"{collection}:{source_type}:{source_id}:{unit_anchor}:{idx}"


def embedding_text(title: str, content: str) -> str:
    """What is embedded (and hashed): the title line gives a chunk its context."""
    return f"{title}\n{content}" if title else content


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _validate(doc: SourceDocument) -> None:
    for name in ("collection", "source_type", "source_id"):
        value = getattr(doc, name)
        if not value or not isinstance(value, str):
            raise SourceError(f"{name} must be a non-empty string")
        if name != "source_id" and ":" in value:
            raise SourceError(f"{name} may not contain ':' ({value!r})")
    if doc.visibility not in Visibility.CHOICES:
        raise SourceError(f"visibility must be one of {', '.join(Visibility.CHOICES)}")
    if doc.visibility == Visibility.RESTRICTED and not doc.project:
        raise SourceError("restricted documents need a project")
    if doc.visibility == Visibility.PRIVATE and not doc.owner_hash:
        raise SourceError("private documents need an owner")
    anchors = [u.unit_anchor for u in doc.units]
    if len(set(anchors)) != len(anchors):
        raise SourceError(f"duplicate unit anchors in {doc.source_id!r}")


def project_ids_for(documents: Iterable[SourceDocument]) -> dict[str, int]:
    """``{slug: id}`` of the projects ``documents`` name (unknown slugs are left out)."""
    slugs = {d.project for d in documents if d.project}
    return dict(Project.objects.filter(slug__in=slugs).values_list("slug", "id")) if slugs else {}


def source_check(doc: SourceDocument, project_ids: dict[str, int]) -> int | None:
    """Raise ``SourceError`` when ``doc`` cannot be stored as given; return its project's id.

    What ``plan_rows`` refuses, without chunking: callers can sort out bad documents up front
    and leave the chunking to ``chunk_upsert``.
    """
    _validate(doc)
    if not doc.project:
        return None
    if doc.project not in project_ids:
        raise SourceError(f"unknown project {doc.project!r}")
    return project_ids[doc.project]


def plan_rows(doc: SourceDocument, project_ids: dict[str, int]) -> list[dict]:
    """The chunk rows a source document should have, without embeddings."""
    project_id = source_check(doc, project_ids)
    size = doc.chunk_size or settings.KNOWHUB_CHUNK_SIZE
    overlap = doc.chunk_overlap if doc.chunk_overlap is not None else settings.KNOWHUB_CHUNK_OVERLAP
    overlap = min(overlap, size // 2)
    rows = []
    for unit in doc.units:
        pieces = split_text(unit.content, size=size, overlap=overlap)
        for idx, piece in enumerate(pieces):
            rows.append(
                {
                    "chunk_uid": make_chunk_uid(doc.collection, doc.source_type, doc.source_id, unit.unit_anchor, idx),
                    "collection": doc.collection,
                    "source_type": doc.source_type,
                    "source_id": doc.source_id,
                    "unit_anchor": unit.unit_anchor,
                    "chunk_idx": idx,
                    "title": unit.title[:500],
                    "breadcrumb": unit.breadcrumb[:1000],
                    "url": unit.url[:1000],
                    "content": piece,
                    "content_hash": content_hash(embedding_text(unit.title, piece)),
                    "domain": unit.domain[:100],
                    "concepts": sorted(set(unit.concepts)),
                    "mnemonic_tags": sorted(set(unit.mnemonic_tags)),
                    "code_languages": sorted(set(unit.code_languages)),
                    "has_image": bool(unit.has_image),
                    "pii_level": doc.pii_level,
                    "author_hash": doc.author_hash,
                    "date": unit.date,
                    "metadata": unit.metadata,
                    "visibility": doc.visibility,
                    "project_id": project_id,
                    "owner_hash": doc.owner_hash,
                }
            )
    return rows


def _source_filter(keys: Iterable[tuple[str, str, str]]) -> Q:
    query = Q(pk__in=[])
    by_type: dict[tuple[str, str], list[str]] = {}
    for collection, source_type, source_id in keys:
        by_type.setdefault((collection, source_type), []).append(source_id)
    for (collection, source_type), ids in by_type.items():
        query |= Q(collection=collection, source_type=source_type, source_id__in=ids)
    return query


def _existing(keys: list[tuple[str, str, str]], *, lock: bool = False) -> dict[str, dict]:
    qs = Chunk.objects.filter(_source_filter(keys))
    if lock:
        qs = qs.select_for_update()
    return {row["chunk_uid"]: row for row in qs.values("chunk_uid", "deleted_at", *_COMPARED)}


def _differs(row: dict, old: dict | None, model_name: str) -> bool:
    if old is None or old["deleted_at"] is not None or old["embedding_model"] != model_name:
        return True
    return any(row[name] != old[name] for name in row if name in old)


def _needs_embedding(row: dict, old: dict | None, model_name: str) -> bool:
    return old is None or old["content_hash"] != row["content_hash"] or old["embedding_model"] != model_name


def _embed(
    embedder: Embedder, texts: dict[str, str], batch_size: int, progress: Callable | None
) -> dict[str, list[float]]:
    """Embed texts keyed by hash in batches; any failure raises before anything is written."""
    vectors: dict[str, list[float]] = {}
    items = list(texts.items())
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        out = embedder.embed_documents([text for _, text in batch])
        if len(out) != len(batch):
            raise EmbeddingError(f"provider returned {len(out)} vectors for {len(batch)} texts")
        for (digest, _), vector in zip(batch, out, strict=True):
            vectors[digest] = vector
        if progress:
            progress(len(batch))
    return vectors


def _diff(rows: list[dict], existing: dict[str, dict], model_name: str) -> tuple[UpsertResult, list[dict], list[str]]:
    """Compare one source's planned rows with its stored chunks.

    Returns the counts a write would report, the rows to write and the stored uids to delete.
    """
    result = UpsertResult(sources=1)
    changed: list[dict] = []
    for row in rows:
        old = existing.get(row["chunk_uid"])
        if not _differs(row, old, model_name):
            result.unchanged += 1
            continue
        changed.append(row)
        if old is None:
            result.created += 1
        else:
            result.updated += 1
    planned = {r["chunk_uid"] for r in rows}
    surplus = [uid for uid in existing if uid not in planned]
    result.deleted = len(surplus)
    return result, changed, surplus


def _write_source(
    doc_key: tuple[str, str, str], rows: list[dict], vectors: dict[str, list[float]], embedder: Embedder,
    texts: dict[str, str],
) -> UpsertResult:
    """Make one source's stored chunks equal ``rows``, in one transaction."""
    with transaction.atomic():
        # Serialise writers of the same source: two workers syncing it never interleave.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ["\x1f".join(doc_key)])
        existing = _existing([doc_key], lock=True)
        result, changed, surplus = _diff(rows, existing, embedder.name)
        now = timezone.now()
        to_write: list[tuple[dict, list[float] | None]] = []
        history: list[ChunkHistory] = []
        missing = {
            r["content_hash"]: texts.get(r["content_hash"]) or embedding_text(r["title"], r["content"])
            for r in rows
            if _needs_embedding(r, existing.get(r["chunk_uid"]), embedder.name) and r["content_hash"] not in vectors
        }
        if missing:  # another writer changed the source since we planned: embed the difference
            vectors = {**vectors, **_embed(embedder, missing, len(missing), None)}
            result.embedded += len(missing)
        for row in changed:
            old = existing.get(row["chunk_uid"])
            if _needs_embedding(row, old, embedder.name):
                embedding = vectors[row["content_hash"]]
            else:
                embedding = None  # keep the stored vector; fetched below only when needed
            to_write.append((row, embedding))
            if old is None:
                history.append(ChunkHistory(
                    chunk_uid=row["chunk_uid"], change="created", content=row["content"],
                    content_hash=row["content_hash"], title=row["title"],
                ))
            elif old["content_hash"] != row["content_hash"] or old["deleted_at"] is not None:
                # A hidden chunk coming back is a change too, even with the text it had.
                history.append(ChunkHistory(
                    chunk_uid=row["chunk_uid"], change="updated", content=row["content"],
                    content_hash=row["content_hash"], title=row["title"],
                ))
        if to_write:
            keep = [r["chunk_uid"] for r, e in to_write if e is None]
            stored = (
                dict(Chunk.objects.filter(chunk_uid__in=keep).values_list("chunk_uid", "embedding")) if keep else {}
            )
            objs = []
            for row, embedding in to_write:
                objs.append(
                    Chunk(
                        **row,
                        embedding=embedding if embedding is not None else stored[row["chunk_uid"]],
                        embedding_model=embedder.name,
                        deleted_at=None,
                        created_at=now,
                        updated_at=now,
                    )
                )
            Chunk.objects.bulk_create(objs, update_conflicts=True, unique_fields=["chunk_uid"], update_fields=_UPDATED)
        if surplus:
            for uid in surplus:
                old = existing[uid]
                history.append(ChunkHistory(
                    chunk_uid=uid, change="deleted", content=old["content"], content_hash=old["content_hash"],
                    title=old["title"],
                ))
            result.deleted = Chunk.objects.filter(chunk_uid__in=surplus).delete()[0]
        if history:
            ChunkHistory.objects.bulk_create(history)
    return result


def chunk_upsert(
    *,
    documents: list[SourceDocument],
    embedder: Embedder | None = None,
    batch_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    dry_run: bool = False,
) -> UpsertResult:
    """Store each source document's chunks: embed only what changed, remove what vanished.

    Per source, one transaction: after a failure a source is fully old or fully new. Embeddings
    are computed for the whole call before any write, so a provider that fails mid-batch leaves
    every source of the call untouched. A source whose rows all match is not written at all.

    ``dry_run`` compares the planned rows with the stored ones and returns the same counts
    without writing or embedding anything (``embedded`` counts the texts that would be sent).
    """
    embedder = embedder or get_embedder()
    batch_size = batch_size or settings.KNOWHUB_EMBEDDING_BATCH
    result = UpsertResult()
    if not documents:
        return result
    project_ids = project_ids_for(documents)

    planned: dict[tuple[str, str, str], list[dict]] = {}
    for doc in documents:
        if doc.key in planned:
            raise SourceError(f"source {':'.join(doc.key)} appears twice in one upsert")
        planned[doc.key] = plan_rows(doc, project_ids)

    existing = _existing(list(planned))
    by_source: dict[tuple[str, str, str], set[str]] = {}
    for uid, old in existing.items():
        by_source.setdefault((old["collection"], old["source_type"], old["source_id"]), set()).add(uid)

    texts: dict[str, str] = {}
    dirty: list[tuple[str, str, str]] = []
    for key, rows in planned.items():
        changed = by_source.get(key, set()) != {r["chunk_uid"] for r in rows}
        for row in rows:
            old = existing.get(row["chunk_uid"])
            if _needs_embedding(row, old, embedder.name):
                texts.setdefault(row["content_hash"], embedding_text(row["title"], row["content"]))
            changed = changed or _differs(row, old, embedder.name)
        if changed:
            dirty.append(key)
        else:
            result.unchanged += len(rows)
            result.sources += 1

    if dry_run:
        result.embedded += len(texts)
        for key in dirty:
            stored = {uid: existing[uid] for uid in by_source.get(key, ())}
            result.add(_diff(planned[key], stored, embedder.name)[0])
        return result

    vectors = _embed(embedder, texts, batch_size, progress)
    result.embedded += len(vectors)
    for key in dirty:
        result.add(_write_source(key, planned[key], vectors, embedder, texts))
    if dirty:
        index_changed()
    if dirty and text_search.active_backend().name == "sql":
        term_stats.maybe_compact()  # BM25 frequencies: fold the trigger's deltas now and then
    return result


def source_soft_delete(*, collection: str, source_type: str, source_ids: list[str]) -> int:
    """Hide a vanished source's chunks from search; they stay stored and come back on re-sync."""
    if not source_ids:
        return 0
    hidden = Chunk.objects.filter(
        collection=collection, source_type=source_type, source_id__in=source_ids, deleted_at__isnull=True
    ).update(deleted_at=timezone.now())
    if hidden:
        index_changed()
    return hidden


@transaction.atomic
def source_archive(*, collection: str, source_type: str, source_ids: list[str]) -> int:
    """Hide sources the way ``source_soft_delete`` does, and record it in ``ChunkHistory``: the
    source said it is gone (a Notion page archived or trashed), which is a change of its own."""
    qs = Chunk.objects.select_for_update().filter(
        collection=collection, source_type=source_type, source_id__in=source_ids, deleted_at__isnull=True
    )
    rows = list(qs.values_list("chunk_uid", "content", "content_hash", "title"))
    ChunkHistory.objects.bulk_create(
        ChunkHistory(chunk_uid=uid, change="deleted", content=content, content_hash=digest, title=title)
        for uid, content, digest, title in rows
    )
    hidden = Chunk.objects.filter(chunk_uid__in=[r[0] for r in rows]).update(deleted_at=timezone.now())
    if hidden:
        index_changed()
    return hidden


@transaction.atomic
def source_delete(*, collection: str, source_type: str, source_ids: list[str]) -> int:
    """Remove a source's chunks for good; their content stays in ``ChunkHistory``."""
    qs = Chunk.objects.filter(collection=collection, source_type=source_type, source_id__in=source_ids)
    ChunkHistory.objects.bulk_create(
        ChunkHistory(chunk_uid=uid, change="deleted", content=content, content_hash=digest, title=title)
        for uid, content, digest, title in qs.values_list("chunk_uid", "content", "content_hash", "title")
    )
    deleted = qs.delete()[0]
    if deleted:
        index_changed()  # counted once this transaction commits
    return deleted


def index_reembed(
    *,
    target: Embedder,
    batch_size: int = 128,
    progress: Callable[[int], None] | None = None,
    on_batch: Callable[[], None] | None = None,
) -> dict:
    """Move every chunk to the ``target`` embedding provider without a moment of empty search.

    Vectors are written to a shadow column while search keeps using the current one; an HNSW
    index is built on the shadow column, then one short transaction swaps columns and index.
    Rows edited during the move are caught up inside that transaction. Works across a change of
    dimensions (the column is re-created at the target's size).
    """
    dims = int(target.dims)
    table = Chunk._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS embedding_next")
        cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS embedding_model_next")
        cursor.execute(f"DROP INDEX IF EXISTS {table}_embedding_next_hnsw")
        cursor.execute(f"DROP INDEX IF EXISTS {table}_model_next_live_idx")
        cursor.execute(f"ALTER TABLE {table} ADD COLUMN embedding_next vector({dims})")
        # Kept in the row like the column it replaces (rag migration 0004_inline_vectors).
        cursor.execute(f"ALTER TABLE {table} ALTER COLUMN embedding_next SET STORAGE MAIN")
        cursor.execute(f"ALTER TABLE {table} ADD COLUMN embedding_model_next varchar(200)")

    def fill(cursor, *, limit: int | None) -> int:
        """Embed rows whose shadow vector is missing or stale; returns how many were done."""
        done = 0
        while True:
            cursor.execute(
                f"SELECT id, title, content, content_hash FROM {table} "
                f"WHERE embedding_model_next IS NULL ORDER BY id LIMIT %s",
                [batch_size],
            )
            rows = cursor.fetchall()
            if not rows:
                return done
            vectors = target.embed_documents([embedding_text(title, content) for _, title, content, _ in rows])
            cursor.executemany(
                f"UPDATE {table} SET embedding_next = %s::vector, embedding_model_next = %s "
                f"WHERE id = %s AND content_hash = %s",
                [(str(v), target.name, pk, digest) for (pk, _, _, digest), v in zip(rows, vectors, strict=True)],
            )
            done += len(rows)
            if progress:
                progress(len(rows))
            if on_batch:
                on_batch()
            if limit is not None and done >= limit:
                return done

    # A trigger marks rows whose content changes during the move, so the swap catches them up.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE OR REPLACE FUNCTION {table}_reembed_stale() RETURNS trigger AS $$
            BEGIN
                IF NEW.content_hash IS DISTINCT FROM OLD.content_hash THEN
                    NEW.embedding_model_next := NULL;
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql;
            DROP TRIGGER IF EXISTS {table}_reembed_stale ON {table};
            CREATE TRIGGER {table}_reembed_stale BEFORE UPDATE ON {table}
                FOR EACH ROW EXECUTE FUNCTION {table}_reembed_stale();
            """
        )
        moved = fill(cursor, limit=None)
        cursor.execute(db_ops.hnsw_index_sql(f"{table}_embedding_next_hnsw", "embedding_next", dims, table=table))
        # The live chunks' models, read on every ask, are indexed on the new column as on the old.
        cursor.execute(db_ops.live_model_index_sql(f"{table}_model_next_live_idx", "embedding_model_next", table=table))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
        moved += fill(cursor, limit=None)
        cursor.execute(
            f"""
            DROP TRIGGER {table}_reembed_stale ON {table};
            DROP FUNCTION {table}_reembed_stale();
            DROP INDEX IF EXISTS chunk_embedding_hnsw;
            ALTER TABLE {table} DROP COLUMN embedding;
            ALTER TABLE {table} DROP COLUMN embedding_model;
            ALTER TABLE {table} RENAME COLUMN embedding_next TO embedding;
            ALTER TABLE {table} RENAME COLUMN embedding_model_next TO embedding_model;
            ALTER TABLE {table} ALTER COLUMN embedding SET NOT NULL;
            ALTER TABLE {table} ALTER COLUMN embedding_model SET NOT NULL;
            ALTER INDEX {table}_embedding_next_hnsw RENAME TO chunk_embedding_hnsw;
            ALTER INDEX {table}_model_next_live_idx RENAME TO chunk_live_model_idx;
            """
        )
    from rag.search import reset_model_check

    reset_model_check()
    logger.info("re-embedded %s chunks with %s (%s dims)", moved, target.name, dims)
    return {"reembedded": moved, "model": target.name, "dims": dims}
