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
from collections.abc import Iterator
from contextlib import closing

from django.conf import settings
from django.utils import timezone

from knowhub.sse import Event
from rag.acl import Scope
from rag.answering import conversations as conv
from rag.answering import followups, history
from rag.answering.analysis import CHIP_FIELDS, form_chips
from rag.answering.citations import CitationFilter
from rag.answering.offline import offline_parts
from rag.answering.prompts import ask_messages
from rag.answering.retrieval import (
    AskRun,
    retrieve,
    reuse,
    widen,
)
from rag.answering.selectors import facet_values
from rag.answering.sources import (
    SourceDoc,
    renumber,
)
from rag.answering.unmentioned import (
    unmentioned_note,
    unstated_figure_note,
    unstated_sum_note,
    unstated_time_note,
)
from rag.embeddings import get_embedder
from rag.interactions import interaction_record
from rag.llm import Completion, LLMError, UnknownModel, get_llm, model_info
from rag.search import (
    MAX_QUERY_CHARS,
    SearchFilters,
    SearchRequestError,
    validate_query,
)
from rag.selectors import EmbeddingModelMismatch, check_query_model

logger = logging.getLogger(__name__)

MAX_IGNORED_FILTERS = 20
GENERATION_FAILED = "GENERATION_FAILED"
# Not quoting the question back: a plain statement, the same for every question.
NOTHING_VISIBLE = "Nothing in the sources visible to you answers this question."


# A request the pipeline refuses before doing anything: the one error of search requests, with
# the ask-only codes (unknown_model, invalid_conversation_id, invalid_ignore_filters) besides,
# and embedding_model_mismatch: an index of another model's vectors answers nothing until reembedded.
AskError = SearchRequestError


# The pipeline's events (type: status | sources | delta | citations | done | error) are the
# stream events of every streaming endpoint.
AskEvent = Event


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
    try:  # the search is handed the query's vector, so it does not check this itself
        check_query_model((embedder or get_embedder()).name)
    except EmbeddingModelMismatch as exc:
        raise AskError("embedding_model_mismatch", str(exc)) from exc
    ignored = validate_ignore_filters(ignore_filters)
    conversation_id, continued = history.conversation_id_for_ask(user=user, conversation_id=conversation_id)
    run = AskRun(
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


def _delta(run: AskRun, text: str) -> AskEvent:
    if run.first_delta_ms is None:
        run.first_delta_ms = run.elapsed_ms()
    run.answer.append(text)
    return AskEvent("delta", {"text": text})


def _pipeline(run: AskRun) -> Iterator[AskEvent]:
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
            retrieve(run, llm)
        else:
            reuse(run, conversation)
            if not run.hits:  # the earlier sources are gone (deleted, ACL changed): search again
                run.strategy = conv.NEW_QUERY
                _rewrite(run, llm, conversation)
                retrieve(run, llm)
        if run.strategy == conv.NEW_QUERY and not run.docs:
            widen(run, llm)  # a filter read from the question left nothing: search everything

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
            parts = offline_parts(run, llm, conversation)
            yield AskEvent("sources", _sources_payload(run))
            if run.count:
                yield _delta(run, run.count["statement"] + "\n\n")
            if not parts and not run.count:
                parts = [NOTHING_VISIBLE.format(query=run.query)]
            # A count's "entries" and "times" are how it counts, not a subject the sources lack.
            elif run.cited and not (run.count or run.listed) and (note := _opening_note(run, "".join(parts))):
                parts = [note + "\n\n", *parts]
            if parts:
                yield AskEvent("status", {"stage": "generating", "model": run.info.id})
            for part in parts:  # one sentence a delta: the page shows them as they come
                yield _delta(run, part)

        yield AskEvent("citations", {"citations": _citations(run), "sources": [d.as_dict() for d in run.docs]})
        _record(run)
        yield AskEvent("done", _done_payload(run))
    except EmbeddingModelMismatch as exc:  # the index moved to another model since ask() checked
        yield AskEvent("error", {"error": "embedding_model_mismatch", "detail": str(exc)})
    except GeneratorExit:
        run.stopped = True
        logger.info("ask stopped by the client after %.0f ms", run.elapsed_ms())
        if run.interaction_id is None:
            _record(run)
        raise


def _opening_note(run: AskRun, answer: str) -> str:
    """What the quotes after it are not: an answer to a word no visible document says, the sum of
    money the question asks for, the figure it gives, or the time it asks for."""
    return (
        unmentioned_note(run, answer)
        or unstated_sum_note(run, answer)
        or unstated_figure_note(run, answer)
        or unstated_time_note(run, answer)
    )


def _rewrite(run: AskRun, llm, conversation: conv.Conversation) -> None:
    """The question to search: a follow-up made standalone (``searched_query``); "what is she
    working on" with one person set in the filters, asked of that person."""
    people = run.request.people or []
    if len(people) == 1 and (named := followups.pronouns_as(run.query, people[0])):
        run.searched_query, run.rewrite = named[:MAX_QUERY_CHARS], "person"
        return
    if not conversation.exchanges:
        return
    if llm.generative:
        pairs = [(ex.query, ex.answer) for ex in conversation.exchanges]
        rewrite = followups.llm_rewrite(
            question=run.query, exchanges=pairs, llm=llm, timeout=min(settings.KNOWHUB_LLM_TIMEOUT, 20.0),
            today=run.today,
        )  # fmt: skip
    else:
        facets = facet_values(scope=run.scope, collections=run.request.collections)
        rewrite = followups.offline_rewrite(
            question=run.query, previous=[ex.topic or ex.query for ex in conversation.exchanges], today=run.today,
            known=[facets.values(kind) for kind in ("tags", "people", "entities", "domains", "collections")],
            people=facets.values("people"),
        )  # fmt: skip
    run.searched_query = rewrite.searched_query[:MAX_QUERY_CHARS]
    run.rewrite = rewrite.kind
    run.subject = rewrite.subject
    if rewrite.kind in ("carried", "bare", "llm"):
        run.previous_cited = list(conversation.last.cited)


def _generate(run: AskRun, llm, conversation: conv.Conversation) -> Iterator[AskEvent]:
    messages = ask_messages(run, llm, conversation)
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


def _chips_payload(run: AskRun) -> list[dict]:
    """The filters of this answer: those set in the form first, then those read from the question
    (but for one the form already set: "what is she working on" with Maya set is searched as "what
    is Maya working on", and Maya is one filter, not two)."""
    form = form_chips(run.request)
    set_in_form = {(c.field, c.value) for c in form}
    return [c.as_dict() for c in [*form, *(c for c in run.chips if (c.field, c.value) not in set_in_form)]]


def _sources_payload(run: AskRun) -> dict:
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


def _cited_docs(run: AskRun) -> list[SourceDoc]:
    by_n = {d.n: d for d in run.docs}
    return [by_n[n] for n in run.cited if n in by_n]


def _citations(run: AskRun) -> list[dict]:
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


def _tokens(run: AskRun) -> tuple[int, int, float]:
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


def _record(run: AskRun) -> None:
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


def _turn_record(run: AskRun) -> dict:
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


def _done_payload(run: AskRun) -> dict:
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

