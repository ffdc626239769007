"""Hybrid retrieval: the one selector every surface (API, ask, evaluate, bench) searches with.

Plan (see STYLE.md "Hybrid search"): take the top ``n`` candidates from the HNSW index
(``ORDER BY embedding <=> q LIMIT n``) and the top ``n`` from the GIN full-text index, each with
the same filters and ACL in SQL, UNION them, then score only the union:
``w_vec·(1 − cosine distance) + w_txt·(text score / max text score in the union)``.
``rrf`` fuses the two ranks instead (1/(60+rank)).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import connection, transaction

from feedback.ranking import rescore
from rag.acl import Scope
from rag.embeddings import Embedder, get_embedder
from rag.selectors import check_query_model

logger = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "fulltext", "rrf")
MAX_QUERY_CHARS = 2000
MAX_TSQUERY_TERMS = 64
RRF_K = 60


@dataclass
class SearchFilters:
    """Every filter a search can carry; all are applied inside the SQL."""

    collections: list[str] | None = None
    domain: str | None = None
    concepts: list[str] = field(default_factory=list)
    mnemonic_tags: list[str] = field(default_factory=list)
    has_image: bool | None = None
    code: bool | None = None
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    source_type: str | None = None
    source_ids: list[str] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    entity: str | None = None

    def as_dict(self) -> dict:
        out = {}
        for key, value in asdict(self).items():
            if value in (None, [], ""):
                continue
            out[key] = value.isoformat() if isinstance(value, dt.date) else value
        return out


@dataclass
class Hit:
    chunk_uid: str
    title: str
    content: str
    url: str
    collection: str
    source_type: str
    source_id: str
    breadcrumb: str
    domain: str
    concepts: list[str]
    mnemonic_tags: list[str]
    code_languages: list[str]
    has_image: bool
    date: dt.date | None
    metadata: dict
    vec_score: float
    txt_score: float
    score: float
    rank: int = 0


@dataclass
class SearchResult:
    hits: list[Hit]
    took_ms: float
    mode: str
    filters: SearchFilters
    embed_ms: float = 0.0
    candidates: int = 0


def clean_query_text(text: str) -> str:
    """Cap and clean a query before it reaches ``to_tsquery`` (long queries overflow its stack)."""
    words = re.findall(r"\w+", text[:MAX_QUERY_CHARS].lower())
    seen: list[str] = []
    for word in words:
        if word not in seen:
            seen.append(word)
        if len(seen) >= MAX_TSQUERY_TERMS:
            break
    return " ".join(seen)


def _filter_sql(filters: SearchFilters, scope: Scope) -> tuple[str, dict]:
    """The WHERE clause shared by both candidate queries (liveness, ACL, filters), with named
    parameters ``f0``, ``f1``… so it can appear in the SQL more than once."""
    clauses = ["c.deleted_at IS NULL"]
    params: dict = {}

    def p(value) -> str:
        name = f"f{len(params)}"
        params[name] = value
        return f"%({name})s"

    acl_sql, acl_params = scope.sql("c")
    for value in acl_params:
        acl_sql = acl_sql.replace("%s", p(value), 1)
    clauses.append(acl_sql)
    if filters.collections:
        clauses.append(f"c.collection = ANY({p(list(filters.collections))})")
    if filters.domain:
        clauses.append(f"c.domain = {p(filters.domain)}")
    if filters.concepts:
        clauses.append(f"c.concepts && {p(list(filters.concepts))}::varchar[]")
    if filters.mnemonic_tags:
        clauses.append(f"c.mnemonic_tags && {p(list(filters.mnemonic_tags))}::varchar[]")
    if filters.has_image is not None:
        clauses.append(f"c.has_image = {p(filters.has_image)}")
    if filters.code is not None:
        clauses.append("cardinality(c.code_languages) > 0" if filters.code else "cardinality(c.code_languages) = 0")
    if filters.date_from:
        clauses.append(f"c.date >= {p(filters.date_from)}")
    if filters.date_to:
        clauses.append(f"c.date <= {p(filters.date_to)}")
    if filters.source_type:
        clauses.append(f"c.source_type = {p(filters.source_type)}")
    if filters.source_ids:
        clauses.append(f"c.source_id = ANY({p(list(filters.source_ids))})")
    if filters.people:
        clauses.append(f"(c.metadata->'people') ?| {p(list(filters.people))}")
    if filters.tags:
        tags = p(list(filters.tags))
        clauses.append(f"(c.concepts && {tags}::varchar[] OR (c.metadata->'tags') ?| {tags})")
    if filters.entity:
        clauses.append(f"lower(c.metadata->>'entity') = lower({p(filters.entity)})")
    return " AND ".join(clauses), params


_HIT_COLUMNS = (
    "c.chunk_uid, c.title, c.content, c.url, c.collection, c.source_type, c.source_id, c.breadcrumb, "
    "c.domain, c.concepts, c.mnemonic_tags, c.code_languages, c.has_image, c.date, c.metadata"
)


def _candidate_sql(where: str, mode: str) -> str:
    """SQL returning (columns…, vec_score, txt_raw, vec_rank, txt_rank) for the candidate union.

    Expected plan: ``vec`` is an Index Scan using chunk_embedding_hnsw (iterative when filtered),
    ``txt`` a Bitmap Index Scan on chunk_tsv_gin; the outer join touches only their union.
    """
    vec = f"""
        vec AS (
            SELECT c.id, row_number() OVER () AS vec_rank
            FROM (SELECT c.id FROM rag_chunk c WHERE {where}
                  ORDER BY c.embedding <=> %(qvec)s::vector LIMIT %(n)s) c
        )"""
    txt = f"""
        txt AS (
            SELECT c.id, row_number() OVER (ORDER BY ts_rank_cd(c.tsv, q.tq, 32) DESC, c.id) AS txt_rank
            FROM rag_chunk c, q
            WHERE c.tsv @@ q.tq AND {where}
            ORDER BY ts_rank_cd(c.tsv, q.tq, 32) DESC, c.id
            LIMIT %(n)s
        )"""
    parts = ["q AS (SELECT to_tsquery('english', %(tsq)s) AS tq)"]
    if mode != "fulltext":
        parts.append(vec)
    if mode != "vector":
        parts.append(txt)
    if mode == "vector":
        union = "SELECT id FROM vec"
    elif mode == "fulltext":
        union = "SELECT id FROM txt"
    else:
        union = "SELECT id FROM vec UNION SELECT id FROM txt"
    vec_join = "LEFT JOIN vec ON vec.id = c.id" if mode != "fulltext" else ""
    txt_join = "LEFT JOIN txt ON txt.id = c.id" if mode != "vector" else ""
    vec_rank = "vec.vec_rank" if mode != "fulltext" else "NULL::bigint"
    txt_rank = "txt.txt_rank" if mode != "vector" else "NULL::bigint"
    return f"""
        WITH {", ".join(parts)},
        cand AS ({union})
        SELECT {_HIT_COLUMNS},
               1 - (c.embedding <=> %(qvec)s::vector) AS vec_score,
               CASE WHEN c.tsv @@ q.tq THEN ts_rank_cd(c.tsv, q.tq, 32) ELSE 0 END AS txt_raw,
               {vec_rank} AS vec_rank, {txt_rank} AS txt_rank
        FROM cand JOIN rag_chunk c ON c.id = cand.id CROSS JOIN q
        {vec_join} {txt_join}
    """


def _tsquery_text(query: str) -> str:
    """OR the query's words: ``to_tsquery`` then stems them and drops stop-words."""
    words = clean_query_text(query).split()
    return " | ".join(words) if words else "''"


