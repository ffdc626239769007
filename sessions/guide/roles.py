"""What a concept or a symbol does, in a small shared vocabulary: a symbol is suggested for a
concept when they play the same role, and "why it fits" names that role in one sentence.

A realm's symbols and a topic's entities carry ``roles`` (names below); the phrases complete
"both …" so the sentence says the property the two share.
"""

from __future__ import annotations

ROLES = {
    "actor": "do the work themselves, one job at a time, whenever they are asked",
    "definition": "are written down once and only carried out later, when someone asks",
    "enclosure": "are a walled place that holds things, where what is inside belongs to that place",
    "carrier": "are kept and carried along, and still hold what they had when they set out",
    "companion": "go along with the original and add a touch of their own without replacing it",
    "queue": "keep waiting things in line and hand them out in order",
    "priority": "go before the ordinary line and are cleared first",
    "messenger": "go off with a job and come back with news when it is done",
    "pledge": "are handed over now and tell one outcome later, exactly once",
    "timer": "are about waiting: something happens only after time has passed or news has come",
    "handoff": "pass what they get on to the next one in turn",
    "gate": "decide by a rule what may pass and what is turned away",
    "matcher": "pair things from two sides that belong together",
    "copy": "show a copy or likeness, which is not the thing itself",
    "stream": "give one item at a time, only when asked, until nothing is left",
    "empty": "are there but hold nothing",
    "failure": "are about something going wrong that has to be dealt with",
    "cleanup": "clear away what nobody uses any more",
}


def shared_role(entity: dict, symbol: dict) -> str | None:
    """The first role of the entity that the symbol plays too."""
    mine = set(symbol.get("roles") or [])
    return next((r for r in entity.get("roles") or [] if r in mine), None)


def why_it_fits(*, entity: dict, symbol: dict) -> str:
    """One sentence naming what the symbol and the concept have in common."""
    role = shared_role(entity, symbol)
    if role:
        return f"Why it fits: the {symbol['name']} and {entity['name']} both {ROLES[role]}."
    # No shared role on record: say the symbol's own meaning as what the concept is like.
    return f"Why it fits: {entity['name']} is like the {symbol['name']} — {symbol['meaning'].rstrip('.')}."
