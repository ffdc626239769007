"""``manage.py bench_ask``: streaming latency (TTFB, first text, total) and citation accuracy."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from rag.acl import Scope
from rag.answering import evaluation
from rag.llm.candidates import clear_caches

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "answering" / "eval" / "logseq_questions.txt"


class Command(BaseCommand):
    help = (
        "Measure ask: server-side time to first streamed byte / first text / total (p50, p95), "
        "and citation accuracy."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--questions", type=Path, default=DEFAULT_QUESTIONS, help="One question a line (# comments)."
        )
        parser.add_argument("-n", type=int, default=50, help="Asks to time (questions are cycled).")
        parser.add_argument(
            "--citations", action="store_true", help="Also measure citation accuracy over the question file."
        )
        parser.add_argument("--model", default=None)
        parser.add_argument(
            "--index-markdown", type=Path, default=None,
            help="First index this folder of .md/.org notes (one document per file).",
        )
        parser.add_argument("--collection", default="logseq-docs")
        parser.add_argument(
            "--warm", action="store_true", help="Keep the embedding caches between asks (a busy server)."
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if opts["index_markdown"]:
            from rag.services import chunk_upsert

            root = opts["index_markdown"]
            if not root.is_dir():
                raise CommandError(f"{root} is not a folder")
            docs = evaluation.markdown_folder_documents(root, collection=opts["collection"])
            result = chunk_upsert(documents=docs, progress=None)
            self.stderr.write(
                f"indexed {len(docs)} files: {result.created} created, {result.updated} updated, "
                f"{result.unchanged} unchanged"
            )
        if not opts["questions"].exists():
            raise CommandError(f"No question file {opts['questions']}")
        questions = evaluation.read_questions(opts["questions"])
        if not questions:
            raise CommandError("The question file is empty.")
        scope = Scope.everything()
        # Warm-up: load the model and open the connection outside the timings.
        evaluation.measure_stream(question=questions[0], scope=scope, model=opts["model"])
        timings = []
        for i in range(opts["n"]):
            if not opts["warm"]:
                clear_caches()  # each ask pays for its own embeddings
            timings.append(
                evaluation.measure_stream(question=questions[i % len(questions)], scope=scope, model=opts["model"])
            )
        report = {
            "asks": len(timings),
            "model": opts["model"] or "default",
            "caches": "warm" if opts["warm"] else "cleared before each ask",
            "ttfb_ms": evaluation.summary([t["ttfb_ms"] for t in timings]),
            "first_text_ms": evaluation.summary([t["first_text_ms"] for t in timings]),
            "total_ms": evaluation.summary([t["total_ms"] for t in timings]),
        }
        if opts["citations"]:
            report["citation_accuracy"] = evaluation.citation_accuracy(
                questions=questions, scope=scope, model=opts["model"]
            )
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for key in ("ttfb_ms", "first_text_ms", "total_ms"):
            s = report[key]
            self.stdout.write(f"{key:14} p50 {s['p50']:8.1f}  p95 {s['p95']:8.1f}  mean {s['mean']:8.1f}  (n={s['n']})")
        if "citation_accuracy" in report:
            c = report["citation_accuracy"]
            self.stdout.write(
                f"citations      {c['correct']}/{c['citations']} point to a chunk containing the cited sentence "
                f"(accuracy {c['accuracy']}); {c['answered_with_citations']}/{c['questions']} questions "
                "answered with citations"
            )
