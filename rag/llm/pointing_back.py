"""What "that" is in "who said that" and "who raised it": the lines the last answer quoted, and of
them those on what the conversation asked about."""

from __future__ import annotations

from rag.llm.candidates import Sentence, unsaid_sentences
from rag.llm.context import ContextSource
from rag.words import asked_terms, content_terms


def quoted_lines(sources: list[ContextSource], last_answer: str) -> list[Sentence]:
    """What "that" is in "who said that", "who raised it": the lines the last answer quoted, in
    reading order, its spoken ones each under its speaker and no line it did not quote; when it
    quoted no one's words, its written sentences (the answer then names the page they are from)."""
    if not last_answer:
        return []
    quoted = [c for c in unsaid_sentences(sources, last_answer, keep_said=True) if c.said]
    return [c for c in quoted if c.speaker] or quoted


def about_what_was_asked(quoted: list[Sentence], topic: str, question: str) -> list[Sentence]:
    """Of the lines the last answer quoted, those that say what the conversation asked about
    beyond what their page is about: "who raised it" after "what complaints did acme have" is who
    raised the complaints, not who said Acme will extend the pilot ("Acme" titles the meeting).
    All of them when none does."""
    subject = asked_terms(topic) - asked_terms(question)
    on = [c for c in quoted if (subject - content_terms(c.source.title)) & content_terms(c.text)]
    return on or quoted
