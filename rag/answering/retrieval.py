"""Retrieval for one ask: the question's filters read and applied, the search, the sources.

Stated filters narrow, guessed ones only rank; a filter read from the question that leaves no
answer is lifted and its chip says so; a person's name also finds what mentions them; a counting
question gets its figure from the metadata; a follow-up that reuses the last answer's sources
reads them again through the caller's scope. ``AskRun`` is what one ask accumulates.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from dataclasses import dataclass, field, replace

from django.conf import settings

from rag.acl import Scope
from rag.answering import conversations as conv
from rag.answering.analysis import FilterChip, QueryAnalysis, analyse_query, with_chips
from rag.answering.listings import with_listed, with_mention_listing, with_period_listing
from rag.answering.selectors import (
    CountedEntry,
    SourceCount,
    chunks_by_uid,
    count_sources,
    document_topics,
    facet_values,
)
from rag.answering.sources import (
    DocKey,
    DocumentEvidence,
    SourceDoc,
    doc_key,
    group_hits,
    select_hits,
    topics_of,
)
from rag.answering.spelling import (
    acronyms_of,
    correct_query,
    english_words,
    find_name,
    hyphenated_pairs,
    pairs_of,
    unknown_words,
    vocabulary_of,
)
from rag.embeddings import get_embedder
from rag.llm import Completion, ModelInfo
from rag.llm.candidates import query_vector as cached_query_vector
from rag.llm.candidates import sentence_vectors
from rag.rerank import reranked_search
from rag.search import (
    MAX_QUERY_CHARS,
    Hit,
    SearchFilters,
    chunk_search,
)
from rag.words import (
    DECISION_TERMS,
    GENERIC_TERMS,
    KIND_OF_ANSWER_TERMS,
    WORD_RE,
    content_terms,
)

logger = logging.getLogger(__name__)
# Subject words an agenda item must share with a question to be its topic by the words alone.
AGENDA_WORDS = 3


@dataclass
class AskRun:
    """What one ask accumulates while it streams (and logs at the end)."""

    user: object
    query: str
    scope: Scope
    request: SearchFilters
    info: ModelInfo
    conversation_id: str
    conversation_given: bool
    top_k: int
    mode: str
    today: dt.date
    embedder: object
    log: bool
    started: float = field(default_factory=time.perf_counter)
    strategy: str = conv.NEW_QUERY
    topic: str = ""
    ignored: list[dict] = field(default_factory=list)
    searched_query: str = ""
    rewrite: str = "standalone"
    subject: str = ""  # what the follow-up's rewrite found it is about
    previous_cited: list[str] = field(default_factory=list)  # the turn a follow-up points back to
    chips: list[FilterChip] = field(default_factory=list)
    lifted: list[FilterChip] = field(default_factory=list)  # stated filters searched without
    mentions: bool = False  # sources that only mention a person or entity read from the question
    unknown: set[str] = field(default_factory=set)  # the question's words no visible document holds
    corrections: dict[str, str] = field(default_factory=dict)  # misspelt word -> the index's word
    corrected_query: str = ""  # the question as asked, its misspelt words corrected
    docs: list[SourceDoc] = field(default_factory=list)
    analysis: QueryAnalysis | None = None
    applied: SearchFilters | None = None
    fallback: list[str] = field(default_factory=list)
    count: dict | None = None
    counted: list[CountedEntry] = field(default_factory=list)  # the documents the count counted
    listed: list[CountedEntry] = field(default_factory=list)  # "what was discussed in november": its meetings
    listed_noun: str = ""  # what ``listed`` are: "meeting", "document"
    listed_latest: bool = False  # ``listed`` is the latest one: the period asked about held none
    listed_subject: str = ""  # "how many meetings mention the pilot": ``listed`` are those naming it
    hits: list[Hit] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    completion: Completion | None = None
    error: str = ""
    error_detail: str = ""
    stopped: bool = False
    first_delta_ms: float | None = None
    interaction_id: int | None = None
    rerank: dict | None = None

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


def period_text(analysis: QueryAnalysis | None, filters: SearchFilters) -> str:
    start, end = filters.date_from, filters.date_to
    phrase = analysis.date_phrase if analysis and analysis.date_phrase and analysis.date_phrase != "(model)" else ""
    if start and end:
        span = f"between {start.isoformat()} and {end.isoformat()}"
    elif start:
        span = f"since {start.isoformat()}"
    elif end:
        span = f"before {(end + dt.timedelta(days=1)).isoformat()}"
    else:
        return ""
    return f" {phrase} ({span})" if phrase else f" {span}"


def _count_statement(target_kind: str, target: str, count: SourceCount, period: str) -> str:
    if count.sources == 0:
        return f"No entry is tagged with **{target}**{period}, so there is nothing to count from the metadata."
    noun = "entry" if count.sources == 1 else "entries"
    what = f"mention **{target}**" if target_kind == "person" else f"are tagged **{target}**"
    if count.sources == 1:
        what = what.replace("mention", "mentions").replace("are tagged", "is tagged")
    text = f"**{count.sources}** {noun} {what}{period}, according to the metadata"
    if count.first_date and count.last_date and count.first_date != count.last_date:
        text += f" — the first on {count.first_date.isoformat()}, the last on {count.last_date.isoformat()}"
    elif count.first_date:
        text += f" — on {count.first_date.isoformat()}"
    return text + "."


def _boost(hits: list[Hit], boosted: list[Hit], *, top_k: int, bonus: float) -> list[Hit]:
    """``hits`` and ``boosted`` merged: what carries a guessed filter gains ``bonus``, nothing is hidden."""
    by_uid = {h.chunk_uid: h for h in hits}
    for h in boosted:
        by_uid.setdefault(h.chunk_uid, h)
    favoured = {h.chunk_uid for h in boosted}
    merged = [replace(h, score=h.score + (bonus if h.chunk_uid in favoured else 0.0)) for h in by_uid.values()]
    merged.sort(key=lambda h: -h.score)
    for rank, h in enumerate(merged[:top_k], start=1):
        h.rank = rank
    return merged[:top_k]


def retrieve(run: AskRun, llm) -> None:
    """NEW_QUERY: analyse, search (stated filters narrow, guessed ones boost), count."""
    embedder = run.embedder or get_embedder()
    if run.analysis is None:
        facets = facet_values(scope=run.scope, collections=run.request.collections)
        run.unknown = unknown_words(set(WORD_RE.findall(run.searched_query)), scope=run.scope)
        run.analysis = analyse_query(
            # "and in july?" is the earlier question for another period, "and the notion one?" for
            # another name, "which ones?" the counting question again: its filters are those of the
            # question searched.
            run.searched_query if run.rewrite in ("period", "other_one", "person", "recount") else run.query,
            today=run.today,
            facets=facets,
            llm=llm if llm.generative else None,
            timeout=min(settings.KNOWHUB_LLM_TIMEOUT, 20.0),
            unknown=run.unknown,
        )
    analysis = run.analysis
    run.chips = analysis.active_chips(run.ignored)
    run.fallback = []
    for chip in run.chips:  # searched again (a lifted filter): every chip's effect is decided anew
        if not chip.widened:
            chip.effect = "filter"
    lifted = [{"field": c.field, "value": c.value} for c in run.lifted]
    applied, with_guesses = analysis.split(run.request, run.ignored + lifted)
    guesses = settings.KNOWHUB_ASK_GUESSED_FILTERS
    if guesses == "filter":
        applied = with_guesses
    query_vector = cached_query_vector(embedder, run.searched_query[:MAX_QUERY_CHARS])

    # Deeper than the chunks answered from, so that several documents can be among the sources.
    depth = run.top_k * max(1, settings.KNOWHUB_ASK_SEARCH_DEPTH)

    def search(filters: SearchFilters, text: str = "") -> list[Hit]:
        result, rerank = reranked_search(
            search=chunk_search, query=text or run.searched_query, scope=run.scope, filters=filters, top_k=depth,
            mode=run.mode, embedder=embedder, query_vector=None if text else query_vector,
        )  # fmt: skip
        if not text:
            run.rerank = rerank.as_dict()
        return result.hits

    if _spell_names(run) | _correct_spelling(run, search, applied, with_guesses):
        query_vector = cached_query_vector(embedder, run.searched_query[:MAX_QUERY_CHARS])
    applied, hits = _search_with_fallback(run, search, applied, guesses)
    hits = _with_mentions(run, search, hits, applied=applied, depth=depth)
    hits = with_listed(run, search, hits, applied=applied, depth=depth)
    hits = with_period_listing(run, hits, applied=applied, depth=depth)
    hits = _apply_guesses(run, search, hits, applied=applied, with_guesses=with_guesses, guesses=guesses, depth=depth)
    # After the guesses: what a guessed tag ranks higher ("notion": the page on connecting it) is no
    # meeting that mentions it.
    hits = with_mention_listing(run, hits, applied=applied, depth=depth)
    if run.previous_cited and hits:
        # "who raised it?": the turn it points back to answers first.
        earlier = chunks_by_uid(scope=run.scope, uids=run.previous_cited, scores={})
        hits = _boost(hits, _scored_like(earlier, hits), top_k=depth, bonus=settings.KNOWHUB_ASK_GUESS_BOOST)
    run.applied = applied
    evidence = DocumentEvidence(
        chunk_weights=tuple(settings.KNOWHUB_ASK_DOC_CHUNK_WEIGHTS), topic_weight=settings.KNOWHUB_ASK_DOC_TOPIC_WEIGHT,
        extra_floor=settings.KNOWHUB_ASK_EXTRA_DOC_FLOOR, lead_chunks=settings.KNOWHUB_ASK_LEAD_CHUNKS,
        topic_similarity_weight=settings.KNOWHUB_ASK_DOC_TOPIC_SIMILARITY_WEIGHT,
    )  # fmt: skip

    agenda = {}
    if (run.rerank or {}).get("served") == "reranked":
        # A reranker's order is the better judgment than fused scores: documents keep it.
        evidence = DocumentEvidence(lead_chunks=settings.KNOWHUB_ASK_LEAD_CHUNKS)
    elif evidence.topic_weight or evidence.topic_similarity_weight:
        # Documents filed under topics (meetings) are weighed by their whole agenda.
        filed = {doc_key(h) for h in hits if (h.metadata or {}).get("topics")}
        agenda = document_topics(scope=run.scope, docs=sorted(filed))
    # The question's closeness to every topic of the candidate documents, in one batch: it ranks
    # the documents and names the agenda item a source is about.
    topics = list(dict.fromkeys([*topics_of(hits, {}), *(t for items in agenda.values() for t in items)]))
    closeness = {
        t: sum(a * b for a, b in zip(query_vector, v, strict=True))
        for t, v in zip(topics, sentence_vectors(embedder, topics) if topics else [], strict=True)
    }
    hits = select_hits(
        hits, budget=run.top_k, max_docs=settings.KNOWHUB_ASK_MAX_DOCS, per_doc=settings.KNOWHUB_ASK_CHUNKS_PER_DOC,
        question=run.searched_query, evidence=evidence, closeness=closeness, agenda=agenda,
    )  # fmt: skip
    if run.previous_cited:
        # "when is that happening?": the documents the turn it points back to quoted come first
        # (the answer weighs its sources by their place), then the rest as ranked.
        quoted = set(run.previous_cited)
        earlier_docs = {doc_key(h) for h in hits if h.chunk_uid in quoted}
        hits = sorted(hits, key=lambda h: doc_key(h) not in earlier_docs)
    for rank, h in enumerate(hits, start=1):
        h.rank = rank
    run.hits = hits
    run.docs = group_hits(hits)
    _mark_agenda(run.docs, agenda, closeness, question=run.searched_query)
    run.topic = run.searched_query
    if analysis.counting and not run.listed_subject:
        run.count = _count(run, analysis)


def _spell_names(run: AskRun) -> bool:
    """The people read from the question written as the index spells them ("mya" → "Maya",
    "sam okafor" → "Sam Okafor") in what is searched and in the question the answer reads, so
    both match the sources' own spelling. True when the searched query changed."""
    if run.corrected_query:
        return False  # already spelt (a lifted filter searches again)
    people = [c.value for c in run.chips if c.field == "people"]

    def spelt(text: str) -> str:
        for value in people:
            m = find_name(value, text, unknown=run.unknown)
            if m is None:
                continue
            typed = m.group(0)
            first = value.split()[0]
            if typed.lower() == f"{first.lower()}s" and typed.lower() != value.lower():
                canonical = f"{first}'s"  # "sams tasks": the possessive, its apostrophe left out
            elif len(typed.split()) > 1 or typed.lower() == value.lower():
                canonical = value
            else:
                canonical = first
            text = text[: m.start()] + canonical + text[m.end() :]
        return text

    run.corrected_query = spelt(run.query)
    searched = spelt(run.searched_query)
    if run.corrected_query == run.query:
        run.corrected_query = ""
    if searched == run.searched_query:
        return False
    run.searched_query = searched
    return True


