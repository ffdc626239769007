"""Property mappings: which source properties become ``people``, ``tags``, ``entity``, ``date``
and ``domain``. Pure functions over a unit's metadata, so the same mapping is applied when a
page is indexed and when a changed mapping is re-applied to stored chunks (without re-embedding).

Sources keep every property in ``metadata`` under its normalised name (``Family`` → ``family``);
a mapping names properties as the user sees them and is matched on the normalised name.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from ingestion.sources import markup

LIST_TARGETS = ("people", "tags")
ONE_TARGETS = ("entity", "date", "domain")


@dataclass(frozen=True)
class PropertyMapping:
    people: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    entity: str = ""
    date: str = ""
    domain: str = ""
    _keys: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: dict | None) -> PropertyMapping:
        """Validate a mapping (``{"people": ["Family", "Friends"], "entity": "Client"}``)."""
        data = data or {}
        if not isinstance(data, dict):
            raise ValueError("the mapping must be an object like {\"people\": [\"Family\"], \"entity\": \"Client\"}")
        unknown = sorted(set(data) - set(LIST_TARGETS) - set(ONE_TARGETS))
        if unknown:
            raise ValueError(
                f"unknown mapping target(s) {', '.join(unknown)}; use {', '.join(LIST_TARGETS + ONE_TARGETS)}"
            )
        values: dict[str, Any] = {}
        for name in LIST_TARGETS:
            raw = data.get(name) or []
            if isinstance(raw, str):
                raw = [p for p in raw.split(",")]
            if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
                raise ValueError(f"mapping.{name} must be a list of property names")
            values[name] = tuple(p.strip() for p in raw if p.strip())
        for name in ONE_TARGETS:
            raw = data.get(name) or ""
            if not isinstance(raw, str):
                raise ValueError(f"mapping.{name} must be one property name")
            values[name] = raw.strip()
        return cls(**values)

    def as_dict(self) -> dict:
        return {"people": list(self.people), "tags": list(self.tags), "entity": self.entity, "date": self.date,
                "domain": self.domain}  # fmt: skip

    def __bool__(self) -> bool:
        return bool(self.people or self.tags or self.entity or self.date or self.domain)


def _values(value: Any) -> list[str]:
    """A stored property value → strings (multi-select and people lists, selects, titles, dates)."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [s for v in value for s in _values(v)]
    if isinstance(value, dict):
        return _values(value.get("start") or value.get("name"))
    return [str(value).strip()] if str(value).strip() else []


def _unique(values: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.lower(), value)
    return list(seen.values())


@dataclass
class Mapped:
    """What a mapping decides for one unit; ``None`` means "leave the source's own value"."""

    people: list[str] | None = None
    tags: list[str] | None = None
    entity: str | None = None
    date: dt.date | None = None
    domain: str | None = None

    @property
    def concepts(self) -> list[str] | None:
        return None if self.tags is None else list(dict.fromkeys(markup.concept_key(t) for t in self.tags))


def apply_mapping(mapping: PropertyMapping, metadata: dict) -> Mapped:
    """Read the mapped properties out of ``metadata`` (keys are normalised property names)."""
    out = Mapped()

    def get(name: str) -> list[str]:
        return _values(metadata.get(markup.normalise_key(name)))

    if mapping.people:
        out.people = _unique([v for p in mapping.people for v in get(p)])
    if mapping.tags:
        out.tags = _unique([v for p in mapping.tags for v in get(p)])
    if mapping.entity:
        out.entity = next(iter(get(mapping.entity)), "")
    if mapping.date:
        out.date = next((d for d in (markup.parse_date(v) for v in get(mapping.date)) if d), None)
    if mapping.domain:
        out.domain = next(iter(get(mapping.domain)), "")[:100]
    return out


def map_unit(unit, mapping: PropertyMapping) -> None:
    """Apply ``mapping`` to a ``rag.units.Unit`` in place (metadata people/tags/entity, date, domain)."""
    if not mapping:
        return
    mapped = apply_mapping(mapping, unit.metadata)
    meta = dict(unit.metadata)
    if mapped.people is not None:
        meta["people"] = mapped.people
    if mapped.tags is not None:
        meta["tags"] = mapped.tags
        unit.concepts = mapped.concepts
    if mapped.entity is not None:
        meta["entity"] = mapped.entity
    if mapped.date is not None or mapping.date:
        unit.date = mapped.date or unit.date
    if mapped.domain is not None:
        unit.domain = mapped.domain
    unit.metadata = meta
