"""chunk_upsert: idempotent, history on change, no orphans, all-or-nothing per source."""

from __future__ import annotations

import pytest

from rag.models import Chunk, ChunkHistory
from rag.services import SourceError, chunk_upsert
from rag.units import SourceDocument, Unit

pytestmark = pytest.mark.django_db

LONG = " ".join(f"Sentence number {i} talks about closures and scope." for i in range(120))


def doc(content=LONG, source_id="page-1", **kw):
    return SourceDocument(
        collection="course_content",
        source_type="page",
        source_id=source_id,
        units=[Unit(unit_anchor="u0", content=content, title="Closures", domain="javascript")],
        chunk_size=kw.pop("chunk_size", 400),
        chunk_overlap=kw.pop("chunk_overlap", 60),
        **kw,
    )


def test_replaying_an_upsert_three_times_embeds_once(local_embedder):
    first = chunk_upsert(documents=[doc()], embedder=local_embedder)
    assert first.created > 3 and first.embedded == first.created
    uids = set(Chunk.objects.values_list("chunk_uid", flat=True))
    for _ in range(2):
        again = chunk_upsert(documents=[doc()], embedder=local_embedder)
        assert (again.created, again.updated, again.embedded, again.deleted) == (0, 0, 0, 0)
        assert again.unchanged == first.created
    assert set(Chunk.objects.values_list("chunk_uid", flat=True)) == uids
    assert all(uid.startswith("course_content:page:page-1:u0:") for uid in uids)
    assert ChunkHistory.objects.count() == first.created
    chunk = Chunk.objects.first()
    assert len(chunk.embedding) == 384 and chunk.embedding_model == local_embedder.name
    assert chunk.embedding_model.startswith("local:all-MiniLM-L6-v2")


def test_a_change_writes_history_and_reembeds_only_that_chunk(hashing_embedder):
    chunk_upsert(documents=[doc()], embedder=hashing_embedder)
    changed = LONG.replace("Sentence number 3 ", "Sentence number three ")
    result = chunk_upsert(documents=[doc(changed)], embedder=hashing_embedder)
    assert result.updated >= 1 and result.embedded == result.updated
    assert result.unchanged >= 1
    versions = ChunkHistory.objects.filter(chunk_uid__endswith=":u0:0").order_by("id")
    assert [v.change for v in versions] == ["created", "updated"]
    assert "number three" in versions.last().content


def test_metadata_change_updates_without_reembedding(hashing_embedder):
    chunk_upsert(documents=[doc()], embedder=hashing_embedder)
    d = doc()
    d.units[0].concepts = ["closures"]
    result = chunk_upsert(documents=[d], embedder=hashing_embedder)
    assert result.embedded == 0 and result.updated == Chunk.objects.count()
    assert set(Chunk.objects.values_list("concepts", flat=True).distinct()[0]) == {"closures"}


def test_shrinking_source_leaves_no_orphans(hashing_embedder):
    first = chunk_upsert(documents=[doc()], embedder=hashing_embedder)
    result = chunk_upsert(documents=[doc("Now a single short paragraph.")], embedder=hashing_embedder)
    assert result.deleted == first.created - 1
    assert Chunk.objects.count() == 1
    assert ChunkHistory.objects.filter(change="deleted").count() == first.created - 1


class Boom(Exception):
    pass


class FailingEmbedder:
    """Fails on its second batch: a provider that dies mid-run (test about atomicity)."""

    def __init__(self, inner):
        self.inner, self.name, self.dims, self.batches = inner, inner.name, inner.dims, 0

    def embed_documents(self, texts):
        self.batches += 1
        if self.batches == 2:
            raise Boom("provider went away")
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_provider_failure_mid_batch_leaves_every_source_untouched(hashing_embedder):
    chunk_upsert(documents=[doc(source_id="a"), doc(source_id="b")], embedder=hashing_embedder)
    before = {c.chunk_uid: c.content for c in Chunk.objects.all()}
    edited = [doc(LONG.replace("closures", "hoisting"), source_id=s) for s in ("a", "b")]
    with pytest.raises(Boom):
        chunk_upsert(documents=edited, embedder=FailingEmbedder(hashing_embedder), batch_size=4)
    assert {c.chunk_uid: c.content for c in Chunk.objects.all()} == before


