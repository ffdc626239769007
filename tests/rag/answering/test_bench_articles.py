"""``manage.py bench_answers`` on a folder of articles with SQuAD-shaped questions written here
(real PostgreSQL, the real local model, the offline answerer), and the figures' arithmetic."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from rag.answering.squad_bench import SentenceBM25, found, sample, squad_figures

pytestmark = pytest.mark.django_db(transaction=False)

TEA = """# Tea

Tea is an aromatic beverage prepared by pouring hot water over cured leaves of Camellia sinensis.
The plant is native to East Asia and probably originated in the borderlands of southwestern China.
Green tea is not oxidised, while black tea is fully oxidised before it is dried.
"""
VOLCANO = """# Volcano

A volcano is a rupture in the crust of a planet that lets hot lava and volcanic ash escape.
Mount Etna in Sicily is one of the most active volcanoes in the world.
Volcanoes are most common where tectonic plates diverge or converge.
"""


@pytest.fixture
def articles(tmp_path):
    root = tmp_path / "articles"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "Tea.md").write_text(TEA)
    (root / "docs" / "Volcano.md").write_text(VOLCANO)
    questions = [
        {"question": "Where did the tea plant probably originate?", "article": "Tea",
         "answers": ["southwestern China", "China"]},
        {"question": "Which volcano in Sicily is very active?", "article": "Volcano", "answers": ["Mount Etna"]},
        {"question": "Who invented the steam locomotive?", "article": "Volcano", "answers": []},
    ]  # fmt: skip
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")
    return root


def test_bench_answers_on_articles_prints_the_figures_and_the_peer(articles, local_embedder):
    out = io.StringIO()
    call_command("bench_answers", "--dataset", str(articles), "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert (report["questions"], report["answerable"], report["unanswerable"]) == (3, 2, 1)
    assert report["answer_found"] == 1.0 and report["right_article_cited"] == 1.0
    assert report["answerable_refused"] == 0.0 and report["unanswerable_refused"] == 1.0
    assert report["peer_answer_found"] is not None


def test_answer_matching_and_the_peer():
    assert found(["Mount Etna"], "Mount Etna, in Sicily [1].") and not found(["Etna"], "Etnaland")
    peer = SentenceBM25(["Mount Etna in Sicily is active.", "Tea is a beverage made from leaves."])
    assert peer.top("which volcano in sicily", chars=10) == "Mount Etna in Sicily is active."
    figures = squad_figures([
        {"answerable": True, "refused": False, "found": True, "peer_found": False, "right_article": True},
        {"answerable": True, "refused": True, "found": False, "peer_found": True, "right_article": None},
        {"answerable": False, "refused": True, "found": False, "peer_found": False, "right_article": None},
    ])  # fmt: skip
    assert figures["answer_found"] == 0.5 and figures["peer_answer_found"] == 0.5
    assert figures["right_article_cited"] == 1.0 and figures["answerable_refused"] == 0.5
    assert figures["unanswerable_refused"] == 1.0


def test_samples_at_two_offsets_are_disjoint_halves_of_a_third():
    questions = list(range(24))
    tuned, held_out = sample(questions, 6), sample(questions, 6, 3)
    assert tuned == [0, 6, 12, 18] and held_out == [3, 9, 15, 21] and not set(tuned) & set(held_out)
