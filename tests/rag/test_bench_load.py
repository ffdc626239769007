"""The bench corpus' bulk load (bench_search): loader processes in parallel make exactly the rows
one loader makes, every batch once."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from rag import bench


def _tiny_beir(root):
    root.mkdir()
    with (root / "corpus.jsonl").open("w") as fh:
        for d in range(30):
            sentences = [f"Document {d} states finding number {s} about protein {d * 7 + s}." for s in range(5)]
            fh.write(json.dumps({"_id": str(d), "title": f"Paper {d}", "text": " ".join(sentences)}) + "\n")
    return root


def _rows():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_uid, title, content, embedding::text, domain, visibility, date, search_dl FROM rag_chunk "
            "WHERE collection = %s ORDER BY chunk_uid",
            [bench.COLLECTION],
        )
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
def test_parallel_loaders_make_the_rows_one_loader_makes(tmp_path, hashing_embedder, monkeypatch):
    corpus = _tiny_beir(tmp_path / "beir")
    monkeypatch.setattr(bench, "COPY_BATCH", 40)  # several batches for the loaders to share
    monkeypatch.setattr(bench, "cache_dir", lambda: tmp_path)

    monkeypatch.setattr(bench, "load_processes", lambda: 1)
    bench.build_corpus(230, corpus=corpus, embedder=hashing_embedder, embed_sentences=True)
    one = _rows()
    monkeypatch.setattr(bench, "load_processes", lambda: 3)
    bench.build_corpus(230, corpus=corpus, embedder=hashing_embedder, rebuild=True)
    many = _rows()

    assert len(one) == 230 and len({r[0] for r in one}) == 230
    assert many == one
    assert all(r[7] and r[7] > 0 for r in many)  # the length column was filled from each row's tsv
    assert {r[5] for r in many} == {"public", "restricted"}


@pytest.mark.django_db(transaction=True)
def test_a_large_load_builds_every_index_after_loading(tmp_path, hashing_embedder, monkeypatch):
    """Past ``HNSW_REBUILD_ABOVE`` the indexes are dropped, the rows loaded with autovacuum off, and
    the vector, GIN, bm25 and model indexes built at once on their own connections: all are there
    afterwards, the keyword index holds every row, and autovacuum is on again."""
    from rag import text_search

    corpus = _tiny_beir(tmp_path / "beir")
    monkeypatch.setattr(bench, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(bench, "HNSW_REBUILD_ABOVE", 100)
    with connection.cursor() as cursor:  # what a load killed half-way leaves behind
        cursor.execute("ALTER TABLE rag_chunk SET (autovacuum_enabled = off)")
    built = bench.build_corpus(230, corpus=corpus, embedder=hashing_embedder, embed_sentences=True)

    assert built.built and built.hnsw_seconds > 0 and built.text_index_seconds > 0
    assert built.vacuum_seconds > 0  # vacuumed once loaded, apart from the build's time
    assert built.vectors_seconds > 0  # the corpus's sentences embedded, timed apart from the build too
    # Clearing the previous corpus is timed apart as well; the build is its load, indexes and statistics.
    assert built.prepare_seconds > 0 and built.finish_seconds > 0
    assert built.load_seconds + max(built.hnsw_seconds, built.text_index_seconds) + built.finish_seconds <= (
        built.build_seconds
    )
    with connection.cursor() as cursor:
        present = {}
        for name in (bench.VECTOR_INDEXES["hnsw"][0], "chunk_tsv_gin", text_search.BM25_INDEX, "chunk_live_model_idx"):
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            present[name] = cursor.fetchone()[0]
        backend = text_search.wanted_backend(cursor)
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = 'rag_chunk'::regclass")
        options = cursor.fetchone()[0] or []
    assert not any(o.startswith("autovacuum_enabled") for o in options)  # on again once built
    assert present[bench.VECTOR_INDEXES["hnsw"][0]] and present["chunk_tsv_gin"] and present["chunk_live_model_idx"]
    assert present[text_search.BM25_INDEX] == (backend == text_search.PgTextsearch.name)
    if backend == text_search.PgTextsearch.name:
        with connection.cursor() as cursor:
            rows, documents = text_search.bm25_index_counts(cursor)
        assert documents == rows


def _heap_pages() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('rag_chunk') / current_setting('block_size')::int")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_large_rebuild_starts_from_an_empty_table_and_keeps_other_collections(
    tmp_path, hashing_embedder, monkeypatch
):
    """A rebuild of a large corpus does not leave the previous corpus as dead rows that the load
    writes around (the table is emptied whole when it holds nothing else); a chunk of another
    collection survives it."""
    from tests.rag.factories import doc, load

    corpus = _tiny_beir(tmp_path / "beir")
    monkeypatch.setattr(bench, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(bench, "HNSW_REBUILD_ABOVE", 100)
    bench.build_corpus(230, corpus=corpus, embedder=hashing_embedder, embed_sentences=True)
    first = _heap_pages()
    bench.build_corpus(230, corpus=corpus, embedder=hashing_embedder, rebuild=True)
    # No dead space left by the previous corpus (that would double the heap): two loaders fill
    # pages in whatever order they interleave, so the count may differ by a page or two.
    assert _heap_pages() <= first * 1.1

    load([doc("kept", "Not the bench", "A chunk of another collection.", collection="notes")], hashing_embedder)
    bench.build_corpus(230, corpus=corpus, embedder=hashing_embedder, rebuild=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT collection, count(*) FROM rag_chunk GROUP BY 1 ORDER BY 1")
        assert cursor.fetchall() == [(bench.COLLECTION, 230), ("notes", 1)]


def test_a_database_without_knowhub_tables_is_told_to_migrate_first(tmp_path, monkeypatch):
    from django.core.management import CommandError, call_command

    # A fresh embedded server for the bench (KNOWHUB_PGDATA) starts with no tables: say what to
    # run, not a traceback from the first query.
    corpus = _tiny_beir(tmp_path / "beir")
    (corpus / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "protein findings"}) + "\n")
    monkeypatch.setattr(connection.introspection, "table_names", lambda *a, **k: [])
    with pytest.raises(CommandError, match="run `manage.py migrate` first"):
        call_command("bench_search", "--chunks", "100", "--corpus", str(corpus))
