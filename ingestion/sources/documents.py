"""Generic documents and meeting transcripts → ``SourceDocument``s.

Meeting notes are searched by date, entity (a fund, a client) and the people in the room, so
those travel as metadata on every unit. Transcripts are cut on speaker turns, never inside one
(unless a single turn is longer than a chunk): a retrieved chunk always says who said what.
Units are sized to the document's ``chunk_size`` so ``split_text`` keeps them whole.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from ingestion.sources import markup
from rag.chunking import split_text
from rag.units import SourceDocument, Unit

logger = logging.getLogger(__name__)

TRANSCRIPT_CHUNK_SIZE = 1000
_PAYLOAD_FIELDS = {"id", "title", "format", "date", "entity", "people", "tags", "collection", "url",
                   "text", "turns"}  # fmt: skip
_COLLECTION_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_QMSUM_MARKUP_RE = re.compile(r"\{(?:disfmarker|vocalsound|nonvocalsound|gap|pause|comment)\}", re.I)


def text_to_document(
    *, source_id: str, text: str, title: str = "", fmt: Literal["text", "markdown"] = "text",
    date: dt.date | str | None = None, entity: str = "", people: Iterable[str] = (),
    tags: Iterable[str] = (), collection: str = "documents", url: str = "",
    project: str | None = None, visibility: str = "public",
) -> SourceDocument:  # fmt: skip
    """A note or factsheet → a document; markdown is cut at headings, plain text is one unit.

    Section anchors hash the heading path, so editing one section leaves the others' chunks
    alone; plain text has the single anchor ``u_0`` and is cut by ``split_text``.
    """
    if fmt not in ("text", "markdown"):
        raise ValueError(f"format must be 'text' or 'markdown', not {fmt!r}")
    if not source_id:
        raise ValueError("source_id is required")
    day = markup.iso_date(date)
    tag_list, people_list = markup.unique_names(tags), markup.unique_names(people)
    meta = {"entity": entity, "people": people_list, "tags": tag_list}
    concepts = list(dict.fromkeys(markup.concept_key(t) for t in tag_list))
    units: list[Unit] = []

    def add(anchor: str, content: str, path: list[str], extra: dict | None = None) -> None:
        units.append(
            Unit(
                unit_anchor=anchor, content=content, title=title,
                breadcrumb=" > ".join(p for p in [title, *path] if p), url=url, domain="",
                concepts=concepts, code_languages=markup.code_languages(content),
                has_image=markup.has_image(content), date=day, metadata={**meta, **(extra or {})},
            )
        )  # fmt: skip

    if fmt == "text":
        if text.strip():
            add("u_0", text.strip(), [])
    else:
        seen: dict[str, int] = {}
        for section in markup.split_sections(text):
            heading = f"{'#' * section.level} {section.heading}\n" if section.level else ""
            content = (heading + section.body).strip()
            if not section.body.strip():
                continue  # a heading alone: its path is in the breadcrumbs of what follows
            key = "s-" + markup.short_hash(*section.path) if section.path else "u_0"
            seen[key] = seen.get(key, 0) + 1
            path = section.path[1:] if section.path and section.path[0] == title else section.path
            add(key if seen[key] == 1 else f"{key}-{seen[key]}", content, path,
                {"section": section.heading} if section.heading else None)  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="document", source_id=source_id, units=units,
        visibility=visibility, project=project,
    )  # fmt: skip


def _turn_line(speaker: str, text: str) -> str:
    return f"{speaker}: {text}" if speaker else text


def _clean_turns(turns: list[dict]) -> list[tuple[str, str]]:
    """``(speaker, text)`` of each turn, whitespace collapsed; a ``ValueError`` naming a bad turn."""
    if not isinstance(turns, list):
        raise ValueError("turns must be a list of {speaker, text} objects")
    clean: list[tuple[str, str]] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
            raise ValueError(f"turns[{i}] must be an object with a string 'text'")
        speaker = turn.get("speaker") or ""
        if not isinstance(speaker, str):
            raise ValueError(f"turns[{i}].speaker must be a string")
        clean.append((speaker.strip(), re.sub(r"\s+", " ", turn["text"]).strip()))
    return clean


def transcript_to_document(
    *, source_id: str, turns: list[dict], title: str, date: dt.date | str | None = None,
    entity: str = "", people: Iterable[str] | None = None, tags: Iterable[str] = (),
    collection: str = "meetings", url: str = "", project: str | None = None,
    visibility: str = "public", chunk_size: int = TRANSCRIPT_CHUNK_SIZE,
    topics: list[dict] | None = None,
) -> SourceDocument:  # fmt: skip
    """Speaker turns → units of consecutive whole turns up to ``chunk_size`` characters.

    ``topics`` (``{"topic": str, "turn_start": int, "turn_end": int}``) are attached to the
    units whose turns they overlap. Anchors are ``t-<first turn index>`` (``-<n>`` for the
    pieces of a turn too long for one chunk).
    """
    if not source_id:
        raise ValueError("source_id is required")
    clean = _clean_turns(turns)
    day = markup.iso_date(date)
    tag_list = markup.unique_names(tags)
    speakers_all = markup.unique_names(s for s, t in clean if s and t)
    people_list = markup.unique_names(people) if people is not None else speakers_all
    concepts = list(dict.fromkeys(markup.concept_key(t) for t in tag_list))
    units: list[Unit] = []

    def add(anchor: str, lines: list[str], start: int, end: int) -> None:
        speakers = markup.unique_names(clean[i][0] for i in range(start, end + 1) if clean[i][0])
        meta: dict[str, Any] = {
            "entity": entity, "people": people_list, "tags": tag_list, "speakers": speakers,
            "turn_start": start, "turn_end": end,
        }  # fmt: skip
        if topics:
            meta["topics"] = [t["topic"] for t in topics if t["turn_start"] <= end and t["turn_end"] >= start]
        units.append(
            Unit(
                unit_anchor=anchor, content="\n".join(lines), title=title,
                breadcrumb=f"{title} > turns {start}–{end}" if title else f"turns {start}–{end}",
                url=url, concepts=concepts, date=day, metadata=meta,
            )
        )  # fmt: skip

    lines: list[str] = []
    start = last = 0
    length = 0
    for i, (speaker, text) in enumerate(clean):
        if not text:
            continue
        line = _turn_line(speaker, text)
        if len(line) > chunk_size:
            if lines:
                add(f"t-{start}", lines, start, last)
                lines, length = [], 0
            # One turn longer than a chunk: cut it at sentences, every piece keeps the speaker.
            prefix = f"{speaker}: " if speaker else ""
            pieces = split_text(text, size=max(chunk_size - len(prefix), 100), overlap=0)
            for k, piece in enumerate(pieces, start=1):
                # Whitespace in turns was collapsed, so any paragraph break is split_text's own.
                add(f"t-{i}-{k}", [prefix + piece.replace("\n\n", " ")], i, i)
            continue
        if lines and length + 1 + len(line) > chunk_size:
            add(f"t-{start}", lines, start, last)
            lines, length = [], 0
        if not lines:
            start = i
        last = i
        lines.append(line)
        length += len(line) + (1 if length else 0)
    if lines:
        add(f"t-{start}", lines, start, last)
    return SourceDocument(
        collection=collection, source_type="transcript", source_id=source_id, units=units,
        visibility=visibility, project=project, chunk_size=chunk_size,
        chunk_overlap=min(180, chunk_size // 5),
    )  # fmt: skip


def _qmsum_text(text: str) -> str:
    """QMSum is tokenised ("we 're on .") and carries {disfmarker} tags: make it read as text."""
    text = _QMSUM_MARKUP_RE.sub("", text)
    text = re.sub(r"\s+([,.?!;:%])", r"\1", text)
    text = re.sub(r"\s+(n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    text = re.sub(r'"\s+([^"]*?)\s+"', r'"\1"', text)  # the term " feature " → the term "feature"
    return re.sub(r"\s+", " ", text).strip()


def _qmsum_title(stem: str) -> str:
    if re.match(r"^(Bed|Bmr|Bro|Bdb|Bns|Bsr|Btr)\d+$", stem):
        return f"ICSI meeting {stem}"
    if re.match(r"^(ES|IS|TS|EN|IB|IN)\d{4}[a-d]$", stem):
        return f"AMI meeting {stem}"
    return f"Committee meeting {stem.replace('_', ' ')}"


def qmsum_to_document(path: Path, **kw: Any) -> SourceDocument:
    """A QMSum meeting file → a transcript document (source id = file stem).

    Topic spans (``relevant_text_span``, turn indices) become per-unit ``metadata["topics"]``;
    the query/answer lists are left for evaluation code to read from the file.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name}: not a readable QMSum JSON file ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("meeting_transcripts"), list):
        raise ValueError(f"{path.name}: no meeting_transcripts list")
    turns = [
        {"speaker": str(t.get("speaker", "")), "text": _qmsum_text(str(t.get("content", "")))}
        for t in data["meeting_transcripts"]
        if isinstance(t, dict)
    ]
    topics = []
    for item in data.get("topic_list") or []:
        for span in item.get("relevant_text_span") or []:
            try:
                topics.append({"topic": item["topic"], "turn_start": int(span[0]), "turn_end": int(span[1])})
            except (KeyError, ValueError, TypeError, IndexError):
                logger.info("%s: skipping malformed topic span %r", path.name, span)
    kw.setdefault("title", _qmsum_title(path.stem))
    kw.setdefault("topics", topics)
    return transcript_to_document(source_id=kw.pop("source_id", path.stem), turns=turns, **kw)