def people_words(run: AskRun) -> set[str]:
    """The words (lower case) of the people the question names: a person's name is no typo."""
    return {w.lower() for chip in run.chips if chip.field == "people" for w in WORD_RE.findall(chip.phrase)}


def _correct_spelling(run: AskRun, search, applied: SearchFilters, with_guesses: SearchFilters) -> bool:
    """A query word no visible document holds ("flashcrds") is replaced by the nearest word of
    the documents a first search finds (meaning still finds them when a word is misspelt), so
    the keyword search and the answer's quoting match it. True when the query changed.

    The documents a guessed tag or name finds are read too: "who is oncall" guesses the tag
    "oncall", whose runbook writes "On-call" where a search by meaning finds the call stack.

    Two words typed apart that the documents write hyphenated ("who is on call") are that word."""
    if run.corrections:
        return False  # corrected already (a lifted filter searches again)
    fixes = hyphenated_pairs(run.searched_query, scope=run.scope)
    corrected = _replaced(run.searched_query, fixes)
    asked = _replaced(run.corrected_query or run.query, fixes)
    if typos := run.unknown - people_words(run):
        hits = search(applied)
        if with_guesses != applied:
            hits += search(with_guesses)
        texts = [f"{h.title}. {h.content}" for h in hits]
        words = {
            "vocabulary": vocabulary_of(texts), "pairs": pairs_of(texts), "acronyms": acronyms_of(texts, typos),
            "english": english_words(),
        }  # fmt: skip
        corrected, typed = correct_query(corrected, unknown=typos, **words)
        asked = correct_query(asked, unknown=typos, **words)[0]
        fixes |= typed
    if not fixes:
        return False
    run.corrections = fixes
    run.searched_query = corrected[:MAX_QUERY_CHARS]
    run.corrected_query = asked if asked != run.query else ""
    return True