def chunk_search(
    *,
    query: str,
    scope: Scope,
    filters: SearchFilters | None = None,
    top_k: int = 8,
    mode: str = "hybrid",
    dedupe: bool = False,
    embedder: Embedder | None = None,
    query_vector: list[float] | None = None,
    weights: tuple[float, float] | None = None,
) -> SearchResult:
    """Search the chunks ``scope`` may see. Filters and ACL are applied in the SQL, never after."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    filters = filters or SearchFilters()
    started = time.perf_counter()
    embed_ms = 0.0
    if query_vector is None:
        embedder = embedder or get_embedder()
        check_query_model(embedder.name)
        t0 = time.perf_counter()
        query_vector = embedder.embed_query(query[:MAX_QUERY_CHARS])
        embed_ms = (time.perf_counter() - t0) * 1000
    w_vec, w_txt = weights or (settings.KNOWHUB_HYBRID_VECTOR_WEIGHT, settings.KNOWHUB_HYBRID_TEXT_WEIGHT)
    n = max(top_k * (4 if dedupe else 1), settings.KNOWHUB_SEARCH_CANDIDATES)
    where, named = _filter_sql(filters, scope)
    sql = _candidate_sql(where, mode)
    named.update(qvec=str(query_vector), n=n, tsq=_tsquery_text(query))

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {int(max(n, 40))}")
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(sql, named)
        columns = [col.name for col in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    max_txt = max((r["txt_raw"] for r in rows), default=0.0) or 1.0
    for r in rows:
        r["txt_score"] = float(r["txt_raw"]) / max_txt if r["txt_raw"] else 0.0
        r["vec_score"] = float(r["vec_score"])
        if mode == "rrf":
            r["score"] = sum(1.0 / (RRF_K + rank) for rank in (r["vec_rank"], r["txt_rank"]) if rank)
        elif mode == "vector":
            r["score"] = r["vec_score"]
        elif mode == "fulltext":
            r["score"] = r["txt_score"]
        else:
            r["score"] = w_vec * r["vec_score"] + w_txt * r["txt_score"]
    # Learned ranking (feedback app): tuned fusion weights and bounded per-label adjustments.
    rescore(rows, query=query, query_vector=query_vector, mode=mode, weights_given=weights is not None,
            embedder_name=getattr(embedder, "name", None))  # fmt: skip
    rows.sort(key=lambda r: (-r["score"], r["chunk_uid"]))

    hits: list[Hit] = []
    seen_parents: set[tuple[str, str, str]] = set()
    for r in rows:
        parent = (r["collection"], r["source_type"], r["source_id"])
        if dedupe and parent in seen_parents:
            continue
        seen_parents.add(parent)
        hits.append(
            Hit(
                **{k: r[k] for k in _HIT_FIELDS},
                vec_score=round(r["vec_score"], 6),
                txt_score=round(r["txt_score"], 6),
                score=round(r["score"], 6),
                rank=len(hits) + 1,
            )
        )
        if len(hits) >= top_k:
            break
    took_ms = (time.perf_counter() - started) * 1000
    return SearchResult(hits=hits, took_ms=took_ms, mode=mode, filters=filters, embed_ms=embed_ms, candidates=len(rows))


_HIT_FIELDS = (
    "chunk_uid", "title", "content", "url", "collection", "source_type", "source_id", "breadcrumb",
    "domain", "concepts", "mnemonic_tags", "code_languages", "has_image", "date", "metadata",
)  # fmt: skip


def known_collections(scope: Scope) -> list[str]:
    """Collection names that hold chunks the scope may see (for validating requests)."""
    acl_sql, params = scope.sql("c")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT c.collection FROM rag_chunk c WHERE c.deleted_at IS NULL AND {acl_sql} ORDER BY 1",
            params,
        )
        return [row[0] for row in cursor.fetchall()]
