"""Questions answered by a list of what the metadata, the index or the lines' form picks out, not
by the words that rank best: "what did we decide last month?" by every line stating a decision
under its filters, "what was discussed in november?" and "how many meetings did we have?" by the
period's meetings, "what's new this week?" and "how many docs do we have?" by its documents, "how
many meetings mention the pilot?" by the meetings whose text names it."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answering.selectors import chunks_by_uid, period_chunks
from rag.answering.statements import mention_listing, period_listing
from rag.llm.listing import states
from rag.search import Hit, SearchFilters
from rag.words import WORD_RE, asked_listing, content_terms

if TYPE_CHECKING:
    from rag.answering.retrieval import AskRun


def with_listed(run: AskRun, search, hits: list[Hit], *, applied: SearchFilters, depth: int) -> list[Hit]:
    """A question such as "what did we decide last month?" or "what are the action items?" names no
    subject: every line stating a decision (a task) under the question's filters answers it, and
    nothing else does (a page that mentions deciding decides nothing). Its own words find such
    lines poorly, so the words they are stated in are searched too. The hits that state one,
    scored alike so that every document holding one stays among the sources; ``hits`` when none
    does."""
    # A period is a filter, not a subject: "what did we decide in 2025" names none.
    listing = asked_listing(without_periods(run))
    if listing is None:
        return hits
    found = {h.chunk_uid: h for h in [*hits, *search(applied, listing.search)]}
    stated = [h for h in found.values() if states(listing, h.content or "")]
    return _scored_alike(stated[:depth], hits, floor=0.0) if stated else hits


def with_period_listing(run: AskRun, hits: list[Hit], *, applied: SearchFilters, depth: int) -> list[Hit]:
    """"What was discussed in november?" names a period and no subject: the meetings of that
    period answer it, newest first (``run.listed``), and a course page updated that month does
    not, however its words rank; "what's new this week?" is answered by every document of the
    week. When nothing was dated in the period ("what happened yesterday", its date lifted), the
    latest one answers. "Which meetings did we have", with no period, is answered by all of them
    (the latest named). ``hits`` when the question asks something else, or none is found."""
    dated = bool(applied.date_from or applied.date_to)
    lifted = any(c.field == "date" for c in run.lifted)
    noun = period_listing(without_periods(run))
    # Without a period only meetings are listed whole, and documents counted ("how many documents
    # do we have"): "anything?" or "all documents" asks no list.
    counting = bool(run.analysis and run.analysis.counting)
    if not noun or not (dated or lifted or noun == "meeting" or counting):
        return hits
    chunks, listed = period_chunks(scope=run.scope, filters=applied, limit=depth, meetings=noun == "meeting")
    latest = lifted and not dated
    if latest and listed:  # the latest one, in place of the period that held none
        listed = [next(e for e in listed if e.key == chunks[0][1])]
        chunks = [(uid, key) for uid, key in chunks if key == listed[0].key]
    run.listed, run.listed_noun, run.listed_latest = listed, noun, latest
    found = chunks_by_uid(scope=run.scope, uids=[uid for uid, _ in chunks], scores={})
    return _scored_alike(found, hits) if found else hits


def with_mention_listing(run: AskRun, hits: list[Hit], *, applied: SearchFilters, depth: int) -> list[Hit]:
    """"How many meetings mention the pilot?": the meetings (or documents) whose text names the
    subject under the question's filters are counted and named (``run.listed``, with
    ``run.listed_subject``), and their chunks that name it are the sources. A person named is
    counted from the metadata instead; ``hits`` when the question asks something else, or no
    document names the subject."""
    asked = mention_listing(without_periods(run))
    if asked is None or (run.analysis and run.analysis.people):
        return hits
    noun, subject = asked
    words = " ".join(w for w in WORD_RE.findall(subject) if content_terms(w))
    if not words:
        return hits
    chunks, listed = period_chunks(
        scope=run.scope, filters=applied, limit=depth, meetings=noun == "meeting", mentioning=words
    )
    found = chunks_by_uid(scope=run.scope, uids=[uid for uid, _ in chunks], scores={})
    if not found:
        return hits
    run.listed, run.listed_noun, run.listed_latest, run.listed_subject = listed, noun, False, subject
    return _scored_alike(found, hits)


def _scored_alike(listed: list[Hit], hits: list[Hit], *, floor: float = 1.0) -> list[Hit]:
    """``listed`` in their order, each scored as the best of ``hits`` (``floor`` when there are
    none): every document listed stays among the sources, whatever its words rank."""
    top = max((h.score for h in hits), default=floor)
    return [replace(h, score=top, rank=rank) for rank, h in enumerate(listed, start=1)]


def without_periods(run: AskRun) -> str:
    """The question searched without its date phrases: a period is a filter, not a subject."""
    question = run.searched_query
    for chip in run.chips:
        if chip.field == "date" and chip.phrase:
            question = re.sub(re.escape(chip.phrase), " ", question, flags=re.I)
    return re.sub(r"\s+", " ", question).strip()
