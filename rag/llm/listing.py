"""Answers that are a list the sources spread out: every decision, every task, every step.

"What did we decide with Acme?" is answered by each decision on Acme, often one a meeting, not by
the one sentence closest to the question; "what are the action items?" by every line that gives
someone a task. Which sources are on the question's subject, which of their lines state the kind
of thing asked for, and the order the list reads in.
"""

from __future__ import annotations

import re

from rag.llm.candidates import Sentence
from rag.llm.transcripts import gives_task, name_words, says_something  # nothing for a document that is no transcript
from rag.words import (
    ACTIONS,
    DECISION_RE,
    DECISION_TERMS,
    GENERIC_TERMS,
    LIST_REQUEST_TERMS,
    RECENCY_TERMS,
    WORD_RE,
    Listing,
    content_terms,
    stem,
)

# Questions whose answer is a list the sources spread out: every decision, every step. A process
# or a procedure ("what is the release process") is its steps.
STEP_TERMS = frozenset(stem(w) for w in ["step", "process", "procedure"])
LIST_TERMS = DECISION_TERMS | STEP_TERMS | frozenset(stem(w) for w in ["action", "todo"])
_DECISION_WORD_RE = re.compile(rf"{DECISION_RE.pattern}|\b(?:decide|agree)s?\b", re.I)
_STEP_WORD_RE = re.compile(r"\b(?:steps?|action items?)\b", re.I)


def on_subject(candidates: list[Sentence], q_terms: set[str], question: str = "") -> set[int] | None:
    """The sources (numbers) that name what a "what did we decide with X?" question is about; None
    when the question names nothing besides the kind of thing it asks for (every source is).

    Those naming the most of its subject: "what was decided at the acme kickoff" is the kickoff's
    decisions, not the pilot review's, though both meetings name Acme. A name written with a sign
    inside ("the 1:1"), which the word pattern splits, is matched in the titles as typed."""
    subject = q_terms - LIST_TERMS - GENERIC_TERMS - LIST_REQUEST_TERMS
    signed = {t for t in _tokens(question) if _SIGNED_RE.search(t)}
    if not subject and not signed:
        return None
    named = {
        src.n: len(signed & _tokens(src.title)) + len(subject & content_terms(f"{src.title} {src.text}"))
        for src in {c.source.n: c.source for c in candidates}.values()
    }
    most = max(named.values(), default=0)
    return {n for n, k in named.items() if k == most} if most else None


# A word with a sign between its letters or digits ("1:1", "q3/q4"), which the word pattern splits.
_SIGNED_RE = re.compile(r"\w[:/&]\w")


def _tokens(text: str) -> set[str]:
    """Whitespace-separated words, lower case, without the punctuation around them."""
    return {t.strip(".,;!?\"'()[]").lower() for t in text.split()}


def states(listed: Listing, text: str, transcript: str = "") -> bool:
    """Whether ``text`` is a line ``listed`` asks for: a decision, or a task, also one a meeting
    gives to one of its speakers ("Sam will send the report"; ``transcript``: the meeting, by
    default ``text`` itself)."""
    return bool(listed.states.search(text)) or (listed is ACTIONS and gives_task(text, transcript or text))


def stating(
    candidates: list[Sentence], listed: Listing | None, about: set[int] | None, q_terms: set[str] = frozenset()
) -> list[Sentence]:
    """For a question asking what was decided or is to be done ("what did we decide last month",
    "what are the action items"): the sentences of the sources on its subject (``about``, None:
    any) that state one (``states``: "Decision: …", "We agreed to …", "I will send …"). The rest of
    the same meeting ("Northwind keeps its research in Notion") is context. None: no such question.

    A subject that is a speaker ("what are leo's action items") keeps the lines that person says
    or that name them ("I will hand the release checklist to Sam" is about Sam's work too): Maya's
    "We agreed to revisit…" in Leo's 1:1 is not his task."""
    if listed is None:
        return []
    lines = [c for c in candidates if states(listed, c.text, c.source.text) and (about is None or c.source.n in about)]
    subject = q_terms - LIST_TERMS - GENERIC_TERMS - LIST_REQUEST_TERMS
    if subject:
        # A meeting on the subject also decides other things: those lines that say the subject,
        # or sit under a title that does, are the ones asked for ("who is going to do releases
        # now" is not answered by the same 1:1's decision on Northwind).
        on_it = [c for c in lines if subject & content_terms(f"{c.source.title} {c.text}")]
        lines = on_it or lines
    people = {c.speaker for c in candidates if c.speaker and subject & content_terms(c.speaker)}
    if not people:
        return lines
    words = "|".join(re.escape(w) for person in people for w in name_words(person))
    names = re.compile(rf"\b(?:{words})\b") if words else None
    return [c for c in lines if c.speaker in people or (names and names.search(c.text))]


def newest_first(chosen: list[Sentence]) -> list[Sentence]:
    """Decisions read newest first ("what did we decide?" wants the latest one before a summer's):
    the sources by date, each source's sentences in document order, undated sources last.
    Unchanged when none is dated (nothing to order by)."""
    if not any(c.source.date for c in chosen):
        return chosen
    in_reading_order = sorted(chosen, key=lambda c: (c.source.n, c.position))
    return sorted(in_reading_order, key=lambda c: c.source.date, reverse=True)  # ISO dates: stable sort


def wants_all(q_terms: set[str]) -> bool:
    """A short question asking for a kind of thing ("what did we decide with Acme?"), not one fact."""
    return bool(q_terms & LIST_TERMS) and len(q_terms - LIST_TERMS - GENERIC_TERMS) <= 2


