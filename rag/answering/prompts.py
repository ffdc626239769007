"""What the answering model is told. One place, so the extractive and LLM paths share it."""

from __future__ import annotations

import datetime as dt
import re

from django.conf import settings

from rag.answering import conversations as conv
from rag.answering.retrieval import AskRun, period_text
from rag.answering.statements import period_listing_asked
from rag.llm.context import STATED_CONVERSATION, STATED_COUNT, STATED_LISTED, STATED_MORE_ABOUT, format_user_prompt
from rag.llm.transcripts import asks_who_said_it
from rag.words import asks_for_more

SYSTEM_PROMPT = """You are knowhub, an assistant that answers questions from the user's own notes, \
documents and course content.
Rules:
- Answer only from the numbered sources in the user's message. Do not use outside knowledge.
- After each statement, cite the source(s) it comes from with their numbers in square brackets, \
like [1] or [2][3]. Cite only numbers that appear as <source id="n">.
- If the sources do not answer the question, say plainly that you found nothing relevant; never invent.
- Be concise and well organised; use markdown (short paragraphs, bullet lists, **bold** key points). \
Mention dates when they matter.
Today is {today}."""

_YEAR_RE = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")

FALLBACK_NOTE = (
    "No source is tagged with {names}{period}, so the metadata search found nothing. These sources come "
    "from a broader search: look for {names} in their text and say so if they are not mentioned."
)

COUNT_NOTE = (
    "The user has already been shown this count from the metadata: {statement} Do not give a "
    "different number. Continue with a short narrative of what happened, using the sources as examples."
)


def system_prompt(*, today: dt.date, notes: list[str]) -> str:
    text = SYSTEM_PROMPT.format(today=today.isoformat())
    if notes:
        text += "\n\n" + "\n".join(notes)
    return text


def ask_messages(run: AskRun, llm, conversation: conv.Conversation) -> list[dict]:
    """The messages every provider receives for ``run``: the system prompt with its notes, the
    conversation where the model reads it, then the numbered sources and the question."""
    notes: list[str] = []
    if "names" in run.fallback and run.analysis:
        period = period_text(run.analysis, run.applied)
        notes.append(FALLBACK_NOTE.format(names=", ".join(run.analysis.people), period=period))
    if "tags" in run.fallback and run.analysis:
        notes.append(FALLBACK_NOTE.format(names=", ".join(run.analysis.tags), period=""))
    if run.count:
        notes.append(COUNT_NOTE.format(statement=run.count["statement"]))
    messages = [{"role": "system", "content": system_prompt(today=run.today, notes=notes)}]
    # The extractive answerer reads earlier answers as "already said": only "tell me more" wants
    # that, and "who said that", whose "that" is what the last answer quoted.
    if llm.generative or run.strategy == conv.REUSE or asks_who_said_it(run.query):
        for ex in conversation.exchanges[-settings.KNOWHUB_ASK_HISTORY :]:
            messages.append({"role": "user", "content": ex.query})
            messages.append({"role": "assistant", "content": ex.answer or "(no answer)"})
    sources = [doc.context() for doc in run.docs]
    # Phrases that were applied as filters are not what the question is about: "what did we
    # decide last month?" asks what was decided, among the sources of last month.
    # A filter lifted because nothing under it answered ("nothing dated 2025") is not what the
    # question is about either; a name whose mentions were searched too stays in the question,
    # where it finds the sentence that names the person.
    # But a lifted date whose year the sources write ("no limitations since 1990" for "what has
    # had no limitations since 1990") was the subject's own words, which find the sentence.
    stated = [
        c.phrase for c in run.chips
        if (c.effect == "filter" or (c.widened and not _years_said(c.phrase, sources)))
        and not (run.mentions and c.field in ("people", "entity"))
    ]  # fmt: skip
    # Filters the person set on the page narrow the sources just as much.
    stated += [f"{key}: {value}" for key, value in run.request.as_dict().items()]
    # A follow-up rewritten as a whole question is answered as that question ("and sam?" is "what
    # does Sam work on?", "how often?" is how often the earlier subject happens).
    rewritten = run.rewrite in ("period", "other_one", "person", "bare", "recount")
    question = run.searched_query if rewritten else (run.corrected_query or run.query)
    if run.count:
        # A counting question's sources are the counted entries: quote them as exemplars.
        stated.append(f"{STATED_COUNT}{run.count['target']}")
    elif run.listed_subject:
        # "How many meetings mention the pilot?": the sources are the meetings counted, quoted
        # where they name it.
        stated.append(f"{STATED_COUNT}{run.listed_subject}")
    elif run.listed:
        # "What was discussed in november?": the sources are the meetings listed, one line of each.
        stated.append(f"{STATED_LISTED}{run.listed_noun}s")
    if run.rewrite == "carried":
        # "who raised them?": the subject comes from the conversation, so the sources were
        # chosen for it; the follow-up's own few words only say which part is wanted.
        stated.append(f"{STATED_CONVERSATION}{run.searched_query}")
    elif run.strategy == conv.REUSE and not asks_for_more(run.query):
        # "what did they want?" on the last answer's sources: as above, they were chosen for the
        # conversation's subject ("tell me more" wants only what was not said: no such mark).
        stated.append(f"{STATED_CONVERSATION}{run.topic}")
    elif run.strategy == conv.REUSE and (noun := period_listing_asked(run.topic, run.today)):
        # "tell me more" after "what was discussed in november": more of each meeting listed (the
        # period is what the earlier question filtered on, not words a line must hold).
        stated.append(f"{STATED_LISTED}{noun}s")
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


def _years_said(phrase: str, sources: list) -> bool:
    """``phrase`` names years ("since 1990", "in 2019") and every one of them is in a source's text."""
    years = _YEAR_RE.findall(phrase)
    return bool(years) and all(any(year in src.text for src in sources) for year in years)
