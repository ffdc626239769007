"""``ask``: the answering pipeline, as a generator of events every surface consumes.

The JSON endpoint collects the events, the SSE endpoint streams them, ``manage.py ask`` prints
them. Order: ``status`` (searching) → ``sources`` → ``status`` (generating) → ``delta``… →
``citations`` → ``done``; ``error`` replaces the deltas' happy ending when generation fails.
Closing the generator (a client that went away, a Stop button) closes the model's stream, so
generation stops, and the interaction is still logged, marked ``stopped``.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.utils import timezone

from knowhub.sse import Event
from rag.acl import Scope
from rag.answering import conversations as conv
from rag.answering import followups, history
from rag.answering.analysis import CHIP_FIELDS, FilterChip, QueryAnalysis, analyse_query, form_chips, with_chips
from rag.answering.citations import CitationFilter
from rag.answering.prompts import COUNT_NOTE, FALLBACK_NOTE, system_prompt
from rag.answering.selectors import SourceCount, chunks_by_uid, count_sources, document_topics, facet_values
from rag.answering.sources import (
    DocKey,
    DocumentEvidence,
    SourceDoc,
    apply_numbers,
    doc_key,
    group_hits,
    renumber,
    select_hits,
    topics_of,
)
from rag.embeddings import get_embedder
from rag.interactions import interaction_record
from rag.llm import Completion, LLMError, ModelInfo, UnknownModel, get_llm, model_info
from rag.llm.context import STATED_COUNT, STATED_MORE_ABOUT, format_user_prompt
from rag.llm.extractive import query_vector as cached_query_vector
from rag.llm.extractive import sentence_vectors
from rag.rerank import reranked_search
from rag.search import (
    MAX_QUERY_CHARS,
    Hit,
    SearchFilters,
    SearchRequestError,
    chunk_search,
    validate_query,
)
from rag.selectors import check_query_model

logger = logging.getLogger(__name__)

MAX_IGNORED_FILTERS = 20
GENERATION_FAILED = "GENERATION_FAILED"
# Not quoting the question back: a plain statement, the same for every question.
NOTHING_VISIBLE = "Nothing in the sources visible to you answers this question."


# A request the pipeline refuses before doing anything: the one error of search requests, with
# the ask-only codes (unknown_model, invalid_conversation_id, invalid_ignore_filters) besides.
AskError = SearchRequestError


# The pipeline's events (type: status | sources | delta | citations | done | error) are the
# stream events of every streaming endpoint.
AskEvent = Event


@dataclass
class _Run:
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
    docs: list[SourceDoc] = field(default_factory=list)
    analysis: QueryAnalysis | None = None
    applied: SearchFilters | None = None
    fallback: list[str] = field(default_factory=list)
    count: dict | None = None
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


def ask(
    *,
    user,
    query: str,
    filters: SearchFilters | None = None,
    model: str | None = None,
    conversation_id: str | None = None,
    top_k: int | None = None,
    mode: str = "hybrid",
    today: dt.date | None = None,
    scope: Scope | None = None,
    embedder=None,
    log: bool = True,
    ignore_filters: list[dict] | None = None,
) -> Iterator[AskEvent]:
    """Answer ``query`` for ``user`` with cited sources, as a stream of events.

    Bad input raises ``AskError`` (``rag.search.SearchRequestError``) here, before anything runs; everything after that
    (including generation failures) is reported as events.

    The contract of the analysis chips (JSON response, and the ``sources`` and ``done`` events):

    - ``analysis_filters``: every filter the query analysis read from the question, in the order
      date, collections, people, entity, tags, domain. Each is
      ``{"field": "date"|"collections"|"people"|"entity"|"tags"|"domain", "value": str,
      "origin": "stated"|"guessed", "phrase": str, "effect": "filter"|"boost"|"dropped",
      "label": str}``. ``value`` is the filter value (a date range is ``"YYYY-MM-DD/YYYY-MM-DD"``,
      either end may be empty); ``phrase`` the words of the question it came from; ``label`` a
      sentence for the chip, e.g. ``"tag: search (from the word 'search')"``. ``stated``
      filters narrow retrieval (``filter``; ``dropped`` when they left nothing and were lifted);
      ``guessed`` ones only rank what carries them higher (``boost``), never hide the rest.
    - ``ignore_filters`` (request): ``[{"field": <one of the fields above>, "value": str}]`` —
      chips the person removed; the answer is computed as if the analysis had not proposed
      them (for ``date`` the value may be omitted). Echoed back as ``ignored_filters``.
    - ``searched_query``: the question actually searched (a follow-up carries the previous
      question's subject, "tell me more about X" searches X).
    """
    query = validate_query(query)
    scope = scope or Scope.for_user(user)
    filters = filters or SearchFilters()
    filters.validate(scope=scope)
    try:
        info = model_info(model)
    except UnknownModel as exc:
        raise AskError("unknown_model", str(exc)) from exc
    if conversation_id is not None and not conv.CONVERSATION_ID_RE.match(conversation_id):
        raise AskError("invalid_conversation_id", "conversation_id must be 1-64 letters, digits, '-' or '_'.")
    ignored = validate_ignore_filters(ignore_filters)
    conversation_id, continued = history.conversation_id_for_ask(user=user, conversation_id=conversation_id)
    run = _Run(
        user=user,
        query=query,
        scope=scope,
        request=filters,
        info=info,
        conversation_id=conversation_id,
        conversation_given=continued,
        top_k=max(1, min(int(top_k or settings.KNOWHUB_ASK_TOP_K), 50)),
        mode=mode,
        today=today or timezone.localdate(),
        embedder=embedder,
        log=log,
        ignored=ignored,
        searched_query=query,
    )
    return _pipeline(run)


def validate_ignore_filters(value) -> list[dict]:
    """``ignore_filters`` as ``[{"field", "value"}]``; ``AskError`` naming what is wrong."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_IGNORED_FILTERS:
        raise AskError(
            "invalid_ignore_filters", f"ignore_filters must be a list of at most {MAX_IGNORED_FILTERS} objects."
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) - {"field", "value"}:
            raise AskError(
                "invalid_ignore_filters", f"ignore_filters[{i}] must be an object with 'field' and 'value' only."
            )
        field_name, filter_value = item.get("field"), item.get("value", "")
        if field_name not in CHIP_FIELDS:
            raise AskError(
                "invalid_ignore_filters", f"ignore_filters[{i}].field must be one of {', '.join(CHIP_FIELDS)}."
            )
        if filter_value is None:
            filter_value = ""
        if (
            not isinstance(filter_value, str)
            or len(filter_value) > 200
            or (not filter_value.strip() and field_name != "date")
        ):
            raise AskError(
                "invalid_ignore_filters",
                f"ignore_filters[{i}].value must be a non-empty string (at most 200 characters).",
            )
        out.append({"field": field_name, "value": filter_value.strip()})
    return out


def ask_collect(**kwargs) -> dict:
    """``ask`` run to the end, as one JSON-able dict (the JSON endpoint and ``ask --json``)."""
    return collect(ask(**kwargs))


def collect(events: Iterator[AskEvent]) -> dict:
    """The events of one ask folded into the JSON response shape."""
    out: dict = {"answer": None, "error": None, "sources": [], "citations": []}
    text: list[str] = []
    for event in events:
        if event.type == "sources":
            out.update({k: v for k, v in event.data.items()})
        elif event.type == "delta":
            text.append(event.data["text"])
        elif event.type == "citations":
            out["citations"] = event.data["citations"]
            if "sources" in event.data:  # final numbering (by first citation)
                out["sources"] = event.data["sources"]
        elif event.type == "error":
            out["error"] = event.data["error"]
            out["detail"] = event.data.get("detail", "")
        elif event.type == "done":
            out.update(event.data)
    out["answer"] = None if out.get("error") else "".join(text)
    return out


# -- the pipeline ------------------------------------------------------------------------------


def _period_text(analysis: QueryAnalysis | None, filters: SearchFilters) -> str:
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


def _retrieve(run: _Run, llm) -> None:
    """NEW_QUERY: analyse, search (stated filters narrow, guessed ones boost), count."""
    embedder = run.embedder or get_embedder()
    if run.analysis is None:
        facets = facet_values(scope=run.scope, collections=run.request.collections)
        run.analysis = analyse_query(
            # "and in july?" is the earlier question for another period: its filters are those.
            run.searched_query if run.rewrite == "period" else run.query,
            today=run.today,
            facets=facets,
            llm=llm if llm.generative else None,
            timeout=min(settings.KNOWHUB_LLM_TIMEOUT, 20.0),
        )
    analysis = run.analysis
    run.chips = analysis.active_chips(run.ignored)
    lifted = [{"field": c.field, "value": c.value} for c in run.lifted]
    applied, with_guesses = analysis.split(run.request, run.ignored + lifted)
    guesses = settings.KNOWHUB_ASK_GUESSED_FILTERS
    if guesses == "filter":
        applied = with_guesses
    check_query_model(embedder.name)  # chunk_search skips it when handed a vector
    query_vector = cached_query_vector(embedder, run.searched_query[:MAX_QUERY_CHARS])

    # Deeper than the chunks answered from, so that several documents can be among the sources.
    depth = run.top_k * max(1, settings.KNOWHUB_ASK_SEARCH_DEPTH)

    def search(filters: SearchFilters) -> list[Hit]:
        result, rerank = reranked_search(
            search=chunk_search, query=run.searched_query, scope=run.scope, filters=filters, top_k=depth, mode=run.mode,
            embedder=embedder, query_vector=query_vector,
        )  # fmt: skip
        run.rerank = rerank.as_dict()
        return result.hits

    applied, hits = _search_with_fallback(run, search, applied, guesses)
    hits = _with_mentions(run, search, hits, applied=applied, depth=depth)
    hits = _apply_guesses(run, search, hits, applied=applied, with_guesses=with_guesses, guesses=guesses, depth=depth)
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
    for rank, h in enumerate(hits, start=1):
        h.rank = rank
    run.hits = hits
    run.docs = group_hits(hits)
    _mark_agenda(run.docs, agenda, closeness)
    run.topic = run.searched_query
    if analysis.counting:
        run.count = _count(run, analysis)


def _mark_agenda(
    docs: list[SourceDoc], agenda: dict[DocKey, list[str]], closeness: dict[str, float]
) -> None:
    """Each document's agenda item the question is about, when one is close enough in meaning
    (``KNOWHUB_ASK_AGENDA_MATCH``): "Summarize the discussion on detecting linguistic features"
    names a topic of that meeting, so its turns are quoted even where no single turn says so."""
    threshold = settings.KNOWHUB_ASK_AGENDA_MATCH
    if not threshold:
        return
    for doc in docs:
        topic = max(topics_of(doc.hits, agenda), key=closeness.__getitem__, default="")
        if topic and closeness[topic] >= threshold:
            doc.agenda = topic


def _scored_like(extra: list[Hit], hits: list[Hit]) -> list[Hit]:
    """``extra`` hits given the best score among ``hits`` when they have none of their own."""
    top = max((h.score for h in hits), default=0.0)
    known = {h.chunk_uid: h.score for h in hits}
    return [replace(h, score=known.get(h.chunk_uid, top)) for h in extra]


def _with_mentions(run: _Run, search, hits: list[Hit], *, applied: SearchFilters, depth: int) -> list[Hit]:
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
    patterns = []
    for name in names:
        words = [re.escape(w) for w in name.split() if len(w) >= 2]
        if words:
            patterns.append(re.compile(rf"\b(?:{re.escape(name)}|{words[0]})\b", re.I))
    seen = {h.chunk_uid for h in hits}
    mentions = [h for h in wider if h.chunk_uid not in seen and any(p.search(h.content or "") for p in patterns)]
    if not mentions:
        return hits
    run.mentions = True
    merged = sorted([*hits, *mentions], key=lambda h: -h.score)[:depth]
    for rank, h in enumerate(merged, start=1):
        h.rank = rank
    return merged


def _liftable(run: _Run) -> list[FilterChip]:
    """Filters read from the question that narrowed the search (the form's are the person's own)."""
    return [c for c in run.chips if c.origin == "stated" and c.effect == "filter" and c not in run.lifted]


def _widen(run: _Run, llm) -> bool:
    """Search again without the filters read from the question, when under them nothing
    answered; the chips say so ("nothing dated 2027 — searched everything"). False when there
    was nothing to lift."""
    lift = _liftable(run)
    if not lift:
        return False
    run.lifted += lift
    _retrieve(run, llm)
    for chip in lift:
        chip.effect, chip.widened = "dropped", True
    return True


def _search_with_fallback(run: _Run, search, applied: SearchFilters, guesses: str) -> tuple[SearchFilters, list[Hit]]:
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
    run: _Run, search, hits: list[Hit], *, applied: SearchFilters, with_guesses: SearchFilters, guesses: str, depth: int
) -> list[Hit]:
    """Guessed filters: ``boost`` ranks what carries them higher, ``off`` drops them (chips say which)."""
    if guesses == "boost" and with_guesses != applied and hits:
        for chip in run.chips:
            if chip.origin == "guessed":
                chip.effect = "boost"
        return _boost(hits, search(with_guesses), top_k=depth, bonus=settings.KNOWHUB_ASK_GUESS_BOOST)
    if guesses != "filter":
        for chip in run.chips:
            if chip.origin == "guessed":
                chip.effect = "boost" if guesses == "boost" else "dropped"
    return hits


