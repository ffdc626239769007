"""What a chosen quote needs beside it to be read on its own: a procedure's first step ("Open the
config.edn file." ranks low, but the steps after it make no sense without it), the sentence
before one that names its subject only as "it" or "he", the reason after a fact a "why" asks about."""

from __future__ import annotations

import re

from rag.llm.candidates import Sentence, leans_on_before
from rag.words import asks_how_to


def from_first_step(
    question: str, chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int
) -> list[Sentence]:
    """The steps a "how do I…" answer quotes from a section of notes ("Creating a macro") start at
    its first one: the opening "Open the config.edn file." says little on its own and ranks low,
    but the steps after it make no sense without it. It takes the place of the weakest other
    sentence when the answer is full. (Only notes have sections: transcripts are left alone.)"""
    if not chosen or not chosen[0].section or not asks_how_to(question):
        return chosen
    lead = chosen[0]
    steps = [c for c in candidates if c.source.n == lead.source.n and c.section == lead.section]
    first = min(steps, key=lambda c: c.position)
    if any(c is first for c in chosen):
        return chosen
    rest = list(chosen)
    if len(rest) >= max_sentences:
        rest.remove(min(rest[1:], key=lambda c: c.score))
    # Reading order: the first step's source keeps its place, the step goes before the others.
    out = [*rest, first]
    order = {c.source.n: i for i, c in reversed(list(enumerate(rest)))}
    out.sort(key=lambda c: (order[c.source.n], c.position))
    return out


def with_antecedents(chosen: list[Sentence], candidates: list[Sentence]) -> list[Sentence]:
    """Each chosen sentence that names its subject only as "it" or "he" ("It appoints the
    Commissioners…") preceded by the sentence before it, which names it: quoted alone, it says
    who or what only to someone who has read the page."""
    at = {(c.source.n, c.position): c for c in candidates}
    picked = {id(c) for c in chosen}
    out: list[Sentence] = []
    for c in chosen:
        # Written sources only (``before`` is empty in transcripts).
        lead = at.get((c.source.n, c.position - 1)) if c.before and leans_on_before(c.text) else None
        if lead is not None and id(lead) not in picked:
            out.append(lead)
            picked.add(id(lead))
        out.append(c)
    return out


_WHY_RE = re.compile(r"^\s*(?:(?:and|so|but)\s+)?(?:why|how come)\b", re.I)
# Words a sentence gives a reason or a purpose in.
_REASON_RE = re.compile(
    r"\b(?:because|since|due to|owing to|so that|in order to|as a result|therefore|thus|hence|reasons?|"
    r"pays? for|paid for|caused?|causes|leads? to|led to|thanks to)\b",
    re.I,
)


def with_reason(
    question: str, chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int
) -> list[Sentence]:
    """A "why…?" answered by a written sentence that states the fact but gives no reason ("The
    budget for 2027 is 412,000 euros, up from 365,000.") is followed by the sentence after it,
    where a page gives the reason ("Most of the increase pays for a second on-call engineer."):
    the sentence closest to the question repeats its words, the reason uses others. Unchanged
    when a chosen sentence gives a reason, for transcripts, and when the page says nothing after."""
    if not chosen or not _WHY_RE.match(question) or chosen[0].speaker:
        return chosen
    if any(_REASON_RE.search(c.text) for c in chosen):
        return chosen
    lead = chosen[0]
    after = next(
        (
            c
            for c in candidates
            if c.source.n == lead.source.n and c.position == lead.position + 1 and c.section == lead.section
        ),
        None,
    )
    if after is None or any(c is after for c in chosen):
        return chosen
    out = list(chosen)
    if len(out) >= max_sentences:
        out.remove(min(out[1:], key=lambda c: c.score))
    out.insert(out.index(lead) + 1, after)
    return out


_BARE_WHY_RE = re.compile(r"^\s*(?:(?:and|but|so)\s+)?(?:why|how come)\s*[?.!]*\s*$", re.I)


def no_reason_given(question: str, chosen: list[Sentence]) -> bool:
    """A bare "why?" after an answer, and nothing quoted gives a reason: the sources say what was
    decided, not why, and the answer must not pass the rest of the meeting off as the reason."""
    return bool(_BARE_WHY_RE.match(question)) and not any(_REASON_RE.search(c.text) for c in chosen)
