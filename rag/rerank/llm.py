"""Listwise reranking by the configured chat model: it returns the passage numbers, best first."""

from __future__ import annotations

import json
import re

from rag.llm.base import LLMError, LLMProvider
from rag.rerank.base import Ranked, RerankError, validated

PASSAGE_CHARS = 600
_SCHEMA = {
    "type": "object",
    "properties": {"ranking": {"type": "array", "items": {"type": "integer"}}},
    "required": ["ranking"],
    "additionalProperties": False,
}


class LlmReranker:
    def __init__(self, *, llm: LLMProvider):
        if not getattr(llm, "generative", False):
            raise RerankError("the llm reranker needs a generative model (set OPENAI_API_KEY or LLM_BASE_URL)")
        self.llm = llm
        self.name = f"llm:{llm.name}"

    def rerank(self, *, query: str, documents: list[str], top_n: int, timeout: float) -> list[Ranked]:
        passages = "\n\n".join(
            f"[{i + 1}] {' '.join(doc.split())[:PASSAGE_CHARS]}" for i, doc in enumerate(documents)
        )
        messages = [
            {"role": "system", "content": (
                "You rank search results. Reply with JSON {\"ranking\": [passage numbers]}, the most "
                "relevant passage to the query first. Use only the numbers shown; each at most once."
            )},
            {"role": "user", "content": f"Query: {query}\n\nPassages:\n{passages}\n\n"
                                        f"Return the {min(top_n, len(documents))} most relevant, best first."},
        ]  # fmt: skip
        try:
            completion = self.llm.complete(messages=messages, max_tokens=300, temperature=0.0,
                                           json_schema=_SCHEMA, timeout=timeout)  # fmt: skip
        except LLMError as exc:
            raise RerankError(f"the model failed: {exc}") from exc
        numbers = _ranking(completion.text)
        # Listwise output has ranks, not scores: 1/rank keeps "higher is better".
        ranked = validated([(n - 1, 1.0 / (r + 1)) for r, n in enumerate(numbers)], count=len(documents))
        return ranked[:top_n]


def _ranking(text: str) -> list[int]:
    text = text.strip()
    fenced = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(fenced.group(0) if fenced else text)
    except (json.JSONDecodeError, AttributeError) as exc:
        raise RerankError("the model's ranking is not JSON") from exc
    ranking = data.get("ranking") if isinstance(data, dict) else data
    if not isinstance(ranking, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in ranking):
        raise RerankError("the model's ranking is not a list of passage numbers")
    return ranking
