"""``manage.py tune_ranking``: fit the fusion on labelled interactions, activate it only if it wins."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Fit the ranking weights (vector, text, title match, recency, per-document judgment balance) "
        "on the labelled interactions with a train/validation split; print nDCG@10 before/after and "
        "activate the new weights only if they beat the active ones on validation."
    )

    def add_arguments(self, parser):
        parser.add_argument("--validation-fraction", type=float, default=0.3)
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

    def handle(self, *args, validation_fraction, seed, granularity, dry_run, json: bool, **opts):
        from feedback.tuning import ranking_tune

        if not 0 < validation_fraction < 1:
            raise CommandError("--validation-fraction must be between 0 and 1")
        report = ranking_tune(
            validation_fraction=validation_fraction,
            seed=seed,
            granularity=granularity,
            dry_run=dry_run,
        )
        if json:
            self.stdout.write(_dump(report.as_dict()))
            return
        self.stdout.write(
            f"labelled queries: {report.queries} ({report.evaluable} with a relevant chunk); "
            f"train {report.train}, validation {report.validation}"
        )
        if report.train_ndcg:
            self.stdout.write(f"{'':<12}{'nDCG@10 before':>16}{'after':>10}")
            for name, values in (
                ("train", report.train_ndcg),
                ("validation", report.validation_ndcg),
            ):
                self.stdout.write(f"{name:<12}{values['before']:>16.4f}{values['after']:>10.4f}")
            self.stdout.write(f"weights before: {report.before}")
            self.stdout.write(f"weights after:  {report.after}")
        style = self.style.SUCCESS if report.status == "activated" else self.style.WARNING
        suffix = f" (config #{report.config_id})" if report.config_id else ""
        self.stdout.write(style(f"{report.status}{suffix}: {report.message}"))


def _dump(obj) -> str:
    return json.dumps(obj, indent=2)
