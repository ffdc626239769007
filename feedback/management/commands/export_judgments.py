"""``manage.py export_judgments``: the labelled set as JSONL, or as a BEIR folder for ``evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Export judgments: --format jsonl writes judgments.jsonl (query, chunk, label, who, when); "
        "--format qrels writes a BEIR folder (queries.jsonl, qrels/test.tsv, corpus.jsonl) that "
        "`manage.py evaluate --dataset DIR` can score."
    )

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["jsonl", "qrels"], default="jsonl")
        parser.add_argument("--out", required=True, help="output directory")
        parser.add_argument(
            "--corpus",
            choices=["judged", "retrieved", "none"],
            default="retrieved",
            help="qrels only: which chunks go into corpus.jsonl (retrieved = judged plus every chunk "
            "the labelled interactions retrieved, as distractors)",
        )
        parser.add_argument(
            "--include-pii", action="store_true",
            help="also export judgments and text of chunks with personal data (pii_level >= 2: "
            "reflections, learning-session artifacts); left out by default",
        )  # fmt: skip
        parser.add_argument("--json", action="store_true", help="print a JSON summary")

    def handle(self, *args, format: str, out: str, corpus: str, json: bool, include_pii: bool = False, **opts):
        from feedback.exports import write_beir_dir, write_jsonl

        path = Path(out)
        if path.exists() and not path.is_dir():
            raise CommandError(f"{path} exists and is not a directory")
        path.mkdir(parents=True, exist_ok=True)
        if format == "jsonl":
            n = write_jsonl(path / "judgments.jsonl", include_pii=include_pii)
            summary = {"format": "jsonl", "out": str(path / "judgments.jsonl"), "judgments": n}
        else:
            counts = write_beir_dir(path, corpus=corpus, include_pii=include_pii)
            summary = {"format": "qrels", "out": str(path), **counts}
        if json:
            self.stdout.write(_dump(summary))
        else:
            self.stdout.write(", ".join(f"{k}: {v}" for k, v in summary.items()))


def _dump(obj) -> str:
    return json.dumps(obj, indent=2)
