"""A "how many analysts…?" question is answered by the sentence that puts a number on analysts ("a pilot with
five analysts"), not by one that says a number of something else ("used 340 times"), however close
the rest of its words come. Written and spoken sentences alike."""

from __future__ import annotations

import re

from rag.words import WORD_RE, stem

_HOW_MANY_RE = re.compile(r"\bhow many\s+(?:of\s+(?:the|our|your|their)\s+)?(?P<thing>[A-Za-z][\w-]*)", re.I)
_CARDINAL_RE = re.compile(
    r"^(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
    r"|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
    r"|hundreds|thousand|thousands|million|millions|dozen|dozens)$",
    re.I,
)
# "five analysts", "12 senior analysts", "three hundred new analysts": the thing counted comes within
# this many words after the number.
_MAX_GAP = 2


def counted_thing(question: str) -> str:
    """The stem of what a "how many X" question counts ("analyst"); empty for other questions."""
    m = _HOW_MANY_RE.search(question)
    return stem(m["thing"]) if m else ""


def counts_thing(thing: str, sentence: str) -> bool:
    """Whether ``sentence`` puts a number on ``thing`` (a stem from ``counted_thing``)."""
    if not thing:
        return False
    words = WORD_RE.findall(sentence)
    return any(
        _CARDINAL_RE.match(word) and any(stem(w) == thing for w in words[i + 1 : i + 2 + _MAX_GAP])
        for i, word in enumerate(words)
    )
