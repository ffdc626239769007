"""The one prompt layout every provider receives: numbered sources, then the question.

Sources are written as ``<source id="n" …>text</source>`` blocks. LLMs read that layout well,
and the extractive answerer parses it back with ``parse_user_prompt`` — so the pipeline hands
the same messages to every provider and never special-cases the offline one.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass


@dataclass
class ContextSource:
    """One numbered source as the model sees it."""

    n: int
    title: str
    text: str
    date: str = ""
    breadcrumb: str = ""
    # The document's agenda item (a meeting's topic) that the question is about, when one is
    # close enough to say so: the question names a part of this document.
    agenda: str = ""


_SOURCE_RE = re.compile(r'<source id="(\d+)"([^>]*)>\n?(.*?)\n?</source>', re.S)
_ATTR_RE = re.compile(r'(\w+)="([^"]*)"')
_QUESTION_RE = re.compile(r"<question>\n?(.*?)\n?</question>", re.S)
_TOPIC_RE = re.compile(r"<topic>(.*?)</topic>", re.S)
_STATED_RE = re.compile(r"<filters_applied>(.*?)</filters_applied>", re.S)


def _attr(value: str) -> str:
    return html.escape(value.replace("\n", " "), quote=True)


# Stated phrases the pipeline adds for the extractive answerer, which reads them back: the
# question counts entries (its sources are the entries counted), asks which documents a period
# holds (its sources are those listed: "what was discussed in november"), or asks for more about a
# subject (its sources were found for that subject).
STATED_COUNT = "count: "
STATED_LISTED = "listed: "
STATED_MORE_ABOUT = "more about: "
STATED_CONVERSATION = "conversation: "  # the sources were found for the conversation's subject


def format_user_prompt(
    *, question: str, sources: list[ContextSource], notes: list[str] | None = None, focus: str = "",
    stated: list[str] | None = None,
) -> str:
    """The user message: sources, optional notes, the conversation's topic, then the question.

    ``focus`` is what the sources were retrieved for (the earlier question when a follow-up such
    as "tell me more" reuses them); a model reads it as the topic, the extractive answerer scores
    sentences against it.
    """
    parts = ["<sources>"]
    for src in sources:
        attrs = f'title="{_attr(src.title)}"'
        if src.date:
            attrs += f' date="{_attr(src.date)}"'
        if src.breadcrumb:
            attrs += f' path="{_attr(src.breadcrumb)}"'
        if src.agenda:
            attrs += f' agenda="{_attr(src.agenda)}"'
        body = src.text.replace("</source", "</ source")
        parts.append(f'<source id="{src.n}" {attrs}>\n{body}\n</source>')
    parts.append("</sources>")
    for note in notes or []:
        parts.append(f"<note>{note}</note>")
    if focus and focus.strip() != question.strip():
        parts.append(f"<topic>{html.escape(focus)}</topic>")
    if stated:
        # Phrases of the question already applied as filters ("last month"): the sources were
        # chosen by them, so they say nothing about which sentence answers.
        parts.append(f"<filters_applied>{html.escape('; '.join(stated))}</filters_applied>")
    parts.append(f"<question>\n{question.replace('</question', '</ question')}\n</question>")
    return "\n".join(parts)


def parse_stated(text: str) -> list[str]:
    """The filter phrases ``format_user_prompt`` wrote (empty when none)."""
    tail = text.rsplit("</sources>", 1)[-1]
    m = _STATED_RE.search(tail)
    return [p for p in html.unescape(m.group(1)).split("; ") if p] if m else []


def parse_user_prompt(text: str) -> tuple[str, list[ContextSource], str]:
    """The question, sources and topic of a message written by ``format_user_prompt``."""
    sources = []
    head = text.rsplit("</sources>", 1)[0] if "</sources>" in text else ""
    for match in _SOURCE_RE.finditer(head):
        attrs = {k: html.unescape(v) for k, v in _ATTR_RE.findall(match.group(2))}
        sources.append(
            ContextSource(
                n=int(match.group(1)),
                title=attrs.get("title", ""),
                date=attrs.get("date", ""),
                breadcrumb=attrs.get("path", ""),
                agenda=attrs.get("agenda", ""),
                text=match.group(3).replace("</ source", "</source"),
            )
        )
    tail = text.rsplit("</sources>", 1)[-1]
    q = _QUESTION_RE.search(tail)
    question = q.group(1).replace("</ question", "</question") if q else text
    t = _TOPIC_RE.search(tail)
    topic = html.unescape(t.group(1)) if t else ""
    return question.strip(), sources, topic