def _replaced(text: str, fixes: dict[str, str]) -> str:
    for typed, written in fixes.items():
        text = re.sub(rf"(?<![\w-]){re.escape(typed)}(?![\w-])", written, text)
    return text


def _mark_agenda(
    docs: list[SourceDoc], agenda: dict[DocKey, list[str]], closeness: dict[str, float], *, question: str
) -> None:
    """Each document's agenda item the question is about, when one is close enough in meaning
    (``KNOWHUB_ASK_AGENDA_MATCH``): "Summarize the discussion on detecting linguistic features"
    names a topic of that meeting, so its turns are quoted even where no single turn says so.

    An item that names much of what the question asks about is its topic however the model scores
    the paraphrase: "the group's decisions on LSD screen, color and materials" is the item
    "Decision making on screen, color, material, button…", near the threshold in meaning."""
    threshold = settings.KNOWHUB_ASK_AGENDA_MATCH
    if not threshold:
        return
    asked = content_terms(question) - KIND_OF_ANSWER_TERMS - DECISION_TERMS  # its subject, not its grammar
    for doc in docs:
        topic = max(topics_of(doc.hits, agenda), key=closeness.__getitem__, default="")
        if topic and (closeness[topic] >= threshold or _names_much_of(topic, asked)):
            doc.agenda = topic