def test_bad_documents_are_refused_before_any_write(hashing_embedder):
    with pytest.raises(SourceError):
        chunk_upsert(documents=[doc(), doc(visibility="restricted")], embedder=hashing_embedder)
    with pytest.raises(SourceError):
        chunk_upsert(documents=[doc(visibility="restricted", project="nope")], embedder=hashing_embedder)
    assert Chunk.objects.count() == 0


def test_soft_deleted_source_comes_back_on_resync(hashing_embedder):
    from rag.services import source_soft_delete

    chunk_upsert(documents=[doc()], embedder=hashing_embedder)
    n = source_soft_delete(collection="course_content", source_type="page", source_ids=["page-1"])
    assert n == Chunk.objects.filter(deleted_at__isnull=False).count() > 0
    result = chunk_upsert(documents=[doc()], embedder=hashing_embedder)
    assert result.embedded == 0 and result.updated == n
    assert not Chunk.objects.filter(deleted_at__isnull=False).exists()


def _stored() -> dict:
    """Everything an upsert may write: chunk rows (with vectors), history, BM25 term stats."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM rag_term_stat ORDER BY 1, 2, 3, 4, 5")
        stats = cursor.fetchall()
    chunks = {c["chunk_uid"]: c for c in Chunk.objects.values()}
    for row in chunks.values():
        row["embedding"] = list(row["embedding"])
    return {"chunks": chunks, "history": ChunkHistory.objects.count(), "term_stats": stats}


@pytest.mark.parametrize("text_backend", ["sql"], indirect=True)
def test_a_dry_run_counts_what_the_real_run_then_does_and_writes_nothing(hashing_embedder, text_backend):
    from rag.services import source_soft_delete

    def shrunk(**kw):
        return doc("Now a single short paragraph about closures.", **kw)

    steps = [
        [doc(), doc(source_id="page-2"), doc(source_id="page-3")],  # all new
        [doc(), doc(source_id="page-2"), doc(source_id="page-3")],  # all unchanged
        [
            doc(LONG.replace("Sentence number 3 ", "Sentence number three ")),  # one chunk re-embedded
            shrunk(source_id="page-2"),  # surplus chunks deleted
            doc(source_id="page-3"),
            doc(LONG, source_id="page-4"),  # same texts as another source: embedded once per text
        ],
    ]
    steps[2][2].units[0].concepts = ["closures"]  # metadata only: updated, not re-embedded
    for documents in steps:
        before = _stored()
        dry = chunk_upsert(documents=documents, embedder=hashing_embedder, dry_run=True)
        assert hashing_embedder.calls == [] and _stored() == before
        real = chunk_upsert(documents=documents, embedder=hashing_embedder)
        hashing_embedder.calls.clear()
        assert dry.as_dict() == real.as_dict()
    assert min(dry.created, dry.updated, dry.deleted, dry.embedded) > 0

    source_soft_delete(collection="course_content", source_type="page", source_ids=["page-1"])
    before = _stored()
    dry = chunk_upsert(documents=[doc()], embedder=hashing_embedder, dry_run=True)
    assert _stored() == before
    assert dry.as_dict() == chunk_upsert(documents=[doc()], embedder=hashing_embedder).as_dict()
    assert dry.updated > 0

    from tests.conftest import HashingEmbedder

    other = HashingEmbedder(name="test:other")  # another model: everything is re-embedded
    before = _stored()
    dry = chunk_upsert(documents=[doc()], embedder=other, dry_run=True)
    assert other.calls == [] and _stored() == before
    assert dry.as_dict() == chunk_upsert(documents=[doc()], embedder=other).as_dict()
    assert dry.embedded == dry.updated > 0
