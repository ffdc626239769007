"""How well a written sentence answers a question, by its words: which of the question's words it
says (the rarer among the candidates, the more they count), and whether it says them in the
question's order ("the oil embargo was lifted" for "when was the oil embargo lifted?").

The embedding's closeness says what a sentence is about; a question about a fact is answered by
the sentence that restates its words around the fact, so the answerer mixes both for prose. Speech
restates little of a question and is scored by closeness and what the meeting talks about
(``rag.llm.extractive``), not by this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rag.words import STOPWORDS, WORD_RE, content_terms, stem


@dataclass(frozen=True)
class WordFit:
    """``rare``: the share of the question's rarity-weighted words the sentence says; ``pairs``: the
    share of the question's adjacent word pairs it says as a pair too."""

    rare: float
    pairs: float


def _stems(text: str) -> list[str]:
    return [stem(w) for w in WORD_RE.findall(text)]


def _pairs(stems: list[str]) -> set[tuple[str, str]]:
    """Adjacent pairs of words, stop words skipped: "price of oil" and "oil price" differ, but
    "price of the oil" and "price of oil" are one pair."""
    words = [w for w in stems if w not in STOPWORDS and len(w) > 1]
    return set(zip(words, words[1:], strict=False))


def word_fit(question: str, sentences: list[str]) -> list[WordFit]:
    """Each sentence's fit to the question's words, weighted by rarity among ``sentences``: a word
    every candidate says (the article's subject) tells them apart less than one few say."""
    q_terms = content_terms(question)
    q_pairs = _pairs(_stems(question))
    own = [content_terms(s) for s in sentences]
    n = len(sentences)
    weight = {t: math.log(1 + (n + 1) / (1 + sum(1 for o in own if t in o))) for t in q_terms}
    total = sum(weight.values()) or 1.0
    out = []
    for text, terms in zip(sentences, own, strict=True):
        rare = sum(weight[t] for t in terms & q_terms) / total
        pairs = len(q_pairs & _pairs(_stems(text))) / len(q_pairs) if q_pairs else 0.0
        out.append(WordFit(rare=rare, pairs=pairs))
    return out
