"""``manage.py tune_ranking``: fit the fusion on labelled interactions, activate it only if it wins."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Fit the ranking weights (vector, text, title match, recency, per-document judgment balance) "
        "on the judgments, pairwise preferences and clicks, cross-validated over distinct queries; "
        "print the held-out figures per fold and activate the new weights only if they beat the "
        "active ones on every fold."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--folds", type=int, default=None, help="k of the k-fold (KNOWHUB_FEEDBACK_FIT_FOLDS)"
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--granularity",
            choices=["chunk", "document"],
            default="chunk",
            help="judge relevance per chunk (default) or per parent document",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="measure only; record and activate nothing"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, folds, seed, granularity, dry_run, json: bool, **opts):
        from feedback.tuning import ranking_tune

        if folds is not None and folds < 2:
            raise CommandError("--folds must be at least 2")
        report = ranking_tune(
            folds=folds,
            seed=seed,
            granularity=granularity,
            dry_run=dry_run,
        )
        if json:
            self.stdout.write(_dump(report.as_dict()))
            return
        self.stdout.write(
            f"labelled queries: {report.queries} ({report.evaluable} with something to learn from: "
            f"{report.signals.get('judged', 0)} judged, {report.signals.get('pairs', 0)} pairs, "
            f"{report.signals.get('clicked', 0)} clicked); {report.folds} folds"
        )
        if report.train_ndcg:
            self.stdout.write(f"{'utility (nDCG@10)':<22}{'before':>10}{'after':>10}{'gain':>10}")
            for f in report.fold_results:
                self.stdout.write(
                    f"{'fold ' + str(f['fold']) + ' (held out ' + str(f['validation']) + ')':<22}"
                    f"{f['before']:>10.4f}{f['after']:>10.4f}{f['after'] - f['before']:>+10.4f}"
                )
            for name, values in (
                ("held-out mean", report.validation_ndcg),
                ("all (train)", report.train_ndcg),
            ):
                self.stdout.write(
                    f"{name:<22}{values['before']:>10.4f}{values['after']:>10.4f}"
                    f"{values['after'] - values['before']:>+10.4f}"
                )
            self.stdout.write(f"weights before: {_weights(report.before)}")
            self.stdout.write(f"weights after:  {_weights(report.after)}")
            self.stdout.write("per weight: value (fold mean ± sd, folds agreeing on the move)")
            for name, f in report.features.items():
                self.stdout.write(
                    f"  {name:<11}{f['value']:>8g}  ({f['fold_mean']:g} ± {f['fold_sd']:g}, "
                    f"{f['agreement']})"
                )
        style = self.style.SUCCESS if report.status == "activated" else self.style.WARNING
        suffix = f" (config #{report.config_id})" if report.config_id else ""
        self.stdout.write(style(f"{report.status}{suffix}: {report.message}"))


def _weights(weights: dict) -> str:
    """``vector 1, text 0.5, …`` rather than the stored dict."""
    return ", ".join(f"{k.removeprefix('w_')} {v:g}" for k, v in weights.items() if isinstance(v, int | float))


def _dump(obj) -> str:
    return json.dumps(obj, indent=2)
