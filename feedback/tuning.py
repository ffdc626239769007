"""Fit the ranking on labelled interactions, cross-validated; activate only what wins on every fold."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from feedback.fitting import LabelledQuery, cross_validate
from feedback.ranking import RankingWeights

logger = logging.getLogger(__name__)

MIN_QUERIES = 4  # below this the folds say nothing


@dataclass
class TuneReport:
    status: str  # activated | rejected | improved | unchanged | not_enough_data | dry_run
    queries: int = 0
    evaluable: int = 0
    train: int = 0  # queries the final fit used
    validation: int = 0  # queries held out, summed over the folds (each query once)
    folds: int = 0
    granularity: str = "chunk"
    seed: int = 0
    before: dict = field(default_factory=dict)  # weights
    after: dict = field(default_factory=dict)
    train_ndcg: dict = field(default_factory=dict)  # {"before": x, "after": y}, the final fit
    validation_ndcg: dict = field(default_factory=dict)  # mean over the held-out folds
    fold_results: list = field(default_factory=list)  # per fold: before, after, weights
    features: dict = field(default_factory=dict)  # per weight: value, fold spread, agreement
    signals: dict = field(default_factory=dict)  # queries with judgments, pairs, clicks
    config_id: int | None = None
    message: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def tune_on(
    queries: list[LabelledQuery],
    *,
    start: RankingWeights,
    folds: int | None = None,
    seed: int = 0,
    granularity: str = "chunk",
    regularisation: float | None = None,
    click_weight: float | None = None,
) -> tuple[RankingWeights, TuneReport]:
    """Cross-validate the fit; ``report.status`` is ``improved`` only if it gains on every fold.

    Writes nothing. Returns the weights fitted on every query (``start`` when not enough data).
    """
    evaluable = [q for q in queries if q.evaluable]
    report = TuneReport(
        status="not_enough_data",
        queries=len(queries),
        evaluable=len(evaluable),
        granularity=granularity,
        seed=seed,
        before=start.as_dict(),
        signals={
            "judged": sum(1 for q in queries if q.positives),
            "pairs": sum(len(q.pairs) for q in queries),
            "clicked": sum(1 for q in queries if q.clicks),
        },
    )
    if len(evaluable) < MIN_QUERIES:
        report.message = (
            f"{len(evaluable)} labelled queries with something to learn from; at least "
            f"{MIN_QUERIES} are needed for cross-validation"
        )
        return start, report
    cv = cross_validate(
        queries,
        start=start,
        folds=folds,
        seed=seed,
        granularity=granularity,
        regularisation=regularisation,
        click_weight=click_weight,
    )
    report.folds = len(cv.folds)
    report.train = len(evaluable)
    report.validation = sum(f.validation for f in cv.folds)
    report.after = cv.weights.as_dict()
    report.train_ndcg = {"before": round(cv.train_before, 4), "after": round(cv.train_after, 4)}
    report.validation_ndcg = {
        "before": round(cv.validation_before, 4),
        "after": round(cv.validation_after, 4),
    }
    report.fold_results = cv.as_dict()["folds"]
    report.features = cv.features
    gains = ", ".join(f"{f.gain:+.4f}" for f in cv.folds)
    if cv.weights == start:
        report.status = "unchanged"
        report.message = "no weight change improved the regularised objective on the labelled queries"
    elif cv.activate:
        report.status = "improved"
        report.message = f"held-out gain on every fold ({gains})"
    else:
        losing = sum(1 for f in cv.folds if f.gain <= 1e-9)
        report.status = "rejected"
        report.message = (
            f"no gain on {losing} of {len(cv.folds)} held-out folds ({gains}): not activated"
        )
    return cv.weights, report


def ranking_tune(
    *,
    folds: int | None = None,
    seed: int = 0,
    granularity: str = "chunk",
    dry_run: bool = False,
    user=None,
    interactions=None,
    embedder=None,
    progress=None,
) -> TuneReport:
    """Fit the fusion on the labelled interactions; record it, and activate it only when it beats
    the active configuration on every cross-validation fold (``manage.py tune_ranking``)."""
    from feedback.selectors import active_ranking_config, labelled_queries
    from feedback.services import ranking_config_record

    active = active_ranking_config()
    start = RankingWeights.default()
    if active is not None:
        try:
            start = RankingWeights.from_dict(active.weights)
        except ValueError:
            logger.warning(
                "active ranking config %s is unusable; tuning from the defaults", active.pk
            )
    queries = labelled_queries(
        interactions=interactions, granularity=granularity, embedder=embedder, progress=progress
    )
    fitted, report = tune_on(queries, start=start, folds=folds, seed=seed, granularity=granularity)
    if report.status in ("not_enough_data", "unchanged"):
        return report
    activate = report.status == "improved"
    if dry_run:
        report.status = "dry_run"
        report.message += " (dry run: nothing recorded)"
        return report
    metrics = {
        "train": report.train_ndcg,
        "validation": report.validation_ndcg,
        "folds": report.fold_results,
        "features": report.features,
        "signals": report.signals,
        "queries": {"labelled": report.queries, "evaluable": report.evaluable},
        "granularity": granularity,
        "seed": seed,
        "previous_config": active.pk if active else None,
    }
    config = ranking_config_record(
        weights=fitted,
        metrics=metrics,
        activate=activate,
        user=user,
        note="tune_ranking" if activate else "tune_ranking (rejected: lost or tied on a fold)",
    )
    report.config_id = config.pk
    report.status = "activated" if activate else "rejected"
    return report
