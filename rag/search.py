"""Hybrid retrieval: the one selector every surface (API, ask, evaluate, bench) searches with.

Plan (see STYLE.md "Hybrid search"): take the top ``n`` candidates from the HNSW index
(``ORDER BY embedding <=> q LIMIT n``) and the top ``n`` from the GIN full-text index, each with
the same filters and ACL in SQL, UNION them, then score only the union:
``w_vec·(1 − cosine distance) + w_txt·(text score / max text score in the union)``.
``rrf`` fuses the two ranks instead (1/(60+rank)).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
import time
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import DataError, connection, transaction

from feedback.ranking import rescore
from rag.acl import Scope
from rag.embeddings import Embedder, get_embedder
from rag.selectors import EmbeddingModelMismatch, check_query_model

logger = logging.getLogger(__name__)

MODES = ("hybrid", "vector", "fulltext", "rrf")
MAX_QUERY_CHARS = 2000
MAX_TSQUERY_TERMS = 64
RRF_K = 60
# MaxScore's first pass matches the rarest lexemes up to this many rows (or 20 × candidates).
MAXSCORE_MIN_BUDGET = 2000
# Text candidates always come from at least this many of the rarest lexemes, whatever their df.
MATCH_MIN_TERMS = 1


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


def _stats_sql(filters: SearchFilters, scope: Scope) -> tuple[str, dict]:
    """The WHERE fragment selecting the ``rag_term_stat`` partitions a search's IDF is taken over:
    the caller's ACL partitions of the requested collections (other filters do not narrow IDF)."""
    acl_sql, acl_params = scope.sql("s")
    params: dict = {}
    for i, value in enumerate(acl_params):
        params[f"s{i}"] = value
        acl_sql = acl_sql.replace("%s", f"%(s{i})s", 1)
    clauses = [acl_sql]
    if filters.collections:
        params["s_collections"] = list(filters.collections)
        clauses.append("s.collection = ANY(%(s_collections)s)")
    return " AND ".join(clauses), params


_HIT_COLUMNS = (
    "c.chunk_uid, c.title, c.content, c.url, c.collection, c.source_type, c.source_id, c.breadcrumb, "
    "c.domain, c.concepts, c.mnemonic_tags, c.code_languages, c.has_image, c.date, c.metadata::text AS metadata"
)


@dataclass
class TermWeights:
    """The query's lexemes with their document frequency and BM25 IDF over the visible chunks."""

    lexemes: list[str]
    dfs: list[int]
    idfs: list[float]
    avgdl: float
    docs: int

    def tsquery(self, lexemes: list[str] | None = None) -> str:
        """The OR of ``lexemes`` (default all) as ``tsquery`` input: already stemmed, so cast it."""
        chosen = self.lexemes if lexemes is None else lexemes
        return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in chosen)


def term_weights(cursor, query: str, stats_where: str, params: dict) -> TermWeights:
    """Stem the query like the index does and look up each lexeme's document frequency.

    Frequencies come from ``rag_term_stat`` restricted to the caller's ACL partitions and the
    requested collections, so a chunk the caller cannot see never changes an IDF.
    IDF is Lucene's ``ln(1 + (N − df + 0.5) / (df + 0.5))``; lexemes no visible chunk holds
    are dropped (they match nothing).
    """
    cursor.execute(
        f"""
        SELECT l.lexeme, coalesce(sum(s.docs), 0), coalesce(sum(s.length), 0)
        FROM (SELECT unnest(tsvector_to_array(to_tsvector('english', %(qtext)s))) UNION SELECT '') AS l(lexeme)
        LEFT JOIN rag_term_stat s ON s.lexeme = l.lexeme AND {stats_where}
        GROUP BY l.lexeme
        """,
        {**params, "qtext": clean_query_text(query)},
    )
    stats = {lex: (int(df), int(length)) for lex, df, length in cursor.fetchall()}
    n, total = stats.pop("", (0, 0))
    lexemes = sorted((lex for lex, (df, _) in stats.items() if df > 0), key=lambda lex: (stats[lex][0], lex))
    dfs = [stats[lex][0] for lex in lexemes]
    idfs = [math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in dfs]
    return TermWeights(lexemes=lexemes, dfs=dfs, idfs=idfs, avgdl=max(total / n, 1.0) if n else 1.0, docs=n)


