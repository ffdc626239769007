"""The n8n webhook payload → one ``SourceDocument``, every field checked."""

from __future__ import annotations

import datetime as dt

from ingestion.sources import markup
from ingestion.sources.notion.pages import notion_key
from rag.units import SourceDocument, Unit

_WEBHOOK_FIELDS = {"page_id", "properties", "content", "url", "database_id", "visibility", "project"}
_WEBHOOK_PROPERTIES = {"title", "category", "domain", "tags", "date", "author", "people", "entity"}


def _checked_fields(payload: dict) -> tuple[str, dict, str, str]:
    """``page_id``, ``properties``, ``content`` and ``url``, or a ``ValueError`` naming the field."""
    if not isinstance(payload, dict):
        raise ValueError("payload must be a JSON object")
    unknown = sorted(set(payload) - _WEBHOOK_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(unknown)}")
    page_id = payload.get("page_id")
    if not isinstance(page_id, str) or not page_id.strip():
        raise ValueError("page_id is required and must be a non-empty string")
    props = payload.get("properties", {})
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise ValueError("properties must be an object")
    unknown = sorted(set(props) - _WEBHOOK_PROPERTIES)
    if unknown:
        raise ValueError(f"unknown properties field(s): {', '.join(unknown)}")
    content = payload.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise ValueError("content must be a string")
    url = payload.get("url") or ""
    if not isinstance(url, str):
        raise ValueError("url must be a string")
    return page_id.strip(), props, content, url


def _checked_properties(props: dict) -> tuple[dict[str, list[str]], dt.date | None]:
    """The list properties (``tags``, ``people``) stripped, and the date; ``ValueError`` otherwise."""
    for name in ("title", "category", "domain", "author", "entity"):
        if props.get(name) is not None and not isinstance(props[name], str):
            raise ValueError(f"properties.{name} must be a string")
    lists: dict[str, list[str]] = {}
    for name in ("tags", "people"):
        value = props.get(name)
        if value is None:
            value = []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"properties.{name} must be a list of strings")
        lists[name] = [v.strip() for v in value if v.strip()]
    date = None
    if props.get("date") not in (None, ""):
        raw = props["date"]
        date = markup.parse_date(raw)
        if date is None or not isinstance(raw, str):
            raise ValueError(f"properties.date is not an ISO date: {raw!r}")
        try:  # reject "2025-01-25garbage" that parse_date's 10-char prefix would accept
            dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"properties.date is not an ISO date: {raw!r}") from exc
    return lists, date


def _access_metadata(payload: dict) -> dict:
    """``notion_database`` and ``requested_access`` as the payload gives them."""
    metadata: dict = {}
    database_id = payload.get("database_id")
    if database_id is not None:
        if not isinstance(database_id, str) or not database_id.strip():
            raise ValueError("database_id must be a non-empty string")
        metadata["notion_database"] = notion_key(database_id)
    requested = {}
    for name in ("visibility", "project"):
        value = payload.get(name)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string")
            requested[name] = value.strip()
    if requested:
        # Only ever narrows the database's access (ingestion.services.source_settings.narrowed).
        metadata["requested_access"] = requested
    return metadata


def webhook_to_document(payload: dict, *, collection: str = "notion") -> SourceDocument:
    """The n8n webhook payload → one document with a single unit ``u_0``.

    One unit keeps chunk uids in the form the webhook has always produced
    (``notion:notion_note:{page_id}:u_0:{i}``), so a page sent again replaces its chunks and
    judgments recorded against those uids stay valid; ``split_text`` cuts the content at 1000/180.
    Raises ``ValueError`` naming the offending field for anything malformed.
    """
    page_id, props, content, url = _checked_fields(payload)
    lists, date = _checked_properties(props)
    title = (props.get("title") or "").strip()
    author = (props.get("author") or "").strip()
    people = list(dict.fromkeys([*([author] if author else []), *lists["people"]]))
    domain = (props.get("domain") or "").strip() or (props.get("category") or "").strip()
    metadata = {
        "notion_id": page_id, "category": props.get("category") or "", "author": author,
        "people": people, "entity": props.get("entity") or "", "tags": lists["tags"],
        **_access_metadata(payload),
    }  # fmt: skip
    units = []
    if content.strip():
        units.append(
            Unit(
                unit_anchor="u_0", content=content.strip(), title=title, breadcrumb=title, url=url,
                domain=domain[:100], concepts=list(dict.fromkeys(markup.concept_key(t) for t in lists["tags"])),
                code_languages=markup.code_languages(content), has_image=markup.has_image(content),
                date=date, metadata=metadata,
            )
        )  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="notion_note", source_id=page_id, units=units,
        chunk_size=1000, chunk_overlap=180,
    )  # fmt: skip
