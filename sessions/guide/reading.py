"""Reading a learner's message: a symbol and the reason given, a request for a suggestion,
a question, a verdict on a claim. Patterns only; what needs meaning is the guide's embedder."""

from __future__ import annotations

import re

from sessions.grading import words

SUGGEST = re.compile(r"^\s*(suggest|you choose|you pick|any|pick one|choose for me)\b", re.I)
QUESTION = re.compile(
    r"^\s*(what|why|how|when|where|who|which|can|could|does|do|is|are|should|would|explain|tell me)\b.*\?\s*$",
    re.I | re.S,
)
_CUSTOM = re.compile(
    r"^\s*(?:(?:i(?:'d| would)? (?:choose|pick|take|use)|it'?s|the|a|an)\s+)*(?P<symbol>[^\W\d_][\w' ]{0,40}?)"
    r"\s*(?:—|–|-|:|,|=|\bbecause\b|\bsince\b|\bas\b)\s*(?P<why>.+)$",
    re.I | re.S,
)
_FILLER = re.compile(
    r"\b(i|i'd|i'll|choose|pick|take|use|the|a|an|it's|its|is|for|this|that|my|symbol|would|will)\b", re.I
)
_FALSE = re.compile(
    r"\b(false|wrong|myth|incorrect|untrue|nope|misconception|not true|not correct|that's not|isn't true|disagree)\b",
    re.I,
)
_TRUE = re.compile(r"\b(true|correct|right|agree|yes|yep|indeed)\b", re.I)
_LEADING_FALSE = re.compile(r"^\W*(no|false|wrong|nope|not really|incorrect|myth)\b", re.I)
_LEADING_TRUE = re.compile(r"^\W*(yes|true|correct|right|yep)\b", re.I)


def clean_reason(text: str) -> str:
    """The reason a learner gave, without the joining words and punctuation around it."""
    text = re.sub(r"^[\s—–\-:,;=.]+|[\s—–\-:,;=]+$", "", text)
    text = re.sub(r"^(because|since|as|for)\s+", "", text, flags=re.I)
    return re.sub(r"[\s,]*\b(like|as)\s+(a|an|the)\s*$", "", text, flags=re.I).strip()


def meaningful(why: str) -> bool:
    """Whether a reason says something (three words or more besides filler)."""
    return len([w for w in words(_FILLER.sub(" ", why)) if len(w) > 1]) >= 3


def parse_symbol(realm: dict, message: str) -> tuple[str | None, str]:
    """Find the symbol a learner chose and the reason they gave.

    A realm symbol named anywhere wins (the earliest one); otherwise "X — because Y" /
    "X: Y" names a symbol of the learner's own.
    """
    found: list[tuple[int, str, int]] = []
    for sym in realm.get("symbols", []):
        m = re.search(rf"\b{re.escape(sym['name'])}s?\b", message, re.I)
        if m:
            found.append((m.start(), sym["name"], m.end()))
    if found:
        found.sort()
        start, name, end = found[0]
        # The reason usually follows the symbol ("Lantern — because …"), sometimes precedes it
        # ("it remembers where it came from, like a lantern").
        after = clean_reason(message[end:])
        before = clean_reason(message[:start])
        why = after if meaningful(after) or not meaningful(before) else before
        return name, why
    m = _CUSTOM.match(message)
    if m and len(m.group("symbol").split()) <= 4:
        return m.group("symbol").strip().title(), m.group("why").strip()
    return None, ""


def stated_verdict(message: str) -> str | None:
    """'false' when the message plainly rejects a claim, 'true' when it plainly accepts it, else None."""
    if _LEADING_FALSE.match(message):
        return "false"
    if _LEADING_TRUE.match(message):
        return "true"
    if _FALSE.search(message):
        return "false"
    if _TRUE.search(message):
        return "true"
    return None
