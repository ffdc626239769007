"""Hybrid retrieval: the one selector every surface (API, ask, evaluate, bench) searches with.

Plan: take the top ``n`` candidates from the HNSW index (``ORDER BY embedding <=> q LIMIT n``)
and the top ``n`` from the keyword backend (``rag.text_search``: the pg_textsearch BM25 index, or
BM25 in SQL over the GIN index), each with the same filters and ACL in SQL, UNION them, then
score only the union: ``w_vec·(1 − cosine distance) + w_txt·(text score / max text score in the
union)``. ``rrf`` fuses the two ranks instead (1/(60+rank)). The vector half runs on a side
connection while the keyword half runs on the caller's (``rag.side_search``).

Public surface for other modules: ``filter_sql`` (the WHERE every read of chunks on a user's
behalf applies), ``HIT_COLUMNS``/``HIT_FIELDS`` (what a hit carries), ``register_rescorer``
(learned ranking plugs in here; the feedback app registers its own in ``AppConfig.ready``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DataError, connections, transaction

from knowhub import replicas
from rag import side_search, split_search, text_search
from rag.acl import Scope
from rag.embeddings import Embedder, get_embedder
from rag.selectors import EmbeddingModelMismatch, check_query_model
from rag.text_query import MAX_QUERY_CHARS, clean_query_text  # noqa: F401  (public: query cleaning)

logger = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "fulltext", "rrf")
RRF_K = 60
MAX_QUERY_WORDS = 300

# Re-scorers run on the fused candidate rows, in registration order (see ``register_rescorer``).
Rescorer = Callable[..., object]
_rescorers: list[Rescorer] = []


def register_rescorer(func: Rescorer) -> Rescorer:
    """Plug a re-scorer into every search: ``func(rows, *, query, query_vector, mode,
    weights_given, embedder_name)`` adjusts ``row["score"]`` in place; rows are re-sorted after.
    Registering the same function twice keeps one."""
    if func not in _rescorers:
        _rescorers.append(func)
    return func


class SearchRequestError(ValueError):
    """A search request refused before anything runs (for the APIs: a 400, or a 404 for a name).

    ``code`` says what is wrong (``unknown_…`` for a name that does not exist for the caller);
    ``field`` names the request field at fault, when one is, so an API can report it as that
    field's error like any other invalid input.
    """

    def __init__(self, code: str, detail: str, *, field: str | None = None):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.field = field


def validate_query(query: str | None) -> str:
    """``query`` stripped; ``SearchRequestError`` when it is empty or too long to search."""
    query = (query or "").strip()
    if not query:
        raise SearchRequestError("empty_query", "The question is empty.", field="query")
    if len(query) > MAX_QUERY_CHARS or len(query.split()) > MAX_QUERY_WORDS:
        raise SearchRequestError(
            "query_too_long",
            f"The question is longer than {MAX_QUERY_CHARS} characters or {MAX_QUERY_WORDS} words.",
            field="query",
        )
    return query


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

    def validate(self, *, scope: Scope) -> None:
        """Refuse filters no search can honour, with ``SearchRequestError``: an end date before
        the start date, a collection ``scope`` cannot search (one that does not exist and one
        the caller may not see are the same to them). Every surface checks requests with this."""
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise SearchRequestError(
                "invalid_dates", "The end date (date_to) is before the start date (date_from).", field="date_to"
            )
        if self.collections:
            visible = known_collections(scope)
            unknown = sorted(set(self.collections) - set(visible))
            if unknown:
                raise SearchRequestError(
                    "unknown_collection",
                    f"Unknown collection(s): {', '.join(unknown)}; you can search: {', '.join(visible) or 'none'}.",
                    field="collections",
                )


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


# Each filter's condition, in the order the WHERE lists them; ``{p}`` is the filter's value
# (a list value is passed as an array). ``code`` has no value: true and false are two conditions.
_FILTER_CLAUSES = (
    ("collections", "c.collection = ANY({p})"),
    ("domain", "c.domain = {p}"),
    ("concepts", "c.concepts && {p}::varchar[]"),
    ("mnemonic_tags", "c.mnemonic_tags && {p}::varchar[]"),
    ("has_image", "c.has_image = {p}"),
    ("code", ""),
    ("date_from", "c.date >= {p}"),
    ("date_to", "c.date <= {p}"),
    ("source_type", "c.source_type = {p}"),
    ("source_ids", "c.source_id = ANY({p})"),
    ("people", "(c.metadata->'people') ?| {p}"),
    ("tags", "(c.concepts && {p}::varchar[] OR (c.metadata->'tags') ?| {p})"),
    ("entity", "lower(c.metadata->>'entity') = lower({p})"),
)
_CODE_CLAUSES = {True: "cardinality(c.code_languages) > 0", False: "cardinality(c.code_languages) = 0"}
_BOOLEAN_FILTERS = {"has_image", "code"}
_LIST_FILTERS = {"collections", "concepts", "mnemonic_tags", "source_ids", "people", "tags"}


def filter_sql(filters: SearchFilters, scope: Scope) -> tuple[str, dict]:
    """The WHERE clause shared by both candidate queries (liveness, ACL, filters), with named
    parameters ``f0``, ``f1``… so it can appear in the SQL more than once.

    A filter applies when it is set: a boolean (``has_image``, ``code``) when not None, any
    other value when not empty."""
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
    for name, template in _FILTER_CLAUSES:
        value = getattr(filters, name)
        if value is None or (not value and name not in _BOOLEAN_FILTERS):
            continue
        if name == "code":
            clauses.append(_CODE_CLAUSES[bool(value)])
        else:
            clauses.append(template.format(p=p(list(value) if name in _LIST_FILTERS else value)))
    return " AND ".join(clauses), params


HIT_COLUMNS = (
    "c.chunk_uid, c.title, c.content, c.url, c.collection, c.source_type, c.source_id, c.breadcrumb, "
    "c.domain, c.concepts, c.mnemonic_tags, c.code_languages, c.has_image, c.date, c.metadata::text AS metadata"
)


def _vector_sql(where: str, *, exact: bool, dims: int) -> str:
    """The vector half: (id, vec_rank) of the ``n`` nearest rows the WHERE keeps, nearest first.

    Expected plan: an Index Scan using chunk_embedding_hnsw (iterative when filtered), whose
    graph holds the vectors at half precision, so the walk orders by the half-precision distance
    the index is built on; with ``exact`` (a filter keeping few rows) the filter's own indexes
    find the rows and every distance is computed (``+ 0`` keeps the planner off the vector
    index). Ranks come from the full-precision distances (an iterative scan returns rows in
    relaxed order anyway), ties by id."""
    distance = "c.embedding <=> %(qvec)s::vector"
    if exact:
        order = f"({distance}) + 0, c.id"
    elif settings.KNOWHUB_VECTOR_INDEX == "diskann":
        order = distance  # pgvectorscale's index holds the full-precision column
    else:
        order = f"c.embedding::halfvec({int(dims)}) <=> %(qvec)s::halfvec({int(dims)})"
    return f"""
        SELECT id, row_number() OVER (ORDER BY dist, id) AS vec_rank
        FROM (SELECT c.id, {distance} AS dist FROM rag_chunk c WHERE {where} ORDER BY {order} LIMIT %(n)s) c
        ORDER BY vec_rank
    """


def _candidate_sql(
    where: str,
    mode: str,
    backend: text_search.TextBackend | None,
    *,
    exact: bool = False,
    vec_given: bool = False,
    dims: int = 0,
) -> str:
    """SQL returning (columns…, vec_score, txt_raw, vec_rank, txt_rank) for the candidate union.

    The text candidates arrive as arrays (``txt_ids``/``txt_scores``, from the keyword backend);
    the vector candidates are found here (``_vector_sql``), or arrive as ``vec_ids`` too when
    ``vec_given`` (found on a side connection, another snapshot: the WHERE is applied again, so a
    row hidden or deleted meanwhile is not returned). The outer join touches only the union.
    Vector-side rows that hold a query word get their text score computed here.
    """
    use_vec = mode != "fulltext"
    # Vector-side rows holding a query word get their text score here (none without query words).
    score = f'CASE WHEN c.tsv @@ %(tsq)s::tsquery THEN {backend.score_sql("c")} ELSE 0 END' if backend else "0"
    parts = [
        """txt AS (SELECT t.id, t.txt_raw, t.txt_rank
                   FROM unnest(%(txt_ids)s::bigint[], %(txt_scores)s::float8[])
                       WITH ORDINALITY AS t(id, txt_raw, txt_rank))"""
    ]
    if vec_given:
        parts.append(
            "vec AS (SELECT v.id, v.vec_rank FROM unnest(%(vec_ids)s::bigint[]) WITH ORDINALITY AS v(id, vec_rank))"
        )
    elif use_vec:
        parts.append(f"vec AS ({_vector_sql(where, exact=exact, dims=dims)})")
    union = "SELECT id FROM vec UNION SELECT id FROM txt" if use_vec else "SELECT id FROM txt"
    return f"""
        WITH {", ".join(parts)},
        cand AS ({union})
        SELECT {HIT_COLUMNS},
               1 - (c.embedding <=> %(qvec)s::vector) AS vec_score,
               coalesce(txt.txt_raw, {score}) AS txt_raw,
               {"vec.vec_rank" if use_vec else "NULL::bigint"} AS vec_rank,
               txt.txt_rank AS txt_rank
        FROM cand JOIN rag_chunk c ON c.id = cand.id
        {"LEFT JOIN vec ON vec.id = c.id" if use_vec else ""}
        LEFT JOIN txt ON txt.id = c.id
        {f"WHERE {where}" if vec_given else ""}
    """


_checked_models: dict[str, float] = {}
MODEL_CHECK_SECONDS = 60.0


def reset_model_check() -> None:
    """Forget which query models were checked (the index just moved to another model)."""
    _checked_models.clear()


def _dimension_mismatch(exc: Exception, embedder: Embedder | None) -> Exception:
    """A vector of another size than the column's: the index moved since the last check."""
    if "dimensions" not in str(exc):
        return exc
    reset_model_check()
    name = getattr(embedder, "name", "the query model")
    return EmbeddingModelMismatch(
        f"The index holds vectors of another size than {name} makes. "
        f"Run `manage.py reembed` to move the index to {name}, or configure the model the index uses."
    )


