"""Fit the ranking on labelled interactions, check it on held-back ones, activate only if it wins."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from feedback.ranking import (
    LabelledQuery,
    RankingWeights,
    evaluate_weights,
    fit_weights,
    split_queries,
)

logger = logging.getLogger(__name__)

MIN_QUERIES = 4  # below this a validation split says nothing


@dataclass
class TuneReport:
    status: str  # activated | rejected | unchanged | not_enough_data | dry_run
    queries: int = 0
    evaluable: int = 0
    train: int = 0
    validation: int = 0
    granularity: str = "chunk"
    seed: int = 0
    validation_fraction: float = 0.3
    before: dict = field(default_factory=dict)  # weights
    after: dict = field(default_factory=dict)
    train_ndcg: dict = field(default_factory=dict)  # {"before": x, "after": y}
    validation_ndcg: dict = field(default_factory=dict)
    config_id: int | None = None
    message: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def tune_on(
    queries: list[LabelledQuery],
    *,
    start: RankingWeights,
    validation_fraction: float = 0.3,
    seed: int = 0,
    granularity: str = "chunk",
) -> tuple[RankingWeights, TuneReport]:
    """Split, fit on train, compare with ``start`` on validation. Writes nothing."""
    evaluable = [q for q in queries if q.positives]
    report = TuneReport(
        status="not_enough_data",
        queries=len(queries),
        evaluable=len(evaluable),
        granularity=granularity,
        seed=seed,
        validation_fraction=validation_fraction,
        before=start.as_dict(),
    )
    if len(evaluable) < MIN_QUERIES:
        report.message = (
            f"{len(evaluable)} labelled queries with a relevant chunk; at least {MIN_QUERIES} are needed "
            "for a train/validation split"
        )
        return start, report
    train, validation = split_queries(evaluable, validation_fraction=validation_fraction, seed=seed)
    val_groups = {q.group for q in validation}
    # Labels that may inform the judgment feature: everything but the validation queries'.
    label_source = [q for q in queries if q.group not in val_groups]
    fitted = tune_split(
        train,
        validation,
        label_source=label_source,
        start=start,
        granularity=granularity,
        report=report,
    )
    return fitted, report


def tune_split(
    train: list[LabelledQuery],
    validation: list[LabelledQuery],
    *,
    label_source: list[LabelledQuery],
    start: RankingWeights,
    granularity: str,
    report: TuneReport,
) -> RankingWeights:
    """Fit on ``train``; ``report.status`` is ``improved`` only if ``validation`` strictly gains."""
    fitted, train_after = fit_weights(
        train, start=start, granularity=granularity, label_source=label_source
    )
    train_before = evaluate_weights(
        train, start, label_source=label_source, granularity=granularity
    )
    val_before = evaluate_weights(
        validation, start, label_source=label_source, granularity=granularity
    )
    val_after = evaluate_weights(
        validation, fitted, label_source=label_source, granularity=granularity
    )
    report.train, report.validation = len(train), len(validation)
    report.after = fitted.as_dict()
    report.train_ndcg = {"before": round(train_before, 4), "after": round(train_after, 4)}
    report.validation_ndcg = {"before": round(val_before, 4), "after": round(val_after, 4)}
    if fitted == start:
        report.status = "unchanged"
        report.message = "no weight change improved nDCG@10 on the train split"
    elif validation and val_after > val_before + 1e-9:
        report.status = "improved"
        report.message = f"validation nDCG@10 {val_before:.4f} → {val_after:.4f}"
    else:
        report.status = "rejected"
        report.message = (
            f"validation nDCG@10 would go {val_before:.4f} → {val_after:.4f}: not activated"
        )
    return fitted


def ranking_tune(
    *,
    validation_fraction: float = 0.3,
    seed: int = 0,
    granularity: str = "chunk",
    dry_run: bool = False,
    user=None,
    interactions=None,
    embedder=None,
    progress=None,
) -> TuneReport:
    """Fit the fusion on the labelled interactions; record it, and activate it only when it beats
    the active configuration on the validation split (``manage.py tune_ranking``)."""
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
    fitted, report = tune_on(
        queries,
        start=start,
        validation_fraction=validation_fraction,
        seed=seed,
        granularity=granularity,
    )
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
        "queries": {
            "train": report.train,
            "validation": report.validation,
            "labelled": report.queries,
        },
        "granularity": granularity,
        "seed": seed,
        "validation_fraction": validation_fraction,
        "previous_config": active.pk if active else None,
    }
    config = ranking_config_record(
        weights=fitted,
        metrics=metrics,
        activate=activate,
        user=user,
        note="tune_ranking" if activate else "tune_ranking (rejected: not better on validation)",
    )
    report.config_id = config.pk
    report.status = "activated" if activate else "rejected"
    return report
