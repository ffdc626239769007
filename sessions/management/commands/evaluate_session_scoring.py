"""How well the session test grader tells the answers a teacher accepts from wrong ones.

Every shipped test carries, next to its topic content, an ``eval`` block: a short form of the
answer, two paraphrases and three wrong answers of the same topic, plus a hold-out set (one more
paraphrase and one more wrong answer) that was written with the others but never looked at while
the grader was designed, reported separately so the tuned figures can be checked against it.
The grader itself never reads the ``eval`` block.

Prints the pass rates (0–1): ``expected_pass``, ``short_pass``, ``paraphrase_pass`` and
``wrong_pass`` (targets: 1, 1, ≥ 0.9, ≤ 0.05), the hold-out twins, and
``other_question_pass`` (the expected answers of the topic's other tests, which must fail).

``--set learner`` grades the held-apart set in ``sessions/eval/learner_answers.json`` instead:
answers typed the way learners type (terse, lower case, typos, code fragments), written from the
questions alone before the grader was read and never tuned on. It prints ``correct_pass`` and
``wrong_fail`` (targets ≥ 0.95 each) and, for two-part questions answered half right,
``partial_credit`` (not passed, some credit, the missing part named).
"""

from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from rag.embeddings import get_embedder
from sessions.grading import score_answer
from sessions.learner_eval import LEARNER_SETS, run_learner_set
from sessions.models import Topic

KINDS = ("expected", "short", "paraphrase", "wrong", "holdout_paraphrase", "holdout_wrong", "other_question")
SHOULD_PASS = {"expected", "short", "paraphrase", "holdout_paraphrase"}


def _cases(test: dict, others: list[dict]) -> list[tuple[str, str]]:
    ev = test.get("eval") or {}
    hold = ev.get("holdout") or {}
    cases = [("expected", test["expected"])]
    if ev.get("short"):
        cases.append(("short", ev["short"]))
    cases += [("paraphrase", a) for a in ev.get("paraphrases", [])]
    cases += [("wrong", a) for a in ev.get("wrong", [])]
    cases += [("holdout_paraphrase", a) for a in hold.get("paraphrases", [])]
    cases += [("holdout_wrong", a) for a in hold.get("wrong", [])]
    cases += [("other_question", o["expected"]) for o in others]
    return cases


