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


# "who is handling it", "did they fix that": the follow-up is about the earlier subject itself.
_POINTS_BACK_RE = re.compile(r"\b(?:it|its|that|this|they|them|those|these)\b", re.I)


def holding_own_words(question: str, stated: list[str] | None, candidates: list[Sentence]) -> list[Sentence]:
    """The candidates a follow-up on the conversation's subject may quote. Its sources were found
    for that subject (``STATED_CONVERSATION``); a word of the question's own ("and the weights?")
    asks about a part of it, so only the sources that say that word, or state it in other words,
    answer it, and none when no source does (microtasks have no weights). A follow-up with no word
    of its own ("who raised them?") may quote the sources that speak of the conversation's subject
    (all of them when none does); any other question, every source."""
    subject = next((p[len(STATED_CONVERSATION) :] for p in stated or [] if p.startswith(STATED_CONVERSATION)), None)
    if subject is None:
        return candidates
    own = content_terms(question) - GENERIC_TERMS
    # With no word of its own ("what should i do then?" after "what happens if redis goes down"),
    # the conversation's subject is what a source must speak of: a page that only came up for the
    # follow-up's "then" (promises' then()) is about something else.
    subject_terms = content_terms(subject) - GENERIC_TERMS
    wanted = own or subject_terms
    if not wanted:
        return candidates
    # A page's title and headings say what all its sentences are about ("Tuning HNSW in pgvector").
    said: dict[int, set[str]] = {}
    for c in candidates:
        said.setdefault(c.source.n, set()).update(
            content_terms(f"{c.source.title} {c.section} {c.text}") | implied_terms(c.text)
        )
    holding = {n for n, terms in said.items() if wanted & terms}
    # Of the sources saying the follow-up's own word, those on the conversation's subject: "did we
    # fix it?" after Acme's complaints is answered by the Acme decision, not a changelog's "fix:";
    # and "who is handling it?" by none when no source on Acme says so, not by a page on promises'
    # handlers, when "it" is the subject. "And the weights?" names a subject of its own: the
    # sources holding it answer when none on the earlier subject does.
    if own and (rest := subject_terms - own):
        on_subject = {n for n in holding if rest & said[n]}
        holding = on_subject if on_subject or _POINTS_BACK_RE.search(question) else holding
    kept = [c for c in candidates if c.source.n in holding]
    return kept if own else kept or candidates