def _count(run: _Run, analysis: QueryAnalysis) -> dict | None:
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
    period = _period_text(analysis, count_filters)
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


def _reuse(run: _Run, conversation: conv.Conversation) -> None:
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


def _messages(run: _Run, llm, conversation: conv.Conversation) -> list[dict]:
    notes: list[str] = []
    if "names" in run.fallback and run.analysis:
        period = _period_text(run.analysis, run.applied)
        notes.append(FALLBACK_NOTE.format(names=", ".join(run.analysis.people), period=period))
    if "tags" in run.fallback and run.analysis:
        notes.append(FALLBACK_NOTE.format(names=", ".join(run.analysis.tags), period=""))
    if run.count:
        notes.append(COUNT_NOTE.format(statement=run.count["statement"]))
    messages = [{"role": "system", "content": system_prompt(today=run.today, notes=notes)}]
    # The extractive answerer reads earlier answers as "already said": only "tell me more" wants that.
    if llm.generative or run.strategy == conv.REUSE:
        for ex in conversation.exchanges[-settings.KNOWHUB_ASK_HISTORY :]:
            messages.append({"role": "user", "content": ex.query})
            messages.append({"role": "assistant", "content": ex.answer or "(no answer)"})
    sources = [doc.context() for doc in run.docs]
    # Phrases that were applied as filters are not what the question is about: "what did we
    # decide last month?" asks what was decided, among the sources of last month.
    # A filter lifted because nothing under it answered ("nothing dated 2025") is not what the
    # question is about either; a name whose mentions were searched too stays in the question,
    # where it finds the sentence that names the person.
    stated = [
        c.phrase for c in run.chips
        if (c.effect == "filter" or c.widened) and not (run.mentions and c.field in ("people", "entity"))
    ]  # fmt: skip
    # Filters the person set on the page narrow the sources just as much.
    stated += [f"{key}: {value}" for key, value in run.request.as_dict().items()]
    question = run.searched_query if run.rewrite == "period" else run.query
    if run.count:
        # A counting question's sources are the counted entries: quote them as exemplars.
        stated.append(f"{STATED_COUNT}{run.count['target']}")
    if run.rewrite == "carried":
        # "who raised them?": the subject comes from the conversation, so the sources were
        # chosen for it; the follow-up's own few words only say which part is wanted.
        stated.append(f"conversation: {run.searched_query}")
    elif run.rewrite == "new_subject":
        # "tell me more about Northwind": the sources were found for the subject, and the person
        # wants what they say about it, not only the one sentence that names it.
        stated.append(f"{STATED_MORE_ABOUT}{run.subject}")
    messages.append(
        {
            "role": "user",
            "content": format_user_prompt(question=question, sources=sources, focus=run.topic, stated=stated),
        }
    )
    return messages


