"""pgvectorscale's StreamingDiskANN as the vector index instead of HNSW (bench_search --vector-index)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from rag import bench
from rag.acl import Scope
from rag.search import chunk_search
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
            hits = chunk_search(query="how do cells make energy", scope=Scope.everything(), mode="vector",
                                embedder=local_embedder).hits  # fmt: skip
        assert hits[0].source_id == "mitochondria"
        assert bench.vector_index_size()
    finally:
        bench.use_vector_index("hnsw", memory="64MB", workers=1)
    assert bench.vector_index_kind() == "hnsw"
