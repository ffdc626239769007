"""manage.py feedback_eval on a tiny BEIR folder, with the real model: per-fold figures for every
configuration, tuned weights never below the baseline, the in-memory figures equal to what
chunk_search gives, and nothing left behind."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from feedback.models import ClickEvent, Interaction, Judgment, RankingConfig
from tests.rag.factories import beir_folder

from .conftest import DOCS

pytestmark = pytest.mark.django_db

QUERIES = {
    "q1": ("how do closures work in javascript", ["closures-guide", "closures-faq"]),
    "q2": ("explain javascript closures and private state", ["closures-guide"]),
    "q3": ("lexical scope chain of variables", ["scope-chain"]),
    "q4": ("what does await do with a promise", ["promises"]),
    "q5": ("react useState hook", ["react-hooks"]),
    "q6": ("grid template columns in css", ["css-grid"]),
    "q7": ("baking bread with a sourdough starter", ["sourdough"]),
    "q8": ("when is the next board meeting", ["board-meeting"]),
    "q9": ("I forgot my password", ["password-reset"]),
    "q10": ("wrapping a python function with a decorator", ["python-decorators"]),
}


@pytest.fixture
def dataset(tmp_path):
    queries = {qid: (text, dict.fromkeys(docs, 1)) for qid, (text, docs) in QUERIES.items()}
    return beir_folder(tmp_path / "fbeval", corpus=DOCS, queries=queries, split="train")


def test_feedback_eval_reports_every_configuration_per_fold(dataset, local_embedder, capsys):
    call_command(
        "feedback_eval", "--dataset", str(dataset), "--folds", "2", "--judged-fraction", "0.5",
        "--reach", "0.85,0.5", "--live-check", "--json",
    )  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    rows = ("baseline", "tuned_weights", "label_effect", "both", "clicks_only")
    assert len(report["folds"]) == 2 and report["queries"] == 10
    for fold in report["folds"]:
        assert fold["held_out"] == 5 and fold["judged"] == 5
        assert set(fold["ndcg@10"]) == set(rows)
        assert all(0 <= v <= 1 for v in fold["ndcg@10"].values())
        assert set(fold["label_reach"]) == {"0.85", "0.5"}
        # weights tune_ranking would not activate are not used: the baseline stays
        if fold["tuning"]["status"] != "improved":
            assert fold["ndcg@10"]["tuned_weights"] == fold["ndcg@10"]["baseline"]
            assert fold["ndcg@10"]["both"] == fold["ndcg@10"]["label_effect"]
        assert fold["clicks"] > 0 and fold["judgments"]["positive"] > 0
    assert set(report["mean"]) == set(rows)
    live = report["live_check"]
    assert live["baseline"] == live["in_memory"]["baseline"]
    assert live["both"] == live["in_memory"]["both"]
    # everything it labelled was rolled back
    assert not Interaction.objects.exists() and not Judgment.objects.exists()
    assert not ClickEvent.objects.exists() and not RankingConfig.objects.exists()


def test_feedback_eval_refuses_bad_options(dataset):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="judged-fraction"):
        call_command("feedback_eval", "--dataset", str(dataset), "--judged-fraction", "1.5")
    with pytest.raises(CommandError, match="too few"):
        call_command("feedback_eval", "--dataset", str(dataset), "--folds", "6")
    with pytest.raises(CommandError, match="reach"):
        call_command("feedback_eval", "--dataset", str(dataset), "--reach", "0.8,x")
