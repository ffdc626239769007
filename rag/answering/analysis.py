"""Query analysis: a question in, filters out (dates, people, tags, entity, domain, counting).

Two analysers produce the same ``QueryAnalysis``: a deterministic parser (offline default) and
an LLM prompted with today's date (so "last month" resolves) and the known metadata values (so
the names it returns are ones the index can filter on). The LLM's output is
validated against the same facets — a value it invents is dropped — and any failure falls back
to the parser, so a flaky model never blocks an answer.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from dataclasses import dataclass, field, replace

from rag.answering.dates import LATEST_MEETING_RE, MONTH_RE, WEEKDAY_RE, parse_dates
from rag.answering.selectors import Facets
from rag.answering.sources import collection_label
from rag.answering.spelling import find_name, misspelt_people
from rag.llm.base import LLMError, LLMProvider
from rag.llm.counts import counted_thing
from rag.llm.prose import asks_how_often
from rag.search import SearchFilters
from rag.words import stem

logger = logging.getLogger(__name__)

# Questions that count entries of the notes ("how many times did I meet Leo", "how often did we
# talk to Acme"), not any "how many": "how many analysts are in the pilot?" asks for a fact the
# sources state. "How often" counts what happened (did, have, was; do I, do we) or what happened in
# a period; "how often does the sync run?" asks for a schedule a document states.
COUNTING_RE = re.compile(
    r"\bhow many (?:(?:more |other )?(?:times|meetings|entries|notes|calls|sessions|days|pages|"
    r"documents|docs|files|occasions|journal entries))\b|\bnumber of (?:times|days|meetings|entries|occasions)\b"
    r"|\bcount (?:of|the)\b|\bhow often (?:did|have|has|had|was|were|am i|do (?:i|we))\b",
    re.I,
)


def asks_to_count(query: str, *, period: bool = False) -> bool:
    """Whether ``query`` counts entries of the notes; ``period``: it names a time span ("how often
    does Leo join the weekly this year" counts, "how often does the sync run" does not)."""
    return bool(COUNTING_RE.search(query)) or (period and asks_how_often(query))



CHIP_FIELDS = ("date", "collections", "people", "entity", "tags", "domain")
_FIELD_NAMES = {
    "date": "date", "collections": "collection", "people": "person",
    "entity": "entity", "tags": "tag", "domain": "domain",
}


@dataclass
class FilterChip:
    """One filter the analysis read from the question, as the person sees it on the answer.

    ``origin`` is ``stated`` when the question says it in so many words ("last month", "in the
    meetings collection", "with Sam", "tagged search", a capitalised name) and ``guessed`` when
    an ordinary word happens to equal a known value ("search" is also a tag). Stated filters
    narrow retrieval (``effect`` ``filter``, or ``dropped`` when they emptied it); guessed ones
    only ``boost`` what carries them, so a word never silently hides the answer.
    """

    field: str
    value: str
    origin: str  # stated | guessed | form (set in the page's filters, or the API request)
    phrase: str
    effect: str = "filter"
    # Set when the filter was lifted because nothing under it answered: the chip says what was
    # searched instead ("nothing dated 2027 — searched everything").
    widened: bool = False
    # What the question asked about when the filter was lifted because what it held was about
    # something else ("nothing dated last week on pgvector"); empty when it held nothing at all.
    widened_for: str = ""

    @property
    def label(self) -> str:
        if self.widened:
            about = f" on {self.widened_for}" if self.widened_for else ""
            return f"{self._nothing()}{about} — searched everything"
        value = self.value
        if self.field == "date":
            low, _, high = self.value.partition("/")
            value = low if low == high else f"{low} – {high}"  # one day is one date
        if self.field == "collections":
            value = collection_label(self.value)
        if self.origin == "form":
            return f"{_FIELD_NAMES[self.field]}: {value} (set in the filters)"
        # "The word" is the name itself, not the "and" or "with" the phrase took along.
        word = re.sub(r"^(?:with|by|from|for|about|and)\s+", "", self.phrase, flags=re.I)
        source = f"from the word '{word}'" if self.origin == "guessed" else f"from '{self.phrase}'"
        return f"{_FIELD_NAMES[self.field]}: {value} ({source})"

    def _nothing(self) -> str:
        if self.field == "date":
            # "nothing dated 2027", "nothing dated today", but "nothing dated in the last 24 hours".
            period = re.sub(r"^(?:in|on|for|during|from)\s+(?!the\b)", "", self.phrase.strip(), flags=re.I)
            return f"nothing dated {period or self.value.replace('/', ' – ')}"
        if self.field == "people":
            return f"nothing with {self.value}"
        if self.field == "tags":
            return f"nothing tagged {self.value}"
        if self.field == "collections":
            return f"nothing in {collection_label(self.value)}"
        return f"nothing about {self.value}"

    def as_dict(self) -> dict:
        out = {
            "field": self.field, "value": self.value, "origin": self.origin, "phrase": self.phrase,
            "effect": self.effect, "label": self.label,
        }  # fmt: skip
        if self.widened:
            out["widened"] = True
        return out

    def matches(self, ignored: list[dict]) -> bool:
        for item in ignored:
            if item["field"] != self.field:
                continue
            # A date chip is removed by its field alone: there is only ever one date range.
            if self.field == "date" or (item.get("value") or "").strip().lower() == self.value.lower():
                return True
        return False

@dataclass
class QueryAnalysis:
    """Filters read from a question. ``source`` says which analyser produced them."""

    date_from: dt.date | None = None
    date_to: dt.date | None = None
    date_phrase: str = ""
    people: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    entity: str | None = None
    domain: str | None = None
    counting: bool = False
    source: str = "parser"
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    error: str = ""
    collections: list[str] = field(default_factory=list)
    chips: list[FilterChip] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {
            "date_from": self.date_from.isoformat() if self.date_from else None,
            "date_to": self.date_to.isoformat() if self.date_to else None,
            "date_phrase": self.date_phrase,
            "people": self.people,
            "tags": self.tags,
            "entity": self.entity,
            "domain": self.domain,
            "counting": self.counting,
            "source": self.source,
            "collections": self.collections,
        }
        if self.error:
            out["error"] = self.error
        return out

    def apply(self, filters: SearchFilters) -> SearchFilters:
        """``filters`` narrowed by this analysis; what the user set explicitly always wins."""
        return replace(
            filters,
            date_from=filters.date_from or self.date_from,
            date_to=filters.date_to or self.date_to,
            people=list(filters.people) or list(self.people),
            tags=list(filters.tags) or list(self.tags),
            entity=filters.entity or self.entity,
            domain=filters.domain or self.domain,
        )

    def active_chips(self, ignored: list[dict] | None = None) -> list[FilterChip]:
        return [c for c in self.chips if not c.matches(ignored or [])]

    def split(self, request: SearchFilters, ignored: list[dict] | None = None) -> tuple[SearchFilters, SearchFilters]:
        """(what to filter by, what to boost with): stated chips narrow, guessed ones only boost.

        What the person set explicitly in the request always wins over the analysis; chips in
        ``ignored`` (removed on the page) are not applied at all.
        """
        stated = [c for c in self.active_chips(ignored) if c.origin == "stated"]
        guessed = [c for c in self.active_chips(ignored) if c.origin == "guessed"]
        applied = with_chips(request, stated)
        return applied, with_chips(applied, guessed)


def form_chips(request: SearchFilters) -> list[FilterChip]:
    """The filters set in the form (or the API request) as chips, so the answer shows them."""
    chips: list[FilterChip] = []
    if request.date_from or request.date_to:
        value = (
            f"{request.date_from.isoformat() if request.date_from else ''}"
            f"/{request.date_to.isoformat() if request.date_to else ''}"
        )
        chips.append(FilterChip(field="date", value=value, origin="form", phrase=""))
    chips += [FilterChip(field="collections", value=c, origin="form", phrase="") for c in request.collections or []]
    chips += [FilterChip(field="people", value=p, origin="form", phrase="") for p in request.people or []]
    if request.entity:
        chips.append(FilterChip(field="entity", value=request.entity, origin="form", phrase=""))
    chips += [FilterChip(field="tags", value=t, origin="form", phrase="") for t in request.tags or []]
    if request.domain:
        chips.append(FilterChip(field="domain", value=request.domain, origin="form", phrase=""))
    return chips


def with_chips(filters: SearchFilters, chips: list[FilterChip]) -> SearchFilters:
    """``filters`` narrowed by ``chips``; a field the request already sets is left as it is."""
    out = filters
    for chip in chips:
        if chip.field == "date":
            start, _, end = chip.value.partition("/")
            out = replace(
                out,
                date_from=out.date_from or (dt.date.fromisoformat(start) if start else None),
                date_to=out.date_to or (dt.date.fromisoformat(end) if end else None),
            )
        elif chip.field in ("people", "tags"):
            if not getattr(filters, chip.field):
                out = replace(out, **{chip.field: [*getattr(out, chip.field), chip.value]})
        elif chip.field == "collections":
            if not filters.collections:
                out = replace(out, collections=[*(out.collections or []), chip.value])
        elif not getattr(filters, chip.field):
            out = replace(out, **{chip.field: chip.value})
    return out


# -- known values ------------------------------------------------------------------------------


def _plural_forms(value: str) -> str:
    escaped = re.escape(value)
    return rf"{escaped}(?:s|es)?"


def match_values(text: str, values: list[str], *, names: bool = False) -> list[str]:
    """Known values mentioned in ``text`` as whole words (longest first, no overlaps).

    Names must appear capitalised (so "will" is not the person Will) unless the question is all
    lower case; a multi-word name also matches by its first name when that is unambiguous.
    """
    found: list[str] = []
    taken: list[tuple[int, int]] = []
    lower_question = text == text.lower()
    first_names: dict[str, list[str]] = {}
    if names:
        for value in values:
            parts = value.split()
            if len(parts) > 1:
                first_names.setdefault(parts[0].lower(), []).append(value)
    candidates = [(v, v) for v in values if len(v) >= 2]
    candidates += [(options[0].split()[0], options[0]) for options in first_names.values() if len(options) == 1]
    for needle, value in sorted(candidates, key=lambda c: -len(c[0])):
        # A name's possessive typed without its apostrophe ("what are sams tasks") is the name.
        needle_re = rf"{re.escape(needle)}(?:s(?=\s))?" if names else _plural_forms(needle)
        pattern = rf"(?<![\w-]){needle_re}(?![\w-])"
        flags = re.I if (not names or lower_question) else 0
        for m in re.finditer(pattern, text, flags):
            if names and not lower_question and not m.group(0)[:1].isupper():
                continue
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append((m.start(), m.end()))
            if value not in found:
                found.append(value)
            break
    return found


_COLLECTION_PHRASE = (
    r"(?:in|from|within|across)\s+(?:the\s+|my\s+|our\s+)?({name})\s+collection\b"
    r"|\bcollection\s+[\"'“]?({name})\b"
)


def stated_collections(query: str, known: list[str]) -> list[tuple[str, str]]:
    """Collections the question names as such ("in the meetings collection"): (value, phrase)."""
    out = []
    for name in sorted(known, key=len, reverse=True):
        if m := re.search(_COLLECTION_PHRASE.format(name=re.escape(name)), query, re.I):
            out.append((name, m.group(0).strip()))
    return out


def _find(value: str, text: str, *, plural: bool = True) -> re.Match | None:
    pattern = rf"(?<![\w-]){_plural_forms(value) if plural else re.escape(value)}(?![\w-])"
    return re.search(pattern, text, re.I)


def _name_chip(field_name: str, value: str, query: str) -> FilterChip:
    """A person or entity: stated when written as a proper name ("Sam", "with Sam", "Acme Capital")."""
    lower_question = query == query.lower()
    needle = value
    m = _find(value, query, plural=False)
    if m is None and " " in value:  # matched by the first name alone
        needle = value.split()[0]
        m = _find(needle, query, plural=False)
    if m is None and field_name == "people":  # spelt a letter off ("mya" for Maya Chen)
        m = find_name(value, query)
    phrase = m.group(0) if m else needle
    if m:
        before = query[: m.start()].rstrip()
        if re.search(r"\b(?:with|by|from|for|about|and)$", before, re.I):
            phrase = f"{before.split()[-1]} {phrase}"
    proper = bool(m) and m.group(0)[:1].isupper() and not lower_question
    # A person's whole name typed in lower case ("sam okafor") names them as surely as capitals:
    # two words that happen to equal a full name are no accident, as one ordinary word can be.
    proper = proper or (bool(m) and field_name == "people" and len(m.group(0).split()) > 1)
    return FilterChip(field=field_name, value=value, origin="stated" if proper else "guessed", phrase=phrase)


def _tag_chip(value: str, query: str) -> FilterChip:
    """A tag: stated only when the question says so ("tagged search", "#search", "tag search")."""
    if m := re.search(rf"(?:\btagged\s+(?:with\s+|as\s+)?|\btags?\s+|#)[\"'“]?{re.escape(value)}\b", query, re.I):
        return FilterChip(field="tags", value=value, origin="stated", phrase=m.group(0))
    m = _find(value, query)
    return FilterChip(field="tags", value=value, origin="guessed", phrase=m.group(0) if m else value)


_MEASURED_AGAINST_RE = r"\b(?:than|compared\s+(?:to|with)|vs\.?|versus|relative\s+to)\s+"


def _period_is_guess(query: str, phrase: str) -> bool:
    """Whether the period ``phrase`` of ``query`` is a guess at where to look, not a stated one.
    "recently" names no period: the three months it maps to are a guess. A period the question
    is about rather than one it looks in ("the budget for 2027", "plans for next year"), or one
    the subject is measured against ("bigger than last year"), is part of the subject:
    documents dated then rank higher, none is hidden."""
    bare = phrase.strip()
    return bool(
        re.fullmatch(r"(?:recently|lately)", bare, re.I)
        or re.match(r"(?:for|next)\b", bare, re.I)
        or re.search(r"\bnext\b", phrase, re.I)
        or (bare and re.search(_MEASURED_AGAINST_RE + re.escape(bare), query, re.I))
    )


def build_chips(query: str, analysis: QueryAnalysis) -> list[FilterChip]:
    """The chips of an analysis, each with where in the question it came from."""
    chips: list[FilterChip] = []
    if analysis.date_from or analysis.date_to:
        value = (
            f"{analysis.date_from.isoformat() if analysis.date_from else ''}"
            f"/{analysis.date_to.isoformat() if analysis.date_to else ''}"
        )
        phrase = analysis.date_phrase if analysis.date_phrase not in ("", "(model)") else ""
        if not phrase and (m := _TEMPORAL_RE.search(query)):
            phrase = m.group(0)
        vague = _period_is_guess(query, phrase)
        chips.append(
            FilterChip(
                field="date",
                value=value,
                origin="guessed" if vague else "stated",
                phrase=phrase or "a time in the question",
            )
        )
    for name in analysis.collections:
        phrase = next((p for v, p in stated_collections(query, [name]) if v == name), name)
        chips.append(FilterChip(field="collections", value=name, origin="stated", phrase=phrase))
    chips += [_name_chip("people", p, query) for p in analysis.people]
    if analysis.entity:
        chips.append(_name_chip("entity", analysis.entity, query))
    chips += [_tag_chip(t, query) for t in analysis.tags]
    if analysis.domain:
        if m := re.search(rf"\b(?:in|about)\s+(?:the\s+)?{re.escape(analysis.domain)}\s+domain\b", query, re.I):
            chips.append(FilterChip(field="domain", value=analysis.domain, origin="stated", phrase=m.group(0)))
        else:
            m = _find(analysis.domain, query)
            chips.append(
                FilterChip(
                    field="domain", value=analysis.domain, origin="guessed", phrase=m.group(0) if m else analysis.domain
                )
            )
    return chips


def latest_meeting_day(query: str, facets: Facets) -> tuple[dt.date, str] | None:
    """"What happened in the last meeting": the day of the newest meeting the person can see, and
    the phrase that asked for it (None when the question names no such meeting, or none is dated)."""
    if facets.latest_meeting and (m := LATEST_MEETING_RE.search(query)):
        return dt.date.fromisoformat(facets.latest_meeting), m.group(0)
    return None


def parse_query(
    query: str, *, today: dt.date, facets: Facets, unknown: set[str] | frozenset[str] = frozenset()
) -> QueryAnalysis:
    """The deterministic analyser: date phrases plus known people, tags, entities, domains.

    ``unknown``: the question's words no visible document holds; one a letter or two from a
    known person's first name is read as that name misspelt."""
    date_from, date_to, phrase = parse_dates(query, today)
    if not (date_from or date_to) and (latest := latest_meeting_day(query, facets)):
        date_from = date_to = latest[0]
        phrase = latest[1]
    text = re.sub(re.escape(phrase), " ", query, flags=re.I) if phrase else query
    people = match_values(text, facets.values("people"), names=True)
    people += misspelt_people(text, facets.values("people"), taken=people, unknown=set(unknown))
    tags = [t for t in match_values(text, facets.values("tags")) if t.lower() not in {p.lower() for p in people}]
    entities = match_values(text, facets.values("entities"))
    # "how many people joined…" counts people: the word names no domain of documents.
    counted = counted_thing(text)
    domains = [d for d in match_values(text, facets.values("domains")) if len(d) >= 3 and stem(d) != counted]
    collections = [name for name, _ in stated_collections(text, facets.values("collections"))]
    analysis = QueryAnalysis(
        date_from=date_from,
        date_to=date_to,
        date_phrase=phrase,
        people=people,
        tags=tags,
        entity=entities[0] if len(entities) == 1 else None,
        domain=domains[0] if len(domains) == 1 else None,
        counting=asks_to_count(query, period=bool(date_from or date_to)),
        source="parser",
        collections=collections,
    )
    analysis.chips = build_chips(query, analysis)
    return analysis


# -- the LLM analyser --------------------------------------------------------------------------

ANALYSIS_SCHEMA = {
    "title": "query_filters",
    "type": "object",
    "properties": {
        "date_from": {"type": ["string", "null"], "description": "YYYY-MM-DD or null"},
        "date_to": {"type": ["string", "null"], "description": "YYYY-MM-DD or null"},
        "people": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "entity": {"type": ["string", "null"]},
        "domain": {"type": ["string", "null"]},
        "counting": {"type": "boolean"},
    },
    "required": ["date_from", "date_to", "people", "tags", "entity", "domain", "counting"],
    "additionalProperties": False,
}


def _analysis_messages(query: str, today: dt.date, facets: Facets) -> list[dict]:
    def known(kind: str, limit: int = 150) -> str:
        values = facets.values(kind)[:limit]
        return json.dumps(values, ensure_ascii=False) if values else "[]"

    system = (
        "You turn a question about the user's notes into search filters. Reply with JSON only.\n"
        f"Today is {today.isoformat()} ({today.strftime('%A')}). Resolve relative dates "
        '("last 6 months", "in March", "since Monday") to date_from/date_to (YYYY-MM-DD, inclusive); '
        "null when the question names no time.\n"
        "people, tags, entity and domain must be copied exactly from the known values below, and only "
        "when the question refers to them; otherwise leave them empty or null.\n"
        "counting is true when the question asks how many times / how often something happened.\n"
        f"Known people: {known('people')}\nKnown tags: {known('tags')}\n"
        f"Known entities: {known('entities')}\nKnown domains: {known('domains', 50)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": query}]