def _text_score_sql(alias: str) -> str:
    """The SQL expression scoring chunk ``alias`` against all the query lexemes (Okapi BM25).

    Inline rather than a call to ``rag_bm25()``: a SQL function call per row costs an executor
    start-up, a scalar sub-select only a rescan (5× cheaper, measured). ``setweight(…, 'C',
    lexemes)`` + ``ts_filter(…, '{c}')`` (both C) cut the tsvector down to the query's lexemes
    before the unnest (``tsv`` only ever carries weights A and B). Term frequency is the
    lexeme's position count, document length its distinct-lexeme count.
    """
    if settings.KNOWHUB_TEXT_SCORING == "ts_rank_cd":
        return f"ts_rank_cd({alias}.tsv, %(tsq)s::tsquery, 32)"
    return f"""(SELECT coalesce(sum(q.idf * cardinality(u.positions) * (%(k1)s + 1)
                   / (cardinality(u.positions) + %(k1)s * (1 - %(b)s + %(b)s * length({alias}.tsv) / %(avgdl)s))), 0)
                FROM unnest(ts_filter(setweight({alias}.tsv, 'C', %(lexemes)s::text[]), '{{c}}')) u
                JOIN unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS q(lexeme, idf) ON q.lexeme = u.lexeme)"""


def _text_candidates(cursor, terms: TermWeights, where: str, params: dict, n: int) -> list[tuple[int, float]]:
    """The ``n`` best chunks by text score (all query lexemes), best first, as (id, score).

    BM25 must score every chunk that matches any query word, and a common word matches a large
    share of the index. MaxScore keeps that exact but cheaper: a lexeme contributes at most
    ``idf·(k1+1)``, so once the ``n``-th best score θ among chunks holding the rarer lexemes
    exceeds the summed bounds of the commonest ones, a chunk holding only common lexemes cannot
    enter the top ``n`` and those lexemes need not be matched (they are still scored).
    When θ is too low for that, lexemes held by more than ``KNOWHUB_BM25_MATCH_MAX_DF`` of the
    visible chunks (``_match_limit``) are still never matched: they still score every candidate,
    only a chunk holding nothing but such common words is not generated as a text candidate
    (it can still arrive through the vector side). ``KNOWHUB_TEXT_MAX_MATCHES`` (0: no cap)
    bounds the rows a later pass may match; past it the first pass' top ``n`` is kept. Both
    are approximations, measured by ``evaluate`` (quality) and ``bench_search`` (overlap).
    Plan per pass: Bitmap Index Scan on chunk_tsv_gin → Bitmap Heap Scan → top-N sort.
    """
    sql = f"""
        SELECT c.id, {_text_score_sql("c")} AS s FROM rag_chunk c
        WHERE c.tsv @@ %(match)s::tsquery AND {where}
        ORDER BY s DESC, c.id LIMIT %(n)s
    """
    k1 = settings.KNOWHUB_BM25_K1
    bounds = [idf * (k1 + 1) for idf in terms.idfs]  # lexemes are sorted rarest first
    count, budget = len(terms.lexemes), 0
    if settings.KNOWHUB_TEXT_SCORING == "bm25":
        # First pass: the rarest lexemes, as many as keep the matched rows near a budget.
        budget, matched, count = max(20 * n, MAXSCORE_MIN_BUDGET), 0, 0
        while count < len(terms.lexemes) and (count == 0 or matched + terms.dfs[count] <= budget):
            matched += terms.dfs[count]
            count += 1
    allowed = max(count, _match_limit(terms))
    while True:
        cursor.execute(sql, {**params, "match": terms.tsquery(terms.lexemes[:count]), "n": n})
        rows = [(int(i), float(score)) for i, score in cursor.fetchall()]
        if count == len(terms.lexemes):
            return rows
        theta = rows[-1][1] if len(rows) >= n else 0.0
        needed = count
        while needed < len(terms.lexemes) and sum(bounds[needed:]) >= theta:
            needed += 1
        if needed == count:
            return rows
        if needed > allowed:
            if count >= allowed:  # only common lexemes left: keep the rarer ones' top n
                return rows
            needed = allowed
        cap = settings.KNOWHUB_TEXT_MAX_MATCHES
        if cap and sum(terms.dfs[:needed]) > max(cap, budget):
            # Bounded work: keep the rarest lexemes' top n rather than score a large share of
            # the index (bench_search reports the overlap with the exact top n).
            return rows
        count = needed


def _match_limit(terms: TermWeights) -> int:
    """How many of the (rarest-first) lexemes text candidates may be matched on.

    Those with ``df ≤ KNOWHUB_BM25_MATCH_MAX_DF · N`` (0: all), but at least the rarest
    ``MATCH_MIN_TERMS`` so a query of only common words still finds chunks.
    """
    max_df = settings.KNOWHUB_BM25_MATCH_MAX_DF
    if not max_df:
        return len(terms.lexemes)
    limit = sum(1 for df in terms.dfs if df <= max_df * terms.docs)
    return max(limit, min(MATCH_MIN_TERMS, len(terms.lexemes)))