def _check_query_model(name: str) -> None:
    """``check_query_model`` once a minute per model: cheap (an index walk), but a query to the
    database all the same, on the path every search takes."""
    now = time.monotonic()
    if now - _checked_models.get(name, -1e9) > MODEL_CHECK_SECONDS:
        check_query_model(name)
        _checked_models[name] = now


HNSW_BASE_ROWS = 100_000  # up to here the candidates themselves are a wide enough search
# Past it, the walk widens with the index: the graph is built narrow (db_ops.HNSW_EF_CONSTRUCTION)
# to keep a large build short, and the search pays for that at query time, where it costs less.
HNSW_EF_GROWTH = 1.0
HNSW_MIN_EF = 40  # pgvector's default width; a narrower walk loses recall for little time


def vector_plan(cursor, where: str, params: dict, n: int) -> tuple[bool, int]:
    """(exact, ef_search) for the vector half, from the planner's estimates (cached per process).

    Exact when the filter keeps so few rows that computing each one's distance beats the HNSW
    walk, which must visit ~n/selectivity entries to fill a filtered page; exact also means recall
    1.0. Measured at 1M chunks, a 1 % filter (10k rows): 22 ms exact against 106 ms for the
    iterative HNSW scan. Otherwise ef_search grows with the index, since a larger graph needs a
    wider search for the same recall (see ``KNOWHUB_HNSW_EF_SEARCH``)."""
    rows, total = text_search.filter_estimate(cursor, where, params)
    limit = settings.KNOWHUB_VECTOR_EXACT_ROWS
    if limit > 0 and rows <= limit:
        return True, 0
    ef = settings.KNOWHUB_HNSW_EF_SEARCH or n * max(1.0, total / HNSW_BASE_ROWS) ** HNSW_EF_GROWTH
    return False, int(min(max(n, HNSW_MIN_EF, ef), 1000))


