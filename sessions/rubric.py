"""A test's rubric: the parts a teacher looks for in an answer, and the statements that refute it.

Learners answer in fragments — "3 3 3, use let", "only the inner functions can see them", "at
def time" — that an embedding model finds far from a full expected sentence. A teacher reads
them for the facts the question asks for; so does a rubric, written beside each test:

``"parts": [{"name": "what is printed (3 three times)", "any": ["3 3 3", "3 ~ three"]}, …]``
``"refuted_by": [{"says": "b runs first", "why": "The decorator nearest the def is applied first, …"}, …]``

A *pattern* is a set of groups joined by `` + `` that must all occur, in any order. A group is a
set of alternatives joined by ``|``. An alternative is a word sequence; ``~`` between two words
allows up to three other words between them ("b ~ first" finds "b's wrapper runs first"); a
word ending in ``*`` is a prefix ("reject*" finds "rejected"); ``/`` joins words that may stand
in the same place ("after ~ sync*/script" finds "after the script"). Text is read in lower case with
punctuation dropped, apostrophes closed up ("can't" → "cant", "b's" → "b") and ``[]`` read as
the word ``emptylist``.

A refuting pattern preceded closely by a negation ("not on each call") does not refute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GAP = 3
# How many words before a refuting statement a negation still turns it round ("not when the
# decorated function is called").
NEGATION_REACH = 5
_NEGATIONS = {"not", "no", "never", "isnt", "doesnt", "dont", "wont", "cant", "cannot", "nor", "without"}


def rubric_tokens(text: str) -> list[str]:
    """Lower-case word tokens as the rubric reads them (see the module docstring)."""
    text = text.lower().replace("’", "'")
    text = re.sub(r"\[\s*\]|\bempty (?:list|array)\b", " emptylist ", text)
    text = re.sub(r"n't\b", "nt", text)
    text = re.sub(r"'s\b", "", text)
    text = text.replace("'", "")
    return re.findall(r"[a-z0-9]+", text)


def _word_at(tokens: list[str], i: int, word: str) -> bool:
    return any(tokens[i].startswith(w[:-1]) if w.endswith("*") else tokens[i] == w for w in word.split("/"))


def _match_sequence(tokens: list[str], alt: str) -> int | None:
    """The index where the alternative's first word matches, or None."""
    steps: list[tuple[str, int]] = []  # (word, max gap before it)
    gap = 0
    for w in alt.split():
        if w == "~":
            gap = GAP
            continue
        steps.append((w, gap))
        gap = 0
    if not steps:
        return None

    def from_pos(k: int, pos: int) -> bool:
        if k == len(steps):
            return True
        word, max_gap = steps[k]
        for j in range(pos, min(len(tokens), pos + max_gap + 1)):
            if _word_at(tokens, j, word) and from_pos(k + 1, j + 1):
                return True
        return False

    for start in range(len(tokens)):
        if _word_at(tokens, start, steps[0][0]) and from_pos(1, start + 1):
            return start
    return None


def _group_hits(tokens: list[str], group: str) -> list[int]:
    hits = []
    for alt in group.split("|"):
        alt = alt.strip()
        if alt:
            at = _match_sequence(tokens, alt)
            if at is not None:
                hits.append(at)
    return hits


def pattern_match(tokens: list[str], pattern: str, *, negatable: bool = False) -> bool:
    """Whether every group of ``pattern`` occurs in ``tokens``; with ``negatable``, a group found
    only right after a negation ("not on each call") does not count."""
    for group in pattern.split(" + "):
        hits = _group_hits(tokens, group)
        if negatable:
            hits = [h for h in hits if not _NEGATIONS.intersection(tokens[max(0, h - NEGATION_REACH) : h])]
        if not hits:
            return False
    return True


@dataclass
class RubricResult:
    """Which parts an answer states, which it leaves out, and what (if anything) refutes it."""

    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    refuted_by: dict | None = None  # the refutation found: {"says": pattern, "why": reason}

    @property
    def complete(self) -> bool:
        return not self.missing and self.refuted_by is None

    @property
    def partial(self) -> bool:
        return bool(self.found) and bool(self.missing) and self.refuted_by is None


def read_rubric(answer: str, parts: list[dict], refuted_by: list[dict] | None = None) -> RubricResult:
    tokens = rubric_tokens(answer)
    result = RubricResult()
    for refutation in refuted_by or []:
        if pattern_match(tokens, refutation["says"], negatable=True):
            result.refuted_by = refutation
            break
    for part in parts:
        hit = any(pattern_match(tokens, p) for p in part["any"])
        (result.found if hit else result.missing).append(part["name"])
    return result
