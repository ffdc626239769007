"""Numbered citations checked against what the model was given.

Every ``[n]`` in an answer must name a source the model saw; others are removed — while the
text streams, so the user never sees a citation that the final answer drops. ``[1, 3]`` and
``[1][3]`` are both understood; ranges like ``[2-4]`` are expanded.
"""

from __future__ import annotations

import re

CITATION_RE = re.compile(r"(\s?)\[(\s*\d+\s*(?:(?:,|;|-|–)\s*\d+\s*)*)\]")
# What may still become a citation: an open ``[1, 2`` and the one whitespace before it, held back
# also when only the whitespace has arrived (a dropped citation takes its space with it).
_PARTIAL_RE = re.compile(r"\s?(?:\[[\d\s,;\-–]*)?$")
_MAX_HOLD = 24


def _numbers(inner: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"[,;]", inner):
        part = part.strip()
        if m := re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part):
            lo, hi = int(m[1]), int(m[2])
            if 0 < hi - lo < 20:
                out.extend(range(lo, hi + 1))
                continue
        if part.isdigit():
            out.append(int(part))
    return out


class CitationFilter:
    """Streams text through, dropping citations of sources the model was not given.

    ``feed`` returns what can be shown now; a trailing ``[1`` (or a trailing space, which a
    dropped citation would take with it) is held back until it is known what follows.
    ``used`` lists the valid source numbers in order of first citation.
    """

    def __init__(self, valid: set[int], *, renumber: bool = False):
        self.valid = valid
        # With ``renumber``, the n-th source cited first is shown as [n]: numbers read 1, 2, 3…
        # in the text whatever order the model cites its sources in.
        self.renumber = renumber
        self.used: list[int] = []
        self.removed: list[int] = []
        self._held = ""

    def _clean(self, text: str) -> str:
        def repl(m: re.Match) -> str:
            numbers = _numbers(m.group(2))
            keep = [n for n in numbers if n in self.valid]
            self.removed.extend(n for n in numbers if n not in self.valid)
            for n in keep:
                if n not in self.used:
                    self.used.append(n)
            if not keep:
                return ""
            shown = [self.used.index(n) + 1 for n in keep] if self.renumber else keep
            return m.group(1) + "".join(f"[{n}]" for n in dict.fromkeys(shown))

        return CITATION_RE.sub(repl, text)

    def feed(self, text: str) -> str:
        text = self._held + text
        self._held = ""
        partial = _PARTIAL_RE.search(text)
        if partial and len(text) - partial.start() <= _MAX_HOLD:
            self._held = text[partial.start():]
            text = text[: partial.start()]
        return self._clean(text)

    def flush(self) -> str:
        text, self._held = self._held, ""
        return self._clean(text)


def check_citations(text: str, valid: set[int]) -> tuple[str, list[int]]:
    """``text`` without invalid citations, and the valid source numbers it cites (in order)."""
    f = CitationFilter(valid)
    return f.feed(text) + f.flush(), f.used