class Command(BaseCommand):
    help = "Measure the session test grader on the shipped topics: expected, short, paraphrased and wrong answers."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the figures as JSON")
        parser.add_argument("--topic", action="append", default=[], help="only this topic slug (repeatable)")
        parser.add_argument("--failures", action="store_true", help="list every misgraded answer")
        parser.add_argument(
            "--set", choices=("tuning", "learner"), default="tuning", dest="which",
            help="tuning: the eval blocks beside each test (default); learner: the held-apart learner-typed set",
        )

    def handle(self, *args, as_json=False, topic=(), failures=False, which="tuning", **options):
        topics = Topic.objects.filter(is_active=True).order_by("order", "slug")
        if topic:
            topics = topics.filter(slug__in=topic)
            unknown = set(topic) - set(topics.values_list("slug", flat=True))
            if unknown:
                raise CommandError(f"Unknown topic(s): {', '.join(sorted(unknown))}")
        embedder = get_embedder()
        if which == "learner":
            self._learner(topics, embedder, as_json=as_json, failures=failures)
            return
        started = time.perf_counter()
        counts = {k: [0, 0] for k in KINDS}  # passed, total
        per_topic: dict[str, dict] = {}
        misgraded: list[dict] = []
        n_tests = 0
        for t in topics:
            t_counts = {k: [0, 0] for k in KINDS}
            myths = list(t.misconceptions or [])
            for i, test in enumerate(t.tests):
                n_tests += 1
                others = [o for j, o in enumerate(t.tests) if j != i]
                for kind, answer in _cases(test, others):
                    r = score_answer(
                        answer, test["expected"], test.get("keywords"), embedder,
                        value=test.get("value"), misconceptions=myths,
                        parts=test.get("parts"), refuted_by=test.get("refuted_by"),
                    )
                    for c in (counts, t_counts):
                        c[kind][0] += int(r.passed)
                        c[kind][1] += 1
                    if r.passed != (kind in SHOULD_PASS):
                        misgraded.append({
                            "topic": t.slug, "test": i + 1, "kind": kind, "answer": answer, "score": r.score,
                            "method": r.method, "explanation": r.explanation,
                        })
            per_topic[t.slug] = {f"{k}_pass": _rate(v) for k, v in t_counts.items()}
        out = {
            "embedding_model": embedder.name,
            "tests": n_tests,
            **{f"{k}_pass": _rate(v) for k, v in counts.items()},
            "answers": {k: v[1] for k, v in counts.items()},
            "targets": {
                "expected_pass": ">= 1.0", "short_pass": ">= 1.0", "paraphrase_pass": ">= 0.9", "wrong_pass": "<= 0.05"
            },
            "seconds": round(time.perf_counter() - started, 2),
            "topics": per_topic,
        }
        if failures:
            out["misgraded"] = misgraded
        if as_json:
            self.stdout.write(json.dumps(out, indent=2))
            return
        self.stdout.write(
            f"{n_tests} tests · expected {out['expected_pass']:.0%} · short {out['short_pass']:.0%} · "
            f"paraphrases {out['paraphrase_pass']:.0%} · wrong {out['wrong_pass']:.0%} · "
            f"hold-out paraphrases {out['holdout_paraphrase_pass']:.0%} · "
            f"hold-out wrong {out['holdout_wrong_pass']:.0%} · "
            f"other questions' answers {out['other_question_pass']:.0%} · {out['seconds']} s"
        )
        for slug, row in per_topic.items():
            self.stdout.write(
                f"  {slug:20s} short {row['short_pass']:.0%}  para {row['paraphrase_pass']:.0%}  "
                f"wrong {row['wrong_pass']:.0%}  "
                f"hold-out para {row['holdout_paraphrase_pass']:.0%}  hold-out wrong {row['holdout_wrong_pass']:.0%}"
            )
        for m in misgraded:
            self.stdout.write(f"  ✗ {m['topic']} #{m['test']} {m['kind']} ({m['score']}, {m['method']}): {m['answer']}")


    def _learner(self, topics, embedder, *, as_json: bool, failures: bool) -> None:
        results = [run_learner_set(topics, embedder, path) for path in LEARNER_SETS]
        for out in results:
            misgraded = out.pop("misgraded")
            if failures:
                out["misgraded"] = misgraded
        if as_json:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for out in results:
            self._learner_lines(out)

    def _learner_lines(self, out: dict) -> None:
        misgraded = out.get("misgraded", [])
        self.stdout.write(
            f"Learner-typed set {out['set']}: {out['answers']['correct']} right answers, "
            f"{out['answers']['wrong']} wrong, "
            f"{out['answers']['partial']} half right · right answers passed {out['correct_pass']:.1%} "
            f"(target ≥ 95 %) · wrong answers refused {out['wrong_fail']:.1%} (target ≥ 95 %) · "
            + (
                f"half-right answers given partial credit with the missing part named {out['partial_credit']:.0%} · "
                if out["answers"]["partial"] else ""
            )
            + f"{out['seconds']} s"
        )
        for slug, row in out["topics"].items():
            self.stdout.write(
                f"  {slug:20s} right passed {row['correct_pass']:.0%}  wrong refused {row['wrong_fail']:.0%}"
            )
        for m in misgraded:
            self.stdout.write(
                f"  ✗ {m['topic']} #{m['test']} {m['label']} ({m['score']}, {m['method']}): {m['answer']}"
                f"  → {m['explanation']}"
            )


def _rate(v: list[int]) -> float:
    return round(v[0] / v[1], 4) if v[1] else 0.0
