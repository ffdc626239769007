"""Migration operations that need more care than Django's built-ins, and the index SQL they share
with the code that rebuilds those indexes."""

from __future__ import annotations

from django.db import migrations

# 0.8: iterative index scans (hnsw.iterative_scan), which filtered searches rely on for a full page.
MIN_PGVECTOR = (0, 8)


class PgvectorMissing(RuntimeError):
    pass


def check_pgvector_available(cursor, settings_dict) -> None:
    """Raise ``PgvectorMissing`` with what to do when the server offers no pgvector >= 0.8, or the
    database already holds an older one."""
    cursor.execute(
        "SELECT a.default_version, e.extversion FROM pg_available_extensions a "
        "LEFT JOIN pg_extension e ON e.extname = a.name WHERE a.name = 'vector'"
    )
    row = cursor.fetchone()
    where = f"{settings_dict.get('HOST') or 'local socket'}/{settings_dict.get('NAME')}"
    if row is None:
        raise PgvectorMissing(
            f"The PostgreSQL server at {where} does not have the 'vector' extension (pgvector >= 0.8) "
            "that knowhub's index needs. Install pgvector on that server (e.g. the pgvector/pgvector "
            "Docker image, or the postgresql-NN-pgvector package), or unset DATABASE_URL to use the "
            "embedded PostgreSQL that ships with pgvector."
        )
    available, installed = row
    if _version(available) < MIN_PGVECTOR:
        raise PgvectorMissing(
            f"The PostgreSQL server at {where} offers pgvector {available}; knowhub needs >= 0.8 (iterative "
            "HNSW scans keep filtered searches complete). Upgrade pgvector on that server (e.g. the "
            "pgvector/pgvector:pg18 image or a newer postgresql-NN-pgvector package), or unset DATABASE_URL "
            "to use the embedded PostgreSQL."
        )
    if installed and _version(installed) < MIN_PGVECTOR:
        raise PgvectorMissing(
            f"The database at {where} has pgvector {installed} installed (the server offers {available}); "
            "knowhub needs >= 0.8. Run `ALTER EXTENSION vector UPDATE;` in that database, then migrate again."
        )


def _version(text: str) -> tuple[int, int]:
    return tuple(int(p) for p in text.split(".")[:2])


class RequirePgvector(migrations.operations.base.Operation):
    """Create the ``vector`` extension, or stop with an error that says what is missing.

    The default error ("could not open extension control file …/vector.control") does not tell
    a newcomer what to do; this one does.
    """

    reversible = True

    def state_forwards(self, app_label, state):
        pass

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        cursor = schema_editor.connection.cursor()
        check_pgvector_available(cursor, schema_editor.connection.settings_dict)
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        pass

    def describe(self):
        return "Require and create the pgvector extension"


HNSW_M = 16  # links per node: pgvector's default
# The candidates kept while linking a new node, below pgvector's 64: linking is most of the time a
# large index takes to build and grows with this width. What the narrower graph loses in recall
# the search wins back by widening its own walk as the graph grows (search.vector_plan).
HNSW_EF_CONSTRUCTION = 48


def hnsw_index_sql(name: str, column: str, dims: int, *, table: str = "rag_chunk") -> str:
    """CREATE INDEX for a chunk vector column's HNSW graph, the one shape the migrations, a re-embed
    and the benchmark build: the vectors at half precision (half the memory a build walks, the
    same neighbours found), cosine distance."""
    return (
        f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw "
        f"(({column}::halfvec({int(dims)})) halfvec_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
    )


def live_model_index_sql(
    name: str = "chunk_live_model_idx", column: str = "embedding_model", *, table: str = "rag_chunk"
) -> str:
    """CREATE INDEX for the live chunks' embedding models (``rag.selectors.index_models`` walks it):
    the shape of ``Chunk``'s ``chunk_live_model_idx``, for a re-embed's new column and the benchmark
    build, which make it outside the migrations."""
    return f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({column}) WHERE deleted_at IS NULL"


def column_dims(cursor, column: str = "embedding", *, table: str = "rag_chunk") -> int:
    """The dimensions a vector column holds now (a re-embed can change them)."""
    cursor.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s AND NOT attisdropped",
        [table, column],
    )
    return cursor.fetchone()[0]
