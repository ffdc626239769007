"""How well the offline guide's test scoring tells right answers from wrong ones.

For every test of every topic, the expected answer must pass, and the expected answers of the
topic's *other* tests (on-topic, fluent, but answering a different question) must fail. Prints
the pass rate of right answers, the false-pass rate of wrong ones and the score margins.
"""

from __future__ import annotations

import json
import statistics
import time

from django.core.management.base import BaseCommand

from rag.embeddings import get_embedder
from sessions.guide import score_answer
from sessions.models import Topic


class Command(BaseCommand):
    help = "Measure the session test scorer on the shipped topics (right vs. wrong-question answers)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the figures as JSON")

    def handle(self, *args, as_json=False, **options):
        embedder = get_embedder()
        started = time.perf_counter()
        right, wrong, per_topic = [], [], {}
        for topic in Topic.objects.filter(is_active=True).order_by("order", "slug"):
            t_right, t_wrong = [], []
            for i, test in enumerate(topic.tests):
                t_right.append(score_answer(test["expected"], test["expected"], test.get("keywords"), embedder))
                for j, other in enumerate(topic.tests):
                    if i != j:
                        t_wrong.append(score_answer(other["expected"], test["expected"], test.get("keywords"), embedder))
            per_topic[topic.slug] = {
                "right_pass_rate": _rate(t_right),
                "wrong_false_pass_rate": _rate(t_wrong),
                "wrong_mean_score": round(statistics.fmean(r.score for r in t_wrong), 3) if t_wrong else None,
            }
            right += t_right
            wrong += t_wrong
        out = {
            "embedding_model": embedder.name,
            "tests": len(right),
            "right_pass_rate": _rate(right),
            "wrong_false_pass_rate": _rate(wrong),
            "right_mean_score": round(statistics.fmean(r.score for r in right), 3) if right else None,
            "wrong_mean_score": round(statistics.fmean(r.score for r in wrong), 3) if wrong else None,
            "wrong_max_score": round(max((r.score for r in wrong), default=0), 3),
            "seconds": round(time.perf_counter() - started, 2),
            "topics": per_topic,
        }
        if as_json:
            self.stdout.write(json.dumps(out, indent=2))
            return
        self.stdout.write(
            f"{out['tests']} tests · right answers pass {out['right_pass_rate']:.0%} (mean {out['right_mean_score']}) · "
            f"answers to other questions pass {out['wrong_false_pass_rate']:.0%} (mean {out['wrong_mean_score']}, max {out['wrong_max_score']}) · {out['seconds']} s"
        )
        for slug, row in per_topic.items():
            self.stdout.write(f"  {slug:20s} right {row['right_pass_rate']:.0%}  wrong-pass {row['wrong_false_pass_rate']:.0%}  wrong-mean {row['wrong_mean_score']}")


def _rate(results) -> float:
    return round(sum(1 for r in results if r.passed) / len(results), 4) if results else 0.0
