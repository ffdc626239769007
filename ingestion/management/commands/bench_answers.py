"""``manage.py bench_answers --dataset DIR``: answer quality on a folder of QMSum meetings, or on
articles with SQuAD 2.0 questions (a folder with ``docs/`` and ``questions.jsonl``, such as
``../shared/data/squad-dev``), with a plain BM25 peer asked in the same run.

It lives in ingestion because it indexes the folder first (``ingest_document_paths``); the ask
pipeline and the figures are rag's (``rag.answering.answer_bench``).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from rag import text_search
from rag.answering import answer_bench, squad_bench
from rag.answering.evaluation import read_questions
from rag.text_query import settle_bm25_index

SQUAD_KEYS = (
    "questions", "answerable", "unanswerable", "answer_found", "peer_answer_found", "right_article_cited",
    "answerable_refused", "unanswerable_refused", "seconds", "seconds_per_question",
)  # fmt: skip
KEYS = (
    "questions", "meeting_in_sources", "citations_from_meeting", "refusal_rate", "rougeL_f1",
    "offtopic_refusal_rate", "seconds", "seconds_per_question",
)  # fmt: skip


class Command(BaseCommand):
    help = (
        "Index a folder of QMSum meeting files (idempotent) and ask every specific_query_list question "
        "through the ask pipeline; print meeting_in_sources, citations_from_meeting, refusal_rate, "
        "rougeL_f1, offtopic_refusal_rate and seconds."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", type=Path, required=True, help="Folder of QMSum meeting JSON files.")
        parser.add_argument(
            "--collection", default=None,
            help="Collection the documents are indexed into and asked in (default: qmsum, or squad for articles).",
        )  # fmt: skip
        parser.add_argument(
            "--every", type=int, default=1, help="Articles: ask every Nth question only (a quicker, still even run)."
        )
        parser.add_argument(
            "--offset", type=int, default=0,
            help="Articles, with --every: start at this question (--every 6 --offset 3 is disjoint from offset 0).",
        )  # fmt: skip
        parser.add_argument("--model", default=None, help="A model id (default: the configured one).")
        parser.add_argument(
            "--offtopic", type=Path, default=answer_bench.DEFAULT_OFFTOPIC, help="Unanswerable questions, one a line."
        )
        parser.add_argument("--limit", type=int, default=None, help="Ask only the first N questions (a quick check).")
        parser.add_argument("--no-ingest", action="store_true", help="Skip indexing (the folder is already indexed).")
        parser.add_argument("--json", action="store_true", help="Print the JSON object only.")

    def handle(self, *args, **opts):
        from ingestion.services import IngestError, ingest_document_paths

        root: Path = opts["dataset"]
        if not root.is_dir():
            raise CommandError(f"{root} is not a folder")
        if squad_bench.is_squad_folder(root):
            return self._squad(root, opts)
        opts["collection"] = opts["collection"] or "qmsum"
        questions = answer_bench.qmsum_questions(root)
        if not questions:
            raise CommandError(f"No QMSum meeting file with specific_query_list questions in {root}")
        if opts["limit"]:
            questions = questions[: opts["limit"]]
        if not opts["offtopic"].exists():
            raise CommandError(f"No question file {opts['offtopic']}")
        offtopic = read_questions(opts["offtopic"])
        if opts["limit"]:
            offtopic = offtopic[: opts["limit"]]
        if not opts["no_ingest"]:
            try:
                run = ingest_document_paths(paths=[root], collection=opts["collection"])
            except IngestError as exc:
                raise CommandError(str(exc)) from exc
            self.stderr.write(f"indexed {root}: ingest run {run.pk} ({run.status})")
        # Asked of a keyword index whose statistics match the chunks: the check a run queues for
        # the worker may not have run yet (or there is no worker).
        _settle_keyword_index()
        try:
            report = answer_bench.run_bench(
                questions=questions, offtopic=offtopic, collection=opts["collection"], model=opts["model"]
            )
        except ValueError as exc:  # an unknown model or collection: the ask pipeline's own message
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for key in KEYS:
            self.stdout.write(f"{key:24} {report[key]}")
        for name, half in report["halves"].items():  # fit: every other meeting; held_out: the rest
            figures = ", ".join(f"{k} {half[k]}" for k in KEYS if k in half)
            self.stdout.write(f"{name:24} meetings {half['meetings']}, {figures}")

    def _squad(self, root: Path, opts) -> None:
        from ingestion.services import IngestError, ingest_document_paths

        collection = opts["collection"] or "squad"
        questions = squad_bench.sample(squad_bench.squad_questions(root), opts["every"], opts["offset"])
        if opts["limit"]:
            questions = questions[: opts["limit"]]
        if not questions:
            raise CommandError(f"No question in {root / 'questions.jsonl'}")
        if not opts["no_ingest"]:
            try:
                run = ingest_document_paths(paths=[root / "docs"], collection=collection)
            except IngestError as exc:
                raise CommandError(str(exc)) from exc
            self.stderr.write(f"indexed {root / 'docs'}: ingest run {run.pk} ({run.status})")
        _settle_keyword_index()
        try:
            report = squad_bench.run_squad_bench(
                root=root, questions=questions, collection=collection, model=opts["model"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for key in SQUAD_KEYS:
            self.stdout.write(f"{key:24} {report[key]}")


def _settle_keyword_index() -> None:
    """The keyword index as a server that restarted holds it: its statistics match the chunks, and
    none of its rows wait in memory (scored slightly apart from the same rows on disk)."""
    text_search.check_bm25_index(force=True)
    with connection.cursor() as cursor:
        settle_bm25_index(cursor)
