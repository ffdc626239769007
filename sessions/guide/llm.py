"""The LLM voice: the deterministic step, said by a chat model grounded in course excerpts.

The caller checks the model's ``[n]`` citations (``rag.answering.citations.CitationFilter``).
"""

from __future__ import annotations

from collections.abc import Iterator

GUIDE_SYSTEM = """You are the guide of a learning session in the realm "{realm}". The learner is \
learning "{topic}" ({domain}) by mapping its ideas onto symbols of the realm, so that the \
metaphor helps them remember. Be warm, concise (under 180 words) and precise about the \
technical facts; never contradict the topic notes.

Topic notes:
{notes}

Realm symbols: {symbols}
Legend so far: {legend}

Course excerpts (cite them as [n] when you use them; cite nothing else):
{context}

The session's structured guide has decided the next step. Respond to the learner's last message \
and then carry out this step faithfully, keeping every question it asks (the learner answers it \
next):
---
{step}
---"""


def _format_context(hits) -> str:
    if not hits:
        return "(none found)"
    return "\n".join(f"[{i}] {h.title}: {h.content[:700]}" for i, h in enumerate(hits, 1))


class LLMGuide:
    """Voices the deterministic guide's step with a chat model, grounded in course content."""

    def __init__(self, llm):
        self.llm = llm

    def messages(
        self, *, topic: dict, realm: dict, legend: list[dict], history: list[dict], message: str, step: str, hits
    ) -> list[dict]:
        notes = "\n".join(
            [f"- {e['name']}: {e['description']}" for e in topic.get("entities", [])]
            + [f"- True: {t}" for t in topic.get("truths", [])]
            + [f"- Misconception: {m['claim']} -> {m['correction']}" for m in topic.get("misconceptions", [])]
        )
        system = GUIDE_SYSTEM.format(
            realm=realm.get("name", ""),
            topic=topic.get("title", ""),
            domain=topic.get("domain", ""),
            notes=notes,
            symbols=", ".join(s["name"] for s in realm.get("symbols", [])),
            legend="; ".join(f"{r['entity']} = {r['symbol']}" for r in legend) or "(empty)",
            context=_format_context(hits),
            step=step,
        )
        out = [{"role": "system", "content": system}]
        out += [
            {"role": h["role"], "content": h["content"]} for h in history[-12:] if h["role"] in ("user", "assistant")
        ]
        out.append({"role": "user", "content": message})
        return out

    def stream(self, **kwargs) -> Iterator[str | object]:
        """Yield text deltas and finally the provider's ``Completion``."""
        yield from self.llm.stream(messages=self.messages(**kwargs), max_tokens=600, temperature=0.4)
