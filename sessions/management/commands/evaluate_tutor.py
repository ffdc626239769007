"""How well the offline tutor's help fits, against a teacher's key written apart from it
(``sessions/eval/tutor_key.json``).

Prints, for every shipped topic × realm, how many concepts' first suggested symbol (and any of
the three offered) is one the key accepts; and how many paraphrased rules are matched to the
rule they restate (or to none, for a rule the topic does not have).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand

from rag.embeddings import get_embedder
from sessions.guide import OfflineGuide
from sessions.guide.offline import match_rule
from sessions.models import Realm, Topic

KEY = Path(__file__).resolve().parents[2] / "eval" / "tutor_key.json"


class Command(BaseCommand):
    help = "Measure the offline tutor: symbol suggestions against a teacher's key, and rule matching."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, as_json=False, **options):
        key = json.loads(KEY.read_text(encoding="utf-8"))
        guide = OfflineGuide(embedder=get_embedder())
        topics = {t.slug: t.pack() for t in Topic.objects.all()}
        realms = {r.slug: _realm(r) for r in Realm.objects.all()}
        rows, first_hits, top3_hits, total = [], 0, 0, 0
        for realm_slug, per_topic in key["symbols"].items():
            for topic_slug, accepted in per_topic.items():
                topic, realm = topics[topic_slug], realms[realm_slug]
                suggestions = guide._suggestions(topic, realm)
                first = top3 = 0
                misses = []
                for entity, ok in accepted.items():
                    ranked = suggestions.get(entity, [])
                    first += int(bool(ranked) and ranked[0] in ok)
                    top3 += int(any(s in ok for s in ranked[:3]))
                    if not ranked or ranked[0] not in ok:
                        misses.append(f"{entity} → {ranked[0] if ranked else '—'}")
                rows.append({"realm": realm_slug, "topic": topic_slug, "concepts": len(accepted), "first": first,
                             "top3": top3, "misses": misses})  # fmt: skip
                first_hits, top3_hits, total = first_hits + first, top3_hits + top3, total + len(accepted)
        rule_rows = []
        for case in key["rules"]:
            got = match_rule(case["text"], topics[case["topic"]], _legend(case["legend"]), guide.embedder)
            rule_rows.append({**case, "got": got, "ok": got == case["rule"]})
        out = {
            "suggestion_first_fit": round(first_hits / total, 4),
            "suggestion_top3_fit": round(top3_hits / total, 4),
            "concepts": total,
            "rule_match": round(sum(r["ok"] for r in rule_rows) / len(rule_rows), 4),
            "rules": len(rule_rows),
            "per_topic_realm": rows,
            "rule_cases": rule_rows,
        }
        if as_json:
            self.stdout.write(json.dumps(out, indent=2))
            return
        self.stdout.write(
            f"Symbol suggestions: the first one fits the concept's role for {first_hits} of {total} concepts "
            f"({out['suggestion_first_fit']:.0%}); one of the three offered fits for {top3_hits} "
            f"({out['suggestion_top3_fit']:.0%})."
        )
        for r in rows:
            self.stdout.write(
                f"  {r['realm']:8s} {r['topic']:18s} first {r['first']}/{r['concepts']}  "
                f"top-3 {r['top3']}/{r['concepts']}"
                + (f"   misses: {'; '.join(r['misses'])}" if r["misses"] else "")
            )
        self.stdout.write(
            f"Rule matching: {sum(r['ok'] for r in rule_rows)} of {len(rule_rows)} paraphrased rules matched to the "
            f"rule they restate, or to none ({out['rule_match']:.0%})."
        )
        for r in rule_rows:
            if not r["ok"]:
                self.stdout.write(f"  ✗ {r['topic']}: “{r['text']}” → {r['got']} (expected {r['rule']})")


def _realm(realm) -> dict:
    return {"slug": realm.slug, "name": realm.name, "symbols": realm.symbols, "hints": realm.hints}


def _legend(mapping: dict) -> list[dict]:
    return [{"symbol": symbol, "entity": entity, "meaning": ""} for symbol, entity in mapping.items()]
