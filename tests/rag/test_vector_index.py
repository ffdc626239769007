"""The vector index: pgvector's HNSW over half-precision vectors (what the migrations build), and
pgvectorscale's StreamingDiskANN instead of it (bench_search --vector-index)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import override_settings

from rag import bench
from rag.acl import Scope
from rag.search import _vector_sql, chunk_search
from tests.rag.factories import TOPICS, doc, load


@pytest.mark.django_db(transaction=True)
def test_search_walks_a_diskann_index_and_hnsw_comes_back(local_embedder):
    load([doc(key, title, text) for key, (title, text) in TOPICS.items()], local_embedder)
    try:
        bench.use_vector_index("diskann", memory="64MB", workers=1)
        assert bench.vector_index_kind() == "diskann"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")  # six rows: make the planner take the index
            cursor.execute(
                "EXPLAIN SELECT id FROM rag_chunk c ORDER BY c.embedding <=> %s::vector LIMIT 3",
                [str(local_embedder.embed_query("cell energy"))],
            )
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "chunk_embedding_diskann" in plan, plan
            with override_settings(KNOWHUB_VECTOR_INDEX="diskann"):
                sql = _vector_sql("TRUE", exact=False, dims=local_embedder.dims)
                cursor.execute(f"EXPLAIN {sql}", {"qvec": str(local_embedder.embed_query("cell energy")), "n": 3})
                assert "chunk_embedding_diskann" in "\n".join(row[0] for row in cursor.fetchall())
                hits = chunk_search(query="how do cells make energy", scope=Scope.everything(), mode="vector",
                                    embedder=local_embedder).hits  # fmt: skip
        assert hits[0].source_id == "mitochondria"
        assert bench.vector_index_size()
    finally:
        bench.use_vector_index("hnsw", memory="64MB", workers=1)
    assert bench.vector_index_kind() == "hnsw"


@pytest.mark.django_db(transaction=True)
def test_the_migrated_hnsw_index_holds_half_precision_vectors_and_search_walks_it(local_embedder):
    """The graph is built over ``embedding::halfvec(dims)``: the search must order by that same
    expression or the planner cannot use the index at all (a sequential scan at a million rows)."""
    load([doc(key, title, text) for key, (title, text) in TOPICS.items()], local_embedder)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_indexdef('chunk_embedding_hnsw'::regclass)")
        definition = cursor.fetchone()[0]
    assert f"halfvec({local_embedder.dims})" in definition and "halfvec_cosine_ops" in definition, definition
    # Built narrower than pgvector's default (the search widens its walk instead).
    assert "m='16'" in definition and "ef_construction='48'" in definition, definition
    query = local_embedder.embed_query("how do cells make energy")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # six rows: make the planner take an index if it can
        cursor.execute(f"EXPLAIN {_vector_sql('TRUE', exact=False, dims=len(query))}", {"qvec": str(query), "n": 3})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using chunk_embedding_hnsw" in plan, plan
    hits = chunk_search(query="how do cells make energy", scope=Scope.everything(), mode="vector",
                        query_vector=query).hits  # fmt: skip
    # The score is the full-precision cosine (hits round it to six places), not the half-precision one.
    assert hits[0].source_id == "mitochondria"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 - (embedding <=> %s::vector) FROM rag_chunk WHERE chunk_uid = %s", [str(query), hits[0].chunk_uid]
        )
        assert hits[0].vec_score == pytest.approx(cursor.fetchone()[0], abs=2e-6)


@pytest.mark.django_db
def test_the_models_and_the_migrations_agree():
    """A model change with no migration (the graph's build width included) would leave every
    install's schema behind the code."""
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
