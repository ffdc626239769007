"""tune_ranking: fits on train, activates only what beats the active weights on validation,
keeps every configuration and can restore one."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from feedback.models import RankingConfig
from feedback.ranking import Candidate, LabelledQuery, RankingWeights, split_queries
from feedback.services import feedback_submit, ranking_config_activate, ranking_config_record
from feedback.tuning import TuneReport, ranking_tune, tune_on, tune_split

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


def adversarial(
    n: int = 10, seed: int = 0, validation_fraction: float = 0.3
) -> list[LabelledQuery]:
    """Train queries where a title match marks the relevant chunk; validation ones where it misleads."""
    groups = [query(f"g{i}", TITLE_HELPS) for i in range(n)]
    _, validation = split_queries(groups, validation_fraction=validation_fraction, seed=seed)
    held = {q.group for q in validation}
    return [query(q.group, TITLE_HURTS if q.group in held else TITLE_HELPS) for q in groups]


def test_fitting_finds_a_feature_that_predicts_relevance():
    queries = [query(f"g{i}", TITLE_HELPS) for i in range(10)]
    fitted, report = tune_on(queries, start=RankingWeights.default(), seed=0)
    assert report.status == "improved"
    assert fitted.w_title > 0
    assert report.train_ndcg["after"] == 1.0 and report.validation_ndcg["after"] == 1.0
    assert report.validation_ndcg["before"] < 1.0


def test_a_fit_that_loses_on_validation_is_rejected():
    fitted, report = tune_on(adversarial(), start=RankingWeights.default(), seed=0)
    assert fitted.w_title > 0 and report.train_ndcg["after"] > report.train_ndcg["before"]
    assert report.validation_ndcg["after"] < report.validation_ndcg["before"]
    assert report.status == "rejected"


def test_equal_on_validation_is_not_a_win():
    train = [query(f"t{i}", TITLE_HELPS) for i in range(5)]
    # validation where the title feature changes nothing: the relevant chunk is first either way
    tie = [("rel", (0.9, 0.9, 1.0, 0.0, 0.0)), ("distractor", (0.5, 0.5, 0.0, 0.0, 0.0))]
    validation = [query(f"v{i}", tie) for i in range(3)]
    report = TuneReport(status="")
    tune_split(
        train,
        validation,
        label_source=train,
        start=RankingWeights.default(),
        granularity="chunk",
        report=report,
    )
    assert report.validation_ndcg["before"] == report.validation_ndcg["after"] == 1.0
    assert report.status == "rejected"


def test_too_few_labelled_queries_changes_nothing():
    fitted, report = tune_on([query("g0", TITLE_HELPS)], start=RankingWeights.default())
    assert report.status == "not_enough_data" and fitted == RankingWeights.default()


@pytest.mark.django_db
def test_tune_ranking_never_activates_a_worse_configuration(monkeypatch):
    previous = ranking_config_record(
        weights=RankingWeights(w_vec=0.6, w_txt=0.4), metrics={}, activate=True
    )
    monkeypatch.setattr("feedback.selectors.labelled_queries", lambda **kw: adversarial())
    report = ranking_tune(seed=0)
    assert report.status == "rejected"
    assert RankingConfig.objects.get(active=True) == previous
    rejected = RankingConfig.objects.get(pk=report.config_id)
    assert not rejected.active and rejected.metrics["validation"] == report.validation_ndcg


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
    from feedback.selectors import labelled_queries

    [q] = labelled_queries(embedder=real_corpus)
    assert q.positives == {uid("closures-faq")}
    assert sorted(q.interaction_ids) == sorted([a.pk, b.pk])
    assert q.doc_labels == {"fbtest:doc:closures-faq": (2, 0), "fbtest:doc:closures-guide": (0, 1)}
    by_uid = {c.chunk_uid: c for c in q.candidates}
    assert len(by_uid) == 10  # every chunk of the small corpus is a candidate
    vec, txt, title, recency, _ = by_uid[uid("closures-guide")].features
    assert 0.5 < vec <= 1 and txt == 1.0 and title > 0 and recency == 0.0
    # one distinct query is not enough to tune: nothing is recorded
    call_command("tune_ranking")
    assert "not_enough_data" in capsys.readouterr().out
    assert not RankingConfig.objects.exists()
