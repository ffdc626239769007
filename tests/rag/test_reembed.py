"""Moving the index to another embedding provider never leaves search empty."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from rag.acl import Scope
from rag.models import Chunk
from rag.search import chunk_search
from rag.selectors import (
    INDEX_MODELS_SQL,
    EmbeddingModelMismatch,
    check_query_model,
    embedding_column_dims,
    index_models,
)
from rag.services import chunk_upsert, index_reembed
from rag.units import SourceDocument, Unit
from tests.conftest import HashingEmbedder

TOPICS = [
    "Closures keep a reference to the variables of the scope they were created in.",
    "Promises represent a value that will be available later; then() chains callbacks.",
    "The event loop takes the next task once the call stack is empty.",
    "Generators pause at each yield and resume when next() is called.",
    "An inner join keeps only rows that match in both tables.",
]


def _column_dims() -> int:
    return embedding_column_dims()


def _index_definition(name: str = "chunk_embedding_hnsw") -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_indexdef(%s::regclass)", [name])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_reembed_moves_every_chunk_and_search_never_goes_empty(local_embedder):
    docs = [
        SourceDocument(
            collection="notes", source_type="note", source_id=str(i), units=[Unit(unit_anchor="u", content=t)]
        )
        for i, t in enumerate(TOPICS)
    ]
    chunk_upsert(documents=docs, embedder=local_embedder)
    # The stand-in target is about the move mechanism, not about embedding quality.
    target = HashingEmbedder(dims=16, name="test:hashing-16")
    seen_during_move = []

    def search_meanwhile():
        hits = chunk_search(query="event loop", scope=Scope.everything(), embedder=local_embedder).hits
        seen_during_move.append(len(hits))

    result = index_reembed(target=target, batch_size=2, on_batch=search_meanwhile)
    assert result == {"reembedded": len(TOPICS), "model": "test:hashing-16", "dims": 16}
    assert seen_during_move and all(n > 0 for n in seen_during_move)
    assert _column_dims() == 16
    assert "halfvec(16)) halfvec_cosine_ops" in _index_definition()  # the graph moved with the column
    assert "(embedding_model) WHERE (deleted_at IS NULL)" in _index_definition("chunk_live_model_idx")
    assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {"test:hashing-16"}
    with pytest.raises(EmbeddingModelMismatch, match="reembed"):
        chunk_search(query="event loop", scope=Scope.everything(), embedder=local_embedder)
    hits = chunk_search(query="event loop task", scope=Scope.everything(), embedder=target).hits
    assert hits
    # The keyword index (pg_textsearch on the test server) went through the column swap: every
    # chunk is found once by its own words, none twice (rewritten rows are not duplicated).
    for topic in TOPICS:
        words = " ".join(topic.split()[:4])
        text_hits = chunk_search(query=words, scope=Scope.everything(), mode="fulltext", embedder=target).hits
        assert text_hits[0].content == topic
        assert len({h.chunk_uid for h in text_hits}) == len(text_hits)

    # And back to the configured local model, through the command a user runs.
    call_command("reembed", "--json")
    assert _column_dims() == 384
    assert "halfvec(384)) halfvec_cosine_ops" in _index_definition()
    assert set(Chunk.objects.values_list("embedding_model", flat=True)) == {local_embedder.name}
    top = chunk_search(query="what does the event loop do", scope=Scope.everything(), embedder=local_embedder).hits[0]
    assert "event loop" in top.content


@pytest.mark.django_db
def test_the_index_models_are_each_live_model_once_and_never_a_hidden_chunks():
    def upsert(model: str, source_id: str, n: int) -> None:
        docs = [
            SourceDocument(
                collection="notes", source_type="note", source_id=source_id,
                units=[Unit(unit_anchor=f"u{i}", content=f"{TOPICS[i]} ({source_id})") for i in range(n)],
            )
        ]  # fmt: skip
        chunk_upsert(documents=docs, embedder=HashingEmbedder(name=model))

    upsert("test:b", "b", 3)
    upsert("test:a", "a", 2)
    upsert("test:c", "c", 1)
    assert index_models() == ["test:a", "test:b", "test:c"]
    Chunk.objects.filter(source_id="c").update(deleted_at=timezone.now())
    assert index_models() == ["test:a", "test:b"]
    with pytest.raises(EmbeddingModelMismatch, match="test:b"):
        check_query_model("test:a")
    Chunk.objects.filter(source_id="b").update(deleted_at=timezone.now())
    check_query_model("test:a")
    Chunk.objects.update(deleted_at=timezone.now())
    assert index_models() == []


@pytest.mark.django_db
def test_the_index_models_are_read_from_their_index_not_by_reading_every_chunk():
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the few test rows would be read whole anyway
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN {INDEX_MODELS_SQL}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "chunk_live_model_idx" in plan, plan
