"""Filter-first keyword search scores the rows holding a rarer query word first (MaxScore) and
returns exactly what scoring every row returns: the pruned pass when it settles the top-n, every
row when it cannot. Real PostgreSQL with pg_textsearch; deterministic vectors (the keyword half
is what is tested)."""

from __future__ import annotations

import pytest
from django.db import connection

from rag import text_prune, text_search
from rag.acl import Scope
from rag.search import SearchFilters, filter_sql
from tests.rag.factories import doc, load

ALL = Scope.everything()


def test_the_commonest_words_are_left_out_while_their_bounds_stay_under_the_share():
    # c·s1: 1.0 (rare), 0.2 and 0.15 (common), 0.4 (between)
    essential, rest = text_prune.essential_split(["rare", "common", "usual", "mid"], [5.0, 1.0, 0.75, 2.0], 0.2, 0.5)
    assert essential == ["rare", "mid"] and rest == pytest.approx(0.35)
    # A larger share leaves out more, but never the strongest word.
    essential, rest = text_prune.essential_split(["rare", "common", "usual", "mid"], [5.0, 1.0, 0.75, 2.0], 0.2, 10)
    assert essential == ["rare"] and rest == pytest.approx(0.75)
    assert text_prune.essential_split(["a", "b"], [1.0, 1.0], 1.0, 0.0) == (["a", "b"], 0.0)  # off
    assert text_prune.essential_split(["a"], [1.0], 1.0, 0.5) == (["a"], 0.0)  # one word: nothing to skip
    assert text_prune.essential_split(["a", "b"], [1.0, 1.0], 1.0, 0.5) == (["a", "b"], 0.0)  # equal words


def test_a_pruned_page_stands_only_when_full_and_above_what_a_skipped_row_can_score():
    assert text_prune.complete([(1, 3.0), (2, 1.0)], n=2, rest=0.9)
    assert not text_prune.complete([(1, 3.0), (2, 0.9)], n=2, rest=0.9)  # a skipped row may tie
    assert not text_prune.complete([(1, 3.0)], n=2, rest=0.1)  # a skipped row may fill the page


@pytest.fixture
def filtered_corpus(db, hashing_embedder, pg_textsearch):
    """600 entries, 1 in 10 of them in the filtered domain: every entry says the common words, a
    few the rare ones, some both."""
    with connection.cursor() as cursor:
        # An earlier test's rolled-back rows stay in the bm25 index's statistics until a VACUUM;
        # TRUNCATE (undone with this test's transaction) starts it empty.
        cursor.execute("TRUNCATE rag_chunk CASCADE")
    docs = []
    for i in range(600):
        words = ["report on the harbour", "harbour survey notes"][i % 2]
        if i % 7 == 0:
            words += " with zeolite filters"
        if i % 11 == 0:
            words += " and basalt walls"
        docs.append(doc(f"d{i}", f"Entry {i}", f"{words}, entry {i}.", domain="rare" if i % 10 == 0 else "common"))
    load(docs, hashing_embedder)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")


def _candidates(cursor, query: str, n: int) -> tuple[list[tuple[int, float]], int]:
    """The filter-first candidates for ``query`` in the "rare" domain, and the scoring passes run."""
    backend = text_search.active_backend()
    filters = SearchFilters(domain="rare")
    where, params = filter_sql(filters, ALL)
    tq = backend.prepare(cursor, query=query, filters=filters, scope=ALL)
    assert tq.params["bm25_exact"]
    statements: list[str] = []

    def record(execute, sql, sql_params, many, context):
        if "ORDER BY s DESC" in sql:  # the scoring passes, not the planner estimates
            statements.append(sql)
        return execute(sql, sql_params, many, context)

    with connection.execute_wrapper(record):
        rows = backend.candidates(cursor, tq, where=where, params={**params, **tq.params}, n=n, plan="filter_first")
    return rows, len(statements)


@pytest.mark.parametrize("n", [3, 8, 40])
def test_the_pruned_pass_returns_what_scoring_every_row_returns(filtered_corpus, settings, n):
    query = "zeolite basalt harbour report"
    with connection.cursor() as cursor:
        settings.KNOWHUB_TEXT_PRUNE_FRACTION = 0
        every, statements = _candidates(cursor, query, n)
        assert statements == 1
        settings.KNOWHUB_TEXT_PRUNE_FRACTION = 0.5
        pruned, statements = _candidates(cursor, query, n)
    assert [i for i, _ in pruned] == [i for i, _ in every]
    assert [s for _, s in pruned] == pytest.approx([s for _, s in every], rel=1e-9)
    # 14 of the 60 filtered entries hold a rare word: a page of 3 or 8 is settled by the first
    # pass; a page of 40 needs entries holding only the common words, which the first pass
    # skipped, so every row is scored again.
    assert statements == (1 if n <= 8 else 2)


def test_a_query_of_equal_words_is_not_pruned(filtered_corpus, settings):
    settings.KNOWHUB_TEXT_PRUNE_FRACTION = 0.5
    with connection.cursor() as cursor:
        rows, statements = _candidates(cursor, "harbour", 5)
    assert statements == 1 and len(rows) == 5
