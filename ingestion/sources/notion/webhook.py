"""The n8n webhook payload → one ``SourceDocument``, every field checked.

Property names are matched as a Notion database spells them, case- and space-insensitively
(``Title``, ``Tags``, ``Due Date`` → ``title``, ``tags``, ``due_date``). The known ones fill the
chunk's fields; any other property is kept in metadata under its normalised name, where the
database's property mapping (``ingestion.sources.mapping``) can pick it up.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ingestion.sources import markup
from ingestion.sources.notion.pages import canonical_page_id, notion_key
from rag.units import SourceDocument, Unit

_WEBHOOK_FIELDS = {
    "page_id", "properties", "content", "url", "database_id", "visibility", "project", "last_edited_time",
    "archived", "in_trash",
}  # fmt: skip
_WEBHOOK_PROPERTIES = {"title", "category", "domain", "tags", "date", "author", "people", "entity"}
# Metadata the webhook sets itself: a property of the same name is kept beside it, never over it.
_RESERVED_METADATA = {"notion_id", "notion_database", "notion_data_source", "requested_access", "last_edited_time"}


@dataclass(frozen=True)
class WebhookDelivery:
    """A checked delivery: the page as a document, whether Notion says it is gone (archived or in
    the trash), and when it was last edited in Notion (``None`` when the delivery does not say)."""

    document: SourceDocument
    gone: bool
    edited_at: dt.datetime | None


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
    props = _normalised_properties(payload.get("properties", {}))
    content = payload.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise ValueError("content must be a string")
    url = payload.get("url") or ""
    if not isinstance(url, str):
        raise ValueError("url must be a string")
    return page_id.strip(), props, content, url


def _normalised_properties(props) -> dict:
    """Properties keyed by their normalised name; two names for one property are refused."""
    if props is None:
        return {}
    if not isinstance(props, dict):
        raise ValueError("properties must be an object")
    out: dict = {}
    spelled: dict[str, str] = {}
    for name, value in props.items():
        key = markup.normalise_key(name)
        if key in out:
            raise ValueError(f"properties {spelled[key]!r} and {name!r} are the same property ({key})")
        out[key], spelled[key] = value, name
    return out


def _date_text(value):
    """A date property as a string: Notion's ``{"start": ...}`` object gives its start."""
    if isinstance(value, dict) and "start" in value:
        return value.get("start")
    return value


def _extra_properties(props: dict) -> dict:
    """Properties beyond the known ones, for metadata (and the database's property mapping)."""
    extra: dict = {}
    for key, value in props.items():
        if key in _WEBHOOK_PROPERTIES or value is None:
            continue
        name, n = key, 1
        while name in _RESERVED_METADATA or name in extra:
            n += 1
            name = f"{key}_{n}"
        extra[name] = value
    return extra


def _checked_flags(payload: dict) -> tuple[bool, dt.datetime | None]:
    """``archived`` / ``in_trash`` (booleans) and ``last_edited_time`` (an ISO date-time)."""
    for name in ("archived", "in_trash"):
        if payload.get(name) is not None and not isinstance(payload[name], bool):
            raise ValueError(f"{name} must be true or false")
    gone = bool(payload.get("archived")) or bool(payload.get("in_trash"))
    raw = payload.get("last_edited_time")
    if raw in (None, ""):
        return gone, None
    if not isinstance(raw, str):
        raise ValueError(f"last_edited_time is not an ISO date-time: {raw!r}")
    try:
        edited = dt.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"last_edited_time is not an ISO date-time: {raw!r}") from exc
    return gone, edited if edited.tzinfo else edited.replace(tzinfo=dt.UTC)


def _one_values(props: dict) -> tuple[dict[str, str], list[str]]:
    """``title``, ``category``, ``domain``, ``author`` and ``entity`` as strings, and the authors.

    A Notion database may keep these as a select, a multi-select or a people property: a list of
    strings gives its first value (and every name, for ``author``, becomes one of the people).
    """
    out: dict[str, str] = {}
    authors: list[str] = []
    for name in ("title", "category", "domain", "author", "entity"):
        value = props.get(name)
        if isinstance(value, list) and name != "title" and all(isinstance(v, str) for v in value):
            names = [v.strip() for v in value if v.strip()]
            out[name] = names[0] if names else ""
        elif value is None or isinstance(value, str):
            names = [value.strip()] if value and value.strip() else []
            out[name] = names[0] if names else ""
        else:
            kinds = "a string" if name == "title" else "a string or a list of strings"
            raise ValueError(f"properties.{name} must be {kinds}")
        if name == "author":
            authors = names
    return out, authors


def _checked_properties(props: dict) -> tuple[dict[str, list[str]], dt.date | None]:
    """The list properties (``tags``, ``people``) stripped, and the date; ``ValueError`` otherwise."""
    lists: dict[str, list[str]] = {}
    for name in ("tags", "people"):
        value = props.get(name)
        if value is None:
            value = []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"properties.{name} must be a list of strings")
        lists[name] = [v.strip() for v in value if v.strip()]
    date = None
    if _date_text(props.get("date")) not in (None, ""):
        raw = _date_text(props["date"])
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


def webhook_delivery(payload: dict, *, collection: str = "notion") -> WebhookDelivery:
    """The n8n webhook payload checked: its document, whether the page is gone, its edit time.

    A page that is gone (``archived`` or ``in_trash``) still needs its id; its content is not read.
    Raises ``ValueError`` naming the offending field for anything malformed.
    """
    document = webhook_to_document(payload, collection=collection)
    gone, edited_at = _checked_flags(payload)
    return WebhookDelivery(document=document, gone=gone, edited_at=edited_at)


def webhook_to_document(payload: dict, *, collection: str = "notion") -> SourceDocument:
    """The n8n webhook payload → one document with a single unit ``u_0``.

    One unit keeps chunk uids in the form the webhook has always produced
    (``notion:notion_note:{page_id}:u_0:{i}``), so a page sent again replaces its chunks and
    judgments recorded against those uids stay valid; ``split_text`` cuts the content at 1000/180.
    Raises ``ValueError`` naming the offending field for anything malformed.
    """
    page_id, props, content, url = _checked_fields(payload)
    page_id = canonical_page_id(page_id)
    one, authors = _one_values(props)
    lists, date = _checked_properties(props)
    title, author = one["title"], one["author"]
    people = list(dict.fromkeys([*authors, *lists["people"]]))
    domain = one["domain"] or one["category"]
    metadata = {
        **_extra_properties(props), "notion_id": page_id, "category": one["category"], "author": author,
        "people": people, "entity": one["entity"], "tags": lists["tags"],
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