def _delta(run: _Run, text: str) -> AskEvent:
    if run.first_delta_ms is None:
        run.first_delta_ms = run.elapsed_ms()
    run.answer.append(text)
    return AskEvent("delta", {"text": text})


def _pipeline(run: _Run) -> Iterator[AskEvent]:
    try:
        conversation = (
            conv.conversation_load(
                conversation_id=run.conversation_id, user=run.user, limit=settings.KNOWHUB_ASK_HISTORY
            )
            if run.conversation_given
            else conv.Conversation(id=run.conversation_id)
        )
        run.strategy = conv.choose_strategy(
            question=run.query, conversation=conversation, request_filters=run.request.as_dict()
        )
        yield AskEvent(
            "status",
            {"stage": "searching" if run.strategy == conv.NEW_QUERY else "reusing", "strategy": run.strategy,
             "strategy_label": conv.STRATEGY_LABELS[run.strategy]},
        )  # fmt: skip
        llm = get_llm(run.info.id)
        if run.strategy == conv.NEW_QUERY:
            _rewrite(run, llm, conversation)
            _retrieve(run, llm)
        else:
            _reuse(run, conversation)
            if not run.hits:  # the earlier sources are gone (deleted, ACL changed): search again
                run.strategy = conv.NEW_QUERY
                _rewrite(run, llm, conversation)
                _retrieve(run, llm)
        if run.strategy == conv.NEW_QUERY and not run.docs:
            _widen(run, llm)  # a filter read from the question left nothing: search everything

        if llm.generative:
            yield AskEvent("sources", _sources_payload(run))
            if run.count:
                yield _delta(run, run.count["statement"] + "\n\n")
            if not run.docs:
                yield _delta(run, NOTHING_VISIBLE.format(query=run.query))
            else:
                yield AskEvent("status", {"stage": "generating", "model": run.info.id})
                yield from _generate(run, llm, conversation)
        else:
            # The offline answerer decides what is relevant before anything is shown, so the
            # sources listed are never contradicted by "nothing relevant", and they are numbered
            # in the order the answer cites them.
            parts = _answer_offline(run, llm, conversation) if run.docs else []
            if not parts and run.strategy == conv.NEW_QUERY and _widen(run, llm):
                # Nothing under a filter read from the question answers: answer from everything.
                parts = _answer_offline(run, llm, conversation) if run.docs else []
            yield AskEvent("sources", _sources_payload(run))
            if run.count:
                yield _delta(run, run.count["statement"] + "\n\n")
            if not parts and not run.count:
                parts = [NOTHING_VISIBLE.format(query=run.query)]
            if parts:
                yield AskEvent("status", {"stage": "generating", "model": run.info.id})
            for part in parts:  # one sentence a delta: the page shows them as they come
                yield _delta(run, part)

        yield AskEvent("citations", {"citations": _citations(run), "sources": [d.as_dict() for d in run.docs]})
        _record(run)
        yield AskEvent("done", _done_payload(run))
    except GeneratorExit:
        run.stopped = True
        logger.info("ask stopped by the client after %.0f ms", run.elapsed_ms())
        if run.interaction_id is None:
            _record(run)
        raise


