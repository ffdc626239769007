"""A "how many analysts…?" question is answered by the sentence that puts a number on analysts ("a pilot with
five analysts"), not by one that says a number of something else ("used 340 times"), however close
the rest of its words come. Written and spoken sentences alike."""

from __future__ import annotations

import re
from functools import lru_cache

from rag.words import CARDINALS, WORD_RE, content_terms, stem

_HOW_MANY_RE = re.compile(r"\bhow many\s+(?:of\s+(?:the|our|your|their)\s+)?(?P<thing>[A-Za-z][\w-]*)", re.I)
_CARDINAL_RE = re.compile(rf"^(?:\d[\d,.]*|{CARDINALS})$", re.I)
# "five analysts", "12 senior analysts", "three hundred new analysts": the thing counted comes within
# this many words after the number.
_MAX_GAP = 2


# "How many people…?" is answered by a number of any people: "five analysts", "60,000 settlers".
_PEOPLE = {stem(w) for w in ["people", "person", "individual", "folk", "human"]}
# Nouns of people by their plural's ending (analysts, engineers, investors, residents, employees…)
# or without one.
_PEOPLE_NOUN_RE = re.compile(
    r"^(?:\w{2,}(?:sts|ers|ors|ians|ants|ents|ees)|people|persons|staff|members|men|women|children)$", re.I
)


def counted_thing(question: str) -> str:
    """The stem of what a "how many X" question counts ("analyst"); empty for other questions."""
    m = _HOW_MANY_RE.search(question)
    return stem(m["thing"]) if m else ""


def counts_thing(thing: str, sentence: str) -> bool:
    """Whether ``sentence`` puts a number on ``thing`` (a stem from ``counted_thing``)."""
    if not thing:
        return False
    words = WORD_RE.findall(sentence)

    def counted(word: str) -> bool:
        return stem(word) == thing or (thing in _PEOPLE and bool(_PEOPLE_NOUN_RE.match(word)))

    return any(
        _CARDINAL_RE.match(word) and any(counted(w) for w in words[i + 1 : i + 2 + _MAX_GAP])
        for i, word in enumerate(words)
    )


def answers_count(question: str, sentence: str) -> bool:
    """A sentence that puts a number on what a "how many…?" question counts, and says another of
    its words, answers it however far its other words are ("pilot with five analysts" for "how
    many people joined the pilot")."""
    thing, others = _count_asked(question)
    return bool(thing and others & content_terms(sentence)) and counts_thing(thing, sentence)


@lru_cache(maxsize=64)
def _count_asked(question: str) -> tuple[str, frozenset[str]]:
    """What ``question`` counts and its other words: the same for every candidate sentence weighed."""
    thing = counted_thing(question)
    return thing, frozenset(content_terms(question) - {thing}) if thing else frozenset()


def counts_first(thing: str, chosen: list) -> list:
    """``chosen`` with the sources whose sentences put a number on ``thing`` read first (each
    source's sentences kept together, in their order): "how many analysts were in the pilot" opens
    with "pilot with five analysts", not with a better-ranked meeting's "used the pilot 340 times"."""
    counting = {c.source.n for c in chosen if counts_thing(thing, c.text)}
    if not thing or not counting:
        return chosen
    return sorted(chosen, key=lambda c: c.source.n not in counting)


def counted_target(stated: list[str] | None, mark: str) -> str:
    """What a count the metadata made counted ("Sam Okafor", "acme"), from the stated phrase
    ``mark`` + target the pipeline passes; empty when the question counted nothing."""
    return next((p[len(mark) :].strip() for p in stated or [] if p.startswith(mark)), "")


def examples_of(target: str, candidates: list) -> list | None:
    """The sentences that are examples of what a count counted: said by the person counted, or
    naming them, the tag or the client (``target``) as a whole word. The count said how many;
    "Analysts used the pilot 340 times" is no example of meeting Acme. None when no sentence is
    (then any may be quoted)."""
    parts = {w for w in _words(target) if len(w) >= 3}
    if not parts:
        return None

    def names_it(c) -> bool:
        return bool(parts & (_words(c.speaker or "") | _words(c.text)))

    found = [c for c in candidates if names_it(c)]
    return found or None


def one_a_source(pool: list, *, limit: int) -> list:
    """The best-scored sentence of each source in ``pool``, at most ``limit``, oldest source first
    (undated ones last, in rank order): one example of each document counted or listed."""
    best: dict[int, object] = {}
    for c in pool:
        if c.source.n not in best or c.score > best[c.source.n].score:
            best[c.source.n] = c
    ranked = sorted(best.values(), key=lambda c: -c.score)[:limit]
    return sorted(ranked, key=lambda c: (not c.source.date, c.source.date, c.source.n))


_PLAIN_WORD_RE = re.compile(r"[^\W_]+")


def _words(text: str) -> set[str]:
    """Lower-case words, a possessive's name included ("Sam's" holds "sam")."""
    return {w.lower() for w in _PLAIN_WORD_RE.findall(text)}
