"""What the pipeline already settled before the answerer reads the question: the phrases it applied
as filters ("last month", "in the meetings collection"), a count or a listing it made from the
metadata, the conversation subject it searched for. The answerer takes them out of the question,
or refuses what they cannot answer."""

from __future__ import annotations

import re

from rag.llm.candidates import Sentence
from rag.llm.context import STATED_CONVERSATION, STATED_COUNT, STATED_LISTED
from rag.words import GENERIC_TERMS, content_terms, implied_terms


def without_stated(question: str, stated: list[str] | None) -> tuple[str, bool]:
    """The question without the phrases already applied as filters, and whether nothing
    specific is left of it (then every source passed the person's filters)."""
    residual = question
    for phrase in stated or []:
        residual = re.sub(re.escape(phrase), " ", residual, flags=re.I)
    residual = re.sub(r"\s+", " ", residual).strip()
    # "count: X" ("listed: X") is the pipeline's mark for a counting (listing) question: its
    # sources are the entries counted (listed), chosen by metadata, and the answer quotes them as
    # examples.
    counting = any(p.startswith((STATED_COUNT, STATED_LISTED)) for p in stated or [])
    narrowed = bool(stated) and (counting or len(content_terms(residual) - GENERIC_TERMS) <= 1)
    return residual or question, narrowed


def holding_own_words(question: str, stated: list[str] | None, candidates: list[Sentence]) -> list[Sentence]:
    """The candidates a follow-up on the conversation's subject may quote. Its sources were found
    for that subject (``STATED_CONVERSATION``); a word of the question's own ("and the weights?")
    asks about a part of it, so only the sources that say that word, or state it in other words,
    answer it, and none when no source does (microtasks have no weights). All of them for any
    other question, and for a follow-up with no word of its own ("who raised them?")."""
    if not any(p.startswith(STATED_CONVERSATION) for p in stated or []):
        return candidates
    own = content_terms(question) - GENERIC_TERMS
    if not own:
        return candidates
    # A page's title and headings say what all its sentences are about ("Tuning HNSW in pgvector").
    holding = {
        c.source.n
        for c in candidates
        if own & (content_terms(f"{c.source.title} {c.section} {c.text}") | implied_terms(c.text))
    }
    return [c for c in candidates if c.source.n in holding]
