"""Notion page properties → plain JSON values.

Unknown property types are logged and kept only when they are a plain scalar.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ingestion.sources import markup
from ingestion.sources.notion.blocks import media_url, plain_text

logger = logging.getLogger(__name__)


def _user(user: dict | None) -> str | None:
    if not user:
        return None
    return user.get("name") or user.get("id")


def _date(value: dict | None) -> dict | None:
    if not value or not value.get("start"):
        return None
    return {"start": value.get("start"), "end": value.get("end")}


def _as_list(value: Any) -> list:
    """Property items come one by one, page properties as lists: always a list."""
    return value if isinstance(value, list) else [value] if value else []


def _unique_id(value: dict | None) -> str | None:
    if not value or value.get("number") is None:
        return None
    return f"{value['prefix']}-{value['number']}" if value.get("prefix") else str(value["number"])


def _verification(value: dict | None) -> dict | None:
    if not value:
        return None
    return {"state": value.get("state"), "verified_by": _user(value.get("verified_by")),
            "date": _date(value.get("date"))}  # fmt: skip


def _formula(value: dict | None) -> Any:
    inner = value or {}
    result = inner.get(inner.get("type", ""))
    return _date(result) if inner.get("type") == "date" else result


def _rollup(value: dict | None) -> Any:
    inner = value or {}
    sub = inner.get("type", "")
    if sub == "array":
        out: list[Any] = []
        for item in inner.get("array") or []:
            got = property_value(item)
            out.extend(got if isinstance(got, list) else [got] if got not in (None, "") else [])
        return out
    return _date(inner.get("date")) if sub == "date" else inner.get(sub)


def _place(value: dict | None) -> Any:
    if not value:
        return None
    return value.get("name") or value.get("address") or {k: value.get(k) for k in ("lat", "lon")}


_VALUES: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(("title", "rich_text"), lambda value: plain_text(_as_list(value))),
    **dict.fromkeys(
        ("number", "checkbox", "url", "email", "phone_number", "created_time", "last_edited_time"), lambda value: value
    ),
    **dict.fromkeys(("select", "status"), lambda value: (value or {}).get("name")),
    "multi_select": lambda value: [o.get("name") for o in value or [] if o.get("name")],
    "date": _date,
    "people": lambda value: [n for n in (_user(u) for u in _as_list(value)) if n],
    **dict.fromkeys(("created_by", "last_edited_by"), _user),
    "relation": lambda value: [r.get("id") for r in _as_list(value) if r.get("id")],
    "files": lambda value: [media_url(f) or f.get("name", "") for f in value or []],
    "unique_id": _unique_id,
    "verification": _verification,
    "formula": _formula,
    "rollup": _rollup,
    "place": _place,
    "button": lambda value: None,
}


def property_value(prop: dict) -> Any:
    """One property (page property or property item) → a plain JSON value."""
    kind = prop.get("type", "")
    value = prop.get(kind)
    convert = _VALUES.get(kind)
    if convert is not None:
        return convert(value)
    logger.info("unknown Notion property type %s", kind)
    return value if isinstance(value, str | int | float | bool) else None


def properties_to_metadata(properties: dict) -> dict:
    """Page properties → ``{snake_case_name: plain JSON value}`` (names de-duplicated)."""
    meta: dict[str, Any] = {}
    for name, prop in (properties or {}).items():
        if not isinstance(prop, dict):
            continue
        key = markup.normalise_key(name)
        base, n = key, 1
        while key in meta:
            n += 1
            key = f"{base}_{n}"
        meta[key] = property_value(prop)
    return meta