def _rewrite(run: _Run, llm, conversation: conv.Conversation) -> None:
    """The question to search: a follow-up made standalone (``searched_query``)."""
    if not conversation.exchanges:
        return
    if llm.generative:
        pairs = [(ex.query, ex.answer) for ex in conversation.exchanges]
        rewrite = followups.llm_rewrite(
            question=run.query, exchanges=pairs, llm=llm, timeout=min(settings.KNOWHUB_LLM_TIMEOUT, 20.0),
            today=run.today,
        )  # fmt: skip
    else:
        rewrite = followups.offline_rewrite(
            question=run.query, previous=[ex.topic or ex.query for ex in conversation.exchanges], today=run.today
        )
    run.searched_query = rewrite.searched_query[:MAX_QUERY_CHARS]
    run.rewrite = rewrite.kind
    run.subject = rewrite.subject
    if rewrite.kind in ("carried", "llm"):
        run.previous_cited = list(conversation.last.cited)


def _answer_offline(run: _Run, llm, conversation: conv.Conversation) -> list[str]:
    """The extractive answer's deltas, renumbered by first citation; [] when nothing is relevant."""
    messages = _messages(run, llm, conversation)
    parts: list[str] = []
    for part in llm.stream(
        messages=messages, max_tokens=settings.KNOWHUB_LLM_MAX_TOKENS, timeout=settings.KNOWHUB_LLM_TIMEOUT
    ):
        if isinstance(part, Completion):
            run.completion = part
        else:
            parts.append(part)
    parts = _with_who_statement(run, conversation, parts)
    cf = CitationFilter(valid={d.n for d in run.docs})
    cf.feed("".join(parts))
    cf.flush()
    if not cf.used:
        if run.strategy != conv.NEW_QUERY and run.docs:
            # "These sources hold nothing more…": they are the sources of the thread's answer, so
            # they stay listed (uncited) for the person to open rather than vanish.
            renumber(run.docs, [])
            return [p for p in parts if p.strip()]
        # Nothing relevant: the sources it was given are not shown as if they answered.
        run.docs = []
        return []
    mapping = renumber(run.docs, cf.used)
    run.cited = [mapping[n] for n in cf.used]
    return [apply_numbers(p, mapping) for p in parts]