def _canonical(values, known: list[str]) -> list[str]:
    index = {v.lower(): v for v in known}
    out: list[str] = []
    for value in values or []:
        if isinstance(value, str) and value.strip().lower() in index:
            canonical = index[value.strip().lower()]
            if canonical not in out:
                out.append(canonical)
    return out


def _iso(value) -> dt.date | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value.strip()[:10])
    except ValueError:
        return None


_TEMPORAL_RE = re.compile(
    rf"\b(?:today|yesterday|tonight|weekend|week|month|year|quarter|days?|ago|since|before|after|"
    rf"recent|recently|lately|between|during|until|{MONTH_RE}|{WEEKDAY_RE}|\d{{4}})s?\b",
    re.I,
)


def _grounded(value: str, query: str) -> bool:
    """A value the model read from the question: one of its words (3+ letters) is in it.

    Small models map "closures" to a random known entity; a value must come from the question.
    """
    from rag.words import content_terms

    asked = content_terms(query)
    return any(term in asked for term in content_terms(value) if len(term) >= 3)


def llm_analyse(
    query: str, *, today: dt.date, facets: Facets, llm: LLMProvider, timeout: float | None = None
) -> QueryAnalysis:
    """Ask ``llm`` for the filters; values not in the facets are dropped. Raises LLMError."""
    completion = llm.complete(
        messages=_analysis_messages(query, today, facets),
        max_tokens=300,
        temperature=0.0,
        json_schema=ANALYSIS_SCHEMA,
        timeout=timeout,
    )
    try:
        data = json.loads(completion.text)
    except ValueError as exc:
        raise LLMError(f"query analysis returned invalid JSON: {completion.text[:200]!r}") from exc
    if not isinstance(data, dict):
        raise LLMError("query analysis did not return a JSON object")
    date_from, date_to = _iso(data.get("date_from")), _iso(data.get("date_to"))
    if date_from and date_to and date_from > date_to:
        date_from, date_to = date_to, date_from
    if not _TEMPORAL_RE.search(query):  # dates only when the question speaks of time
        date_from = date_to = None
    phrase = "" if not (date_from or date_to) else "(model)"
    if not (date_from or date_to) and (latest := latest_meeting_day(query, facets)):
        (date_from, phrase), date_to = latest, latest[0]

    def grounded(values: list[str]) -> list[str]:
        return [v for v in values if _grounded(v, query)]

    entity = grounded(_canonical([data.get("entity")], facets.values("entities")))
    domain = grounded(_canonical([data.get("domain")], facets.values("domains")))
    analysis = QueryAnalysis(
        date_from=date_from,
        date_to=date_to,
        date_phrase=phrase,
        people=grounded(_canonical(data.get("people"), facets.values("people"))),
        tags=grounded(_canonical(data.get("tags"), facets.values("tags"))),
        entity=entity[0] if entity else None,
        domain=domain[0] if domain else None,
        counting=bool(data.get("counting")) or asks_to_count(query, period=bool(date_from or date_to)),
        source="llm",
        model=completion.model,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        cost_usd=completion.cost_usd,
        collections=[name for name, _ in stated_collections(query, facets.values("collections"))],
    )
    # Where each value came from is read off the question, not taken from the model's word.
    analysis.chips = build_chips(query, analysis)
    return analysis


def analyse_query(
    query: str, *, today: dt.date, facets: Facets, llm: LLMProvider | None = None, timeout: float | None = None,
    unknown: set[str] | frozenset[str] = frozenset(),
) -> QueryAnalysis:
    """The LLM analyser when a generative model is given, the parser otherwise or on failure."""
    if llm is not None and getattr(llm, "generative", False):
        try:
            return llm_analyse(query, today=today, facets=facets, llm=llm, timeout=timeout)
        except LLMError as exc:
            logger.warning("query analysis by %s failed, using the parser: %s", getattr(llm, "name", "?"), exc)
            parsed = parse_query(query, today=today, facets=facets, unknown=unknown)
            parsed.error = f"llm analysis failed: {exc}"[:300]
            return parsed
    return parse_query(query, today=today, facets=facets, unknown=unknown)
