"""Grading the held-apart, learner-typed answers in ``sessions/eval/learner_answers.json``.

The set was written from the questions alone, before the grader was read; nothing in the grader
reads it. Labels: ``correct`` must pass, ``wrong`` must fail, ``partial`` (one part of a
two-part question) must not pass but earn some credit and name the missing part.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from sessions.grading import score_answer

LEARNER_SET = Path(__file__).resolve().parent / "eval" / "learner_answers.json"
# Written after the rubrics were frozen and run once: checks the first set's figures.
LEARNER_SETS = (LEARNER_SET, LEARNER_SET.with_name("learner_answers_round2.json"))


def load_learner_set(path: Path = LEARNER_SET) -> dict[str, list[dict]]:
    """``{topic slug: [{"test": index, "answers": [{"label", "text", "missing"?}]}]}``."""
    return json.loads(path.read_text(encoding="utf-8"))["tests"]


def _ok(label: str, r) -> bool:
    if label == "correct":
        return r.passed
    if label == "wrong":
        return not r.passed
    return (not r.passed) and r.score > 0 and bool(r.missing_parts)


def run_learner_set(topics, embedder, path: Path = LEARNER_SET) -> dict:
    """Grade every answer of the set for the given topics; rates per label and per topic."""
    data = load_learner_set(path)
    started = time.perf_counter()
    totals = {k: [0, 0] for k in ("correct", "wrong", "partial")}
    per_topic: dict[str, dict] = {}
    misgraded: list[dict] = []
    for topic in topics:
        rows = data.get(topic.slug) or []
        t_totals = {k: [0, 0] for k in totals}
        for row in rows:
            test = topic.tests[row["test"]]
            for a in row["answers"]:
                r = score_answer(
                    a["text"], test["expected"], test.get("keywords"), embedder,
                    value=test.get("value"), misconceptions=list(topic.misconceptions or []),
                    parts=test.get("parts"), refuted_by=test.get("refuted_by"),
                )
                ok = _ok(a["label"], r)
                for c in (totals, t_totals):
                    c[a["label"]][0] += int(ok)
                    c[a["label"]][1] += 1
                if not ok:
                    misgraded.append({
                        "topic": topic.slug, "test": row["test"] + 1, "label": a["label"], "answer": a["text"],
                        "score": r.score, "method": r.method, "explanation": r.explanation,
                    })
        per_topic[topic.slug] = {"correct_pass": _rate(t_totals["correct"]), "wrong_fail": _rate(t_totals["wrong"])}
    return {
        "set": str(path.name),
        "embedding_model": embedder.name,
        "correct_pass": _rate(totals["correct"]),
        "wrong_fail": _rate(totals["wrong"]),
        "partial_credit": _rate(totals["partial"]),
        "answers": {k: v[1] for k, v in totals.items()},
        "targets": {"correct_pass": ">= 0.95", "wrong_fail": ">= 0.95"},
        "seconds": round(time.perf_counter() - started, 2),
        "topics": per_topic,
        "misgraded": misgraded,
    }


def _rate(v: list[int]) -> float:
    return round(v[0] / v[1], 4) if v[1] else 0.0