def _names_much_of(topic: str, asked: set[str]) -> bool:
    """The agenda item holds at least three of the question's subject words, and half of them."""
    shared = len(content_terms(topic) & asked)
    return shared >= AGENDA_WORDS and 2 * shared >= len(asked)


def _scored_like(extra: list[Hit], hits: list[Hit]) -> list[Hit]:
    """``extra`` hits given the best score among ``hits`` when they have none of their own."""
    top = max((h.score for h in hits), default=0.0)
    known = {h.chunk_uid: h.score for h in hits}
    return [replace(h, score=known.get(h.chunk_uid, top)) for h in extra]


def _with_mentions(run: AskRun, search, hits: list[Hit], *, applied: SearchFilters, depth: int) -> list[Hit]:
    """A person or entity read from the question narrows to what is filed under them, and
    also keeps what mentions them by name: "what did Leo ask for?" is answered by the meeting
    where Leo asked, though he is not among its listed people."""
    names: list[str] = []
    if applied.people and not run.request.people:
        names += list(applied.people)
    if applied.entity and not run.request.entity:
        names.append(applied.entity)
    if not names:
        return hits
    wider = search(replace(applied, people=list(run.request.people), entity=run.request.entity))
    seen = {h.chunk_uid for h in hits}
    mentions = [h for h in _mentioning(wider, names) if h.chunk_uid not in seen]
    if not mentions:
        return hits
    run.mentions = True
    merged = sorted([*hits, *mentions], key=lambda h: -h.score)[:depth]
    for rank, h in enumerate(merged, start=1):
        h.rank = rank
    return merged


