"""Reads for answering: the facet (metadata value) cache, metadata counts, chunks by uid, the
agenda topics of documents.

Every query carries the caller's ``Scope`` in its SQL, so a user never learns a name, a tag or
a count from a chunk they may not see. Facets are cached per scope (Django's cache framework).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache

from knowhub import replicas
from rag.acl import Scope
from rag.answering.sources import DocKey
from rag.index_version import index_version
from rag.search import HIT_COLUMNS, HIT_FIELDS, Hit, SearchFilters
from rag.search import filter_sql as search_filter_sql  # the same WHERE the search applies

logger = logging.getLogger(__name__)

FACET_LIMIT = 500


@dataclass
class Facets:
    """Distinct metadata values a scope can see, each with its number of source documents."""

    collections: list[dict]
    domains: list[dict]
    people: list[dict]
    tags: list[dict]
    entities: list[dict]
    date_min: str | None = None
    date_max: str | None = None
    latest_meeting: str | None = None  # the newest day a document with participants is dated

    def values(self, kind: str) -> list[str]:
        return [row["value"] for row in getattr(self, kind)]

    def as_dict(self) -> dict:
        return {
            "collections": self.collections,
            "domains": self.domains,
            "people": self.people,
            "tags": self.tags,
            "entities": self.entities,
            "date_min": self.date_min,
            "date_max": self.date_max,
            "latest_meeting": self.latest_meeting,
        }


def _scope_key(scope: Scope, collections: list[str] | None) -> str:
    raw = f"{scope.staff}|{sorted(scope.project_ids)}|{scope.owner_hash}|{sorted(collections or [])}"
    return "knowhub:facets:" + hashlib.sha256(raw.encode()).hexdigest()[:32]


# On a large index, where counting every chunk takes seconds, counts made for an earlier version
# serve for this many times as long as counting took: a stream of changes then costs at most a
# tenth of the time in recounting. Quicker counts are made again with every change.
RECOUNT_COST_RATIO = 10.0
SLOW_COUNT_SECONDS = 1.0


def _still_fresh(cached: dict | None, version: int) -> bool:
    """Counts made for the index's ``version`` serve until the cache's timeout; older ones, when
    counting was slow, while they are younger than ``RECOUNT_COST_RATIO`` times it took."""
    if not cached or "facets" not in cached:
        return False
    if cached["version"] == version:
        return True
    age = time.time() - cached["at"]  # the wall clock: a cache may be shared by processes
    return cached["seconds"] >= SLOW_COUNT_SECONDS and age < RECOUNT_COST_RATIO * cached["seconds"]


_DOC = "count(DISTINCT (c.collection, c.source_type, c.source_id))"


def _rows(sql: str, params: dict) -> list[dict]:
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [{"value": value, "count": int(count)} for value, count in cursor.fetchall() if value]


@replicas.read_only
def facet_values(*, scope: Scope, collections: list[str] | None = None, use_cache: bool = True) -> Facets:
    """People, tags, entities, domains and collections the scope can see (cached per scope)."""
    key = _scope_key(scope, collections)
    version = index_version()  # an upload, a worker's sync: the counts are made again at once
    if use_cache and _still_fresh(cached := cache.get(key), version):
        return Facets(**cached["facets"])
    started = time.monotonic()
    where, params = search_filter_sql(SearchFilters(collections=collections or None), scope)
    params["lim"] = FACET_LIMIT

    def array_facet(field: str) -> list[dict]:
        return _rows(
            f"""SELECT min(v) AS value, {_DOC}
                FROM rag_chunk c, LATERAL jsonb_array_elements_text(
                    CASE WHEN jsonb_typeof(c.metadata->'{field}') = 'array' THEN c.metadata->'{field}'
                         WHEN jsonb_typeof(c.metadata->'{field}') = 'string'
                             THEN jsonb_build_array(c.metadata->'{field}')
                         ELSE '[]'::jsonb END) AS v
                WHERE {where} GROUP BY lower(v) ORDER BY 2 DESC, 1 LIMIT %(lim)s""",
            params,
        )

    people = array_facet("people")
    tags = array_facet("tags")
    entities = _rows(
        f"""SELECT min(c.metadata->>'entity'), {_DOC} FROM rag_chunk c
            WHERE {where} AND coalesce(c.metadata->>'entity', '') <> ''
            GROUP BY lower(c.metadata->>'entity') ORDER BY 2 DESC, 1 LIMIT %(lim)s""",
        params,
    )
    domains = _rows(
        f"""SELECT c.domain, {_DOC} FROM rag_chunk c WHERE {where} AND c.domain <> ''
            GROUP BY c.domain ORDER BY 2 DESC, 1 LIMIT %(lim)s""",
        params,
    )
    collections_rows = _rows(
        f"""SELECT c.collection, {_DOC} FROM rag_chunk c WHERE {where}
            GROUP BY c.collection ORDER BY 1 LIMIT %(lim)s""",
        params,
    )
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(
            f"""SELECT min(c.date), max(c.date),
                       max(c.date) FILTER (WHERE jsonb_typeof(c.metadata->'people') = 'array'
                                           AND c.metadata->'people' <> '[]'::jsonb)
                FROM rag_chunk c WHERE {where}""",
            params,
        )
        date_min, date_max, latest_meeting = cursor.fetchone()
    facets = Facets(
        collections=collections_rows,
        domains=domains,
        people=people,
        tags=tags,
        entities=entities,
        date_min=date_min.isoformat() if date_min else None,
        date_max=date_max.isoformat() if date_max else None,
        latest_meeting=latest_meeting.isoformat() if latest_meeting else None,
    )
    entry = {"version": version, "at": time.time(), "seconds": time.monotonic() - started}
    cache.set(key, {**entry, "facets": facets.as_dict()}, settings.KNOWHUB_FACET_CACHE_SECONDS)
    return facets


@dataclass(frozen=True)
class CountedEntry:
    """One source document a count counted: its key, its title and its (first) date."""

    key: DocKey
    title: str
    date: dt.date | None


@dataclass
class SourceCount:
    """How many source documents match some filters, the dates they span, and the documents,
    oldest first (undated ones before them)."""

    sources: int
    first_date: dt.date | None
    last_date: dt.date | None
    dates: list[dt.date]
    entries: list[CountedEntry] = field(default_factory=list)


@replicas.read_only
def count_sources(*, scope: Scope, filters: SearchFilters) -> SourceCount:
    """Distinct source documents (a journal entry, a meeting) matching ``filters`` in ``scope``."""
    where, params = search_filter_sql(filters, scope)
    with replicas.read_connection().cursor() as cursor:
        entries = _documents(cursor, where, params)
    dates = [e.date for e in entries if e.date]
    return SourceCount(
        sources=len(entries), first_date=dates[0] if dates else None, last_date=dates[-1] if dates else None,
        dates=dates, entries=entries,
    )  # fmt: skip


@replicas.read_only
def period_chunks(
    *, scope: Scope, filters: SearchFilters, limit: int, meetings: bool, mentioning: str = ""
) -> tuple[list[tuple[str, DocKey]], list[CountedEntry]]:
    """The documents matching ``filters`` in ``scope`` (with ``meetings``, only those whose
    metadata lists people): up to ``limit`` of their chunks (uid, document), newest document
    first, and every one of the documents, oldest first. With ``mentioning`` (words), only chunks
    the keyword index finds every one of them in (its stems: "closures" finds "a closure")."""
    where, params = search_filter_sql(filters, scope)
    if meetings:
        where = f"{where} AND jsonb_typeof(c.metadata->'people') = 'array' AND c.metadata->'people' <> '[]'::jsonb"
    if mentioning:
        where = f"{where} AND c.tsv @@ plainto_tsquery('english', %(mentioning)s)"
        params = {**params, "mentioning": mentioning}
    with replicas.read_connection().cursor() as cursor:
        documents = _documents(cursor, where, params)
        cursor.execute(
            f"""SELECT c.chunk_uid, c.collection, c.source_type, c.source_id FROM rag_chunk c WHERE {where}
                ORDER BY c.date DESC NULLS LAST, c.source_id, c.chunk_idx LIMIT %(listed_limit)s""",
            {**params, "listed_limit": limit},
        )
        chunks = [(row[0], (row[1], row[2], row[3])) for row in cursor.fetchall()]
    return chunks, documents


def _documents(cursor, where: str, params: dict) -> list[CountedEntry]:
    """The source documents of the chunks ``where`` keeps, oldest first; undated ones before them,
    so the last are the ones known to be the latest (the ones named past a few)."""
    cursor.execute(
        f"""SELECT c.collection, c.source_type, c.source_id, min(c.date), min(c.title)
            FROM rag_chunk c WHERE {where}
            GROUP BY c.collection, c.source_type, c.source_id""",
        params,
    )
    return sorted(
        (CountedEntry(key=(row[0], row[1], row[2]), title=row[4] or row[2], date=row[3]) for row in cursor.fetchall()),
        key=lambda e: (e.date is not None, e.date or dt.date.min, e.title),
    )


@replicas.read_only
def chunks_by_uid(*, scope: Scope, uids: list[str], scores: dict[str, dict] | None = None) -> list[Hit]:
    """Live chunks with these uids that ``scope`` may see, in the order of ``uids``.

    Follow-up answers reuse earlier context this way: the ACL is checked again, so a chunk that
    was deleted or made private since is dropped rather than quoted.
    """
    if not uids:
        return []
    acl_sql, acl_params = scope.sql("c")
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT {HIT_COLUMNS} FROM rag_chunk c WHERE c.chunk_uid = ANY(%s) AND c.deleted_at IS NULL AND {acl_sql}",
            [list(uids), *acl_params],
        )
        columns = [col.name for col in cursor.description]
        rows = {r["chunk_uid"]: r for r in (dict(zip(columns, row, strict=True)) for row in cursor.fetchall())}
    hits = []
    scores = scores or {}
    for uid in uids:
        row = rows.get(uid)
        if row is None:
            continue
        if isinstance(row["metadata"], str):  # HIT_COLUMNS selects metadata as text
            row["metadata"] = json.loads(row["metadata"]) if row["metadata"] else {}
        s = scores.get(uid, {})
        hits.append(
            Hit(
                **{k: row[k] for k in HIT_FIELDS},
                vec_score=float(s.get("vec_score", 0.0)),
                txt_score=float(s.get("txt_score", 0.0)),
                score=float(s.get("score", 0.0)),
                rank=len(hits) + 1,
            )
        )
    return hits


@replicas.read_only
def document_topics(*, scope: Scope, docs: list[DocKey]) -> dict[DocKey, list[str]]:
    """Every topic (``metadata["topics"]``, a meeting's agenda items) filed on the live chunks of
    each document ``(collection, source_type, source_id)`` that ``scope`` may see.

    A search returns a meeting's few closest turns; the meeting's whole agenda says better what
    it was about ("Product quotation" among its items, though no retrieved turn is filed there).
    """
    if not docs:
        return {}
    acl_sql, acl_params = scope.sql("c")
    keys = ", ".join(["(%s, %s, %s)"] * len(docs))
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(
            f"""SELECT DISTINCT c.collection, c.source_type, c.source_id, t.topic
                FROM rag_chunk c
                CROSS JOIN LATERAL jsonb_array_elements_text(
                    CASE WHEN jsonb_typeof(c.metadata -> 'topics') = 'array'
                         THEN c.metadata -> 'topics' ELSE '[]'::jsonb END) AS t(topic)
                WHERE (c.collection, c.source_type, c.source_id) IN ({keys})
                  AND c.deleted_at IS NULL AND {acl_sql}
                ORDER BY 1, 2, 3, 4""",
            [part for key in docs for part in key] + acl_params,
        )
        out: dict[DocKey, list[str]] = {}
        for collection, source_type, source_id, topic in cursor.fetchall():
            if topic:
                out.setdefault((collection, source_type, source_id), []).append(topic)
    return out
