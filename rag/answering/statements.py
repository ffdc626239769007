"""What the metadata states, said before any quote: who a meeting was with ("who attended the
acme kickoff?"), where a person took part ("who is sam?"), which clients the sources name
("which clients do we have?"). Such questions are answered by
the documents' people and entities, which no sentence of theirs lists."""

from __future__ import annotations

import datetime as dt
import re

from rag.answering.dates import parse_dates
from rag.answering.sources import plain_text

_WHO_IS_RE = re.compile(r"^\s*(?:(?:and|so)\s+)?who\s*(?:is|was|'s|’s|s)\s+(?P<who>[^?]+?)\s*\??\s*$", re.I)

_KIND = r"(?:clients|customers)"
# The question asks for the list itself and nothing more about it ("which clients did acme
# mention" asks something else): "which clients do we have", "who are our customers", "list the
# clients".
_ASKS_CLIENTS_RE = re.compile(
    rf"^\s*(?:(?:which|what)\s+{_KIND}\s+(?:do|did)\s+(?:we|i)\s+(?:have|work\s+with|serve)"
    rf"|(?:which|what)\s+{_KIND}\s+(?:are\s+there|exist|have\s+we\s+got)"
    rf"|who\s+are\s+(?:our|the|my)\s+{_KIND}"
    rf"|(?:list|name|show(?:\s+me)?)\s+(?:all\s+)?(?:of\s+)?(?:our|the|my)?\s*{_KIND})\s*[?.!]*\s*$",
    re.I,
)


def names_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def who_statement(doc) -> str:
    """Who a source document involved, from its metadata, cited: ``**Title** (date) was with A and B [n].``

    ``doc`` is a ``SourceDoc``; the people are its metadata's ``people`` (else the transcript's
    ``speakers``) and the ``entity`` it is about. Empty when the metadata names no one.
    """
    people: list[str] = []
    entity = ""
    for hit in doc.hits:
        meta = hit.metadata or {}
        for name in meta.get("people") or meta.get("speakers") or []:
            if isinstance(name, str) and name.strip() and name.strip() not in people:
                people.append(name.strip())
        entity = entity or (meta.get("entity") or "")
    if not people and not entity:
        return ""
    best = doc.best
    title = plain_text(best.title) or best.source_id
    when = f" ({best.date.isoformat()})" if best.date else ""
    who = names_list(people) if people else ""
    if entity and who:
        who = f"{who} ({entity})"
    return f"**{title}**{when} was with {who or entity}, according to its metadata [{doc.n}]."


def asks_who_is(question: str, person: str) -> bool:
    """A question asking who ``person`` is ("who is sam", "whos priya raman"), by name alone."""
    m = _WHO_IS_RE.match(question)
    if not m:
        return False
    typed = m["who"].lower().split()
    names = person.lower().split()
    return bool(typed) and typed in (names, names[:1])


# "Which meetings was priya in", "what meetings did sam attend", "which calls has leo been on".
_MEETINGS_OF_RE = re.compile(
    r"^\s*(?:(?:and|so)\s+)?(?:which|what)\s+(?:meetings?|calls?)\s+(?:was|were|did|has|have|is)\s+(?P<who>.+?)\s+"
    r"(?:been\s+)?(?:in|at|on|to|attend(?:ed)?|join(?:ed)?|go\s+to|take\s+part\s+in)\s*[?.!]*\s*$",
    re.I,
)


def asks_where_took_part(question: str, person: str) -> bool:
    """A question asking who ``person`` is ("who is sam", "whos priya raman", "sam" alone) or which
    meetings they were in ("which meetings was priya in"), by name alone: each is answered by where
    they took part."""
    m = _MEETINGS_OF_RE.match(question)
    if not m:
        # A name typed alone ("sam", "Priya Raman?") asks who that is.
        return asks_who_is(question, person) or asks_who_is(f"who is {question}", person)
    typed = m["who"].lower().split()
    names = person.lower().split()
    return bool(typed) and typed in (names, names[:1])


def person_statement(person: str, docs) -> str:
    """Where ``person`` took part, from the metadata of the source documents ``docs``
    (``SourceDoc``s) that list them, cited: ``A took part in **T1** (date) [1] and **T2** [2],
    according to their metadata.`` Empty when none lists them."""
    places = []
    # Newest first, as a person's recent work says most about them; undated documents last.
    for doc in sorted(docs, key=lambda d: d.best.date.toordinal() if d.best.date else 0, reverse=True):
        listed = {
            name.strip()
            for hit in doc.hits
            for name in (hit.metadata or {}).get("people") or (hit.metadata or {}).get("speakers") or []
            if isinstance(name, str)
        }
        if person in listed:
            best = doc.best
            when = f" ({best.date.isoformat()})" if best.date else ""
            places.append(f"**{plain_text(best.title) or best.source_id}**{when} [{doc.n}]")
    if not places:
        return ""
    whose = "its" if len(places) == 1 else "their"
    return f"{person} took part in {names_list(places)}, according to {whose} metadata."