def score_candidates(
    rows: list[dict], *, mode: str, weights: tuple[float, float], query: str = "", scope: Scope | None = None
) -> list[dict]:
    """Give every candidate row ``txt_score`` and ``score``, and sort best first.

    The one place fusion happens, so later adjustments (judgment-based boosts) hook in here.
    ``txt_score`` is the text score over the best text score among the candidates (BM25 is
    unbounded), so ``w_txt`` means what it says; ``rrf`` adds 1/(60 + rank) of each list.
    """
    w_vec, w_txt = weights
    max_txt = max((float(r["txt_raw"]) for r in rows), default=0.0) or 1.0
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
    rows.sort(key=lambda r: (-r["score"], r["chunk_uid"]))
    return rows


@replicas.read_only
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
    candidates: int | None = None,
) -> SearchResult:
    """Search the chunks ``scope`` may see. Filters and ACL are applied in the SQL, never after.

    ``candidates`` overrides how many rows each side contributes (default
    ``KNOWHUB_SEARCH_CANDIDATES``, at least ``top_k``, four times it with ``dedupe``).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    filters = filters or SearchFilters()
    started = time.perf_counter()
    embed_ms = 0.0
    if query_vector is None and mode != "fulltext":
        embedder = embedder or get_embedder()
        _check_query_model(embedder.name)
        t0 = time.perf_counter()
        query_vector = embedder.embed_query(query[:MAX_QUERY_CHARS])
        embed_ms = (time.perf_counter() - t0) * 1000
    weights_given = weights is not None
    weights = weights or (settings.KNOWHUB_HYBRID_VECTOR_WEIGHT, settings.KNOWHUB_HYBRID_TEXT_WEIGHT)
    n = max(top_k * (4 if dedupe else 1), candidates or settings.KNOWHUB_SEARCH_CANDIDATES)
    where, named = filter_sql(filters, scope)
    backend = text_search.active_backend()

    # Both halves at once when both run: the vector half on a side connection (see side_search).
    conn, vec_conn = _search_connections(mode, backend)
    beside = mode in ("hybrid", "rrf") and query_vector is not None and side_search.usable(conn)
    dims = len(query_vector) if query_vector is not None else 0  # the index's, or the query fails as a mismatch
    with transaction.atomic(using=conn.alias), conn.cursor() as cursor:
        named.update(qvec=str(list(query_vector)) if query_vector is not None else None, n=n)
        exact, ef_search = vector_plan(cursor, where, named, n) if mode != "fulltext" else (False, 0)
        # One round trip for both (no parameters: psycopg sends it as one simple query).
        hnsw_sql = f"SET LOCAL hnsw.ef_search = {ef_search}; SET LOCAL hnsw.iterative_scan = relaxed_order"
        split = split_search.wanted(cursor, backend, mode=mode, exact=exact, beside=beside, where=where, params=named)

        def vector_job():
            return side_search.submit(_vector_sql(where, exact=exact, dims=dims), dict(named),
                                      settings_sql=hnsw_sql if ef_search else "", conn=vec_conn)  # fmt: skip

        vec_future = vector_job() if beside and not split else None
        tq = backend.prepare(cursor, query=query, filters=filters, scope=scope) if mode != "vector" else None
        has_text = bool(tq and tq.has_text)
        named.update(tq.params if has_text else {})
        text_hits, vec_ids = _both_halves(
            cursor, backend, tq if has_text else None, where=where, named=named, n=n, embedder=embedder,
            vec_conn=vec_conn, split=split, vec_future=vec_future, vector_job=vector_job,
        )  # fmt: skip
        named.update(txt_ids=[i for i, _ in text_hits], txt_scores=[sc for _, sc in text_hits])
        if vec_ids is not None:
            named["vec_ids"] = vec_ids
        elif ef_search:
            cursor.execute(hnsw_sql)
        sql = _candidate_sql(
            where, mode, backend if has_text else None, exact=exact, vec_given=vec_ids is not None, dims=dims
        )
        try:
            cursor.execute(sql, named)
        except DataError as exc:
            raise _dimension_mismatch(exc, embedder) from exc
        columns = [col.name for col in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    if query_vector is None:  # fulltext without a vector: no cosine to report
        for r in rows:
            r["vec_score"] = 0.0
    rows = score_candidates(rows, mode=mode, weights=weights, query=query, scope=scope)
    for rescorer in _rescorers:  # e.g. learned ranking (feedback app): tuned weights, label effects
        rescorer(rows, query=query, query_vector=query_vector, mode=mode, weights_given=weights_given,
                 embedder_name=getattr(embedder, "name", None))  # fmt: skip
    rows.sort(key=lambda r: (-r["score"], r["chunk_uid"]))

    hits: list[Hit] = []
    seen_parents: set[tuple[str, str, str]] = set()
    for r in rows:
        parent = (r["collection"], r["source_type"], r["source_id"])
        if dedupe and parent in seen_parents:
            continue
        seen_parents.add(parent)
        # Metadata arrives as JSON text and is decoded for the hits only (rescorers never read it).
        r["metadata"] = json.loads(r["metadata"]) if r["metadata"] else {}
        hits.append(
            Hit(
                **{k: r[k] for k in HIT_FIELDS},
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


def _both_halves(
    cursor, backend, tq, *, where: str, named: dict, n: int, embedder, vec_conn, split: bool, vec_future, vector_job
) -> tuple[list[tuple[int, float]], list[int] | None]:
    """(the keyword candidates, the vector half's ids or None when the final query finds them):
    the filter's rows split between the connections (``rag.split_search``), or the vector half
    on the side connection (``vec_future``, or ``vector_job`` when the split was meant but the
    query's scoring cannot be split) while the keyword half runs here."""
    if split and tq is not None and named.get("bm25_exact"):
        try:
            return split_search.both_halves(cursor, backend, tq, where=where, params=named, n=n, conn=vec_conn)
        except psycopg.DataError as exc:
            raise _dimension_mismatch(exc, embedder) from exc
    if split:
        vec_future = vector_job()
    text_hits = backend.candidates(cursor, tq, where=where, params=named, n=n) if tq is not None else []
    return text_hits, (_side_result(vec_future, embedder, vec_conn) if vec_future else None)


def _search_connections(mode: str, backend: text_search.TextBackend):
    """(the connection of the search, the one its vector half runs on).

    Both read a replica when one serves this request (``knowhub.replicas``), else the primary.
    When the replica cannot read the keyword index (``readable_on_replicas``), a hybrid search
    runs its keyword half and the fusion on the primary and only the vector half (the HNSW walk,
    WAL-logged like any index) on the replica; without a side connection for it, all of it on
    the primary."""
    conn = replicas.read_connection()
    if conn.alias == DEFAULT_DB_ALIAS or mode == "vector" or backend.readable_on_replicas():
        return conn, conn
    primary = connections[DEFAULT_DB_ALIAS]
    if mode in ("hybrid", "rrf") and side_search.usable(primary):
        return primary, conn
    return primary, primary


def _side_result(future, embedder: Embedder | None, conn) -> list[int] | None:
    """The side connection's vector ids; None (the caller's connection runs the vector half) when
    that connection failed for a reason of its own (server restarted, too many connections; a
    replica that failed is skipped until its next check)."""
    try:
        return future.result()
    except psycopg.DataError as exc:
        raise _dimension_mismatch(exc, embedder) from exc
    except psycopg.Error as exc:
        logger.warning("vector half on a side connection failed (%s); running it on the main one", exc)
        if conn.alias != DEFAULT_DB_ALIAS:
            replicas.fell_over(conn.alias, exc)
        return None


HIT_FIELDS = (
    "chunk_uid", "title", "content", "url", "collection", "source_type", "source_id", "breadcrumb",
    "domain", "concepts", "mnemonic_tags", "code_languages", "has_image", "date", "metadata",
)  # fmt: skip


@replicas.read_only
def known_collections(scope: Scope) -> list[str]:
    """Collection names that hold chunks the scope may see (for validating requests)."""
    return text_search.active_backend().known_collections(scope)


def text_backend_name() -> str:
    """The keyword backend in use ("pg_textsearch" or "sql"), for /health and bench output."""
    return text_search.active_backend().name
