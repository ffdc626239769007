"""chunk_search with the real local model: ranking, BM25, filters, dedupe, odd queries, term stats."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from rag import term_stats, text_search
from rag.acl import Scope
from rag.models import Chunk
from rag.search import MODES, SearchFilters, chunk_search, clean_query_text, known_collections, vector_plan
from rag.services import source_delete, source_soft_delete
from tests.rag.factories import doc, load, topic_corpus

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("text_backend")]

ALL = Scope.everything()


@pytest.fixture
def topics(local_embedder):
    load(topic_corpus(), local_embedder)
    return local_embedder


def search(query, embedder, **kw):
    return chunk_search(query=query, scope=ALL, embedder=embedder, **kw)


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_puts_the_matching_topic_first(topics, mode):
    result = search("How do closures keep the variables of an outer function?", topics, mode=mode)
    assert result.hits and result.hits[0].source_id == "closures"
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))


def test_semantic_query_without_shared_words_is_found_by_the_vector_half(topics):
    result = search("powerhouse of the cell energy", topics, mode="hybrid", top_k=3)
    assert result.hits[0].source_id == "mitochondria"
    assert result.hits[0].vec_score > result.hits[1].vec_score


def test_hybrid_score_is_the_weighted_sum_of_both_halves(topics):
    result = search("GIN index for full-text search", topics, mode="hybrid", top_k=6)
    assert result.hits[0].source_id == "sql"
    for h in result.hits:
        assert 0 <= h.txt_score <= 1 and -1 <= h.vec_score <= 1
        assert h.score == pytest.approx(0.7 * h.vec_score + 0.3 * h.txt_score, abs=1e-5)
    assert max(h.txt_score for h in result.hits) == pytest.approx(1.0)
    reweighted = search("GIN index for full-text search", topics, mode="hybrid", top_k=6, weights=(0.0, 1.0))
    for h in reweighted.hits:
        assert h.score == pytest.approx(h.txt_score, abs=1e-5)


def test_bm25_weighs_a_rare_word_above_repetitions_of_a_common_one(local_embedder):
    """ts_rank has no IDF: it prefers the page repeating 'system'. BM25 prefers the rare 'zeolite'."""
    filler = [
        doc(f"f{i}", f"Note {i}", f"The system number {i} was checked by the team on day {i}.") for i in range(12)
    ]
    rare = doc("rare", "Catalysts", "A zeolite catalyst improves the cracking system of the refinery.")
    common = doc(
        "common", "Systems", "The system talks to another system; each system feeds a system log of the system."
    )
    load([*filler, rare, common], local_embedder)
    result = search("zeolite system", local_embedder, mode="fulltext", top_k=5)
    assert result.hits[0].source_id == "rare"
    assert result.hits[0].txt_score == 1.0
    assert next(h for h in result.hits if h.source_id == "common").txt_score < 0.6


def test_fulltext_ignores_chunks_without_any_query_word(topics):
    result = search("mitochondria genome", topics, mode="fulltext", top_k=8)
    assert [h.source_id for h in result.hits] == ["mitochondria"]
    assert result.hits[0].txt_score == 1.0


FILTER_CASES = [
    (SearchFilters(collections=["mnemonics"]), {"hooks", "vectors"}),
    (SearchFilters(domain="javascript"), {"closures", "promises"}),
    (SearchFilters(concepts=["indexes", "cells"]), {"sql", "vectors", "mitochondria"}),
    (SearchFilters(mnemonic_tags=["compass"]), {"vectors"}),
    (SearchFilters(has_image=True), {"promises", "hooks"}),
    (SearchFilters(has_image=False), {"closures", "sql", "vectors", "mitochondria"}),
    (SearchFilters(code=True), {"closures", "promises", "sql"}),
    (SearchFilters(code=False), {"hooks", "vectors", "mitochondria"}),
    (SearchFilters(date_from=dt.date(2024, 3, 1), date_to=dt.date(2024, 12, 31)), {"promises", "hooks"}),
    (SearchFilters(date_from=dt.date(2025, 1, 1)), {"sql", "vectors"}),
    (SearchFilters(source_type="note"), {"mitochondria"}),
    (SearchFilters(domain="postgres", concepts=["embeddings"]), {"vectors"}),
]


@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
@pytest.mark.parametrize("mode", ["hybrid", "fulltext", "vector", "rrf"])
def test_each_filter_narrows_to_exactly_its_chunks(topics, filters, expected, mode):
    # A query sharing words with every topic, so only the filter decides what comes back.
    query = "function state index vector cell promise closure hooks search"
    result = search(query, topics, mode=mode, top_k=50, filters=filters)
    got = {h.source_id for h in result.hits}
    if mode == "fulltext":
        assert got <= expected and got  # only chunks holding a query word
    else:
        assert got == expected


def test_dedupe_keeps_one_hit_per_parent_document(local_embedder):
    load(
        [
            doc("long", "Closures in depth", "Closures capture variables from the enclosing scope.", units=4),
            doc("other", "Scope", "Block scope and function scope decide where a variable is visible."),
        ],
        local_embedder,
    )
    plain = search("closures capture variables", local_embedder, top_k=5)
    assert [h.source_id for h in plain.hits].count("long") == 4
    deduped = search("closures capture variables", local_embedder, top_k=5, dedupe=True)
    assert [h.source_id for h in deduped.hits] == ["long", "other"]


@pytest.mark.parametrize(
    "query",
    [
        "word " * 10_000,
        "the of and a to is",
        "!!! ??? ... ''' \\ & | ! ( ) : * <-> ",
        "митохондрии производят энергию клетки",
        "线粒体 能量",
        "'; DROP TABLE rag_chunk; --",
        "closure:* & !promise",
        "\x00 null byte",
    ],
)
def test_odd_queries_do_not_error(topics, query):
    for mode in MODES:
        result = search(query.replace("\x00", ""), topics, mode=mode, top_k=5)
        assert len(result.hits) <= 5
    assert Chunk.objects.count() == 6


def test_query_cleaning_caps_terms():
    cleaned = clean_query_text(" ".join(f"w{i}" for i in range(5000)))
    assert len(cleaned.split()) == 64
    assert clean_query_text("C++ & (tsquery) | !syntax") == "c tsquery syntax"


@pytest.mark.parametrize("exact_rows", [0, 2000], ids=["hnsw", "exact"])
def test_filtered_search_still_returns_full_top_k(hashing_embedder, settings, exact_rows):
    """With a filter matching 60 of 600 chunks, a plain HNSW scan (ef_search rows, then filter)
    would return a handful; iterative index scans (or an exact scan) return all top_k rows.
    ``KNOWHUB_VECTOR_EXACT_ROWS`` 0 keeps the HNSW order; 2000 makes search compute every
    distance of so small a filter, so the page is exactly the nearest 50.
    Deterministic vectors: this is about the index plan, not embedding quality."""
    settings.KNOWHUB_VECTOR_EXACT_ROWS = exact_rows
    docs = [
        doc(
            f"d{i}", f"Doc {i}", f"Entry {i} about topic {i % 7} and item {i * 13 % 101}.",
            domain="rare" if i % 10 == 0 else "common",
        )
        for i in range(600)
    ]
    load(docs, hashing_embedder)
    # Whichever plan the planner picks (the HNSW index with iterative scans, or the domain index
    # and an exact sort of its 60 rows), the caller gets a full page of matching chunks.
    result = search(
        "topic 3 item", hashing_embedder, mode="vector", top_k=50, filters=SearchFilters(domain="rare"), candidates=50
    )
    assert len(result.hits) == 50
    assert {h.domain for h in result.hits} == {"rare"}
    if exact_rows:
        query = np.array(hashing_embedder.embed_query("topic 3 item"))
        rare = {
            c.source_id: float(np.dot(np.array(c.embedding), query))  # unit vectors: cosine
            for c in Chunk.objects.filter(domain="rare")
        }
        nearest = sorted(rare, key=lambda sid: (-rare[sid], sid))[:50]
        assert [h.source_id for h in result.hits] == nearest


def test_term_stats_follow_upserts_updates_soft_and_hard_deletes(local_embedder, text_backend):
    if text_backend != "sql":
        pytest.skip("rag_term_stat is the SQL backend's; pg_textsearch does not maintain it")
    load(topic_corpus(), local_embedder)
    assert term_stats.drift() == 0
    changed = topic_corpus()
    changed[0].units[0].content = "Closures are rewritten here with entirely new vocabulary: lexical capture."
    changed[1].visibility, changed[1].owner_hash = "private", "abc"
    load(changed, local_embedder)
    assert term_stats.drift() == 0
    source_soft_delete(collection="course_content", source_type="page", source_ids=["sql"])
    assert term_stats.drift() == 0
    assert not search(
        "B-tree index equality", local_embedder, mode="fulltext", filters=SearchFilters(source_type="page")
    ).hits or all(
        h.source_id != "sql" for h in search("B-tree index equality", local_embedder, mode="fulltext").hits
    )
    load(topic_corpus(), local_embedder)  # the soft-deleted source comes back
    source_delete(collection="mnemonics", source_type="page", source_ids=["hooks"])
    assert term_stats.drift() == 0
    term_stats.compact()
    assert term_stats.drift() == 0
    assert known_collections(ALL) == ["course_content", "mnemonics"]
    source_delete(collection="mnemonics", source_type="page", source_ids=["vectors"])
    assert known_collections(ALL) == ["course_content"]
    assert term_stats.rebuild() > 0 and term_stats.drift() == 0


def test_maxscore_pruning_returns_exactly_the_full_bm25_top_n(hashing_embedder, monkeypatch, settings, text_backend):
    """Force the first pass down to the rarest lexeme: the top-n must equal scoring every match."""
    if text_backend != "sql":
        pytest.skip("MaxScore passes are the SQL backend's")
    import rag.sql_bm25 as search_module  # the SQL backend's MaxScore lives here

    settings.KNOWHUB_BM25_MATCH_MAX_DF = 0  # exactness is the point here: no common-lexeme cut-off

    words = ["alpha", "beta", "gamma", "delta"]
    docs = []
    for i in range(120):
        # 'common' is everywhere, the others progressively rarer.
        extra = " ".join(w for j, w in enumerate(words) if i % (j + 2) == 0)
        docs.append(doc(f"m{i}", "", f"common common text {i} {extra} " + "filler " * (i % 9)))
    load(docs, hashing_embedder)
    query = "common alpha beta gamma delta"
    full = search(query, hashing_embedder, mode="fulltext", top_k=10, candidates=10)
    monkeypatch.setattr(search_module, "MAXSCORE_MIN_BUDGET", 1)
    matched: list[int] = []
    original = search_module.TermWeights.tsquery

    def spy(self, lexemes=None):
        if lexemes is not None:
            matched.append(len(lexemes))
        return original(self, lexemes)

    monkeypatch.setattr(search_module.TermWeights, "tsquery", spy)
    pruned = search(query, hashing_embedder, mode="fulltext", top_k=10, candidates=10)
    assert matched and matched[-1] < 5  # 'common' was never matched, only scored
    assert [(h.chunk_uid, h.txt_score) for h in pruned.hits] == [(h.chunk_uid, h.txt_score) for h in full.hits]
    assert len(pruned.hits) == 10


def _common_word_corpus(embedder):
    """'cell' and 'membrane' in every filler chunk (far above 5 %), 'zeolite' in exactly one chunk."""
    filler = [
        doc(
            f"c{i}", f"Cell note {i}",
            f"The cell membrane of sample {i} was stained; each cell was counted on day {i}.",
        )
        for i in range(80)
    ]
    rare = doc("rare", "Catalysts", "A zeolite catalyst sits in the reactor cell of the refinery.")
    load([*filler, rare], embedder)


@pytest.mark.parametrize("mode", MODES)
def test_common_word_is_scored_but_not_matched_and_the_rare_word_chunk_wins(
    local_embedder, monkeypatch, settings, mode, text_backend
):
    """n = 3 keeps MaxScore's first-pass budget (20·n) below the 81 chunks holding 'cell'.

    Only what is certain is asserted: the 80 filler chunks are near-duplicates, so which of them
    the vector half (an approximate index) returns, and in which order, is not.
    """
    if text_backend != "sql":
        pytest.skip("matching only rare lexemes is the SQL backend's MaxScore; pg_textsearch scores every match")
    import rag.sql_bm25 as search_module  # the SQL backend's MaxScore lives here

    _common_word_corpus(local_embedder)
    monkeypatch.setattr(search_module, "MAXSCORE_MIN_BUDGET", 1)
    settings.KNOWHUB_BM25_MATCH_MAX_DF = 0
    exact = search("zeolite cell", local_embedder, mode=mode, top_k=3, candidates=3)
    settings.KNOWHUB_BM25_MATCH_MAX_DF = 0.05
    matched: list[list[str]] = []
    original = search_module.TermWeights.tsquery

    def spy(self, lexemes=None):
        if lexemes is not None:
            matched.append(list(lexemes))
        return original(self, lexemes)

    monkeypatch.setattr(search_module.TermWeights, "tsquery", spy)
    result = search("zeolite cell", local_embedder, mode=mode, top_k=3, candidates=3)
    if mode in ("hybrid", "fulltext"):  # the keyword half finds the rare word and it wins outright
        assert result.hits[0].source_id == exact.hits[0].source_id == "rare"
    if mode == "rrf":  # text rank 1: at most two fillers (in both lists) can fuse above it
        assert "rare" in {h.source_id for h in result.hits}
    if mode != "vector":
        assert matched and all(lexemes == ["zeolit"] for lexemes in matched)  # 'cell' never matched...
        # ...but still scored: the rare chunk's text score counts both words, as in the exact run.
        rare = next(h for h in result.hits if h.source_id == "rare")
        rare_exact = next(h for h in exact.hits if h.source_id == "rare")
        assert rare.txt_score == pytest.approx(rare_exact.txt_score)


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
def test_query_of_only_common_words_still_returns_text_matches(local_embedder, monkeypatch, settings, mode):
    import rag.sql_bm25 as search_module  # the SQL backend's MaxScore lives here (inert for pg_textsearch)

    _common_word_corpus(local_embedder)
    settings.KNOWHUB_BM25_MATCH_MAX_DF = 0.05
    monkeypatch.setattr(search_module, "MAXSCORE_MIN_BUDGET", 1)
    result = search("cell membrane", local_embedder, mode=mode, top_k=3, candidates=3)
    assert len(result.hits) == 3
    assert all("cell membrane" in h.content for h in result.hits)
    assert all(h.txt_score > 0 for h in result.hits)


def test_an_updated_or_deleted_chunk_is_found_or_gone_at_once(local_embedder, text_backend):
    """Upsert, soft delete, hard delete: the keyword index answers the next query correctly."""
    load(topic_corpus(), local_embedder)
    assert not search("zeolite", local_embedder, mode="fulltext").hits
    changed = topic_corpus()
    changed[0].units[0].content = "Closures now talk about a zeolite catalyst."
    load(changed, local_embedder)
    hits = search("zeolite", local_embedder, mode="fulltext").hits
    assert [h.source_id for h in hits] == [changed[0].source_id]
    assert "zeolite" in hits[0].content
    # The old wording is gone from the index's answers for that chunk.
    assert all("zeolite" in h.content for h in search("zeolite closures", local_embedder, mode="fulltext").hits
               if h.source_id == changed[0].source_id)  # fmt: skip
    source_soft_delete(
        collection=changed[0].collection, source_type=changed[0].source_type, source_ids=[changed[0].source_id]
    )
    assert not search("zeolite", local_embedder, mode="fulltext").hits
    assert all(
        h.source_id != changed[0].source_id for h in search("zeolite catalyst", local_embedder, mode="hybrid").hits
    )
    load(changed, local_embedder)  # back again
    assert [h.source_id for h in search("zeolite", local_embedder, mode="fulltext").hits] == [changed[0].source_id]
    source_delete(
        collection=changed[0].collection, source_type=changed[0].source_type, source_ids=[changed[0].source_id]
    )
    assert not search("zeolite", local_embedder, mode="fulltext").hits


def test_known_collections_follow_deletes_on_both_backends(local_embedder, text_backend):
    load(topic_corpus(), local_embedder)
    assert known_collections(ALL) == ["course_content", "mnemonics"]
    source_delete(collection="mnemonics", source_type="page", source_ids=["hooks", "vectors"])
    assert known_collections(ALL) == ["course_content"]


def test_pg_textsearch_plans_agree_and_a_selective_filter_is_applied_first(hashing_embedder, text_backend, settings):
    """Both pg_textsearch plans return the same top-n; the selectivity rule picks filter-first for
    a 2 % filter and the index walk for none; the selective page is full. Deterministic vectors:
    this is about the keyword plans."""
    if text_backend != "pg_textsearch":
        pytest.skip("plan choice is pg_textsearch's")
    from django.db import connection

    from rag.search import filter_sql

    # Rows of earlier tests' rolled-back transactions stay in the bm25 index until a VACUUM and
    # skew its statistics (and the walk's order) against the score computed per row; TRUNCATE
    # (undone with this test's transaction) gives the index a new, empty file.
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE rag_chunk CASCADE")
    docs = [
        doc(
            f"d{i}", f"Doc {i}", f"Entry {i} about topic {i % 7} and item {i * 13 % 101}.",
            domain="rare" if i % 50 == 0 else "common",
        )
        for i in range(600)
    ]
    load(docs, hashing_embedder)
    settings.KNOWHUB_TEXT_FILTER_FIRST_ROWS = 0
    settings.KNOWHUB_TEXT_FILTER_FIRST_FRACTION = 0.05
    backend = text_search.active_backend()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")  # the rule reads the planner's estimate
        for filters, selective in [(SearchFilters(domain="rare"), True), (SearchFilters(), False)]:
            where, params = filter_sql(filters, ALL)
            tq = backend.prepare(cursor, query="topic 3 item 42", filters=filters, scope=ALL)
            assert backend.filter_first(cursor, where=where, params={**params, **tq.params}) is selective
            plans = {
                plan: backend.candidates(cursor, tq, where=where, params={**params, **tq.params}, n=10, plan=plan)
                for plan in ("filter_first", "index_order")
            }
            assert len(plans["filter_first"]) == 10
            # Filter-first scores from tsv, the walk reads the index's own score: float4 apart.
            first, walk = ([score for _, score in plans[p]] for p in ("filter_first", "index_order"))
            assert first == pytest.approx(walk, rel=1e-5)
    result = search("topic item", hashing_embedder, mode="fulltext", top_k=12, filters=SearchFilters(domain="rare"))
    assert len(result.hits) == 12 and {h.domain for h in result.hits} == {"rare"}


def _pg_textsearch_only(text_backend):
    if text_backend != "pg_textsearch":
        pytest.skip("pg_textsearch's scoring")


def test_pg_textsearch_scores_from_tsv_equal_the_operator(hashing_embedder, text_backend):
    """The per-row score read from ``tsv`` with the index's weights (vector-side rows, filter-first
    survivors) is the ``<@>`` operator's: long rows (stored length rounded like the index does),
    a word repeated in the query, title and content words. A lexeme no one-word document yields
    falls back to the operator."""
    _pg_textsearch_only(text_backend)
    from django.db import connection

    # Dead rows of earlier tests' rolled-back transactions stay in the bm25 index until a VACUUM,
    # and there the operator no longer agrees with itself (its index walk and its per-row path
    # differ): compare on a fresh index file, which TRUNCATE (undone with this test) gives.
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE rag_chunk CASCADE")
    long_text = " ".join(f"word{i} closure" if i % 7 == 0 else f"filler{i}" for i in range(180))
    docs = [
        doc("short", "Closures", "A closure keeps the variables of its outer function."),
        doc("long", "Long page about closures", long_text),
        doc("medium", "Scopes", " ".join(["variable scope rules"] * 20) + " closure"),
        *[doc(f"n{i}", f"Note {i}", f"Functions and variables, part {i}.") for i in range(20)],
    ]
    load(docs, hashing_embedder)
    backend = text_search.active_backend()
    with connection.cursor() as cursor:
        for query in ["closure variables closures", "outer function closure scope", "zzznomatch closure"]:
            tq = backend.prepare(cursor, query=query, filters=SearchFilters(), scope=ALL)
            assert tq.params["bm25_exact"]
            cursor.execute(
                f"SELECT c.title, {backend.score_sql('c')}, "
                "-(c.search_text <@> to_bm25query(%(bm25q)s, %(bm25index)s)) "
                "FROM rag_chunk c WHERE c.tsv @@ %(tsq)s::tsquery",
                tq.params,
            )
            rows = cursor.fetchall()
            assert len(rows) >= 3
            for title, from_tsv, operator in rows:
                assert from_tsv == pytest.approx(operator, rel=1e-5), (query, title)
        tq = backend.prepare(cursor, query="closure foo_bar", filters=SearchFilters(), scope=ALL)
        tq.params["bm25_exact"] = False  # what a lexeme no one-word document yields makes it
        cursor.execute(
            f"SELECT {backend.score_sql('c')}, -(c.search_text <@> to_bm25query(%(bm25q)s, %(bm25index)s)) "
            "FROM rag_chunk c WHERE c.tsv @@ %(tsq)s::tsquery",
            tq.params,
        )
        rows = cursor.fetchall()
        assert rows and all(score == operator > 0 for score, operator in rows)


def test_pg_textsearch_ordered_candidates_without_the_bm25_index_scan_are_scored_per_row(
    hashing_embedder, text_backend
):
    """The walk reads each row's score from the bm25 index scan; when the planner picks another
    plan there is no such score, and the rows are scored with the operator instead."""
    _pg_textsearch_only(text_backend)
    from django.db import connection

    from rag.search import filter_sql

    with connection.cursor() as cursor:  # a fresh bm25 index file (see the plan test above)
        cursor.execute("TRUNCATE rag_chunk CASCADE")
    load(
        [doc(f"d{i}", f"Doc {i}", f"Entry {i} about topic {i % 5} and item {i * 7 % 31}.") for i in range(60)],
        hashing_embedder,
    )
    backend = text_search.active_backend()
    where, params = filter_sql(SearchFilters(), ALL)
    with connection.cursor() as cursor:
        tq = backend.prepare(cursor, query="topic 3 item", filters=SearchFilters(), scope=ALL)
        p = {**params, **tq.params}
        walked = backend.candidates(cursor, tq, where=where, params=p, n=8, plan="index_order")
        cursor.execute("SET LOCAL enable_indexscan = off")
        sorted_ = backend.candidates(cursor, tq, where=where, params=p, n=8, plan="index_order")
        cursor.execute("RESET enable_indexscan")
        cursor.execute(
            "SELECT c.id, -(c.search_text <@> to_bm25query(%(bm25q)s, %(bm25index)s)) "
            "FROM rag_chunk c WHERE c.id = ANY(%(ids)s)",
            {**tq.params, "ids": [i for i, _ in sorted_]},
        )
        operator = dict(cursor.fetchall())
    assert len(walked) == 8 and all(score > 0 for _, score in walked)
    # Without the scan's score the rows get the operator's, best first (not the helper's 0).
    assert len(sorted_) == 8 and [s for _, s in sorted_] == sorted((s for _, s in sorted_), reverse=True)
    assert all(score > 0 and score == pytest.approx(operator[i], rel=1e-6) for i, score in sorted_), (sorted_, operator)


def test_pg_textsearch_filter_estimates_are_cached_until_reset(hashing_embedder, text_backend, settings):
    _pg_textsearch_only(text_backend)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from rag.search import filter_sql

    load([doc(f"d{i}", f"Doc {i}", f"Entry {i} about topic {i % 5}.") for i in range(30)], hashing_embedder)
    backend = text_search.active_backend()
    where, params = filter_sql(SearchFilters(domain="rare"), ALL)
    other_where, other = filter_sql(SearchFilters(domain="other"), ALL)
    with connection.cursor() as cursor:
        tq = backend.prepare(cursor, query="topic", filters=SearchFilters(), scope=ALL)
    p = {**params, **tq.params}

    def statements(where, params):
        with CaptureQueriesContext(connection) as ctx, connection.cursor() as cursor:
            backend.filter_first(cursor, where=where, params=params)
        return len(ctx)

    first = statements(where, p)
    assert first >= 1
    assert statements(where, p) == 0
    assert statements(other_where, {**other, **tq.params}) == first  # another filter value: planned anew
    text_search.reset()
    assert statements(where, p) == first


@pytest.mark.parametrize(
    ("kept", "total", "expected"),
    [
        (1_000, 100_000, (True, 0)),  # a 1 % filter at 100k: exact distances
        (20_000, 1_000_000, (True, 0)),  # a 2 % filter at 1M: still exact
        (100_000, 100_000, (False, 40)),  # no filter at 100k: the candidates are the width
        (1_000_000, 1_000_000, (False, 400)),  # at 1M the walk widens with the index
        (100_000_000, 100_000_000, (False, 1000)),  # capped
    ],
)
def test_vector_plan_follows_the_filter_and_the_index_size(monkeypatch, settings, kept, total, expected):
    """No database: the planner's estimates are what the choice reads, so they are given here."""
    settings.KNOWHUB_VECTOR_EXACT_ROWS = 20_000
    settings.KNOWHUB_HNSW_EF_SEARCH = 0
    monkeypatch.setattr(text_search, "filter_estimate", lambda cursor, where, params: (kept, total))
    assert vector_plan(None, "true", {}, 40) == expected


def test_a_fixed_ef_search_setting_wins_over_growth(monkeypatch, settings):
    settings.KNOWHUB_HNSW_EF_SEARCH = 64
    monkeypatch.setattr(text_search, "filter_estimate", lambda cursor, where, params: (1e6, 1e6))
    assert vector_plan(None, "true", {}, 40) == (False, 64)