def asks_for_clients(question: str) -> str:
    """The word a question asking for the list of clients calls them ("clients", "customers"),
    or empty for any other question."""
    if not _ASKS_CLIENTS_RE.match(question):
        return ""
    return re.search(_KIND, question, re.I).group(0).lower()


def clients_statement(kind: str, entities: list[dict], docs) -> str:
    """The clients (``entities``: facet rows, ``{"value", "count"}``, of what the person can see),
    each with how many documents are about it, cited where a source document ``docs`` is:
    ``The sources you can see name 2 clients: **Acme Capital** (2 documents) [1] and …``.
    Empty when no entity is cited (an uncited list would be no answer from the sources)."""
    cited: dict[str, int] = {}
    for doc in docs:
        for hit in doc.hits:
            entity = ((hit.metadata or {}).get("entity") or "").strip().lower()
            if entity:
                cited.setdefault(entity, doc.n)
    if not entities or not cited:
        return ""
    items = []
    for row in entities:
        value, count = row["value"], row["count"]
        n = cited.get(value.strip().lower())
        items.append(f"**{value}** ({count} document{'' if count == 1 else 's'}){f' [{n}]' if n else ''}")
    noun = kind if len(entities) != 1 else kind.removesuffix("s")
    return f"The sources you can see name {len(entities)} {noun}: {names_list(items)}, according to their metadata."


COUNTED_LISTED = 6  # past this many counted documents, the latest are named


def counted_statement(entries, docs) -> str:
    """The documents a count counted (``CountedEntry``s, oldest first), named after the count:
    ``They are **T1** (date) [2] and **T2** (date) [1].`` Each is cited where it is among the
    answer's sources (``SourceDoc``s). "How many times did we meet acme?" is answered by the
    meetings themselves, not by a sentence that happens to count something else ("used 340
    times"). Past ``COUNTED_LISTED`` documents, the latest are named. Empty when none is among
    the sources (the names would cite nothing)."""
    items = _named_entries(entries, docs)
    if not items:
        return ""
    if len(entries) > len(items):
        return f"The latest {len(items)}: {names_list(items)}."
    return f"{'It is' if len(items) == 1 else 'They are'} {names_list(items)}."


def _named_entries(entries, docs) -> list[str]:
    """``**Title** (date) [n]`` for the last ``COUNTED_LISTED`` of ``entries``, cited where a
    source document is one of them; [] when none is."""
    number = {(d.best.collection, d.best.source_type, d.best.source_id): d.n for d in docs}
    if not any(e.key in number for e in entries):
        return []
    items = []
    for entry in entries[-COUNTED_LISTED:]:
        title = plain_text(entry.title)
        # "Journal 2026-11-03" says its date already.
        when = f" ({entry.date.isoformat()})" if entry.date and entry.date.isoformat() not in title else ""
        n = number.get(entry.key)
        items.append(f"**{title}**{when}{f' [{n}]' if n else ''}")
    return items


# "How many meetings [did we have]", "how many docs [do we have]": counted whole, or those that name
# a subject ("…mention the pilot").
_HOW_MANY_MEETINGS = (
    r"how\s+many\s+(?:meetings|calls)(?:\s+(?:did\s+(?:we|i)\s+(?:have|hold)|have\s+(?:we|i)\s+had|(?:we|i)\s+had"
    r"|were\s+there|took\s+place|happened))?"
)
_HOW_MANY_DOCUMENTS = (
    r"how\s+many\s+(?:documents|docs|notes|pages|files)(?:\s+(?:do|did)\s+(?:we|i)\s+have|\s+are\s+there"
    r"|\s+(?:have\s+)?(?:we|i)\s+(?:have|got)|\s+(?:were|have\s+been)\s+added|\s+in\s+total)?"
)


# The question asks what the meetings of a period were, or how many, and nothing about them in
# particular ("what was discussed in november", "what did we talk about last week", "which meetings
# did we have this month", "meetings in the last 2 weeks", "how many meetings did we have in
# november"), once its period is taken out.
_ASKS_MEETINGS_RE = re.compile(
    r"^\s*(?:(?:and|so)\s+)?(?:"
    r"what\s+(?:was|were|got|has\s+been|have\s+been|did\s+(?:we|they|you|i|the\s+team))\s+"
    r"(?:discuss(?:ed)?|talk(?:ed)?\s+about|cover(?:ed)?|go\s+over|gone\s+over)"
    r"|what\s+(?:happened|went\s+on)"
    r"|(?:what|which)\s+meetings\s+(?:did\s+(?:we|i)\s+have|were\s+there|took\s+place|happened)"
    r"|(?:list|show(?:\s+me)?)\s+(?:all\s+)?(?:the\s+|our\s+)?meetings"
    rf"|{_HOW_MANY_MEETINGS}"
    r"|how\s+many\s+times\s+(?:did|have)\s+(?:we|i)\s+(?:meet|met)"
    r"|(?:any|our|all|the|all\s+the)?\s*meetings(?:\s+(?:we|i)\s+had)?"
    r")(?:\s+(?:in|at|during)\s+(?:the\s+|our\s+)?meetings)?\s*[?.!]*\s*$",
    re.I,
)