def _mentioning(hits: list[Hit], names: list[str]) -> list[Hit]:
    """The hits whose text names one of ``names`` (the whole name or its first word)."""
    patterns = []
    for name in names:
        words = [re.escape(w) for w in name.split() if len(w) >= 2]
        if words:
            patterns.append(re.compile(rf"\b(?:{re.escape(name)}|{words[0]})\b", re.I))
    return [h for h in hits if any(p.search(h.content or "") for p in patterns)]


def liftable(run: AskRun) -> list[FilterChip]:
    """Filters read from the question that narrowed the search (the form's are the person's own).

    A person is not among them: the search under their name already took in what mentions them,
    so with nothing there that answers, "what did Sam say about X" has no answer — quoting
    someone else on X would put words in Sam's mouth."""
    return [
        c for c in run.chips
        if c.origin == "stated" and c.effect == "filter" and c.field != "people" and c not in run.lifted
    ]  # fmt: skip


def widen(run: AskRun, llm, *, subject: str = "") -> bool:
    """Search again without the filters read from the question, when under them nothing
    answered; the chips say so ("nothing dated 2027 — searched everything", or "nothing dated
    last week on pgvector" when what they held is about something else, the ``subject``). False
    when there was nothing to lift."""
    lift = liftable(run)
    if not lift:
        return False
    run.lifted += lift
    retrieve(run, llm)
    for chip in lift:
        chip.effect, chip.widened, chip.widened_for = "dropped", True, subject
    return True


def _search_with_fallback(run: AskRun, search, applied: SearchFilters, guesses: str) -> tuple[SearchFilters, list[Hit]]:
    """The hits for ``applied``; a name (or tag) read from the question that empties the candidate
    set is dropped, and the model is told the sources come from a broader search."""
    hits = search(applied)
    stated = [c for c in run.chips if c.origin == "stated" or guesses == "filter"]
    for field_name, label in (("people", "names"), ("entity", "entity"), ("tags", "tags")):
        if hits or not getattr(applied, field_name) or getattr(run.request, field_name):
            continue
        applied = replace(applied, **{field_name: [] if field_name != "entity" else None})
        for chip in stated:
            if chip.field == field_name:
                chip.effect = "dropped"
        run.fallback.append(label)
        hits = search(applied)
    return applied, hits


