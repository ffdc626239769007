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
    assert all(r[7] and r[7] > 0 for r in many)  # the generated length column was filled
    assert {r[5] for r in many} == {"public", "restricted"}