# "What's new this week", "what changed last month", "anything from september": every document of
# the period; "how many documents do we have": every document.
_ASKS_NEW_RE = re.compile(
    r"^\s*(?:(?:and|so)\s+)?(?:(?:what(?:'s|’s|s|\s+is)|anything|what)\s+"
    r"(?:new|changed|has\s+changed|was\s+added|got\s+added|has\s+been\s+added)"
    rf"|{_HOW_MANY_DOCUMENTS}"
    r"|anything|everything|(?:any|all|the|all\s+the)?\s*(?:documents|docs|notes|pages))\s*[?.!]*\s*$",
    re.I,
)


# "How many meetings mention the pilot", "how many times did we talk about notion", "how many pages
# are about closures": the documents whose text names a subject, counted.
_MENTION_LINK = (
    r"\s+(?:that\s+|which\s+)?(?:are\s+|were\s+)?"
    r"(?:about|on|regarding|mention(?:s|ing|ed)?|discuss(?:es|ing|ed)?|cover(?:s|ing|ed)?|nam(?:e|es|ing|ed))"
)
_COUNTS_MENTIONS_RE = re.compile(
    rf"^\s*(?:(?:and|so)\s+)?(?:{_HOW_MANY_MEETINGS}{_MENTION_LINK}"
    r"|how\s+many\s+times\s+(?:did|have)\s+(?:we|i)\s+(?:talk(?:ed)?|spok(?:e|en)|speak|discuss(?:ed)?|mention(?:ed)?)"
    r"(?:\s+(?:about|on))?"
    rf"|(?P<documents>{_HOW_MANY_DOCUMENTS}){_MENTION_LINK})"
    r"\s+(?:the\s+|our\s+)?(?P<subject>[^?.!]+?)\s*[?.!]*\s*$",
    re.I,
)


def mention_listing(question: str) -> tuple[str, str] | None:
    """("meeting" or "document", the subject) of a question that counts the documents naming
    something ("how many meetings mention the pilot" → ("meeting", "pilot")); None for any other
    question. Meetings are counted for "how many times did we talk about…"."""
    m = _COUNTS_MENTIONS_RE.match(question)
    if not m:
        return None
    return ("document" if m.group("documents") else "meeting"), m.group("subject").strip()


def period_listing(question: str) -> str:
    """What ``question`` (its period taken out) asks the list of, and nothing more about:
    "meeting" ("what was discussed", "which meetings did we have"), "document" ("what's new",
    "what changed"), or "" for any other question."""
    if _ASKS_MEETINGS_RE.match(question):
        return "meeting"
    return "document" if _ASKS_NEW_RE.match(question) else ""


def period_listing_asked(question: str, today: dt.date) -> str:
    """``period_listing`` of a question that names a period ("what was discussed in november"),
    as an earlier turn a follow-up such as "tell me more" goes on from; "" without a period."""
    _, _, phrase = parse_dates(question, today)
    return period_listing(re.sub(r"\s+", " ", question.replace(phrase, " ")).strip()) if phrase else ""


def period_statement(
    entries, docs, period: str, *, noun: str = "meeting", latest: bool = False, counting: bool = False,
    mentioning: str = "",
) -> str:  # fmt: skip
    """The meetings (``noun``: or documents) of a period (``CountedEntry``s, oldest first), named
    and cited where they are among the sources: ``2 meetings in november (between …): **T1**
    (date) [2] and **T2** (date) [1], according to their metadata.`` Past ``COUNTED_LISTED``, the
    latest are named. With ``latest`` (the period held none), ``The latest meeting: **T** (date)
    [1], …``. With ``mentioning``, the documents whose text names it: ``**2** meetings mention
    “pilot”: …`` (their text, not their metadata, says so). Empty when none is among the
    sources."""
    items = _named_entries(entries, docs)
    if not items:
        return ""
    if latest:
        return f"The latest {noun}: {items[-1]}, according to its metadata."
    if counting:  # "how many meetings…": the figure first, as a count of tagged documents reads
        how_many = f"**{len(entries)}** {noun}{'' if len(entries) == 1 else 's'}"
    else:
        how_many = f"A {noun}" if len(entries) == 1 else f"{len(entries)} {noun}s"
    newest = f", the latest {len(items)}" if len(entries) > len(items) else ""
    if mentioning:
        verb = "mentions" if len(entries) == 1 else "mention"
        return f"{how_many} {verb} “{mentioning}”{period}{newest}: {names_list(items)}."
    whose = "its" if len(entries) == 1 else "their"
    return f"{how_many}{period}{newest}: {names_list(items)}, according to {whose} metadata."
