"""Conversation follow-ups: decide whether a question needs a new search.

A follow-up that only reshapes or extends the last answer is answered from that answer's
sources: a fresh search would cost time and could drift away from what the user is reading.

The turns are logged asks (``filters["conversation_id"]``, read through ``rag.interactions``);
``rag.Conversation`` names and owns the thread (``rag.answering.history``), so a conversation
survives restarts, another user's or a deleted one loads as empty. Strategies:

- ``NO_RAG``: a transformation of the last answer ("summarize that", "in bullet points") —
  no search; the last answer and the sources it cited are the context.
- ``REUSE``: more on the same topic ("tell me more", "why?") with unchanged filters — no search;
  every source the last answer was given is reused and what was already said is not repeated.
- ``NEW_QUERY``: anything else, and always when the explicit filters changed.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from rag.interactions import conversation_turns
from rag.words import asks_for_more, content_terms

NO_RAG = "NO_RAG"
REUSE = "REUSE"
NEW_QUERY = "NEW_QUERY"
STRATEGIES = (NO_RAG, REUSE, NEW_QUERY)
# What a person reads instead of the internal names.
STRATEGY_LABELS = {NO_RAG: "reworded the last answer", REUSE: "same sources as before", NEW_QUERY: "new search"}

CONVERSATION_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_TRANSFORM_RE = re.compile(
    r"^\s*(?:(?:can|could) you\s+|please\s+)?(?:summari[sz]e|sum (?:it|that|this) up|shorten|simplify|rephrase|"
    r"reword|translate|condense|paraphrase|tl;?dr|make (?:it|that|this) (?:shorter|simpler|clearer)|"
    r"(?:put|write|list) (?:it|that|this) (?:in|as)|in (?:bullet points|one sentence|short|a table)|"
    r"explain (?:it|that|this)(?: again| simply| like)?\b|what do you mean)",
    re.I,
)
_TRANSFORM_TERMS = content_terms(
    "summarize summarise summary tldr sum shorten shorter simplify simpler simply rephrase reword translate "
    "condense paraphrase make put write list bullet points one sentence short table clearer explain again "
    "mean like please"
)
_ANAPHORA_RE = re.compile(r"\b(?:that|this|it|those|these|them|they|he|she|his|her|there)\b", re.I)


@dataclass
class Exchange:
    """One earlier question and answer of the conversation."""

    interaction_id: int
    query: str
    topic: str
    answer: str
    retrieved: list[dict]
    cited: list[str]
    request_filters: dict
    strategy: str


@dataclass
class Conversation:
    id: str
    exchanges: list[Exchange] = field(default_factory=list)  # oldest first

    @property
    def last(self) -> Exchange | None:
        return self.exchanges[-1] if self.exchanges else None


def new_conversation_id() -> str:
    return uuid.uuid4().hex


def conversation_load(*, conversation_id: str, user, limit: int = 3) -> Conversation:
    """The last ``limit`` exchanges of ``user``'s conversation (another user's id finds nothing).

    Only ids and scores of the earlier sources come back: whoever reuses them re-reads the chunks
    through the caller's current scope (``chunks_by_uid``), so a chunk hidden since is not reused.
    """
    from rag.answering.history import conversation_visible

    if not conversation_visible(conversation_id=conversation_id, user=user):
        return Conversation(id=conversation_id)
    rows = conversation_turns(user=user, conversation_id=conversation_id, newest_first=True, limit=limit)
    exchanges = [
        Exchange(
            interaction_id=row.pk,
            query=row.query,
            topic=row.filters.get("topic") or row.query,
            answer=row.answer,
            retrieved=row.retrieved or [],
            cited=row.selected or [],
            request_filters=row.filters.get("request") or {},
            strategy=row.strategy,
        )
        for row in reversed(rows)
        if not row.filters.get("error")
    ]
    return Conversation(id=conversation_id, exchanges=exchanges)


def choose_strategy(*, question: str, conversation: Conversation, request_filters: dict) -> str:
    """NO_RAG, REUSE or NEW_QUERY for ``question`` given the conversation so far."""
    last = conversation.last
    if last is None or not last.retrieved:
        return NEW_QUERY
    if request_filters != last.request_filters:
        return NEW_QUERY
    if _TRANSFORM_RE.search(question):
        # "summarize that", "translate it to french" reshape the last answer; "summarize the
        # platform weekly" names something else to summarize, which needs its own search.
        named = content_terms(question) - _TRANSFORM_TERMS - content_terms(f"{last.topic} {last.query} {last.answer}")
        return NEW_QUERY if named and not _ANAPHORA_RE.search(question) else NO_RAG
    from rag.answering.followups import asks_which_were_counted, more_about

    subject = more_about(question)
    if subject and content_terms(subject) - content_terms(f"{last.topic} {last.query}"):
        # "tell me more about Northwind" after a question about Acme: a new subject, a new search.
        return NEW_QUERY
    if asks_for_more(question):
        return REUSE
    if asks_which_were_counted(question, last.topic or last.query):
        return NEW_QUERY  # the counting question asked again: it lists what it counts
    # A short question that only points back ("when was that?") stays on the same sources.

    new_terms = content_terms(question) - content_terms(f"{last.topic} {last.query} {last.answer}")
    if _ANAPHORA_RE.search(question) and not new_terms and len(question.split()) <= 8:
        return REUSE
    return NEW_QUERY