def _apply_guesses(
    run: AskRun,
    search,
    hits: list[Hit],
    *,
    applied: SearchFilters,
    with_guesses: SearchFilters,
    guesses: str,
    depth: int,
) -> list[Hit]:
    """Guessed filters: ``boost`` ranks what carries them higher, ``off`` drops them (chips say which)."""
    if guesses == "boost" and with_guesses != applied and hits:
        for chip in run.chips:
            if chip.origin == "guessed":
                chip.effect = "boost"
        # A guessed name ranks what is filed under the person and, as a stated one does, what
        # mentions them: "what did leo ask for" is answered where Leo's request is reported.
        names = [c.value for c in run.chips if c.origin == "guessed" and c.field in ("people", "entity")]
        boosted = [*search(with_guesses), *_mentioning(hits, names)]
        return _boost(hits, boosted, top_k=depth, bonus=settings.KNOWHUB_ASK_GUESS_BOOST)
    if guesses != "filter":
        for chip in run.chips:
            if chip.origin == "guessed":
                chip.effect = "boost" if guesses == "boost" else "dropped"
    return hits


def _count(run: AskRun, analysis: QueryAnalysis) -> dict | None:
    """A counting question's figure from the metadata (None when it names nothing to count)."""
    target_kind, target = "", ""
    if analysis.people:
        target_kind, target = "person", analysis.people[0]
    elif analysis.tags:
        target_kind, target = "tag", analysis.tags[0]
    elif analysis.entity:
        target_kind, target = "entity", analysis.entity
    if not target:
        return None
    # Before any fallback, without removed chips: count what is tagged.
    count_filters = with_chips(run.request, run.chips)
    count = count_sources(scope=run.scope, filters=count_filters)
    period = period_text(analysis, count_filters)
    run.counted = count.entries
    return {
        "target": target,
        "kind": target_kind,
        "sources": count.sources,
        "first_date": count.first_date.isoformat() if count.first_date else None,
        "last_date": count.last_date.isoformat() if count.last_date else None,
        "date_from": count_filters.date_from.isoformat() if count_filters.date_from else None,
        "date_to": count_filters.date_to.isoformat() if count_filters.date_to else None,
        "statement": _count_statement(target_kind, target, count, period),
    }


def reuse(run: AskRun, conversation: conv.Conversation) -> None:
    """NO_RAG / REUSE: the last exchange's sources, re-read through the ACL."""
    last = conversation.last
    scores = {r["chunk_uid"]: r for r in last.retrieved}
    if run.strategy == conv.NO_RAG and last.cited:
        uids = list(last.cited)
    else:
        uids = [r["chunk_uid"] for r in sorted(last.retrieved, key=lambda r: r.get("rank", 0))]
    hits = chunks_by_uid(scope=run.scope, uids=uids, scores=scores)
    # "tell me more about that": "that" is what the last answer quoted, so the documents it
    # cited are the sources (the others were searched, not used).
    cited_docs = {doc_key(h) for h in hits if h.chunk_uid in set(last.cited)}
    if cited_docs:
        hits = [h for h in hits if doc_key(h) in cited_docs]
    run.hits = hits
    run.docs = group_hits(run.hits)
    run.applied = run.request
    run.topic = last.topic
    # Nothing was searched: the page says the last answer's sources were read again.
    run.searched_query = ""


def reuse_when_held(run: AskRun, conversation: conv.Conversation) -> bool:
    """A question the whole search found no answer to, whose every word the last answer's sources
    hold ("what token do i need" after "how do i connect notion": its Notion page says
    "NOTION_TOKEN"), asks about them: reuse them (``reuse``). False, and nothing changed, for a
    question of its own ("what is the capital of France" holds words they do not)."""
    last = conversation.last
    terms = content_terms(run.query) - GENERIC_TERMS
    if last is None or not last.cited or not terms:
        return False
    cited = chunks_by_uid(scope=run.scope, uids=list(last.cited), scores={})
    held = content_terms(" ".join(f"{h.title} {h.content}" for h in cited))
    if not terms <= held:
        return False
    reuse(run, conversation)
    return bool(run.docs)
