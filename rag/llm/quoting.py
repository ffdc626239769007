"""How the offline answerer writes the sentences it chose: consecutive lines of one speaker as one
quote, each followed by its source's number, after the lines a reader needs first (the meeting's
date when the question asks when, the agenda item the quotes come from, that no one is quoted or
no reason is given)."""

from __future__ import annotations

from collections.abc import Iterator

from rag.llm.candidates import Sentence
from rag.llm.completing import no_reason_given
from rag.llm.context import ContextSource
from rag.llm.prose import dated_lead
from rag.llm.sentences import cite
from rag.llm.stated import without_stated
from rag.llm.transcripts import agenda_lead, asks_who_said_it, quote, unvoiced_lead
from rag.words import content_terms


def written_answer(
    question: str, chosen: list[Sentence], sources: list[ContextSource], stated: list[str] | None
) -> Iterator[str]:
    """The answer from ``chosen`` (not empty, in reading order), one quote per delta."""
    # Consecutive sentences of one speaker in one source become one quote.
    groups: list[list[Sentence]] = []
    for s in chosen:
        last = groups[-1][-1] if groups else None
        if (
            last
            and s.speaker
            and last.speaker == s.speaker
            and last.source.n == s.source.n
            and s.position == last.position + 1
        ):
            groups[-1].append(s)
        else:
            groups.append([s])
    lead = chosen[0].source
    spoken = bool(chosen[0].speaker)
    if when := dated_lead(
        question, [c.text for c in chosen], sources, spoken=spoken, quoted=[c.source for c in chosen]
    ):
        yield when + "\n\n"  # a meeting's lines seldom say its date: its metadata does
    if no_reason_given(question, chosen):
        yield "These sources give no reason; what else they say:\n\n"
    # What the filters took ("in september") is when, not what the person is asked about.
    asked_about = content_terms(without_stated(question, stated)[0])
    if asks_who_said_it(question) and not any(c.speaker for c in chosen):
        # "Who said that" of a page's sentences: a page is no one's words, and says no name.
        yield f"No one is quoted saying it: it is written in “{lead.title}”.\n\n"
    if unvoiced := unvoiced_lead(question, asked_about, chosen, sources):
        yield unvoiced + "\n\n"  # Sam speaks in these meetings, but decided nothing quoted here
    if lead.agenda:
        # The quotes come from the part of the meeting the question names: say which, so the
        # reader knows what the speakers are talking about before reading them.
        yield agenda_lead(lead.agenda) + "\n\n"
    previous = None
    for group in groups:
        first = group[0]
        if previous is not None:
            yield "\n\n" if first.source.n != previous or first.speaker else " "
        if first.speaker:
            yield quote(first.speaker, [s.text for s in group], first.source.n)
        else:
            yield cite(first.text, first.source.n)
        previous = first.source.n