def _candidate_sql(where: str, mode: str) -> str:
    """SQL returning (columns…, vec_score, txt_raw, vec_rank, txt_rank) for the candidate union.

    The text candidates arrive as arrays (``txt_ids``/``txt_scores``, from ``_text_candidates``).
    Expected plan: ``vec`` is an Index Scan using chunk_embedding_hnsw (iterative when filtered;
    the planner may prefer a selective B-tree filter plus an exact sort); the outer join touches
    only the union. Vector-side rows that hold a query word get their text score computed here.
    """
    use_vec = mode != "fulltext"
    parts = [
        """txt AS (SELECT t.id, t.txt_raw, t.txt_rank
                   FROM unnest(%(txt_ids)s::bigint[], %(txt_scores)s::float8[]) WITH ORDINALITY AS t(id, txt_raw, txt_rank))"""
    ]
    if use_vec:
        parts.append(f"""
        vec AS (
            SELECT id, row_number() OVER (ORDER BY dist, id) AS vec_rank
            FROM (SELECT c.id, c.embedding <=> %(qvec)s::vector AS dist FROM rag_chunk c WHERE {where}
                  ORDER BY c.embedding <=> %(qvec)s::vector LIMIT %(n)s) c
        )""")
    union = "SELECT id FROM vec UNION SELECT id FROM txt" if use_vec else "SELECT id FROM txt"
    return f"""
        WITH {", ".join(parts)},
        cand AS ({union})
        SELECT {_HIT_COLUMNS},
               1 - (c.embedding <=> %(qvec)s::vector) AS vec_score,
               coalesce(txt.txt_raw, CASE WHEN %(has_text)s AND c.tsv @@ %(tsq)s::tsquery
                                          THEN {_text_score_sql("c")} ELSE 0 END) AS txt_raw,
               {"vec.vec_rank" if use_vec else "NULL::bigint"} AS vec_rank,
               txt.txt_rank AS txt_rank
        FROM cand JOIN rag_chunk c ON c.id = cand.id
        {"LEFT JOIN vec ON vec.id = c.id" if use_vec else ""}
        LEFT JOIN txt ON txt.id = c.id
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
    """``check_query_model`` scans every live chunk; once a minute per model is enough."""
    now = time.monotonic()
    if now - _checked_models.get(name, -1e9) > MODEL_CHECK_SECONDS:
        check_query_model(name)
        _checked_models[name] = now


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
    where, named = _filter_sql(filters, scope)
    stats_where, stats_params = _stats_sql(filters, scope)

    with transaction.atomic(), connection.cursor() as cursor:
        terms = term_weights(cursor, query, stats_where, stats_params) if mode != "vector" else None
        has_text = bool(terms and terms.lexemes)
        named.update(
            qvec=str(list(query_vector)) if query_vector is not None else None,
            n=n,
            has_text=has_text,
            tsq=terms.tsquery() if has_text else "",
            lexemes=terms.lexemes if has_text else [],
            idfs=terms.idfs if has_text else [],
            avgdl=terms.avgdl if has_text else 1.0,
            k1=settings.KNOWHUB_BM25_K1,
            b=settings.KNOWHUB_BM25_B,
        )
        text_hits = _text_candidates(cursor, terms, where, named, n) if has_text else []
        named.update(txt_ids=[i for i, _ in text_hits], txt_scores=[sc for _, sc in text_hits])
        if mode != "fulltext":
            cursor.execute(f"SET LOCAL hnsw.ef_search = {int(min(max(n, 40), 1000))}")
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        try:
            cursor.execute(_candidate_sql(where, mode), named)
        except DataError as exc:
            raise _dimension_mismatch(exc, embedder) from exc
        columns = [col.name for col in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    for r in rows:
        r["metadata"] = json.loads(r["metadata"]) if r["metadata"] else {}

    if query_vector is None:  # fulltext without a vector: no cosine to report
        for r in rows:
            r["vec_score"] = 0.0
    rows = score_candidates(rows, mode=mode, weights=weights, query=query, scope=scope)
    # Learned ranking (feedback app): tuned fusion weights and bounded per-label adjustments.
    rescore(rows, query=query, query_vector=query_vector, mode=mode, weights_given=weights_given,
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
    """Collection names that hold chunks the scope may see (for validating requests).

    Read from the per-partition chunk counts in ``rag_term_stat`` (index-only, whatever the
    index size) rather than a DISTINCT over every chunk.
    """
    acl_sql, params = scope.sql("s")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.collection FROM rag_term_stat s WHERE s.lexeme = '' AND {acl_sql} "
            "GROUP BY s.collection HAVING sum(s.docs) > 0 ORDER BY 1",
            params,
        )
        return [row[0] for row in cursor.fetchall()]
