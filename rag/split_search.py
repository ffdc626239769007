"""A hybrid search under a selective filter, its rows split between the two connections.

Under a filter that keeps few rows (a small project, a rare domain) both halves read every row
the filter keeps: the vector half computes each one's distance, the keyword half checks and
scores each one's ``tsv``. The keyword half is the longer, so with each half on its own
connection (``rag.side_search``) one core waits while the other scores. Here the side connection
reads the rows once for the distances and for the keywords of the rows with an odd id, while the
request's own connection scores the keywords of the rows with an even id: two halves of about the
same length. The two keyword lists merge into the same top-n, ties by id, as one pass gives.

The first pass scores only the rows holding an essential word (``rag.text_prune``); when the
merged page cannot be shown complete that way, the request's connection scores every row again,
as a search without the split would.
"""

from __future__ import annotations

import logging

import psycopg
from django.conf import settings

from rag import side_search, text_prune, text_search
from rag.text_query import TextQuery

logger = logging.getLogger(__name__)

VECTOR, KEYWORD = 0, 1  # the side statement's row kinds


def wanted(cursor, backend, *, mode: str, exact: bool, beside: bool, where: str, params: dict) -> bool:
    """Whether a search splits its filter's rows: a hybrid search with a side connection, the
    vector half exact (the filter keeps few rows) and the keyword half reading them too
    (pg_textsearch's selective plan)."""
    return (
        settings.KNOWHUB_SEARCH_SPLIT
        and beside
        and exact
        and mode in ("hybrid", "rrf")
        and isinstance(backend, text_search.PgTextsearch)
        and _selective(cursor, backend, where=where, params=params)
    )


def _selective(cursor, backend: text_search.PgTextsearch, *, where: str, params: dict) -> bool:
    """Whether the filter keeps so few rows that its own indexes find them and the query words are
    checked row by row (the keyword backend's selective filter-first plan)."""
    if not backend.filter_first(cursor, where=where, params=params):
        return False
    rows, total = text_search.filter_estimate(cursor, where, params)
    return rows / total < text_search.BROAD_FILTER


def side_sql(where: str, backend: text_search.PgTextsearch) -> str:
    """(kind, id, value) rows: the ``n`` nearest rows the WHERE keeps (value: their rank, by
    distance then id) and the ``n`` best-scored of its odd-id rows holding a word of ``tsq``
    (value: the score), from one read of the rows."""
    return f"""
        WITH f AS MATERIALIZED (
            SELECT c.id, c.embedding <=> %(qvec)s::vector AS dist,
                   CASE WHEN c.id %% 2 = 1 AND c.tsv @@ %(tsq)s::tsquery THEN {backend.score_sql("c")} END AS s
            FROM rag_chunk c WHERE {where}
        )
        SELECT {VECTOR}, v.id, (row_number() OVER (ORDER BY v.dist, v.id))::float8
        FROM (SELECT id, dist FROM f ORDER BY dist, id LIMIT %(n)s) v
        UNION ALL
        SELECT {KEYWORD}, k.id, k.s FROM (SELECT id, s FROM f WHERE s IS NOT NULL ORDER BY s DESC, id LIMIT %(n)s) k
    """


def both_halves(
    cursor, backend: text_search.PgTextsearch, tq: TextQuery, *, where: str, params: dict, n: int, conn
) -> tuple[list[tuple[int, float]], list[int] | None]:
    """(the keyword candidates, best first; the vector half's ids, nearest first), the rows split
    between the request's ``cursor`` and a side connection to the server ``conn`` reaches. The
    vector ids are None when the side connection failed (the caller runs that half itself)."""
    first, rest = text_prune.first_pass(params, settings.KNOWHUB_TEXT_PRUNE_FRACTION)
    run = {**params, **first, "n": n}
    future = side_search.submit(side_sql(where, backend), run, conn=conn, rows=True)
    cursor.execute(backend.candidates_sql(cursor, where=where, params=params, plan="filter_first", parity=0), run)
    mine = [(int(i), float(score)) for i, score in cursor.fetchall()]
    try:
        rows = future.result()
    except psycopg.DataError:
        raise  # a query vector of another size: the caller reports the model mismatch
    except psycopg.Error as exc:
        logger.warning("split search on a side connection failed (%s); running it on the main one", exc)
        return backend.candidates(cursor, tq, where=where, params=params, n=n, plan="filter_first"), None
    vec_ids = [int(r[1]) for r in sorted((r for r in rows if r[0] == VECTOR), key=lambda r: r[2])]
    theirs = [(int(r[1]), float(r[2])) for r in rows if r[0] == KEYWORD]
    merged = _merged(mine, theirs, n)
    if rest > 0 and not text_prune.complete(merged, n=n, rest=rest):
        merged = _every_row_scored(cursor, backend, tq, where=where, params=params, n=n, conn=conn)
    return merged, vec_ids


def _every_row_scored(
    cursor, backend: text_search.PgTextsearch, tq: TextQuery, *, where: str, params: dict, n: int, conn
) -> list[tuple[int, float]]:
    """The keyword top-n with every query word (the pruned first pass could not show its page
    complete), split between the connections like the first pass: the request's scores the
    even ids, the side connection the odd ones. On the request's connection alone when the side
    connection fails."""
    run = {**params, "n": n}
    future = side_search.submit(
        backend.candidates_sql(cursor, where=where, params=params, plan="filter_first", parity=1), run, conn=conn,
        rows=True,
    )  # fmt: skip
    cursor.execute(backend.candidates_sql(cursor, where=where, params=params, plan="filter_first", parity=0), run)
    mine = [(int(i), float(score)) for i, score in cursor.fetchall()]
    try:
        theirs = [(int(i), float(score)) for i, score in future.result()]
    except psycopg.Error as exc:
        logger.warning("split keyword pass on a side connection failed (%s); running it on the main one", exc)
        return backend.candidates(cursor, tq, where=where, params=params, n=n, plan="filter_first", prune=False)
    return _merged(mine, theirs, n)


def _merged(mine: list[tuple[int, float]], theirs: list[tuple[int, float]], n: int) -> list[tuple[int, float]]:
    """The two halves' keyword pages as one: best score first, ties by id, as one pass orders them."""
    return sorted([*mine, *theirs], key=lambda r: (-r[1], r[0]))[:n]
