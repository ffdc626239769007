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
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.utils import timezone

from feedback.services import interaction_record
from rag.acl import Scope
from rag.answering import conversations as conv
from rag.answering.analysis import QueryAnalysis, analyse_query
from rag.answering.citations import CitationFilter
from rag.answering.prompts import COUNT_NOTE, FALLBACK_NOTE, system_prompt
from rag.answering.selectors import SourceCount, chunks_by_uid, count_sources, facet_values
from rag.embeddings import get_embedder
from rag.llm import Completion, LLMError, ModelInfo, UnknownModel, get_llm, model_info
from rag.llm.context import ContextSource, format_user_prompt
from rag.llm.extractive import query_vector as cached_query_vector
from rag.search import Hit, SearchFilters, chunk_search, known_collections
from rag.selectors import check_query_model

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
MAX_QUERY_WORDS = 300
GENERATION_FAILED = "GENERATION_FAILED"


class AskError(ValueError):
    """A request the pipeline refuses before doing anything (a 400 for the APIs)."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass
class AskEvent:
    type: str  # status | sources | delta | citations | done | error
    data: dict


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
) -> Iterator[AskEvent]:
    """Answer ``query`` for ``user`` with cited sources, as a stream of events.

    Bad input raises ``AskError`` here, before anything runs; everything after that (including
    generation failures) is reported as events.
    """
    query = (query or "").strip()
    if not query:
        raise AskError("empty_query", "The question is empty.")
    if len(query) > MAX_QUERY_CHARS or len(query.split()) > MAX_QUERY_WORDS:
        raise AskError("query_too_long", f"The question is longer than {MAX_QUERY_CHARS} characters or {MAX_QUERY_WORDS} words.")
    try:
        info = model_info(model)
    except UnknownModel as exc:
        raise AskError("unknown_model", str(exc)) from exc
    scope = scope or Scope.for_user(user)
    filters = filters or SearchFilters()
    if filters.date_from and filters.date_to and filters.date_from > filters.date_to:
        raise AskError("invalid_dates", "date_from is after date_to.")
    if filters.collections:
        unknown = sorted(set(filters.collections) - set(known_collections(scope)))
        if unknown:
            raise AskError("unknown_collection", f"Unknown collection(s): {', '.join(unknown)}.")
    if conversation_id is not None and not conv.CONVERSATION_ID_RE.match(conversation_id):
        raise AskError("invalid_conversation_id", "conversation_id must be 1-64 letters, digits, '-' or '_'.")
    run = _Run(
        user=user,
        query=query,
        scope=scope,
        request=filters,
        info=info,
        conversation_id=conversation_id or conv.new_conversation_id(),
        conversation_given=conversation_id is not None,
        top_k=max(1, min(int(top_k or settings.KNOWHUB_ASK_TOP_K), 50)),
        mode=mode,
        today=today or timezone.localdate(),
        embedder=embedder,
        log=log,
    )
    return _pipeline(run)


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
        elif event.type == "error":
            out["error"] = event.data["error"]
            out["detail"] = event.data.get("detail", "")
        elif event.type == "done":
            out.update(event.data)
    out["answer"] = None if out.get("error") else "".join(text)
    return out


# -- the pipeline ------------------------------------------------------------------------------


def _source_dict(n: int, hit: Hit) -> dict:
    return {
        "n": n,
        "chunk_uid": hit.chunk_uid,
        "title": hit.title,
        "url": hit.url,
        "date": hit.date.isoformat() if hit.date else None,
        "collection": hit.collection,
        "source_type": hit.source_type,
        "source_id": hit.source_id,
        "breadcrumb": hit.breadcrumb,
        "score": hit.score,
        "vec_score": hit.vec_score,
        "txt_score": hit.txt_score,
        "content": hit.content,
    }


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


def _retrieve(run: _Run, llm) -> None:
    """NEW_QUERY: analyse, search (with the name/tag fallback), count."""
    embedder = run.embedder or get_embedder()
    facets = facet_values(scope=run.scope, collections=run.request.collections)
    analysis = analyse_query(
        run.query,
        today=run.today,
        facets=facets,
        llm=llm if llm.generative else None,
        timeout=min(settings.KNOWHUB_LLM_TIMEOUT, 20.0),
    )
    run.analysis = analysis
    applied = analysis.apply(run.request)
    check_query_model(embedder.name)  # chunk_search skips it when handed a vector
    query_vector = cached_query_vector(embedder, run.query[:MAX_QUERY_CHARS])

    def search(filters: SearchFilters) -> list[Hit]:
        return chunk_search(
            query=run.query, scope=run.scope, filters=filters, top_k=run.top_k, mode=run.mode,
            embedder=embedder, query_vector=query_vector,
        ).hits  # fmt: skip

    hits = search(applied)
    # Seed 000's fallback: a name (or tag) read from the question that empties the candidate set
    # is dropped, and the model is told the sources come from a broader search.
    if not hits and applied.people and not run.request.people:
        applied = replace(applied, people=[])
        run.fallback.append("names")
        hits = search(applied)
    if not hits and applied.tags and not run.request.tags:
        applied = replace(applied, tags=[])
        run.fallback.append("tags")
        hits = search(applied)
    run.applied = applied
    run.hits = hits
    run.topic = run.query

    if analysis.counting:
        target_kind, target = "", ""
        if analysis.people:
            target_kind, target = "person", analysis.people[0]
        elif analysis.tags:
            target_kind, target = "tag", analysis.tags[0]
        elif analysis.entity:
            target_kind, target = "entity", analysis.entity
        if target:
            count_filters = analysis.apply(run.request)  # before any fallback: count what is tagged
            count = count_sources(scope=run.scope, filters=count_filters)
            period = _period_text(analysis, count_filters)
            run.count = {
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
    run.hits = chunks_by_uid(scope=run.scope, uids=uids, scores=scores)
    run.applied = run.request
    run.topic = last.topic


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
    sources = [
        ContextSource(
            n=i,
            title=hit.title,
            text=hit.content,
            date=hit.date.isoformat() if hit.date else "",
            breadcrumb=hit.breadcrumb,
        )
        for i, hit in enumerate(run.hits, start=1)
    ]
    messages.append({"role": "user", "content": format_user_prompt(question=run.query, sources=sources, focus=run.topic)})
    return messages


def _delta(run: _Run, text: str) -> AskEvent:
    if run.first_delta_ms is None:
        run.first_delta_ms = run.elapsed_ms()
    run.answer.append(text)
    return AskEvent("delta", {"text": text})


def _pipeline(run: _Run) -> Iterator[AskEvent]:
    try:
        conversation = (
            conv.conversation_load(conversation_id=run.conversation_id, user=run.user, limit=settings.KNOWHUB_ASK_HISTORY)
            if run.conversation_given
            else conv.Conversation(id=run.conversation_id)
        )
        run.strategy = conv.choose_strategy(
            question=run.query, conversation=conversation, request_filters=run.request.as_dict()
        )
        yield AskEvent("status", {"stage": "searching" if run.strategy == conv.NEW_QUERY else "reusing", "strategy": run.strategy})
        llm = get_llm(run.info.id)
        if run.strategy == conv.NEW_QUERY:
            _retrieve(run, llm)
        else:
            _reuse(run, conversation)
            if not run.hits:  # the earlier sources are gone (deleted, ACL changed): search again
                run.strategy = conv.NEW_QUERY
                _retrieve(run, llm)
        yield AskEvent("sources", _sources_payload(run))

        if run.count:
            yield _delta(run, run.count["statement"] + "\n\n")
        if not run.hits:
            yield _delta(run, f"I found nothing relevant to “{run.query}” in the sources you can see.")
        else:
            yield AskEvent("status", {"stage": "generating", "model": run.info.id})
            yield from _generate(run, llm, conversation)

        yield AskEvent("citations", {"citations": _citations(run)})
        _record(run)
        yield AskEvent("done", _done_payload(run))
    except GeneratorExit:
        run.stopped = True
        logger.info("ask stopped by the client after %.0f ms", run.elapsed_ms())
        if run.interaction_id is None:
            _record(run)
        raise


def _generate(run: _Run, llm, conversation: conv.Conversation) -> Iterator[AskEvent]:
    messages = _messages(run, llm, conversation)
    cf = CitationFilter(valid=set(range(1, len(run.hits) + 1)))
    try:
        with closing(
            llm.stream(messages=messages, max_tokens=settings.KNOWHUB_LLM_MAX_TOKENS, timeout=settings.KNOWHUB_LLM_TIMEOUT)
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
    run.cited = cf.used
    if run.error:
        logger.warning("generation with %s failed: %s", run.info.id, run.error_detail)
        yield AskEvent("error", {"error": run.error, "detail": run.error_detail})


def _sources_payload(run: _Run) -> dict:
    return {
        "strategy": run.strategy,
        "conversation_id": run.conversation_id,
        "filters": (run.applied or run.request).as_dict(),
        "analysis": run.analysis.as_dict() if run.analysis else None,
        "fallback": run.fallback[0] if run.fallback else None,
        "count": run.count,
        "sources": [_source_dict(i, hit) for i, hit in enumerate(run.hits, start=1)],
    }


def _citations(run: _Run) -> list[dict]:
    if run.error:
        return []
    out = []
    for n in run.cited:
        hit = run.hits[n - 1]
        out.append(
            {"n": n, "chunk_uid": hit.chunk_uid, "title": hit.title, "url": hit.url, "date": hit.date.isoformat() if hit.date else None}
        )
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
        "request": run.request.as_dict(),
    }
    if run.analysis:
        filters["analysis"] = run.analysis.as_dict()
    if run.fallback:
        filters["fallback"] = run.fallback
    if run.count:
        filters["count"] = run.count
    if run.error:
        filters["error"] = run.error
    if run.stopped:
        filters["stopped"] = True
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
            selected=[run.hits[n - 1].chunk_uid for n in run.cited if 0 < n <= len(run.hits)],
        )
        run.interaction_id = interaction.pk
    except Exception:  # the answer matters more than its log line
        logger.exception("could not record the interaction")


def _done_payload(run: _Run) -> dict:
    prompt, completion, cost = _tokens(run)
    return {
        "interaction_id": run.interaction_id,
        "conversation_id": run.conversation_id,
        "strategy": run.strategy,
        "model": run.info.id,
        "provider": run.info.provider,
        "extractive": run.info.provider == "extractive",
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens": prompt + completion,
        "cost_usd": cost,
        "latency_ms": round(run.elapsed_ms(), 1),
        "first_delta_ms": round(run.first_delta_ms, 1) if run.first_delta_ms is not None else None,
        "error": run.error or None,
    }

