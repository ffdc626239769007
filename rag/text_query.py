"""What both keyword backends share: the query's cleaning and its lexemes as a ``tsquery``, what a
backend prepares for one query, the backend protocol, and the names of the bm25 index and of the
SQL backend's term-statistics triggers (each backend's set-up removes the other's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from django.db import connection

from rag.acl import Scope

MAX_QUERY_CHARS = 2000
MAX_TSQUERY_TERMS = 64

BM25_INDEX = "chunk_search_text_bm25"
TERM_STAT_TRIGGERS = ("rag_chunk_term_stat_insert", "rag_chunk_term_stat_update", "rag_chunk_term_stat_delete")
CREATE_TERM_STAT_TRIGGERS = """
CREATE TRIGGER rag_chunk_term_stat_insert AFTER INSERT ON rag_chunk
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_term_stat_on_insert();
CREATE TRIGGER rag_chunk_term_stat_update AFTER UPDATE ON rag_chunk
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
        EXECUTE FUNCTION rag_term_stat_on_update();
CREATE TRIGGER rag_chunk_term_stat_delete AFTER DELETE ON rag_chunk
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_term_stat_on_delete();
"""


def clean_query_text(text: str) -> str:
    """Cap and clean a query before it reaches the parser (long queries overflow ``to_tsquery``)."""

    words = re.findall(r"\w+", text[:MAX_QUERY_CHARS].lower())
    seen: list[str] = []
    for word in words:
        if word not in seen:
            seen.append(word)
        if len(seen) >= MAX_TSQUERY_TERMS:
            break
    return " ".join(seen)


def tsquery(lexemes: list[str]) -> str:
    """The OR of already-stemmed lexemes as ``tsquery`` input (quoted, so cast it)."""
    return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)


@dataclass
class TextQuery:
    """What a backend prepared for one query: its lexemes and the SQL parameters its scoring
    expression (``score_sql``) reads. ``lexemes`` empty: the query has no searchable word."""

    lexemes: list[str]
    params: dict = field(default_factory=dict)

    @property
    def has_text(self) -> bool:
        return bool(self.lexemes)


class TextBackend(Protocol):
    name: str

    def readable_on_replicas(self) -> bool:
        """Whether a streaming replica's copy of this backend's index can be searched."""
        ...

    def prepare(self, cursor, *, query: str, filters, scope: Scope) -> TextQuery: ...

    def candidates(self, cursor, tq: TextQuery, *, where: str, params: dict, n: int) -> list[tuple[int, float]]:
        """The ``n`` best visible chunks by text score (``where`` applied in the SQL), best first."""
        ...

    def score_sql(self, alias: str) -> str:
        """A SQL expression: chunk ``alias``'s text score (higher is better; params of ``prepare``)."""
        ...

    def known_collections(self, scope: Scope) -> list[str]: ...

    def is_set_up(self, cursor) -> bool: ...

    def set_up(self, cursor) -> None: ...


def triggers_present(cursor) -> bool:
    cursor.execute(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'rag_chunk'::regclass AND tgname = ANY(%s)",
        [list(TERM_STAT_TRIGGERS)],
    )
    return cursor.fetchone()[0] == len(TERM_STAT_TRIGGERS)


def triggers_present_now() -> bool:
    with connection.cursor() as cursor:
        return triggers_present(cursor)


def bm25_index_present(cursor) -> bool:
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [BM25_INDEX])
    return cursor.fetchone()[0]


def settle_bm25_index(cursor) -> None:
    """Move the rows the bm25 index holds in memory (its memtable, where new rows wait until it
    grows past a threshold or the server restarts) to its on-disk segments. The two keep a row's
    statistics in different forms and score some rows slightly apart, so the same question can
    rank its sources differently before and after a restart; a benchmark settles the index first,
    so that its figures do not depend on how long the server has run."""
    if bm25_index_present(cursor):
        cursor.execute("SELECT bm25_spill_index(%s)", [BM25_INDEX])
