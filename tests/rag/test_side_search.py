"""The vector half on a side connection (real PostgreSQL, committed rows, the real local model):
it is used outside a transaction, returns what the one-connection search returns, and the ACL
and a delete made after its snapshot still hold."""

from __future__ import annotations

from concurrent.futures import Future

import psycopg
import pytest
from django.db import transaction

from rag import side_search
from rag.acl import Scope
from rag.models import Chunk
from rag.search import MODES, chunk_search
from tests.rag.factories import doc, load, load_visibility_corpus, topic_corpus, visible_sources

# Another connection sees committed rows only, hence transaction=True.
pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "How do closures keep the variables of an outer function?"


@pytest.fixture
def spy(monkeypatch):
    """Counts the searches whose vector half went to a side connection (the real one runs)."""
    calls = []
    real = side_search.submit

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(side_search, "submit", counted)
    yield calls
    side_search.close_all()


def _ranked(result):
    return [(h.chunk_uid, round(h.score, 5)) for h in result.hits]


@pytest.mark.parametrize("mode", ["hybrid", "rrf"])
def test_outside_a_transaction_the_vector_half_runs_beside_and_returns_the_same_hits(
    local_embedder, settings, spy, mode
):
    load(topic_corpus(), local_embedder)
    beside = chunk_search(query=QUERY, scope=Scope.everything(), mode=mode, embedder=local_embedder)
    assert len(spy) == 1
    assert beside.hits[0].source_id == "closures"
    settings.KNOWHUB_SEARCH_PARALLEL = False
    alone = chunk_search(query=QUERY, scope=Scope.everything(), mode=mode, embedder=local_embedder)
    assert len(spy) == 1
    assert _ranked(beside) == _ranked(alone)


def test_inside_a_transaction_the_search_stays_on_its_own_connection(local_embedder, spy):
    """The caller's uncommitted rows are visible to its own connection only."""
    with transaction.atomic():
        load([doc("fresh", "Fresh", "Closures keep the variables of an outer function alive.")], local_embedder)
        result = chunk_search(query=QUERY, scope=Scope.everything(), embedder=local_embedder)
        assert not spy
        assert result.hits[0].source_id == "fresh"
        transaction.set_rollback(True)


def test_acl_holds_on_the_side_connection(user, other_user, local_embedder, spy):
    load_visibility_corpus(user, other_user, local_embedder)
    for mode in MODES:
        assert visible_sources(user, local_embedder, mode) == {"open", "closed"}
        assert visible_sources(other_user, local_embedder, mode) == {"open", "mine"}
    assert len(spy) == 4  # hybrid and rrf, for each caller


def test_a_row_hidden_after_the_side_snapshot_is_not_returned(local_embedder, monkeypatch):
    """The side connection's ids are joined back under the caller's WHERE. Stand-in for the race:
    the side half reports every chunk's id, as a snapshot taken before a delete would."""
    load(topic_corpus(), local_embedder)
    every_id = list(Chunk.objects.order_by("id").values_list("id", flat=True))
    Chunk.objects.filter(source_id="closures").update(deleted_at="2025-01-01T00:00:00Z")

    def stale(*args, **kwargs):
        done = Future()
        done.set_result(every_id)
        return done

    monkeypatch.setattr(side_search, "submit", stale)
    result = chunk_search(query=QUERY, scope=Scope.everything(), embedder=local_embedder, top_k=10)
    assert result.hits and "closures" not in {h.source_id for h in result.hits}


def test_a_failed_side_connection_falls_back_to_the_callers(local_embedder, monkeypatch, caplog):
    """Stand-in for a side connection that cannot connect (server full, restarted)."""
    load(topic_corpus(), local_embedder)

    def refused(*args, **kwargs):
        failed = Future()
        failed.set_exception(psycopg.OperationalError("too many clients already"))
        return failed

    monkeypatch.setattr(side_search, "submit", refused)
    result = chunk_search(query=QUERY, scope=Scope.everything(), embedder=local_embedder)
    assert result.hits[0].source_id == "closures"
    assert result.hits[0].vec_score > 0.3
    assert "running it on the main one" in caplog.text