def _with_who_statement(run: _Run, conversation: conv.Conversation, parts: list[str]) -> list[str]:
    """"Who was it with?" after a question about a meeting: its people, from the metadata, first.

    The quotes follow only when they cite something ("nothing more than what I already quoted"
    is not worth saying after the names)."""
    if not conversation.exchanges or not run.docs or not followups.asks_who_was_there(run.query):
        return parts
    first_cited = set(conversation.last.cited[:1])
    doc = next((d for d in run.docs if first_cited & {h.chunk_uid for h in d.hits}), run.docs[0])
    statement = followups.who_statement(doc)
    if not statement:
        return parts
    quotes = CitationFilter(valid={d.n for d in run.docs})
    quotes.feed("".join(parts))
    quotes.flush()
    return [statement, *(["\n\n", *parts] if quotes.used else [])]


def _generate(run: _Run, llm, conversation: conv.Conversation) -> Iterator[AskEvent]:
    messages = _messages(run, llm, conversation)
    cf = CitationFilter(valid={d.n for d in run.docs}, renumber=True)
    try:
        with closing(
            llm.stream(
                messages=messages, max_tokens=settings.KNOWHUB_LLM_MAX_TOKENS, timeout=settings.KNOWHUB_LLM_TIMEOUT
            )
        ) as parts:
            for part in parts:
                if isinstance(part, Completion):
                    run.completion = part
                    continue
                text = cf.feed(part)
                if text:
                    yield _delta(run, text)
        tail = cf.flush()
        if tail:
            yield _delta(run, tail)
    except (LLMError, OSError, TimeoutError) as exc:
        run.error, run.error_detail = GENERATION_FAILED, str(exc)[:500]
    except Exception as exc:  # a provider bug must not lose the retrieved chunks
        logger.exception("generation failed unexpectedly")
        run.error, run.error_detail = GENERATION_FAILED, f"{type(exc).__name__}: {exc}"[:500]
    # The text already shows the sources renumbered by first citation; the final source list
    # (in the ``citations`` event) follows the same numbers.
    mapping = renumber(run.docs, cf.used)
    run.cited = [mapping[n] for n in cf.used]
    if run.error:
        logger.warning("generation with %s failed: %s", run.info.id, run.error_detail)
        yield AskEvent("error", {"error": run.error, "detail": run.error_detail})


