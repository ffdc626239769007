"""The offline (extractive) answer of an ask: its deltas, numbered by first citation, with what
the metadata states before them, and the wider searches tried when nothing answers."""

from __future__ import annotations

import copy
from dataclasses import fields

from django.conf import settings

from rag.answering import conversations as conv
from rag.answering import followups
from rag.answering.citations import CitationFilter
from rag.answering.prompts import ask_messages
from rag.answering.retrieval import AskRun, liftable, period_text, reuse_when_held, widen
from rag.answering.selectors import facet_values
from rag.answering.sources import apply_numbers, renumber
from rag.answering.statements import (
    asks_for_clients,
    asks_where_took_part,
    clients_statement,
    counted_statement,
    period_statement,
    person_statement,
    who_statement,
)
from rag.answering.unmentioned import question_subject, subject_held
from rag.llm import Completion

LISTING_QUOTED_UP_TO = 3  # a period listing more documents than this is named without quotes


def offline_parts(run: AskRun, llm, conversation: conv.Conversation) -> list[str]:
    """The extractive answer's deltas, searching wider when nothing answers; [] when nothing does."""
    parts = _answer_offline(run, llm, conversation) if run.docs else []
    if not parts and run.strategy == conv.NEW_QUERY and widen(run, llm):
        # Nothing under a filter read from the question answers: answer from everything.
        parts = _answer_offline(run, llm, conversation) if run.docs else []
    elif parts and run.strategy == conv.NEW_QUERY and not (run.count or run.listed):
        parts = _wider_when_off_subject(run, llm, conversation, parts)
    if not parts and run.strategy == conv.NEW_QUERY and reuse_when_held(run, conversation):
        # Nothing anywhere answers, and the last answer's sources hold its words.
        run.strategy = conv.REUSE
        parts = _answer_offline(run, llm, conversation)
    return parts


def _wider_when_off_subject(run: AskRun, llm, conversation: conv.Conversation, parts: list[str]) -> list[str]:
    """An answer under a filter read from the question that holds none of the question's subject
    ("what did we discuss last week about pgvector" quoting last week's only meeting, on releases)
    is weaker than one without the filter: search everything, and keep that answer when it holds
    more of the subject (the chip then says everything was searched). Otherwise the first answer
    stands, as searched."""
    if not liftable(run):  # most questions: no filter read from them
        return parts
    subject = question_subject(run)
    held = subject_held(run, "".join(parts), subject)
    if not subject or held:
        return parts
    saved = copy.copy(run)
    saved_lifted = list(run.lifted)  # widen() extends the list in place
    chips = [(chip, chip.effect, chip.widened, chip.widened_for) for chip in run.chips]
    widen(run, llm, subject=" ".join(subject))
    wider = _answer_offline(run, llm, conversation) if run.docs else []
    if wider and subject_held(run, "".join(wider), subject) > held:
        return wider
    for f in fields(run):
        setattr(run, f.name, getattr(saved, f.name))
    run.lifted = saved_lifted
    for chip, effect, widened, widened_for in chips:
        chip.effect, chip.widened, chip.widened_for = effect, widened, widened_for
    return parts


def _answer_offline(run: AskRun, llm, conversation: conv.Conversation) -> list[str]:
    """The extractive answer's deltas, renumbered by first citation; [] when nothing is relevant."""
    messages = ask_messages(run, llm, conversation)
    parts: list[str] = []
    for part in llm.stream(
        messages=messages, max_tokens=settings.KNOWHUB_LLM_MAX_TOKENS, timeout=settings.KNOWHUB_LLM_TIMEOUT
    ):
        if isinstance(part, Completion):
            run.completion = part
        else:
            parts.append(part)
    parts = _with_metadata_statement(run, conversation, parts)
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


def _with_metadata_statement(run: AskRun, conversation: conv.Conversation, parts: list[str]) -> list[str]:
    """"Who was it with?" after a question about a meeting, or "who attended the acme kickoff?":
    the people of the meeting (the one the conversation quoted first, or the one this answer
    quotes first), from the metadata, first; "who is sam?", "which meetings was sam in?": the
    meetings Sam took part in;
    "which clients do we have?": the clients the sources are about, instead of any quote.

    A counting question answered from the metadata names the documents it counted ("how many
    times did we meet acme?" is answered by the meetings), then quotes them as examples; "what
    was discussed in november?" names the meetings of November ("what's new this week?" the
    documents of the week), then quotes one line of each.

    The quotes follow only when they cite something ("nothing more than what I already quoted"
    is not worth saying after the names)."""
    who_was_there = bool(conversation.exchanges) and followups.asks_who_was_there(run.query)
    person = next((c.value for c in run.chips if c.field == "people" and asks_where_took_part(run.query, c.value)), "")
    clients = asks_for_clients(run.query)
    counted = bool(run.count and run.counted)
    listed = counted or bool(run.listed)
    if not run.docs or not (who_was_there or person or clients or listed or followups.asks_who_took_part(run.query)):
        return parts
    if clients:
        facets = facet_values(scope=run.scope, collections=run.request.collections)
        return [statement] if (statement := clients_statement(clients, facets.entities, run.docs)) else parts
    quotes = CitationFilter(valid={d.n for d in run.docs})
    quotes.feed("".join(parts))
    quotes.flush()
    if listed:
        if counted:
            statement = counted_statement(run.counted, run.docs)
        else:
            period = period_text(run.analysis, run.applied or run.request)
            statement = period_statement(
                run.listed, run.docs, period, noun=run.listed_noun, latest=run.listed_latest,
                counting=bool(run.analysis and run.analysis.counting), mentioning=run.listed_subject,
            )  # fmt: skip
        # A period's many documents are answered by their names: a line of each would be a page.
        quoted = quotes.used and (counted or run.listed_subject or len(run.listed) <= LISTING_QUOTED_UP_TO)
        return [statement, *(["\n\n", *parts] if quoted else [])] if statement else parts
    if person:
        statement = person_statement(person, run.docs)
        return [statement, *(["\n\n", *parts] if quotes.used else [])] if statement else parts
    if who_was_there:
        first_cited = set(conversation.last.cited[:1])
        doc = next((d for d in run.docs if first_cited & {h.chunk_uid for h in d.hits}), run.docs[0])
    elif quotes.used:
        doc = next(d for d in run.docs if d.n == quotes.used[0])
    else:
        return parts
    statement = who_statement(doc)
    if not statement:
        return parts
    return [statement, *(["\n\n", *parts] if quotes.used else [])]
