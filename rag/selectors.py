"""Reads of the index that are not retrieval: chunk lookups by uid, health, model checks."""

from __future__ import annotations

from django.conf import settings
from django.db import connection, connections, router

from rag.acl import Scope
from rag.db_ops import column_dims
from rag.models import Chunk


class EmbeddingModelMismatch(Exception):
    """The index holds vectors from another model than the one that would embed the query."""


def chunk_document_keys(*, scope: Scope, chunk_uids: set[str]) -> dict[str, str]:
    """``{chunk_uid: document_key}`` of the live chunks among ``chunk_uids`` that ``scope`` sees.

    The document key is ``collection:source_type:source_id``. Going through ``Scope`` keeps the
    existence of a chunk the caller may not see undisclosed.
    """
    if not chunk_uids:
        return {}
    acl_sql, acl_params = scope.sql("c")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.chunk_uid, c.collection || ':' || c.source_type || ':' || c.source_id FROM rag_chunk c "
            f"WHERE c.chunk_uid = ANY(%s) AND c.deleted_at IS NULL AND {acl_sql}",
            [list(chunk_uids), *acl_params],
        )
        return dict(cursor.fetchall())


def chunk_collections(*, chunk_uids: set[str]) -> dict[str, str]:
    """``{chunk_uid: collection}`` of the chunks among ``chunk_uids`` (no visibility check: the
    caller has checked it)."""
    if not chunk_uids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT chunk_uid, collection FROM rag_chunk WHERE chunk_uid = ANY(%s)", [list(chunk_uids)])
        return dict(cursor.fetchall())


def pgvector_version() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return row[0] if row else None


def embedding_column_dims() -> int:
    """The dimension the index's vector column holds now (``reembed`` can change it)."""
    with connection.cursor() as cursor:
        return column_dims(cursor)


# Walks the index of the live chunks' models (``chunk_live_model_idx``) from one model to the next:
# a probe per distinct model, however many chunks there are.
INDEX_MODELS_SQL = """
    WITH RECURSIVE models(name) AS (
        (SELECT embedding_model FROM rag_chunk WHERE deleted_at IS NULL ORDER BY embedding_model LIMIT 1)
        UNION ALL
        SELECT (SELECT c.embedding_model FROM rag_chunk c
                WHERE c.deleted_at IS NULL AND c.embedding_model > models.name
                ORDER BY c.embedding_model LIMIT 1)
        FROM models WHERE models.name IS NOT NULL)
    SELECT name FROM models WHERE name IS NOT NULL"""


def index_models() -> list[str]:
    """The embedding models that produced the live chunks. Every ask checks them, so this never
    reads every chunk (``INDEX_MODELS_SQL``)."""
    with connections[router.db_for_read(Chunk)].cursor() as cursor:
        cursor.execute(INDEX_MODELS_SQL)
        return [name for (name,) in cursor.fetchall()]


def check_query_model(model_name: str) -> None:
    """Refuse to compare a query with vectors of another model (the scores would be noise)."""
    others = [m for m in index_models() if m != model_name]
    if others:
        raise EmbeddingModelMismatch(
            f"The index holds chunks embedded with {', '.join(sorted(others))} but queries would be "
            f"embedded with {model_name}. Run `manage.py reembed` to move the index to {model_name}."
        )


def health_status() -> dict:
    """Each part knowhub needs, with a status; ``ok`` is false when any part is down."""
    parts: dict[str, dict] = {}
    try:
        version = pgvector_version()
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            server = cursor.fetchone()[0]
        parts["database"] = {"status": "ok", "kind": settings.KNOWHUB_DATABASE, "server_version": server}
        parts["pgvector"] = (
            {"status": "ok", "version": version}
            if version
            else {"status": "error", "detail": "the 'vector' extension is not installed in this database"}
        )
        parts["text_search"] = _text_search_status()
    except Exception as exc:  # health reports, it does not raise
        parts["database"] = {"status": "error", "detail": str(exc).strip()}
        from knowhub.api import DATABASE_ERRORS, database_failed

        if isinstance(exc, DATABASE_ERRORS):
            database_failed(exc)  # the embedded default is started again for the next probe
        parts["pgvector"] = {"status": "unknown"}
        parts["text_search"] = {"status": "unknown"}
    from rag.embeddings import get_embedder

    try:
        embedder = get_embedder()
        if settings.KNOWHUB_EMBEDDING_PROVIDER == "local":
            embedder.embed_query("ok")  # proves the weights load from the installed package
        parts["embedding"] = {
            "status": "ok",
            "provider": settings.KNOWHUB_EMBEDDING_PROVIDER,
            "model": embedder.name,
            "dims": embedder.dims,
        }
    except Exception as exc:
        parts["embedding"] = {"status": "error", "provider": settings.KNOWHUB_EMBEDDING_PROVIDER, "detail": str(exc)}
    parts["broker"] = _broker_status()
    from knowhub import replicas

    if replicas.replica_aliases():
        # A replica down or lagging is skipped (reads go to the primary): "degraded", not down.
        states = replicas.status()
        parts["replicas"] = {"status": "ok" if all(r["usable"] for r in states) else "degraded", "replicas": states}
    ok = all(p["status"] in ("ok", "inline", "degraded") for p in parts.values())
    return {"ok": ok, **parts}


def _text_search_status() -> dict:
    """Which keyword backend serves search ("pg_textsearch" or the portable "sql")."""
    from rag import text_search

    try:
        return {"status": "ok", "backend": text_search.active_backend().name}
    except Exception as exc:
        return {"status": "error", "detail": str(exc)}


def _broker_status() -> dict:
    if settings.KNOWHUB_BROKER == "inline":
        return {"status": "inline", "detail": "no Redis configured: tasks run in the calling process"}
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        return {"status": "ok", "url": settings.REDIS_URL.split("@")[-1]}
    except Exception as exc:
        return {"status": "error", "detail": str(exc)}
