"""chunk_search with the real local model: ranking, BM25, filters, dedupe, odd queries, term stats."""

from __future__ import annotations

import datetime as dt

import pytest

from rag import term_stats
from rag.acl import Scope
from rag.models import Chunk
from rag.search import MODES, SearchFilters, chunk_search, clean_query_text, known_collections
from rag.services import source_delete, source_soft_delete
from tests.rag.search_factories import doc, load, topic_corpus

pytestmark = pytest.mark.django_db

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
    filler = [doc(f"f{i}", f"Note {i}", f"The system number {i} was checked by the team on day {i}.") for i in range(12)]
    rare = doc("rare", "Catalysts", "A zeolite catalyst improves the cracking system of the refinery.")
    common = doc("common", "Systems", "The system talks to another system; each system feeds a system log of the system.")
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


def test_filtered_search_still_returns_full_top_k(hashing_embedder):
    """With a filter matching 60 of 600 chunks, a plain HNSW scan (ef_search rows, then filter)
    would return a handful; iterative index scans (or an exact scan) return all top_k rows.
    Deterministic vectors: this is about the index plan, not embedding quality."""
    docs = [
        doc(f"d{i}", f"Doc {i}", f"Entry {i} about topic {i % 7} and item {i * 13 % 101}.", domain="rare" if i % 10 == 0 else "common")
        for i in range(600)
    ]
    load(docs, hashing_embedder)
    # Whichever plan the planner picks (the HNSW index with iterative scans, or the domain index
    # and an exact sort of its 60 rows), the caller gets a full page of matching chunks.
    result = search("topic 3 item", hashing_embedder, mode="vector", top_k=50, filters=SearchFilters(domain="rare"), candidates=50)
    assert len(result.hits) == 50
    assert {h.domain for h in result.hits} == {"rare"}


def test_term_stats_follow_upserts_updates_soft_and_hard_deletes(local_embedder):
    load(topic_corpus(), local_embedder)
    assert term_stats.drift() == 0
    changed = topic_corpus()
    changed[0].units[0].content = "Closures are rewritten here with entirely new vocabulary: lexical capture."
    changed[1].visibility, changed[1].owner_hash = "private", "abc"
    load(changed, local_embedder)
    assert term_stats.drift() == 0
    source_soft_delete(collection="course_content", source_type="page", source_ids=["sql"])
    assert term_stats.drift() == 0
    assert not search("B-tree index equality", local_embedder, mode="fulltext", filters=SearchFilters(source_type="page")).hits or all(
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


def test_maxscore_pruning_returns_exactly_the_full_bm25_top_n(hashing_embedder, monkeypatch, settings):
    """Force the first pass down to the rarest lexeme: the top-n must equal scoring every match."""
    import rag.search as search_module

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
        doc(f"c{i}", f"Cell note {i}", f"The cell membrane of sample {i} was stained; each cell was counted on day {i}.")
        for i in range(80)
    ]
    rare = doc("rare", "Catalysts", "A zeolite catalyst sits in the reactor cell of the refinery.")
    load([*filler, rare], embedder)


@pytest.mark.parametrize("mode", MODES)
def test_common_word_is_scored_but_not_matched_and_the_rare_word_chunk_wins(local_embedder, monkeypatch, settings, mode):
    """n = 3 keeps MaxScore's first-pass budget (20·n) below the 81 chunks holding 'cell'."""
    import rag.search as search_module

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
    assert result.hits[0].source_id == exact.hits[0].source_id
    if mode in ("hybrid", "fulltext"):  # the keyword half is what finds the rare word
        assert result.hits[0].source_id == "rare"
    if mode != "vector":
        assert matched and all(lexemes == ["zeolit"] for lexemes in matched)  # 'cell' never matched...
        # ...but still scored: the rare chunk's text score counts both words, as in the exact run.
        assert result.hits[0].txt_score == pytest.approx(exact.hits[0].txt_score)
        assert result.hits[0].score == pytest.approx(exact.hits[0].score)


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
def test_query_of_only_common_words_still_returns_text_matches(local_embedder, monkeypatch, settings, mode):
    import rag.search as search_module

    _common_word_corpus(local_embedder)
    settings.KNOWHUB_BM25_MATCH_MAX_DF = 0.05
    monkeypatch.setattr(search_module, "MAXSCORE_MIN_BUDGET", 1)
    result = search("cell membrane", local_embedder, mode=mode, top_k=3, candidates=3)
    assert len(result.hits) == 3
    assert all("cell membrane" in h.content for h in result.hits)
    assert all(h.txt_score > 0 for h in result.hits)