def _chips_payload(run: _Run) -> list[dict]:
    """The filters of this answer: those set in the form first, then those read from the question."""
    return [c.as_dict() for c in [*form_chips(run.request), *run.chips]]


def _sources_payload(run: _Run) -> dict:
    return {
        "strategy": run.strategy,
        "strategy_label": conv.STRATEGY_LABELS[run.strategy],
        "conversation_id": run.conversation_id,
        "query": run.query,
        "searched_query": run.searched_query,
        "filters": (run.applied or run.request).as_dict(),
        "analysis": run.analysis.as_dict() if run.analysis else None,
        "analysis_filters": _chips_payload(run),
        "ignored_filters": run.ignored,
        "fallback": run.fallback[0] if run.fallback else None,
        "count": run.count,
        "sources": [d.as_dict() for d in run.docs],
    }


def _cited_docs(run: _Run) -> list[SourceDoc]:
    by_n = {d.n: d for d in run.docs}
    return [by_n[n] for n in run.cited if n in by_n]


def _citations(run: _Run) -> list[dict]:
    if run.error:
        return []
    out = []
    for doc in _cited_docs(run):
        hit = doc.best
        out.append(
            {"n": doc.n, "chunk_uid": hit.chunk_uid, "chunk_uids": [h.chunk_uid for h in doc.chunks_in_order],
             "title": doc.as_dict()["title"], "url": hit.url, "date": hit.date.isoformat() if hit.date else None}
        )  # fmt: skip
    return out


