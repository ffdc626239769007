"""What sources hand to the index: plain dataclasses, no Django.

Every source (admin content, Notion, Logseq, documents, session artifacts) turns what it reads
into one ``SourceDocument`` per source object, holding ``Unit``s. ``rag.services.chunk_upsert``
splits each unit into chunks, embeds what changed and writes them. Keeping this shape free of
Django lets parsers be tested without a database.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any


class Visibility:
    """Who may see a chunk. Enforced inside the retrieval SQL."""

    PUBLIC = "public"  # everyone
    RESTRICTED = "restricted"  # members of ``project``
    PRIVATE = "private"  # the user whose keyed id hash (rag.acl.user_hash) is ``owner_hash`` (and staff)

    CHOICES = (PUBLIC, RESTRICTED, PRIVATE)


@dataclass
class Unit:
    """One logical piece of a source (a page block group, a bullet subtree, a layer, a turn run).

    ``unit_anchor`` must be stable across syncs of the same source: it is part of ``chunk_uid``.
    """

    unit_anchor: str
    content: str
    title: str = ""
    breadcrumb: str = ""
    url: str = ""
    domain: str = ""
    concepts: list[str] = field(default_factory=list)
    mnemonic_tags: list[str] = field(default_factory=list)
    code_languages: list[str] = field(default_factory=list)
    has_image: bool = False
    date: dt.date | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class SourceDocument:
    """Everything the index holds for one source object, replaced as a whole on each sync.

    ``project`` is a project *slug* (or ``None``); ``owner_hash`` is the keyed hash (HMAC-SHA256 hex) of the owning
    user's id for private chunks (see ``rag.acl.user_hash``).
    """

    collection: str
    source_type: str
    source_id: str
    units: list[Unit]
    visibility: str = Visibility.PUBLIC
    project: str | None = None
    owner_hash: str = ""
    author_hash: str = ""
    pii_level: int = 0
    chunk_size: int | None = None  # None: KNOWHUB_CHUNK_SIZE (1000)
    chunk_overlap: int | None = None  # None: KNOWHUB_CHUNK_OVERLAP (180)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.collection, self.source_type, self.source_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, for Celery task arguments."""
        data = asdict(self)
        for unit in data["units"]:
            if unit["date"] is not None:
                unit["date"] = unit["date"].isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceDocument:
        units = []
        for raw in data.get("units", []):
            raw = dict(raw)
            if isinstance(raw.get("date"), str):
                raw["date"] = dt.date.fromisoformat(raw["date"])
            units.append(Unit(**raw))
        return cls(**{**data, "units": units})
