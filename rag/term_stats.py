"""Upkeep of ``rag_term_stat``, the document frequencies BM25 scoring reads.

Triggers on ``rag_chunk`` (migration 0002) append signed deltas for every statement that
changes live chunks; nothing here is needed for correctness. ``compact`` folds the deltas into
one row per (partition, lexeme) so IDF look-ups stay a handful of index reads; ``rebuild``
recomputes everything from the chunks (a repair tool, e.g. after a bulk load with triggers off).
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

logger = logging.getLogger(__name__)

# Partition totals rows ('' lexeme) appear once per partition and statement; more than this many
# means deltas piled up since the last compaction.
COMPACT_AFTER_DELTAS = 500

_KEY = "collection, visibility, project_id, owner_hash, lexeme"

# Every live chunk's lexemes (length 0) plus one '' row carrying its length, grouped by partition
# and lexeme: columns 1-5 are the partition and the lexeme, then the sums a SELECT makes of x.
_LIVE_LEXEMES = """FROM rag_chunk c
            CROSS JOIN LATERAL (
                SELECT l AS lexeme, 0 AS length FROM unnest(tsvector_to_array(c.tsv)) AS l
                UNION ALL SELECT '', length(c.tsv)
            ) x
            WHERE c.deleted_at IS NULL
            GROUP BY 1, 2, 3, 4, 5"""


def compact() -> int:
    """Fold all committed deltas into one row per key; returns the rows left.

    One statement: the rows it deletes are exactly the ones it re-inserts as sums, and rows other
    transactions commit meanwhile are not seen, so concurrent writers and compactors stay exact.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH gone AS (DELETE FROM rag_term_stat RETURNING {_KEY}, docs, length)
            INSERT INTO rag_term_stat ({_KEY}, docs, length)
            SELECT {_KEY}, sum(docs), sum(length) FROM gone GROUP BY {_KEY}
            HAVING sum(docs) <> 0 OR sum(length) <> 0
            """
        )
        left = cursor.rowcount
    logger.info("compacted rag_term_stat to %s rows", left)
    return left


def maybe_compact(threshold: int = COMPACT_AFTER_DELTAS) -> bool:
    """Compact when enough deltas piled up; cheap enough to call after every upsert."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT 1 FROM rag_term_stat WHERE lexeme = '' LIMIT %s) t", [threshold + 1]
        )
        if cursor.fetchone()[0] <= threshold:
            return False
    compact()
    return True


@transaction.atomic
def rebuild() -> int:
    """Recompute every frequency from the live chunks (locks out chunk writers meanwhile)."""
    with connection.cursor() as cursor:
        cursor.execute("LOCK TABLE rag_chunk IN SHARE MODE")
        cursor.execute("DELETE FROM rag_term_stat")
        cursor.execute(
            f"""
            INSERT INTO rag_term_stat ({_KEY}, docs, length)
            SELECT c.collection, c.visibility, c.project_id, c.owner_hash, x.lexeme, count(*), sum(x.length)
            {_LIVE_LEXEMES}
            """
        )
        return cursor.rowcount


def drift() -> int:
    """How many (partition, lexeme) frequencies differ from a recount (0 when consistent)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH truth AS (
                SELECT c.collection, c.visibility, coalesce(c.project_id, 0) AS project_id, c.owner_hash,
                       x.lexeme, count(*) AS docs, sum(x.length) AS length
                {_LIVE_LEXEMES}
            ), kept AS (
                SELECT collection, visibility, coalesce(project_id, 0) AS project_id, owner_hash, lexeme,
                       sum(docs) AS docs, sum(length) AS length
                FROM rag_term_stat GROUP BY 1, 2, 3, 4, 5 HAVING sum(docs) <> 0 OR sum(length) <> 0
            )
            SELECT count(*) FROM truth FULL JOIN kept USING (collection, visibility, project_id, owner_hash, lexeme)
            WHERE truth.docs IS DISTINCT FROM kept.docs OR truth.length IS DISTINCT FROM kept.length
            """
        )
        return cursor.fetchone()[0]
