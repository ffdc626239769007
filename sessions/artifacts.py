"""The artifact a finished session leaves behind: legend, rules, script, red flags and a score.

Two extractors share one shape. ``extract_deterministic`` builds it from the guide's state and
always works. ``extract_with_llm`` asks a chat model for structured output, validates it
against ``ARTIFACT_SCHEMA`` plus a few checks against the topic, and returns None when the
output is unusable, so the caller falls back to the deterministic artifact.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass

import jsonschema

from sessions.guide import OfflineGuide, session_score

logger = logging.getLogger(__name__)

ARTIFACT_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "required": ["legend", "rules", "script", "red_flags", "score"],
    "properties": {
        "legend": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["entity", "symbol", "meaning"],
                "properties": {
                    "entity": {"type": "string", "minLength": 1, "maxLength": 200},
                    "symbol": {"type": "string", "minLength": 1, "maxLength": 100},
                    "meaning": {"type": "string", "maxLength": 2000},
                },
            },
        },
        "rules": {
            "type": "array", "minItems": 1, "maxItems": 30,
            "items": {"type": "string", "minLength": 3, "maxLength": 1000},
        },
        "script": {"type": "string", "minLength": 20, "maxLength": 8000},
        "red_flags": {"type": "array", "maxItems": 30, "items": {"type": "string", "minLength": 3, "maxLength": 1000}},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
}


@dataclass
class Artifact:
    legend: list[dict]
    rules: list[str]
    script: str
    red_flags: list[str]
    score: float
    source: str  # "deterministic" | "llm"

    def as_dict(self) -> dict:
        return asdict(self)

    def index_text(self) -> str:
        """What gets embedded: script, then rules, then red flags (the learner's own story opens
        the first chunk; the rules and red flags follow as labelled lists)."""
        parts = [self.script.strip()]
        if self.rules:
            parts.append("Rules:\n" + "\n".join(f"- {r}" for r in self.rules))
        if self.red_flags:
            parts.append("Red flags:\n" + "\n".join(f"- {r}" for r in self.red_flags))
        return "\n\n".join(p for p in parts if p)


def extract_deterministic(*, topic: dict, realm: dict, state: dict, legend: list[dict]) -> Artifact:
    """Build the artifact from what the learner did: their legend, the rules, the myths judged."""
    rules = OfflineGuide.rules_for(topic, legend)
    own = state.get("own_rule")
    if own and own.get("text"):
        # The learner's own words take the place of the rule they restate; a rule of their own
        # that restates none is kept beside the others.
        matched = own.get("matches")
        if isinstance(matched, int) and 1 <= matched <= len(rules):
            rules[matched - 1] = own["text"].strip()
        else:
            rules.append(own["text"].strip())
    red_flags = [f"Myth: {m['claim']} Truth: {m['correction']}" for m in topic.get("misconceptions", [])]
    realm_name = realm.get("name", "the realm")
    lines = [f"The story of {topic.get('title', 'this topic')} in {realm_name}."]
    for row in legend:
        meaning = row.get("meaning", "").strip().rstrip(".")
        lines.append(f"{row['entity']} is the {row['symbol']}" + (f": {meaning}." if meaning else "."))
    unmapped = [e["name"] for e in topic.get("entities", []) if e["name"] not in {r["entity"] for r in legend}]
    if unmapped:
        lines.append("Still without a symbol: " + ", ".join(unmapped) + ".")
    if own and own.get("text"):
        lines.append(f"The law I keep in mind: {own['text'].rstrip('.')}.")
    elif rules:
        lines.append(f"The first law of this world: {rules[0]}")
    if red_flags:
        lines.append(f"And beware the {len(red_flags)} rumours told in {realm_name}: they are my red flags.")
    return Artifact(
        legend=[{"entity": r["entity"], "symbol": r["symbol"], "meaning": r.get("meaning", "")} for r in legend],
        rules=rules,
        script="\n".join(lines),
        red_flags=red_flags,
        score=session_score(state),
        source="deterministic",
    )


EXTRACT_SYSTEM = """You turn a finished learning session into its artifact. Reply with ONE JSON \
object and nothing else, matching this JSON schema:
{schema}

- legend: one entry per topic entity the learner mapped, using the topic's entity names exactly \
and the learner's symbol; meaning = why the symbol fits, in the learner's spirit.
- rules: the topic's truths restated as laws of the realm, naming the symbols (technically exact).
- script: a short memorable story (80-250 words) in the realm that walks through the legend and rules.
- red_flags: the misconceptions to watch out for, each with its correction.
- score: 0..1, how well the learner understood the topic, judged from their test answers."""


def _parse_json(text: str):
    text = text.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    return json.loads(text)


def validate_artifact(data, *, topic: dict) -> list[str]:
    """Problems with a model-made artifact: schema errors, then entities the topic doesn't have."""
    validator = jsonschema.Draft202012Validator(ARTIFACT_SCHEMA)
    problems = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(data)]
    if problems:
        return problems
    names = {e["name"].lower() for e in topic.get("entities", [])}
    for row in data["legend"]:
        if row["entity"].lower() not in names:
            problems.append(f"legend: unknown entity {row['entity']!r}")
    return problems


def extract_with_llm(*, llm, topic: dict, realm: dict, transcript: list[dict], draft: Artifact) -> Artifact | None:
    """Structured extraction by ``llm``; None (and a log line) if it fails or is invalid."""
    from rag.llm import LLMError

    lines = [f"{e['role']}: {e['content']}" for e in transcript if e["role"] in ("user", "assistant")]
    user = (
        f"Realm: {realm.get('name')}\nTopic: {topic.get('title')} ({topic.get('domain')})\n"
        f"Entities: {', '.join(e['name'] for e in topic.get('entities', []))}\n"
        f"Truths: {json.dumps(topic.get('truths', []))}\n"
        f"Misconceptions: {json.dumps(topic.get('misconceptions', []))}\n\n"
        f"Draft built from the session state (improve it, keep it correct):\n{json.dumps(draft.as_dict())}\n\n"
        "Transcript:\n" + "\n".join(lines)[-12000:]
    )
    messages = [
        {"role": "system", "content": EXTRACT_SYSTEM.format(schema=json.dumps(ARTIFACT_SCHEMA))},
        {"role": "user", "content": user},
    ]
    try:
        completion = llm.complete(messages=messages, max_tokens=1500, temperature=0.2, json_schema=ARTIFACT_SCHEMA)
        data = _parse_json(completion.text)
    except (LLMError, ValueError) as exc:
        logger.warning(
            "artifact extraction by %s failed, using the deterministic one: %s", getattr(llm, "name", "llm"), exc
        )
        return None
    problems = validate_artifact(data, topic=topic)
    if problems:
        logger.warning(
            "artifact from %s is invalid (%s), using the deterministic one",
            getattr(llm, "name", "llm"),
            "; ".join(problems[:5]),
        )
        return None
    return Artifact(
        legend=data["legend"],
        rules=data["rules"],
        script=data["script"],
        red_flags=data["red_flags"],
        score=float(data["score"]),
        source="llm",
    )
