"""tune_ranking: a cross-validated fit on judgments, pairwise preferences and debiased clicks,
activated only when it beats the active weights on every held-out fold; every configuration is
kept and can be restored."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from feedback.fitting import (
    Candidate,
    FitData,
    LabelledQuery,
    click_weights,
    fit_weights,
    fold_split,
)
from feedback.models import RankingConfig
from feedback.ranking import RankingWeights, fused
from feedback.services import (
    click_record,
    feedback_submit,
    ranking_config_activate,
    ranking_config_record,
)
from feedback.tuning import ranking_tune, tune_on

from .conftest import record, uid

# Candidate features: (vec, txt, title_match, recency, judgment-balance placeholder)
TITLE_HELPS = [("rel", (0.60, 0.50, 1.0, 0.0, 0.0)), ("distractor", (0.70, 0.60, 0.0, 0.0, 0.0))]
TITLE_HURTS = [("rel", (0.70, 0.60, 0.0, 0.0, 0.0)), ("distractor", (0.60, 0.50, 1.0, 0.0, 0.0))]
FILLER = [(f"filler{i}", (0.3 - i * 0.01, 0.1, 0.0, 0.0, 0.0)) for i in range(8)]


def query(group: str, pattern) -> LabelledQuery:
    candidates = [
        Candidate(chunk_uid=f"{group}:{name}", doc_key=f"{group}:{name}", features=f)
        for name, f in pattern + FILLER
    ]
    return LabelledQuery(
        group=group, query=group, candidates=candidates, positives={f"{group}:rel"}
    )


def adversarial(n: int = 10, seed: int = 0, folds: int = 5) -> list[LabelledQuery]:
    """Queries where a title match marks the relevant chunk, except in one fold where it misleads:
    the fit gains overall but loses on that fold."""
    groups = [query(f"g{i}", TITLE_HELPS) for i in range(n)]
    bad = {q.group for q in fold_split(groups, folds=folds, seed=seed)[0]}
    return [query(q.group, TITLE_HURTS if q.group in bad else TITLE_HELPS) for q in groups]


def test_fitting_finds_a_feature_that_predicts_relevance_on_every_fold():
    queries = [query(f"g{i}", TITLE_HELPS) for i in range(10)]
    fitted, report = tune_on(queries, start=RankingWeights.default(), seed=0)
    assert report.status == "improved"
    assert fitted.w_title > 0
    assert report.folds == 5 and report.validation == 10
    assert all(f["after"] == 1.0 and f["before"] < 1.0 for f in report.fold_results)
    assert report.train_ndcg["after"] == 1.0
    # every fold chose to raise the title weight: full confidence in it
    assert report.features["w_title"]["agreement"] == 1.0
    assert report.features["w_title"]["value"] == fitted.w_title


def test_a_fit_that_loses_on_one_fold_is_never_activated():
    queries = adversarial()
    fitted, report = tune_on(queries, start=RankingWeights.default(), seed=0)
    gains = [f["after"] - f["before"] for f in report.fold_results]
    # it wins on average and on the train queries, but loses on one fold
    assert fitted.w_title > 0 and report.train_ndcg["after"] > report.train_ndcg["before"]
    assert sum(gains) > 0 and min(gains) < 0
    assert report.status == "rejected"


def test_a_tie_on_a_fold_is_not_a_win():
    # a fold where the title feature changes nothing: the relevant chunk is first either way
    tie = [("rel", (0.9, 0.9, 1.0, 0.0, 0.0)), ("distractor", (0.5, 0.5, 0.0, 0.0, 0.0))]
    groups = [query(f"g{i}", TITLE_HELPS) for i in range(10)]
    tied = {q.group for q in fold_split(groups, folds=5, seed=0)[2]}
    queries = [query(q.group, tie if q.group in tied else TITLE_HELPS) for q in groups]
    _, report = tune_on(queries, start=RankingWeights.default(), seed=0)
    assert report.fold_results[2]["before"] == report.fold_results[2]["after"] == 1.0
    assert report.status == "rejected"


def test_regularisation_keeps_the_defaults_unless_the_gain_pays_for_the_change():
    # one query in ten gains from the title feature: worth 0.1·(1 − 0.63) of mean nDCG
    queries = [query("g0", TITLE_HELPS)] + [
        query(f"g{i}", [("rel", (0.9, 0.9, 0.0, 0.0, 0.0))]) for i in range(1, 10)
    ]
    loose, _ = fit_weights(queries, start=RankingWeights.default(), regularisation=0.0)
    strict, _ = fit_weights(queries, start=RankingWeights.default(), regularisation=1.0)
    assert loose.w_title > 0
    assert strict == RankingWeights.default()


def pair_query(group: str, pattern, preferred: str, other: str) -> LabelledQuery:
    q = query(group, pattern)
    q.positives = set()
    q.pairs = [(f"{group}:{preferred}", f"{group}:{other}")]
    return q


def test_pairwise_judgments_alone_drive_the_fit():
    """Only "A is better than B" judgments, no pointwise label: the fit still learns from them."""
    queries = [pair_query(f"g{i}", TITLE_HELPS, "rel", "distractor") for i in range(10)]
    fitted, report = tune_on(queries, start=RankingWeights.default(), seed=0)
    assert report.signals == {"judged": 0, "pairs": 10, "clicked": 0}
    assert report.status == "improved" and fitted.w_title > 0
    assert report.validation_ndcg["before"] == 0.0 and report.validation_ndcg["after"] == 1.0


def test_a_pair_the_candidates_never_show_counts_as_nothing():
    q = pair_query("g0", TITLE_HELPS, "ghost1", "ghost2")  # neither chunk is a candidate
    assert not FitData([q]).total


def test_click_weights_undo_the_position_bias():
    # 10 result pages: the top result clicked 5 times, the 5th one 3 times
    w = click_weights([("top", 1)] * 5 + [("fifth", 5)] * 3, impressions=10, eta=1.0)
    assert w == {"top": 0.5, "fifth": 1.5}  # looked at 1 time in 5, clicked 3 times in 10
    assert click_weights([("deep", 1000)], impressions=1, eta=1.0) == {"deep": 20.0}  # clipped


def clicked_query(group: str, eta: float) -> LabelledQuery:
    """The plain hybrid shows the distractor first; the title-matching chunk, 5th, is clicked less
    often in absolute terms but far more often once its rank is accounted for."""
    pattern = [("distractor", (0.70, 0.60, 0.0, 0.0, 0.0))] + [
        (f"mid{i}", (0.66 - i * 0.01, 0.55, 0.0, 0.0, 0.0)) for i in range(3)
    ] + [("rel", (0.58, 0.48, 1.0, 0.0, 0.0))]
    q = query(group, pattern)
    q.positives = set()
    q.clicks = click_weights(
        [(f"{group}:distractor", 1)] * 5 + [(f"{group}:rel", 5)] * 3, impressions=10, eta=eta
    )
    return q


def test_debiased_clicks_teach_what_raw_clicks_hide():
    debiased, report = tune_on([clicked_query(f"g{i}", 1.0) for i in range(10)],
                               start=RankingWeights.default(), seed=0)  # fmt: skip
    assert report.signals["clicked"] == 10
    assert report.status == "improved" and debiased.w_title > 0
    raw, _ = tune_on([clicked_query(f"g{i}", 0.0) for i in range(10)],
                     start=RankingWeights.default(), seed=0)  # fmt: skip
    by_name = {c.chunk_uid.split(":")[1]: c.features for c in clicked_query("g0", 1.0).candidates}
    # debiased, the title-matching chunk goes first; counted raw, the top result keeps its place
    assert fused(by_name["rel"], debiased) > fused(by_name["distractor"], debiased)
    assert fused(by_name["rel"], raw) < fused(by_name["distractor"], raw)


def test_too_few_labelled_queries_changes_nothing():
    fitted, report = tune_on([query("g0", TITLE_HELPS)], start=RankingWeights.default())
    assert report.status == "not_enough_data" and fitted == RankingWeights.default()


@pytest.mark.django_db
def test_tune_ranking_never_activates_a_configuration_that_loses_on_a_fold(monkeypatch):
    previous = ranking_config_record(
        weights=RankingWeights(w_vec=0.7, w_txt=0.3), metrics={}, activate=True
    )
    monkeypatch.setattr("feedback.selectors.labelled_queries", lambda **kw: adversarial())
    report = ranking_tune(seed=0)
    assert report.status == "rejected"
    assert RankingConfig.objects.get(active=True) == previous
    rejected = RankingConfig.objects.get(pk=report.config_id)
    assert not rejected.active and rejected.metrics["validation"] == report.validation_ndcg
    assert min(f["after"] - f["before"] for f in rejected.metrics["folds"]) < 0


@pytest.mark.django_db
def test_tune_ranking_activates_a_winner_and_the_previous_one_can_be_restored(monkeypatch):
    previous = ranking_config_record(
        weights=RankingWeights(w_vec=0.7, w_txt=0.3), metrics={}, activate=True
    )
    monkeypatch.setattr(
        "feedback.selectors.labelled_queries",
        lambda **kw: [query(f"g{i}", TITLE_HELPS) for i in range(10)],
    )
    report = ranking_tune(seed=0)
    assert report.status == "activated"
    new = RankingConfig.objects.get(active=True)
    assert new.pk == report.config_id and new.weights["w_title"] > 0
    assert new.metrics["validation"]["after"] > new.metrics["validation"]["before"]
    assert len(new.metrics["folds"]) == 5 and new.metrics["features"]["w_title"]["agreement"] == 1.0
    assert new.metrics["previous_config"] == previous.pk
    previous.refresh_from_db()
    assert not previous.active
    ranking_config_activate(config=previous)
    assert list(RankingConfig.objects.filter(active=True)) == [previous]
    assert RankingConfig.objects.count() == 2


@pytest.mark.django_db
def test_dry_run_records_nothing(monkeypatch):
    monkeypatch.setattr(
        "feedback.selectors.labelled_queries",
        lambda **kw: [query(f"g{i}", TITLE_HELPS) for i in range(10)],
    )
    report = ranking_tune(seed=0, dry_run=True)
    assert report.status == "dry_run" and report.validation_ndcg["after"] == 1.0
    assert not RankingConfig.objects.exists()


@pytest.mark.django_db
def test_labelled_queries_come_from_real_interactions(real_corpus, user, capsys):
    """With the real model: interactions become labelled queries with live candidates and features."""
    a = record("how do closures work in javascript", real_corpus, user=user)
    feedback_submit(user=user, interaction_id=a.pk, embedder=real_corpus, judgments=[
        {"chunk_uid": uid("closures-faq"), "label": "positive"},
        {"chunk_uid": uid("closures-guide"), "label": "negative"},
    ])  # fmt: skip
    b = record("How do closures work in JavaScript ", real_corpus, user=user)  # same query, merged
    feedback_submit(
        user=user,
        interaction_id=b.pk,
        embedder=real_corpus,
        judgments=[{"chunk_uid": uid("closures-faq"), "label": "positive"}],
    )
    # a pairwise preference and a click on the second interaction's results
    feedback_submit(user=user, interaction_id=b.pk, embedder=real_corpus, judgments=[
        {"chunk_uid": uid("scope-chain"), "preferred_over": uid("closures-guide")},
    ])  # fmt: skip
    shown = [r["chunk_uid"] for r in b.retrieved]
    click_record(user=user, interaction_id=b.pk, chunk_uid=shown[1], rank=2)
    from feedback.selectors import labelled_queries

    [q] = labelled_queries(embedder=real_corpus)
    assert q.pairs == [(uid("scope-chain"), uid("closures-guide"))]
    # one click at rank 2 (looked at half the time) over two result pages
    assert q.clicks == {shown[1]: 1.0}
    [doc_q] = labelled_queries(embedder=real_corpus, granularity="document")
    assert doc_q.pairs == [("fbtest:doc:scope-chain", "fbtest:doc:closures-guide")]
    assert doc_q.clicks == {"fbtest:" + shown[1].removeprefix("fbtest:").removesuffix(":main:0"): 1.0}
    assert q.positives == {uid("closures-faq")}
    assert sorted(q.interaction_ids) == sorted([a.pk, b.pk])
    # the click counts as a weak positive of its document: 0.3 of a label, twice for rank 2
    clicked_doc = "fbtest:doc:" + shown[1].split(":")[2]
    expected = {"fbtest:doc:closures-faq": [2, 0], "fbtest:doc:closures-guide": [0, 1]}
    expected.setdefault(clicked_doc, [0, 0])[0] += 0.6
    assert {k: [round(x, 6) for x in v] for k, v in q.doc_labels.items()} == expected
    # and search's per-document balance counts it the same way
    from feedback.selectors import document_balances

    pos, neg = expected[clicked_doc]
    assert document_balances([clicked_doc])[clicked_doc] == pytest.approx((pos - neg) / (pos + neg + 1))
    by_uid = {c.chunk_uid: c for c in q.candidates}
    assert len(by_uid) == 10  # every chunk of the small corpus is a candidate
    vec, txt, title, recency, _ = by_uid[uid("closures-guide")].features
    assert 0.5 < vec <= 1 and txt == 1.0 and title > 0 and recency == 0.0
    # one distinct query is not enough to tune: nothing is recorded
    call_command("tune_ranking")
    assert "not_enough_data" in capsys.readouterr().out
    assert not RankingConfig.objects.exists()


@pytest.mark.django_db
def test_tune_ranking_prints_each_fold_and_each_weights_confidence(monkeypatch, capsys):
    monkeypatch.setattr(
        "feedback.selectors.labelled_queries",
        lambda **kw: [query(f"g{i}", TITLE_HELPS) for i in range(10)],
    )
    call_command("tune_ranking", "--dry-run", "--folds", "5")
    out = capsys.readouterr().out
    assert all(f"fold {i} (held out 2)" in out for i in range(5)) and "held-out mean" in out
    assert "w_title" in out and "1.0)" in out  # every fold agreed on raising it
    assert "dry run: nothing recorded" in out and not RankingConfig.objects.exists()
