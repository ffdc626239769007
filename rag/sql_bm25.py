"""The portable keyword backend: Okapi BM25 computed in SQL from ``rag_term_stat`` (statement
triggers keep per-ACL-partition document frequencies), so IDF only ever counts chunks the caller
may see. Works on any PostgreSQL with pgvector (managed services)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from django.conf import settings

from knowhub import replicas
from rag import text_columns
from rag.acl import Scope
from rag.bm25_length import DL_COLUMN, DL_FUNCTION, OLD_LENGTH_FUNCTION
from rag.text_query import (
    BM25_INDEX,
    CREATE_TERM_STAT_TRIGGERS,
    TextQuery,
    bm25_index_present,
    clean_query_text,
    triggers_present,
    tsquery,
)

logger = logging.getLogger(__name__)

# MaxScore: the first pass matches the rarest lexemes up to this many rows (or 20 × n).
MAXSCORE_MIN_BUDGET = 2000
# Text candidates always come from at least this many of the rarest lexemes.
MATCH_MIN_TERMS = 1


def stats_sql(filters, scope: Scope) -> tuple[str, dict]:
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
        return tsquery(self.lexemes if lexemes is None else lexemes)


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


class SqlBm25:
    """Okapi BM25 in SQL: GIN match on ``tsv``, scored from ``rag_term_stat`` (MaxScore passes)."""

    name = "sql"

    def readable_on_replicas(self) -> bool:
        return True  # plain tables and a GIN index: WAL-logged like any other

    def prepare(self, cursor, *, query: str, filters, scope: Scope) -> TextQuery:
        stats_where, stats_params = stats_sql(filters, scope)
        terms = term_weights(cursor, query, stats_where, stats_params)
        return TextQuery(
            lexemes=terms.lexemes,
            params={
                "tsq": terms.tsquery() if terms.lexemes else "",
                "lexemes": terms.lexemes,
                "idfs": terms.idfs,
                "avgdl": terms.avgdl,
                "k1": settings.KNOWHUB_BM25_K1,
                "b": settings.KNOWHUB_BM25_B,
                "_terms": terms,
            },
        )

    def score_sql(self, alias: str) -> str:
        """Okapi BM25 of chunk ``alias`` against all the query lexemes.

        Inline rather than a call to ``rag_bm25()``: a SQL function call per row costs an executor
        start-up, a scalar sub-select only a rescan (5× cheaper, measured). ``setweight(…, 'C',
        lexemes)`` + ``ts_filter(…, '{c}')`` (both C) cut the tsvector down to the query's lexemes
        before the unnest (``tsv`` only ever carries weights A and B). Term frequency is the
        lexeme's position count, document length its distinct-lexeme count.
        """
        if settings.KNOWHUB_TEXT_SCORING == "ts_rank_cd":
            return f"ts_rank_cd({alias}.tsv, %(tsq)s::tsquery, 32)"
        return f"""(SELECT coalesce(sum(q.idf * cardinality(u.positions) * (%(k1)s + 1)
                       / (cardinality(u.positions) + %(k1)s * (1 - %(b)s + %(b)s * length({alias}.tsv)
                           / %(avgdl)s))), 0)
                    FROM unnest(ts_filter(setweight({alias}.tsv, 'C', %(lexemes)s::text[]), '{{c}}')) u
                    JOIN unnest(%(lexemes)s::text[], %(idfs)s::float8[]) AS q(lexeme, idf) ON q.lexeme = u.lexeme)"""

    def candidates(self, cursor, tq: TextQuery, *, where: str, params: dict, n: int) -> list[tuple[int, float]]:
        """The ``n`` best chunks by text score (all query lexemes), best first, as (id, score).

        BM25 must score every chunk that matches any query word, and a common word matches a
        large share of the index. MaxScore keeps that exact but cheaper: a lexeme contributes at
        most ``idf·(k1+1)``, so once the ``n``-th best score θ among chunks holding the rarer
        lexemes exceeds the summed bounds of the commonest ones, a chunk holding only common
        lexemes cannot enter the top ``n`` and those lexemes need not be matched (they are still
        scored). When θ is too low for that, lexemes held by more than
        ``KNOWHUB_BM25_MATCH_MAX_DF`` of the visible chunks are still never matched (they still
        score every candidate). ``KNOWHUB_TEXT_MAX_MATCHES`` (0: no cap) bounds the rows a later
        pass may match. Plan per pass: Bitmap Index Scan on chunk_tsv_gin → Bitmap Heap Scan →
        top-N sort.
        """
        terms: TermWeights = tq.params["_terms"]
        sql = f"""
            SELECT c.id, {self.score_sql("c")} AS s FROM rag_chunk c
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
                return rows
            count = needed

    def known_collections(self, scope: Scope) -> list[str]:
        """Read from the per-partition chunk counts in ``rag_term_stat`` (index-only)."""
        acl_sql, params = scope.sql("s")
        with replicas.read_connection().cursor() as cursor:
            cursor.execute(
                f"SELECT s.collection FROM rag_term_stat s WHERE s.lexeme = '' AND {acl_sql} "
                "GROUP BY s.collection HAVING sum(s.docs) > 0 ORDER BY 1",
                params,
            )
            return [row[0] for row in cursor.fetchall()]

    def is_set_up(self, cursor) -> bool:
        return triggers_present(cursor) and not bm25_index_present(cursor)

    def set_up(self, cursor) -> None:
        from rag import term_stats

        cursor.execute(f"DROP INDEX IF EXISTS {BM25_INDEX}")
        cursor.execute(text_columns.function_sql(with_length=False))  # before the column it writes goes
        cursor.execute(f"ALTER TABLE rag_chunk DROP COLUMN IF EXISTS search_text, DROP COLUMN IF EXISTS {DL_COLUMN}")
        cursor.execute(f"DROP FUNCTION IF EXISTS {DL_FUNCTION}(tsvector), {OLD_LENGTH_FUNCTION}")
        if not triggers_present(cursor):
            cursor.execute(CREATE_TERM_STAT_TRIGGERS)
            rows = term_stats.rebuild()  # the statistics went stale while the triggers were off
            logger.info("SQL BM25: term-stat triggers recreated, %s statistics rows rebuilt", rows)


def _match_limit(terms: TermWeights) -> int:
    """How many of the (rarest-first) lexemes text candidates may be matched on: those with
    ``df ≤ KNOWHUB_BM25_MATCH_MAX_DF · N`` (0: all), but at least ``MATCH_MIN_TERMS``."""
    max_df = settings.KNOWHUB_BM25_MATCH_MAX_DF
    if not max_df:
        return len(terms.lexemes)
    limit = sum(1 for df in terms.dfs if df <= max_df * terms.docs)
    return max(limit, min(MATCH_MIN_TERMS, len(terms.lexemes)))