def says_kind(text: str, q_terms: set[str]) -> bool:
    """The sentence names the kind of thing asked for (a decision, a step) in any words: worth a hop
    to another document. A decision is no step: "steps for a release" does not hop to a meeting's
    "We agreed to revisit the proposal"."""
    kind = _DECISION_WORD_RE if q_terms & DECISION_TERMS else _STEP_WORD_RE
    return bool(kind.search(text))


# "What do we know about acme", "tell me about northwind", "what's the latest on the pilot": what
# every source says of a named subject, not the one sentence closest to the question.
_OVERVIEW_RE = re.compile(
    r"^\s*(?:so\s+|and\s+)?(?:what do (?:we|i|you) know about|tell me about|what(?:'s|s| is) (?:the )?"
    r"(?:latest|status|news|story) (?:on|with|of|about)|(?:give me )?an overview of)\b",
    re.I,
)


def asks_overview(question: str) -> bool:
    """The question asks what the sources hold on a subject as a whole, not one fact of it."""
    return bool(_OVERVIEW_RE.search(question))


_SUMMARY_RE = re.compile(r"\b(?:summari[sz]e|summary|tl;?dr|recap|gist|what happened (?:in|at|during))\b", re.I)


def overview(
    question: str, chosen: list[Sentence], pool: list[Sentence], candidates: list[Sentence], q_terms: set[str], *,
    limit: int,
) -> list[Sentence]:  # fmt: skip
    """``chosen`` as an overview of a named subject (``spread``) or, for "summarize the platform
    weekly", as the whole of the source whose title names what is summarized: every line it
    says, in its order (its own words, not the lines closest to the word "summarize")."""
    if asks_overview(question):
        return spread(pool, q_terms, limit=limit) or chosen
    subject = q_terms - LIST_TERMS - GENERIC_TERMS - LIST_REQUEST_TERMS - RECENCY_TERMS
    if not chosen or not subject or not _SUMMARY_RE.search(question):
        return chosen
    named = chosen[0].source
    if not subject <= content_terms(named.title):
        return chosen
    whole = [
        c for c in candidates
        if c.source.n == named.n and not c.said and (not c.speaker or says_something(c.text))
    ]  # fmt: skip
    return whole[:limit] or chosen


def spread(pool: list[Sentence], q_terms: set[str], *, limit: int) -> list[Sentence]:
    """An overview of a named subject (a client, a person, a project) from each source on it:
    their best lines in turn, newest source first, each source's lines in its own order. A source
    whose title names the subject gives any of its lines; another only those naming it (the 1:1
    that mentions the Northwind proposal once is not a source on Northwind for its other lines).

    Empty when fewer than two sources speak of the subject, or the subject is no name the sources
    write with a capital ("tell me about closures" is the best page's explanation, not a line
    from every page that uses the word): the answer is then chosen as any other."""
    subject = q_terms - LIST_TERMS - GENERIC_TERMS - LIST_REQUEST_TERMS - RECENCY_TERMS
    if not subject or not all(_written_as_name(term, pool) for term in subject):
        return []
    by_source: dict[int, list[Sentence]] = {}
    for c in pool:
        if c.speaker and not says_something(c.text):
            continue
        if subject & content_terms(c.source.title) or subject & content_terms(c.text):
            by_source.setdefault(c.source.n, []).append(c)
    if len(by_source) < 2:
        return []
    return _in_turn(by_source.values(), limit=limit, newest_first=False)


def latest_of_each(pool: list[Sentence], *, limit: int) -> list[Sentence]:
    """What someone is busy with ("what is maya working on", ``pool``: her lines): the best line of
    each meeting in turn, the newest meetings first, read newest first."""
    by_source: dict[int, list[Sentence]] = {}
    for c in pool:
        by_source.setdefault(c.source.n, []).append(c)
    return _in_turn(by_source.values(), limit=limit, newest_first=True)


def each_in_turn(pool: list[Sentence], *, limit: int) -> list[Sentence]:
    """The best line of each source in ``pool``, then, while ``limit`` leaves room, each source's
    next best in turn: "what happened last month" over one meeting is that meeting's lines, not one
    of them. Oldest source first, as a listing names them; each source's lines in its own order."""
    by_source: dict[int, list[Sentence]] = {}
    for c in pool:
        by_source.setdefault(c.source.n, []).append(c)
    chosen = _in_turn(by_source.values(), limit=limit, newest_first=False)
    return sorted(chosen, key=lambda c: (not c.source.date, c.source.date, c.source.n, c.position))


def _in_turn(lines_by_source, *, limit: int, newest_first: bool) -> list[Sentence]:
    """Each source's best lines in turn until ``limit``, the sources taken in order of their best
    line's score (``newest_first``: of their dates, undated last); then newest source first, each
    source's lines in its own order."""
    queues = [sorted(lines, key=lambda c: -c.score) for lines in lines_by_source]
    if newest_first:
        queues.sort(key=lambda q: q[0].source.date or "", reverse=True)
    else:
        queues.sort(key=lambda q: -q[0].score)
    chosen: list[Sentence] = []
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    in_reading_order = sorted(chosen, key=lambda c: (c.source.n, c.position))
    return sorted(in_reading_order, key=lambda c: c.source.date or "", reverse=True)


def _written_as_name(term: str, pool: list[Sentence]) -> bool:
    """The sources write ``term`` (a stem) with a capital wherever they write it: "Acme", "Northwind",
    "HNSW", never "closures"."""
    forms = [w for c in pool for w in WORD_RE.findall(f"{c.source.title} {c.text}") if stem(w.lower()) == term]
    return bool(forms) and all(w[0].isupper() for w in forms)
