"""The keyword half of hybrid search: one protocol, two backends, chosen once per process.

- ``pg_textsearch`` (Timescale's ``bm25`` index access method, Block-Max WAND top-k) over the
  stored column ``rag_chunk.search_text`` (title + content; the extension indexes columns only).
  Corpus statistics (IDF, average length) are the whole index's, including chunks a caller
  cannot see (README, security notes). Needs ``shared_preload_libraries = pg_textsearch``.
- ``sql`` (``rag.sql_bm25``): Okapi BM25 computed in SQL from ``rag_term_stat`` (statement
  triggers keep per-ACL partition document frequencies), so IDF only ever counts chunks the
  caller may see. Works on any PostgreSQL with pgvector (managed services).

What both share (query cleaning, the protocol, the index and trigger names) is ``rag.text_query``.

``active_backend()`` picks one (``KNOWHUB_TEXT_BACKEND``: auto / pg_textsearch / sql) and puts
the schema in that backend's state: with pg_textsearch the term-stat triggers are dropped (no
chunk write pays for statistics nobody reads); switching back recreates them and rebuilds the
statistics from the chunks, and drops the bm25 index and its column. Either switch runs under an
advisory lock in one transaction, so a database moved between servers never serves stale
statistics.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

from django.conf import settings
from django.db import OperationalError, connection, transaction

from knowhub import locks, replicas
from rag import text_columns, text_prune
from rag.acl import Scope
from rag.bm25_length import (
    CREATE_LENGTH_FUNCTION,
    DL_COLUMN,
    DL_FUNCTION,
    OLD_LENGTH_FUNCTION,
    length_function_current,
)
from rag.sql_bm25 import SqlBm25
from rag.text_query import (
    BM25_INDEX,
    TERM_STAT_TRIGGERS,
    TextBackend,
    TextQuery,
    bm25_index_present,
    clean_query_text,
    triggers_present,
    tsquery,
)

logger = logging.getLogger(__name__)

_SWITCH_LOCK = 7_160_016  # pg_advisory_xact_lock key: one backend switch at a time


# --- pg_textsearch ---------------------------------------------------------------------------


class PgTextsearch:
    """BM25 from the ``bm25`` index on ``search_text``; plan chosen by the filter's selectivity.

    Broad filter (or none): ``ORDER BY search_text <@> to_bm25query(q, index) LIMIT n`` walks the
    index in score order (Block-Max WAND) and drops rows the WHERE refuses; it keeps going until
    ``n`` rows pass, so the page is full. Selective filter (``KNOWHUB_TEXT_FILTER_FIRST_*``, the
    planner's estimate of the rows the WHERE keeps): walking the index would read ~n/selectivity
    rows, so the filter goes first (B-tree/GIN indexes, the ``tsv`` GIN for "holds a query word")
    and only the survivors are scored, by the same ``<@>`` operator with the index's statistics.
    """

    name = "pg_textsearch"

    def readable_on_replicas(self) -> bool:
        """pg_textsearch 1.0 (what the embedded server ships) neither WAL-logs its index builds nor
        replicates its in-memory memtable (timescale/pg_textsearch#342 and #345, fixed after 1.0):
        on a standby the bm25 index is unreadable after a REINDEX and misses recent rows.
        ``KNOWHUB_REPLICA_BM25=true`` says the servers run a version that replicates it."""
        return settings.KNOWHUB_REPLICA_BM25

    def prepare(self, cursor, *, query: str, filters, scope: Scope) -> TextQuery:
        """The query's lexemes, and what scoring a row from its stored ``tsv`` needs (``score_sql``).

        pg_textsearch scores a row ``Σ idf·qf·tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`` over the
        query lexemes (``qf``: the lexeme's count in the query; ``dl``: the row's token count,
        quantised like the index stores it). Its ``<@>`` operator computes that from the row's
        text, re-parsing it (~0.1 ms a row at 100k chunks, most of a search that scores the
        candidates of the vector side or a selective filter's survivors). The same number comes
        from the ``tsv`` column (same parser and configuration, the same tokens) once the index's
        weights are known, and the operator gives those cheaply on one-word documents: one holding
        only lexeme ``l`` scores ``s1_l = w_l·(k1+1)/(1 + k1·(1−b) + B)`` with ``w_l = idf·qf`` and
        ``B = k1·b/avgdl``; the same word plus 38 filler tokens (length 39, stored exactly) gives
        ``B``. So a row scores ``(1 + k1·(1−b) + B) · Σ s1_l·tf / (tf + k1·(1−b) + B·dl)``: the
        operator's value to float4 precision. One statement; ``k1`` and ``b`` are the index's own
        options. A lexeme no one-word document yields (rare: ``foo_bar``) keeps the operator
        (``bm25_exact`` false).
        """
        text = clean_query_text(query)
        words = text.split()
        filler = next(f for f in _FILLERS if f not in words)
        cursor.execute(_PREPARE_SQL, {"bm25q": text, "bm25index": BM25_INDEX, "filler": filler})
        all_lexemes, weights_for, one, long_lexeme, s_long, options = cursor.fetchone()
        lexemes = sorted(all_lexemes or [])
        s1 = dict(zip(weights_for or [], one or [], strict=True))
        params = {"bm25q": text, "bm25index": BM25_INDEX, "tsq": tsquery(lexemes)}
        opts = dict(o.split("=", 1) for o in options or [] if "=" in o)
        k1 = float(opts.get("k1", settings.KNOWHUB_BM25_K1))
        b = float(opts.get("b", settings.KNOWHUB_BM25_B))
        a = k1 * (1 - b)
        exact = bool(lexemes) and set(lexemes) <= set(s1)
        big_b = 0.0
        if exact and b > 0 and long_lexeme is not None:  # else every s1 is 0, or length plays no part
            ratio = s1[long_lexeme] / s_long if s_long else 0.0
            if 1.0 < ratio < _LONG_DOC:
                big_b = (ratio - 1) * (1 + a) / (_LONG_DOC - ratio)
            else:
                exact = False
        params.update(
            bm25_exact=exact,
            bm25_lexemes=lexemes if exact else [],
            bm25_s1=[float(s1[lex]) for lex in lexemes] if exact else [],
            bm25_a=a, bm25_b=big_b, bm25_c=1 + a + big_b,
        )  # fmt: skip
        return TextQuery(lexemes=lexemes, params=params)

    def score_sql(self, alias: str) -> str:
        """Chunk ``alias``'s BM25 score from its ``tsv`` (see ``prepare``), or from the ``<@>``
        operator (which returns the negated score) when ``bm25_exact`` is false. The parameter is
        a literal by the time the planner sees it, so only one branch remains."""
        operator = f"-({alias}.search_text <@> to_bm25query(%(bm25q)s, %(bm25index)s))"
        # Per row: the row's query lexemes only (setweight marks them, ts_filter keeps them), each
        # one's s1 looked up by its place in the lexeme list. A join with the list would build a
        # hash table per row; float8 casts keep the arithmetic off numeric.
        from_tsv = f"""(SELECT coalesce(sum((%(bm25_s1)s::float8[])[array_position(%(bm25_lexemes)s::text[], u.lexeme)]
            * cardinality(u.positions) / (cardinality(u.positions) + %(bm25_a)s::float8
                                           + %(bm25_b)s::float8 * {alias}.search_dl)), 0) * %(bm25_c)s::float8
                    FROM unnest(ts_filter(setweight({alias}.tsv, 'C', %(bm25_lexemes)s::text[]), '{{c}}')) u)"""
        return f"(CASE WHEN %(bm25_exact)s THEN {from_tsv} ELSE {operator} END)"

    def filter_first(self, cursor, *, where: str, params: dict) -> bool:
        """Whether to filter first, from the planner's estimate of the rows the filter keeps.

        Filtering first reads every row that passes the filter (its own indexes find them), checks
        its ``tsv`` for a query word and scores the holders; the index walk reads rows in score
        order until ``n`` pass, ~n/f of them for a filter keeping a fraction f of the chunks.
        Measured at 100k chunks (a 1 % filter, n 40): ~26 µs a filtered row against ~13 µs a
        walked one (``FILTER_ROW_TO_WALK_ROW``); at 1M chunks a walked row costs ~30 µs against ~6 µs
        a filtered one (a 1 % filter: 136 ms walking, 61 ms filtering first), as each walked row
        passes over more postings, so a walked row's cost grows with the index
        (``WALK_COST_BASE_ROWS``). So: filter first when the filter keeps at most
        ``KNOWHUB_TEXT_FILTER_FIRST_ROWS`` rows or ``KNOWHUB_TEXT_FILTER_FIRST_FRACTION`` of the
        chunks (a user who sees 0.1 % of them), walk when it keeps ``BROAD_FILTER`` of them or
        more, and in between whichever reads less. The estimate is cached per process
        (``filter_estimate``): no statement on most searches.
        """
        rows, total = filter_estimate(cursor, where, params)
        if (
            rows <= settings.KNOWHUB_TEXT_FILTER_FIRST_ROWS
            or rows / total <= settings.KNOWHUB_TEXT_FILTER_FIRST_FRACTION
        ):
            return True
        if rows / total >= BROAD_FILTER:
            return False
        walked = params.get("n", settings.KNOWHUB_SEARCH_CANDIDATES) * total / rows
        return rows * FILTER_ROW_TO_WALK_ROW <= walked * max(1.0, total / WALK_COST_BASE_ROWS)

    def candidates(
        self, cursor, tq: TextQuery, *, where: str, params: dict, n: int, plan: str | None = None,
        prune: bool = True,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """The keyword top-n (id, score). ``prune`` false: a pruned first pass is known not to
        complete the page, every row is scored at once."""
        if plan is None:
            plan = "filter_first" if self.filter_first(cursor, where=where, params=params) else "index_order"
        sql = self.candidates_sql(cursor, where=where, params=params, plan=plan)
        if plan == "filter_first" and prune:
            # Score the rows holding a rarer query word first: the commonest words' rows rarely
            # reach the top-n, and when one could, every row is scored below (``rag.text_prune``).
            first, rest = text_prune.first_pass(params, settings.KNOWHUB_TEXT_PRUNE_FRACTION)
            if rest > 0:
                cursor.execute(sql, {**params, "n": n, **first})
                rows = [(int(i), float(score)) for i, score in cursor.fetchall()]
                if text_prune.complete(rows, n=n, rest=rest):
                    return rows
        cursor.execute(sql, {**params, "n": n})
        rows = [(int(i), float(score)) for i, score in cursor.fetchall()]
        scores = [score for _, score in rows]
        if plan == "index_order" and scores and (min(scores) <= 0 or min(scores) == max(scores)):
            # The planner walked no bm25 index (a plan change): no scan set a score for these rows,
            # and the helper reads 0 or the last score an earlier scan of this session left, the
            # same for every row. Score them with the operator instead (also what a page of exact
            # ties costs: correct either way).
            logger.info("pg_textsearch: no bm25 index scan for the ordered candidates; scoring per row")
            cursor.execute(
                self.candidates_sql(cursor, where=where, params=params, plan="index_order_scored"), {**params, "n": n}
            )
            rows = [(int(i), float(score)) for i, score in cursor.fetchall()]
        return rows

    def candidates_sql(
        self, cursor, *, where: str, params: dict, plan: str | None = None, parity: int | None = None
    ) -> str:
        """``plan``: "filter_first" / "index_order" (default: by selectivity). ``parity`` (0, 1):
        only the rows whose id has it, on a selective filter (``rag.split_search``).

        ``index_order`` reads each row's score from the index scan that ranked it
        (``bm25_get_current_score()``, the value pg_textsearch caches per returned tuple) instead of
        projecting ``<@>`` again: a projected ``<@>`` is the standalone operator, which re-parses
        the row's text (~0.09 ms a row, 100 rows ≈ 9 ms at 100k chunks; the walk itself ≈ 0.5 ms).
        Only a bm25 index scan sets that value, and it only returns rows holding a query word
        (score > 0): a 0, or one value for every row (what an earlier scan left), means another
        plan ran, and ``candidates`` scores those rows again with the operator
        (``index_order_scored``).
        """
        if plan is None:
            plan = "filter_first" if self.filter_first(cursor, where=where, params=params) else "index_order"
        if plan == "filter_first":
            # Scoring from tsv reads no text: do not copy it (the other branch must still parse).
            text = "NULL::text AS search_text" if params.get("bm25_exact") else "c.search_text"
            rows, total = filter_estimate(cursor, where, params)
            if rows / total < BROAD_FILTER:
                # The filter is the selective part: its own indexes find the rows, the query words
                # are checked per row. Left to itself the planner ANDs in the tsv GIN scan, which for
                # common words reads half the index (65 of 70 ms measured at 100k chunks, 1 % filter).
                # OFFSET 0 keeps the filter's scan apart without a materialised CTE, which would
                # copy every filtered row's tsv into its store first.
                half = f"AND c.id %% 2 = {int(parity)}" if parity is not None else ""
                return f"""
                    SELECT c.id, {self.score_sql("c")} AS s
                    FROM (SELECT c.id, c.tsv, c.search_dl, {text} FROM rag_chunk c WHERE {where} OFFSET 0) c
                    WHERE c.tsv @@ %(tsq)s::tsquery {half}
                    ORDER BY s DESC, c.id LIMIT %(n)s
                """
            return f"""
                WITH f AS MATERIALIZED (
                    SELECT c.id, c.tsv, c.search_dl, {text} FROM rag_chunk c WHERE c.tsv @@ %(tsq)s::tsquery AND {where}
                )
                SELECT c.id, {self.score_sql("c")} AS s FROM f c ORDER BY s DESC, c.id LIMIT %(n)s
            """
        score = self.score_sql("c") if plan == "index_order_scored" else "-bm25_get_current_score()"
        return f"""
            SELECT c.id, {score} AS s FROM rag_chunk c WHERE {where}
            ORDER BY c.search_text <@> to_bm25query(%(bm25q)s, %(bm25index)s) LIMIT %(n)s
        """

    def known_collections(self, scope: Scope) -> list[str]:
        """Distinct collections by a loose index scan over chunk_source_idx, each kept when the
        scope sees one live chunk of it (no statistics table to read with this backend)."""
        acl_sql, params = scope.sql("c")
        with replicas.read_connection().cursor() as cursor:
            cursor.execute(
                f"""
                WITH RECURSIVE cols(name) AS (
                    SELECT min(collection) FROM rag_chunk
                    UNION ALL
                    SELECT (SELECT min(collection) FROM rag_chunk WHERE collection > cols.name)
                    FROM cols WHERE cols.name IS NOT NULL
                )
                SELECT name FROM cols WHERE name IS NOT NULL AND EXISTS (
                    SELECT 1 FROM rag_chunk c WHERE c.collection = cols.name AND c.deleted_at IS NULL AND {acl_sql}
                ) ORDER BY 1
                """,
                params,
            )
            return [row[0] for row in cursor.fetchall()]

    def is_set_up(self, cursor) -> bool:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns "
            "WHERE table_name = 'rag_chunk' AND column_name = %s)",
            [DL_COLUMN],
        )
        return (
            cursor.fetchone()[0]
            and bm25_index_present(cursor)
            and not triggers_present(cursor)
            and length_function_current(cursor)
            and not text_columns.column_generated(cursor, DL_COLUMN)
            and text_columns.fills_length(cursor)
        )

    def set_up(self, cursor) -> None:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_textsearch")
        cursor.execute(CREATE_LENGTH_FUNCTION)
        # pg_textsearch indexes columns, not expressions: title and content in one stored column,
        # and beside it the length the index gives that text (``score_sql`` reads it), counted
        # from the row's ``tsv``. One ALTER: adding a stored column rewrites the table. The copy
        # of the text is stored like the text itself (out of line when the row is too long, never
        # compressed: migration rag 0006 says why).
        cursor.execute(
            "ALTER TABLE rag_chunk "
            "ADD COLUMN IF NOT EXISTS search_text text GENERATED ALWAYS AS (title || E'\\n' || content) STORED, "
            f"ADD COLUMN IF NOT EXISTS {DL_COLUMN} integer GENERATED ALWAYS AS ({DL_FUNCTION}(tsv)) STORED, "
            "ALTER COLUMN search_text SET STORAGE EXTERNAL"
        )
        # From here on the text trigger writes the length with ``tsv``. Dropping the expression
        # keeps the values and rewrites nothing, also for a column an earlier version generated
        # from the text (the same count).
        if text_columns.column_generated(cursor, DL_COLUMN):
            cursor.execute(f"ALTER TABLE rag_chunk ALTER COLUMN {DL_COLUMN} DROP EXPRESSION")
        cursor.execute(text_columns.function_sql(with_length=True))
        cursor.execute(f"DROP FUNCTION IF EXISTS {OLD_LENGTH_FUNCTION}")
        create_bm25_index(cursor)
        for trigger in TERM_STAT_TRIGGERS:  # nothing reads rag_term_stat now: writes stop paying for it
            cursor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON rag_chunk")
        cursor.execute("TRUNCATE rag_term_stat")
        logger.info("pg_textsearch: bm25 index %s in place, term-stat triggers dropped", BM25_INDEX)


def create_bm25_index(cursor) -> None:
    """The bm25 index over ``search_text``, with the configured k1 and b (a no-op when it exists)."""
    k1, b = float(settings.KNOWHUB_BM25_K1), float(settings.KNOWHUB_BM25_B)
    cursor.execute(
        f"CREATE INDEX IF NOT EXISTS {BM25_INDEX} ON rag_chunk USING bm25 (search_text) "
        f"WITH (text_config = 'english', k1 = {k1}, b = {b})"
    )


_FILLERS = ("xqzjv", "zjqxv", "vqxzj")  # a token no query holds (one is always free)
_LONG_DOC = 39  # one query word + 38 fillers: a length the index stores exactly (0…39 are)
_PREPARE_SQL = """
    WITH lx AS (SELECT tsvector_to_array(to_tsvector('english', %(bm25q)s)) AS lexemes),
    words AS (
        SELECT w, tsvector_to_array(to_tsvector('english', w)) AS l
        FROM unnest(string_to_array(%(bm25q)s, ' ') || (SELECT lexemes FROM lx)) AS w
    ),
    src AS MATERIALIZED (
        SELECT DISTINCT ON (l[1]) l[1] AS lexeme, w AS doc FROM words
        WHERE cardinality(l) = 1 AND l[1] = ANY((SELECT lexemes FROM lx)::text[]) ORDER BY l[1], w
    ),
    one AS MATERIALIZED (SELECT s.lexeme, -(s.doc <@> to_bm25query(%(bm25q)s, %(bm25index)s)) AS score FROM src s),
    long AS (
        SELECT x.lexeme, -(x.doc <@> to_bm25query(%(bm25q)s, %(bm25index)s)) AS score
        FROM (SELECT o.lexeme, s.doc || repeat(' ' || %(filler)s, 38) AS doc FROM one o JOIN src s USING (lexeme)
              WHERE o.score > 0 ORDER BY o.score DESC, o.lexeme LIMIT 1) x
    )
    SELECT (SELECT lexemes FROM lx),
           (SELECT array_agg(lexeme ORDER BY lexeme) FROM one),
           (SELECT array_agg(score ORDER BY lexeme) FROM one),
           (SELECT lexeme FROM long),
           (SELECT score FROM long),
           (SELECT reloptions FROM pg_class WHERE oid = to_regclass(%(bm25index)s))
"""


BROAD_FILTER = 0.1  # a filter keeping this share of the chunks or more: walk the index
# Reading one row that passes the filter (and scoring it when it holds a query word) costs about
# as much as walking this many rows of the bm25 index (``PgTextsearch.filter_first``).
FILTER_ROW_TO_WALK_ROW = 2
WALK_COST_BASE_ROWS = 100_000  # index size where that holds; a walked row costs more beyond it
FILTER_ESTIMATE_SECONDS = 30.0
_filter_estimates: dict[tuple, tuple[float, float, float]] = {}


def filter_estimate(cursor, where: str, params: dict) -> tuple[float, float]:
    """(rows the filter keeps, rows in the table), planner estimates, cached per process for
    ``FILTER_ESTIMATE_SECONDS`` by the WHERE text and the values it reads (a user's ACL and
    filters): two statements saved on most searches. Estimates only, never rows: nothing of one
    caller reaches another. ``reset()`` forgets them."""
    names = sorted(set(re.findall(r"%\((\w+)\)s", where)))
    key = (where, tuple((name, _frozen(params.get(name))) for name in names))
    now = time.monotonic()
    hit = _filter_estimates.get(key)
    if hit is not None and now - hit[2] < FILTER_ESTIMATE_SECONDS:
        return hit[0], hit[1]
    cursor.execute("SELECT greatest(reltuples, 1) FROM pg_class WHERE oid = 'rag_chunk'::regclass")
    total = float(cursor.fetchone()[0])
    rows = _estimate(cursor, where, params)
    if len(_filter_estimates) >= 1024:
        _filter_estimates.clear()
    _filter_estimates[key] = (rows, total, now)
    return rows, total


def _frozen(value):
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def _estimate(cursor, where: str, params: dict) -> float:
    """The planner's row estimate for ``rag_chunk c WHERE where``."""
    cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM rag_chunk c WHERE {where}", params)
    plan = cursor.fetchone()[0]
    return float((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"])


BACKENDS: dict[str, type] = {"pg_textsearch": PgTextsearch, "sql": SqlBm25}

_active: dict[str, TextBackend] = {}
_lock = threading.Lock()


def pg_textsearch_available(cursor) -> bool:
    """The server has pg_textsearch and preloads it (the extension refuses to work otherwise)."""
    cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_textsearch'), "
        "current_setting('shared_preload_libraries')"
    )
    available, preload = cursor.fetchone()
    return bool(available) and "pg_textsearch" in [p.strip() for p in (preload or "").split(",")]


def wanted_backend(cursor) -> str:
    """The backend ``KNOWHUB_TEXT_BACKEND`` asks for on this server."""
    choice = settings.KNOWHUB_TEXT_BACKEND
    if choice not in ("auto", *BACKENDS):
        raise ValueError(f"KNOWHUB_TEXT_BACKEND must be auto, {' or '.join(BACKENDS)}; got {choice!r}")
    if choice == "auto":
        return "pg_textsearch" if pg_textsearch_available(cursor) else "sql"
    if choice == "pg_textsearch" and not pg_textsearch_available(cursor):
        raise RuntimeError(
            "KNOWHUB_TEXT_BACKEND=pg_textsearch but this PostgreSQL server does not offer and preload "
            "pg_textsearch (shared_preload_libraries = 'pg_textsearch'). Use auto or sql."
        )
    return choice


def active_backend() -> TextBackend:
    """The keyword backend for this process, with the schema in its state (set up once), and
    with pg_textsearch an index checked once per server start (``check_bm25_index``)."""
    key = connection.alias
    backend = _active.get(key)
    if backend is None:
        with _lock:
            backend = _active.get(key)
            if backend is None:
                backend = ensure_backend()
                _active[key] = backend
    if backend.name == "pg_textsearch" and not getattr(connection, CHECKED_FLAG, False):
        check_bm25_index()
    return backend


# pg_textsearch 1.0 keeps the documents inserted since the index was built in a memtable whose
# corpus statistics live in shared memory. When the server restarts (or a transaction that
# dropped the index rolls back), it restores the memtable's postings from disk but not the
# statistics: the index then counts 0 documents, and keyword search returns nothing or ranks by
# nonsense (SciFact BM25 nDCG@10 0.695 before a restart, 0.000 after) until the index is rebuilt.
# A rebuilt index counts every row again (the build writes its statistics to disk), so one sign
# is an index counting fewer documents than the table holds: every row is indexed (search_text
# is never NULL).
# The other way round, a row deleted or replaced stays in the statistics (document count, length
# and term frequencies) until the index is rebuilt; neither VACUUM nor bm25_force_merge() takes
# it out. Re-reading 35 QMSum meetings whose text had changed left the index counting 3,514
# documents for 2,143 chunks; asked of such an index, the ask benchmark's meeting_in_sources was
# 0.911, and 0.941 again after a rebuild. So an index counting more documents than the table holds,
# by more than ``BM25_STALE_SHARE``, is rebuilt too; ingest runs that replaced or deleted chunks
# queue that check (``rag.tasks.check_bm25_index``).
CHECKED_FLAG = "knowhub_bm25_checked"  # on a connection: its server's index was checked
BM25_MISSING_SHARE = 0.02
BM25_STALE_SHARE = 0.10  # a rebuild takes ~30 s at 100k chunks: not after every edit
_REPAIR_LOCK = 7_160_017  # pg_advisory_lock key: one rebuild at a time across processes
_checked_servers: dict[str, object] = {}


def forget_bm25_check(sender=None, connection=None, **kwargs) -> None:
    """``connection_created`` receiver: a new connection may reach a server that restarted."""
    if connection is not None:
        setattr(connection, CHECKED_FLAG, False)


def bm25_index_documents(cursor) -> int | None:
    """The document count the bm25 index's statistics hold (None when it cannot be read)."""
    cursor.execute("SELECT bm25_summarize_index(%s)", [BM25_INDEX])
    found = re.search(r"total_docs:\s*(\d+)", cursor.fetchone()[0] or "")
    return int(found[1]) if found else None


def bm25_index_counts(cursor) -> tuple[int, int | None]:
    """(rows in the table, documents the index counts)."""
    cursor.execute("SELECT count(*) FROM rag_chunk")
    return cursor.fetchone()[0], bm25_index_documents(cursor)


def _bm25_repair_reason(rows: int, documents: int | None) -> str:
    """Why the index needs a rebuild, or "" when its statistics match the table (see above)."""
    if documents is None:
        return ""
    if rows > 0 and documents < rows * (1 - BM25_MISSING_SHARE):
        return "its statistics were lost, e.g. by a server restart"
    if documents > rows * (1 + BM25_STALE_SHARE):
        return "it still counts rows that were replaced or deleted"
    return ""


def check_bm25_index(*, force: bool = False) -> bool:
    """Rebuild the bm25 index when its statistics lost documents or still count gone ones (see
    above); once per server start and process unless ``force``. True when it rebuilt. Outside a
    transaction the rebuild is ``REINDEX … CONCURRENTLY`` (searches go on meanwhile); other
    processes wait for the rebuild, then find the index whole. Marks the connection checked
    unless it left the check to another connection (it holds a sync lock, or another process's
    rebuild was under way and it could not wait)."""
    outcome = _check_bm25_index(force=force)
    if outcome is not None:
        setattr(connection, CHECKED_FLAG, True)
    return bool(outcome)


def _check_bm25_index(*, force: bool) -> bool | None:
    """True when it rebuilt, False when nothing was to do (or the rebuild is queued), None when it
    left the check to another connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_postmaster_start_time()")
        started = cursor.fetchone()[0]
        if not force and _checked_servers.get(connection.alias) == started:
            return False
        if not bm25_index_present(cursor):
            return False
        # A rebuild is concurrent outside a transaction, and waits for every older transaction to
        # end: for one waiting on a lock this session holds (a webhook delivery waiting for the
        # page a worker syncs), each would wait for the other. Such a session leaves the check to
        # the next connection that holds none (any search, the periodic task).
        if not connection.in_atomic_block and locks.holds_session_locks(cursor):
            logger.info("pg_textsearch: not checking the bm25 index while holding a sync lock")
            return None
        # A transaction cannot wait for another process's rebuild either: the rebuild waits for
        # that transaction. It goes on unchecked; a later connection checks.
        if not locks.session_lock(cursor, _REPAIR_LOCK, wait=not connection.in_atomic_block):
            logger.info("pg_textsearch: another process is checking the bm25 index")
            return None
        try:
            rows, documents = bm25_index_counts(cursor)
            reason = _bm25_repair_reason(rows, documents)
            if reason:
                logger.warning(
                    "pg_textsearch: the bm25 index counts %s documents for %s chunks (%s); rebuilding it",
                    documents, rows, reason,
                )  # fmt: skip
                if connection.in_atomic_block and not _chunks_held_still(cursor):
                    # Others are writing chunks: a plain REINDEX would wait for them while holding
                    # pg_textsearch's index lock, which their inserts wait for (neither ever moves).
                    # Rebuild once this transaction is over, concurrently.
                    from rag.tasks import check_bm25_index as check_task

                    logger.warning("pg_textsearch: chunks are being written; the rebuild is queued")
                    transaction.on_commit(check_task.delay, robust=True)
                    return False
                concurrently = "" if connection.in_atomic_block else "CONCURRENTLY "
                started_at = time.perf_counter()
                cursor.execute(f"REINDEX INDEX {concurrently}{BM25_INDEX}")
                logger.warning("pg_textsearch: bm25 index rebuilt in %.1f s", time.perf_counter() - started_at)
        finally:
            locks.session_unlock(cursor, _REPAIR_LOCK)
    _checked_servers[connection.alias] = started
    return bool(reason)


def _chunks_held_still(cursor, wait_seconds: float = 2.0) -> bool:
    """Take the chunk table's SHARE lock (no writes until this transaction ends) unless writers
    hold it past ``wait_seconds``; True when held. Inside a savepoint, so a timeout leaves the
    caller's transaction usable."""
    cursor.execute("SELECT current_setting('lock_timeout')")
    previous = cursor.fetchone()[0]
    try:
        with transaction.atomic():
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{int(wait_seconds * 1000)}ms"])
            cursor.execute("LOCK TABLE rag_chunk IN SHARE MODE")
    except OperationalError:
        return False
    finally:
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
    return True


def ensure_backend() -> TextBackend:
    """Choose the backend and put the schema in its state (idempotent; a no-op when already so)."""
    with transaction.atomic(), connection.cursor() as cursor:
        backend: TextBackend = BACKENDS[wanted_backend(cursor)]()
        if not backend.is_set_up(cursor):
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SWITCH_LOCK])
            if not backend.is_set_up(cursor):
                logger.warning("switching keyword search to the %s backend", backend.name)
                backend.set_up(cursor)
    return backend


def reset() -> None:
    """Forget the chosen backend (tests switch it; a later search chooses again), the cached
    filter estimates and which servers' bm25 index was checked."""
    _active.clear()
    _filter_estimates.clear()
    _checked_servers.clear()
    setattr(connection, CHECKED_FLAG, False)
