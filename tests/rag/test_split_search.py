"""A selective filter's rows split between the two connections (real PostgreSQL with pg_textsearch,
committed rows, the real local model): the same hits, scores and order as one connection gives,
and the ACL holds on both halves."""

from __future__ import annotations

import pytest
from django.db import connection

from rag import side_search, split_search
from rag.acl import Scope, user_hash
from rag.models import Project
from rag.search import SearchFilters, chunk_search
from tests.rag.factories import doc, load

# The side connection sees committed rows only, hence transaction=True.
pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "how do closures keep the variables of an outer function"
WORDS = ["closures", "variables", "outer function", "scope", "callbacks", "promises", "modules", "arrays"]


def corpus() -> list:
    """60 pages, 4 of them in the domain "rare" (from 10 % of the rows the broad plan is taken):
    some say the query's words, some not; one is restricted to a project."""
    docs = []
    for i in range(60):
        rare = i % 15 == 3
        words = f"{WORDS[i % len(WORDS)]} and {WORDS[(i * 3) % len(WORDS)]}"
        extra = {}
        if i == 33:  # rare
            extra = dict(visibility="restricted", project="team")
        docs.append(
            doc(
                f"page-{i}", f"Page {i} on {words}",
                f"This page {i} explains {words} in JavaScript. Closures keep the variables of an outer "
                f"function alive {i % 4} times over." if i % 2 else f"This page {i} explains {words}.",
                domain="rare" if rare else "common", **extra,
            )
        )  # fmt: skip
    return docs


@pytest.fixture
def loaded(local_embedder):
    Project.objects.create(slug="team", name="Team")
    load(corpus(), local_embedder)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")  # the plan reads the planner's estimate of the filter's rows
    yield
    side_search.close_all()


@pytest.fixture
def split_calls(monkeypatch):
    calls = []
    real = split_search.both_halves

    def counted(*args, **kwargs):
        calls.append(kwargs["where"])
        return real(*args, **kwargs)

    monkeypatch.setattr(split_search, "both_halves", counted)
    return calls


def _ranked(result):
    return [(h.chunk_uid, round(h.score, 5), round(h.txt_score, 5), round(h.vec_score, 5)) for h in result.hits]


@pytest.mark.parametrize("mode", ["hybrid", "rrf"])
@pytest.mark.parametrize("prune", [0.0, 0.5])
def test_a_selective_filters_rows_split_between_the_connections_give_the_same_hits(
    loaded, local_embedder, settings, split_calls, mode, prune
):
    # Without pruning the two halves' pages are merged as they come; with it, a page this small
    # is never complete after the first pass and every row is scored again.
    settings.KNOWHUB_TEXT_PRUNE_FRACTION = prune
    scope = Scope(staff=False, project_ids=(), owner_hash=user_hash("someone"))
    rare = SearchFilters(domain="rare")
    split = chunk_search(query=QUERY, scope=scope, filters=rare, mode=mode, embedder=local_embedder, top_k=10)
    assert len(split_calls) == 1
    ids = {h.source_id for h in split.hits}
    # Every visible rare page holding a query word or close to it, and none restricted or common.
    assert ids and ids <= {f"page-{i}" for i in range(3, 60, 15)} - {"page-33"}
    assert any(h.txt_score > 0 for h in split.hits) and any(h.vec_score > 0 for h in split.hits)

    settings.KNOWHUB_SEARCH_SPLIT = False
    whole = chunk_search(query=QUERY, scope=scope, filters=rare, mode=mode, embedder=local_embedder, top_k=10)
    assert len(split_calls) == 1
    assert _ranked(split) == _ranked(whole)


def test_the_restricted_row_is_found_by_a_member_on_either_half(loaded, local_embedder, split_calls):
    team = Project.objects.get(slug="team")
    member = Scope(staff=False, project_ids=(team.pk,), owner_hash=user_hash("member"))
    result = chunk_search(query=QUERY, scope=member, filters=SearchFilters(domain="rare"), embedder=local_embedder)
    assert split_calls and "page-33" in {h.source_id for h in result.hits}


def test_a_broad_filter_is_not_split(loaded, local_embedder, split_calls):
    chunk_search(query=QUERY, scope=Scope.everything(), filters=SearchFilters(domain="common"), embedder=local_embedder)
    assert not split_calls


def test_the_pass_with_every_word_is_split_too(loaded, local_embedder, settings, monkeypatch):
    # A page this small is never complete after the pruned first pass: the pass that scores every
    # row runs on both connections again (the odd ids on the side), not on the request's alone.
    settings.KNOWHUB_TEXT_PRUNE_FRACTION = 0.5
    sides = []
    real = side_search.submit

    def counted(sql, params, **kwargs):
        sides.append(sql)
        return real(sql, params, **kwargs)

    monkeypatch.setattr(side_search, "submit", counted)
    scope = Scope(staff=False, project_ids=(), owner_hash=user_hash("someone"))
    result = chunk_search(query=QUERY, scope=scope, filters=SearchFilters(domain="rare"), embedder=local_embedder)
    assert len(sides) == 2, sides
    assert "c.id %% 2 = 1" in sides[1] and "<=>" not in sides[1]  # the odd ids' keywords, no distances
    assert any(h.txt_score > 0 for h in result.hits)