def _string(payload: dict, name: str, default: str = "") -> str:
    value = payload.get(name, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    return value.strip()


def _string_list(payload: dict, name: str) -> list[str]:
    value = payload.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of strings")
    return markup.unique_names(value)


def parse_document_payload(payload: dict) -> SourceDocument:
    """The body of ``POST /ingest/documents`` → a document; ``ValueError`` says what is wrong.

    ``{"id", "text" | "turns", "title", "format": "text"|"markdown", "date": "YYYY-MM-DD",
    "entity", "people": [...], "tags": [...], "collection", "url"}``. Access control (project,
    visibility) is the endpoint's decision, not the caller's, so it is not accepted here.
    """
    if not isinstance(payload, dict):
        raise ValueError("body must be a JSON object")
    unknown = sorted(set(payload) - _PAYLOAD_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(unknown)}")
    source_id = _string(payload, "id")
    if not source_id:
        raise ValueError("id is required and must be a non-empty string")
    if len(source_id) > 500:
        raise ValueError("id is longer than 500 characters")
    has_text, has_turns = payload.get("text") is not None, payload.get("turns") is not None
    if has_text == has_turns:
        raise ValueError("exactly one of 'text' or 'turns' is required")
    fmt = _string(payload, "format", "text") or "text"
    if fmt not in ("text", "markdown"):
        raise ValueError("format must be 'text' or 'markdown'")
    collection = _string(payload, "collection", "")
    if collection and not _COLLECTION_RE.match(collection):
        raise ValueError("collection must be lower-case letters, digits, '-' or '_' (max 64)")
    common: dict[str, Any] = {
        "source_id": source_id, "title": _string(payload, "title"),
        "date": markup.iso_date(payload.get("date")) if payload.get("date") is not None else None,
        "entity": _string(payload, "entity"), "tags": _string_list(payload, "tags"),
        "url": _string(payload, "url"),
    }  # fmt: skip
    people = _string_list(payload, "people") if payload.get("people") is not None else None
    if has_text:
        text = payload["text"]
        if not isinstance(text, str):
            raise ValueError("text must be a string")
        if not text.strip():
            raise ValueError("text is empty")
        return text_to_document(text=text, fmt=fmt, people=people or (), collection=collection or "documents",
                                **common)  # fmt: skip
    turns = payload["turns"]
    if not isinstance(turns, list) or not turns:
        raise ValueError("turns must be a non-empty list of {speaker, text} objects")
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or set(turn) - {"speaker", "text"}:
            raise ValueError(f"turns[{i}] must be an object with only 'speaker' and 'text'")
    return transcript_to_document(turns=turns, people=people, collection=collection or "meetings", **common)
