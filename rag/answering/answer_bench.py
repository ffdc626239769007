"""Answer quality on QMSum meetings (``manage.py bench_answers``).

Every ``specific_query_list`` question of a folder of QMSum meeting files is asked through the
same ``ask`` pipeline as the page, restricted to the collection the meetings were indexed into.
Figures: whether the question's meeting is among the sources, the share of citations that come
from it, how often an answerable question is refused, ROUGE-L F1 of the answer against the
reference answer (``rouge-score``, stemmed), and — on questions no meeting answers — how often
the answerer says so. The figures come for everything and for two halves: ``fit`` (every other
meeting by name, every other off-topic question), the half calibrations are fitted on, and
``held_out``, the half they are checked on.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from rag.acl import Scope
from rag.search import SearchFilters

DEFAULT_OFFTOPIC = Path(__file__).resolve().parent / "eval" / "offtopic_questions.txt"

_MARKER_RE = re.compile(r"\[\d+\]")


@dataclass
class Question:
    meeting: str
    query: str
    answer: str


def qmsum_questions(root: Path) -> list[Question]:
    """The specific questions of every QMSum file in ``root`` (source id = file stem)."""
    out = []
    for path in sorted(Path(root).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict) or "meeting_transcripts" not in data:
            continue
        for item in data.get("specific_query_list") or []:
            if isinstance(item, dict) and item.get("query"):
                out.append(
                    Question(meeting=path.stem, query=str(item["query"]).strip(), answer=str(item.get("answer", "")))
                )
    return out


def answer_text(answer: str) -> str:
    """The answer's words for ROUGE: no citation markers or quote marks."""
    return re.sub(r"\s+", " ", _MARKER_RE.sub("", answer or "").replace("“", "").replace("”", "")).strip()


def is_refusal(result: dict) -> bool:
    """An answer that cites nothing (the "nothing relevant" reply) or failed."""
    return not result.get("citations") or not result.get("answer")


def run_bench(
    *, questions: list[Question], offtopic: list[str], collection: str, model: str | None = None,
    scope: Scope | None = None, progress=None,
) -> dict:  # fmt: skip
    from rouge_score import rouge_scorer

    from rag.answering.services import ask_collect

    scope = scope or Scope.everything()
    filters = SearchFilters(collections=[collection])
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    seconds: list[float] = []
    rows: list[dict] = []
    failures: list[dict] = []

    def one(query: str) -> dict:
        started = time.perf_counter()
        result = ask_collect(user=None, scope=scope, query=query, filters=filters, model=model, log=False)
        seconds.append(time.perf_counter() - started)
        return result

    for i, q in enumerate(questions):
        result = one(q.query)
        meetings = {s["source_id"] for s in result["sources"]}
        by_uid = {s["chunk_uid"]: s for s in result["sources"]}
        cited = result["citations"]
        refused = is_refusal(result)
        rows.append({
            "meeting": q.meeting,
            "in_sources": 1.0 if q.meeting in meetings else 0.0,
            "from_meeting": (
                sum(1 for c in cited if by_uid.get(c["chunk_uid"], {}).get("source_id") == q.meeting) / len(cited)
                if cited else None
            ),
            "refused": 1.0 if refused else 0.0,
            "rouge": (
                scorer.score(q.answer, answer_text(result["answer"] or ""))["rougeL"].fmeasure if q.answer else 0.0
            ),
        })  # fmt: skip
        if refused or q.meeting not in meetings:
            failures.append(
                {
                    "meeting": q.meeting,
                    "query": q.query,
                    "refused": refused,
                    "meeting_in_sources": q.meeting in meetings,
                }
            )
        if progress:
            progress(i + 1)
    off_refused = [1.0 if is_refusal(one(query)) else 0.0 for query in offtopic]

    report = {
        "questions": len(questions),
        "collection": collection,
        "model": model or "default",
        **_figures(rows, off_refused),
        "offtopic_questions": len(offtopic),
        "seconds": round(sum(seconds), 2),
        "seconds_per_question": round(statistics.fmean(seconds), 3) if seconds else None,
        "failures": failures[:20],
    }
    # Calibrations are fitted on every other meeting (sorted by name) and every other off-topic
    # question ("fit"); the other half ("held_out") says whether they carry over.
    order = sorted({r["meeting"] for r in rows})
    report["halves"] = {
        name: {
            "meetings": len(order[parity::2]),
            "questions": sum(1 for r in rows if order.index(r["meeting"]) % 2 == parity),
            **_figures([r for r in rows if order.index(r["meeting"]) % 2 == parity], off_refused[parity::2]),
        }
        for name, parity in (("fit", 0), ("held_out", 1))
    }
    return report


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def _figures(rows: list[dict], off_refused: list[float]) -> dict:
    answered = [r["from_meeting"] for r in rows if r["from_meeting"] is not None]
    return {
        "meeting_in_sources": _mean([r["in_sources"] for r in rows]),
        "citations_from_meeting": _mean(answered),
        "answered_with_citations": len(answered),
        "refusal_rate": _mean([r["refused"] for r in rows]),
        "rougeL_f1": _mean([r["rouge"] for r in rows]),
        "offtopic_refusal_rate": _mean(off_refused),
    }