def _tokens(run: _Run) -> tuple[int, int, float]:
    prompt = completion = 0
    cost = 0.0
    if run.analysis:
        prompt += run.analysis.prompt_tokens
        completion += run.analysis.completion_tokens
        cost += run.analysis.cost_usd
    if run.completion:
        prompt += run.completion.prompt_tokens
        completion += run.completion.completion_tokens
        cost += run.completion.cost_usd
    return prompt, completion, round(cost, 8)


def _record(run: _Run) -> None:
    if not run.log:
        return
    prompt, completion, cost = _tokens(run)
    applied = run.applied or run.request
    filters = {
        **applied.as_dict(),
        "conversation_id": run.conversation_id,
        "topic": run.topic or run.query,
        "searched_query": run.searched_query,
        "request": run.request.as_dict(),
    }
    if run.chips:
        filters["analysis_filters"] = _chips_payload(run)
    if run.ignored:
        filters["ignored_filters"] = run.ignored
    if run.analysis:
        filters["analysis"] = run.analysis.as_dict()
    if run.fallback:
        filters["fallback"] = run.fallback
    if run.rerank:
        filters["rerank"] = run.rerank  # which order the sources were served in
    if run.count:
        filters["count"] = run.count
    if run.error:
        filters["error"] = run.error
    if run.stopped:
        filters["stopped"] = True
    filters["turn"] = _turn_record(run)
    try:
        interaction = interaction_record(
            user=run.user,
            kind="ask",
            query=run.query,
            filters=filters,
            hits=run.hits,
            answer="" if run.error else "".join(run.answer),
            strategy=run.strategy,
            model=run.info.id,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=cost,
            latency_ms=run.elapsed_ms(),
            selected=[h.chunk_uid for doc in _cited_docs(run) for h in doc.chunks_in_order],
        )
        run.interaction_id = interaction.pk
        history.conversation_touch(user=run.user, conversation_id=run.conversation_id, question=run.query)
    except Exception:  # the answer matters more than its log line
        logger.exception("could not record the interaction")


def _turn_record(run: _Run) -> dict:
    """What the page needs to show this turn again: the numbers the answer used for each chunk,
    and what the analysis made of the question (keys absent when the pipeline has none)."""
    payload = {**_sources_payload(run), **_done_payload(run)}
    turn = {
        # Each row is one document: its best chunk plus every chunk grouped under it, so a reload
        # shows the same document rows (and their links) as the live answer.
        "sources": [
            {
                "n": s["n"], "chunk_uid": s["chunk_uid"], "chunk_uids": s.get("chunk_uids") or [s["chunk_uid"]],
                **({"agenda": s["agenda"]} if s.get("agenda") else {}),
            }  # fmt: skip
            for s in payload.get("sources") or []
        ],
        "citations": [{"n": c["n"], "chunk_uid": c["chunk_uid"]} for c in _citations(run)],
    }
    for key in ("searched_query", "analysis_filters"):
        if payload.get(key) is not None:
            turn[key] = payload[key]
    return turn


def _done_payload(run: _Run) -> dict:
    prompt, completion, cost = _tokens(run)
    return {
        "interaction_id": run.interaction_id,
        "conversation_id": run.conversation_id,
        "strategy": run.strategy,
        "strategy_label": conv.STRATEGY_LABELS[run.strategy],
        "searched_query": run.searched_query,
        "analysis_filters": _chips_payload(run),
        "model": run.info.id,
        "provider": run.info.provider,
        "extractive": run.info.provider == "extractive",
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens": prompt + completion,
        "cost_usd": cost,
        # "$0.00000" reads as a bug: a run with no paid tokens says so in words.
        "cost_label": "free (local)" if not cost else f"${cost:.4f}" if cost >= 0.0001 else "< $0.0001",
        "latency_ms": round(run.elapsed_ms(), 1),
        "first_delta_ms": round(run.first_delta_ms, 1) if run.first_delta_ms is not None else None,
        "error": run.error or None,
    }

