"""manage.py evaluate on a small synthetic BEIR folder, with the real local model."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from rag.evaluation import collection_name, mrr_at, ndcg_at, recall_at
from rag.models import Chunk
from tests.rag.factories import beir_folder

pytestmark = pytest.mark.django_db

CORPUS = {
    "d1": (
        "Closures in JavaScript", "A closure keeps access to the variables of its outer function after it returned."
    ),
    "d2": ("Promises", "A promise stands for the eventual result of an asynchronous operation."),
    "d3": ("Mitochondria", "Mitochondria make most of the cell's ATP by oxidative phosphorylation."),
    "d4": ("Photosynthesis", "Chloroplasts turn light, water and carbon dioxide into sugar and oxygen."),
    "d5": ("B-tree indexes", "A B-tree index speeds up equality and range lookups in a database table."),
    "d6": ("Plate tectonics", "Earthquakes happen where tectonic plates slide past or under each other."),
    "d7": ("Vaccines", "Vaccines train the immune system to recognise a pathogen without causing disease."),
    "d8": ("Black holes", "A black hole's gravity is so strong that not even light escapes its event horizon."),
}
QUERIES = {
    "q1": ("Which organelle produces ATP for the cell?", {"d3": 1}),
    "q2": ("how do inner functions remember outer variables", {"d1": 1}),
    "q3": ("what makes earthquakes", {"d6": 1}),
    "q4": ("immune training against pathogens", {"d7": 1, "d3": 0}),
}


@pytest.fixture
def beir(tmp_path):
    return beir_folder(
        tmp_path / "tiny-set", corpus=CORPUS, queries=QUERIES, unjudged={"unjudged": "not in the qrels"}
    )


def run(*args) -> dict:
    out = StringIO()
    call_command("evaluate", *args, stdout=out)
    return json.loads(out.getvalue())


def test_metrics_on_hand_computed_rankings():
    rels = {"a": 1, "b": 1}
    assert ndcg_at(["a", "b", "x"], rels, 10) == pytest.approx(1.0)
    assert ndcg_at(["x", "a"], {"a": 1}, 10) == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert recall_at(["a", "x"], rels, 100) == 0.5
    assert mrr_at(["x", "y", "b"], rels, 10) == pytest.approx(1 / 3)
    assert mrr_at(["x"] * 10 + ["a"], rels, 10) == 0.0


def test_evaluate_reports_every_mode_and_reuses_the_ingested_corpus(beir, local_embedder):
    first = run("--dataset", str(beir), "--json")
    assert first["dataset"] == "tiny-set" and first["split"] == "test" and first["queries"] == 4
    assert set(first["modes"]) == {"hybrid", "vector", "fulltext", "rrf"}
    for scores in first["modes"].values():
        assert set(scores) >= {"ndcg@10", "recall@100", "mrr@10"}
        assert all(0.0 <= scores[k] <= 1.0 for k in ("ndcg@10", "recall@100", "mrr@10"))
        assert scores["recall@100"] == 1.0  # 8 documents: everything is within 100
    assert first["modes"]["hybrid"]["ndcg@10"] >= 0.75
    assert first["modes"]["vector"]["mrr@10"] >= 0.75
    assert first["ingest"]["created"] == len(CORPUS) and first["ingest"]["embedded"] == len(CORPUS)
    assert set(Chunk.objects.values_list("collection", flat=True)) == {collection_name(beir)} == {"eval-tiny-set"}

    again = run("--dataset", str(beir), "--json", "--modes", "fulltext,hybrid")
    assert set(again["modes"]) == {"fulltext", "hybrid"}
    assert again["ingest"]["embedded"] == 0 and again["ingest"]["unchanged"] == len(CORPUS)
    assert again["modes"]["hybrid"] == first["modes"]["hybrid"] | {"p50_ms": again["modes"]["hybrid"]["p50_ms"]}


def test_table_output(beir, local_embedder):
    out = StringIO()
    call_command("evaluate", "--dataset", str(beir), "--modes", "vector", stdout=out)
    text = out.getvalue()
    assert "nDCG@10" in text and "vector" in text and "eval-tiny-set" in text


def test_bad_arguments(beir, tmp_path):
    with pytest.raises(CommandError, match="qrels/train.tsv"):
        run("--dataset", str(beir), "--split", "train", "--json")
    with pytest.raises(CommandError, match="unknown mode"):
        run("--dataset", str(beir), "--modes", "hybrid,semantic", "--json")
    with pytest.raises(CommandError, match="not a BEIR folder"):
        run("--dataset", str(tmp_path / "missing"), "--json")
    assert Chunk.objects.count() == 0
