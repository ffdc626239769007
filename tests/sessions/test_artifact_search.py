"""A finished session's artifact is in the index: found by its learner, invisible to others."""

from __future__ import annotations

import json

import pytest

from rag.acl import Scope, user_hash
from rag.models import Chunk
from rag.search import SearchFilters, chunk_search
from sessions import services
from sessions.models import LearningSession
from tests.conftest import wait_for
from tests.sessions.factories import good_answers, play

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(learning_content, user, local_embedder):
    session = services.session_start(user=user, realm="kitchen", llm=None, embedder=local_embedder).session
    play(session, user, good_answers(session), embedder=local_embedder)
    services.session_finish(session=session, user=user, llm=None, embedder=local_embedder)
    session.refresh_from_db()
    return session


QUERY = "my kitchen metaphor for JavaScript closures"


def _artifact_hits(user, local_embedder, **kw):
    result = chunk_search(
        query=QUERY, scope=Scope.for_user(user), filters=SearchFilters(**kw), top_k=8, dedupe=True,
        embedder=local_embedder,
    )
    return [h for h in result.hits if h.collection == "user_sessions"]


def test_artifact_chunk_shape(finished, user):
    chunks = list(Chunk.objects.filter(collection="user_sessions", source_id=str(finished.pk)).order_by("chunk_idx"))
    assert chunks and all(c.unit_anchor == "artifact" for c in chunks)
    text = " ".join(c.content for c in chunks)
    assert finished.script.splitlines()[0] in chunks[0].content
    assert "Rules:" in text and "Red flags:" in text
    for chunk in chunks:
        assert chunk.source_type == "session" and chunk.visibility == "private"
        assert chunk.owner_hash == user_hash(user.pk)
        assert chunk.title == "JavaScript closures — The Restaurant Kitchen"
        assert chunk.domain == "javascript"
        assert chunk.metadata["realm_id"] == "kitchen" and chunk.metadata["topic"] == "js-closures"
        assert chunk.metadata["score"] == pytest.approx(finished.score)
        assert chunk.metadata["legend"] == finished.legend
        assert sorted(chunk.mnemonic_tags) == sorted(r["symbol"].lower() for r in finished.legend)
    assert finished.indexed_at is not None


def test_learner_finds_the_artifact_and_nobody_else_does(finished, user, other_user, staff_user, local_embedder):
    mine = _artifact_hits(user, local_embedder)
    assert [h.source_id for h in mine] == [str(finished.pk)]
    # rag.search on main hands jsonb back as text (psycopg 3 + Django's jsonb loader); accept both
    # until the retrieval side decodes it.
    metadata = mine[0].metadata if isinstance(mine[0].metadata, dict) else json.loads(mine[0].metadata)
    assert metadata["legend"][0]["entity"] == "Function"
    assert _artifact_hits(user, local_embedder, collections=["user_sessions"], domain="javascript")
    assert _artifact_hits(other_user, local_embedder) == []
    assert _artifact_hits(other_user, local_embedder, collections=["user_sessions"]) == []
    assert [h.source_id for h in _artifact_hits(staff_user, local_embedder)] == [str(finished.pk)]


def _broken(local_embedder):
    class BrokenEmbedder:
        name = local_embedder.name
        dims = local_embedder.dims

        def embed_documents(self, texts):
            raise RuntimeError("embedding service down")

        def embed_query(self, text):
            return local_embedder.embed_query(text)

    return BrokenEmbedder()


def test_indexing_failure_leaves_the_session_finished_and_finish_retries(learning_content, user, local_embedder):
    session = services.session_start(user=user, realm="kitchen", llm=None, embedder=local_embedder).session
    result = services.session_finish(session=session, user=user, llm=None, embedder=_broken(local_embedder))
    assert session.status == "finished" and result.indexed is False and session.indexed_at is None
    assert not Chunk.objects.filter(collection="user_sessions", source_id=str(session.pk)).exists()
    again = services.session_finish(session=session, user=user, llm=None, embedder=local_embedder)
    assert again.already_finished and again.indexed
    assert Chunk.objects.filter(collection="user_sessions", source_id=str(session.pk)).exists()


@pytest.mark.worker
def test_failed_indexing_is_retried_by_a_real_worker(celery_worker_process, learning_content, user, local_embedder):
    """Finishing commits; the failed indexing goes to the worker, which indexes the artifact with
    the configured provider, without the learner finishing again."""
    session = services.session_start(user=user, realm="kitchen", llm=None, embedder=local_embedder).session
    result = services.session_finish(session=session, user=user, llm=None, embedder=_broken(local_embedder))
    assert result.indexed is False

    indexed_at = wait_for(lambda: LearningSession.objects.get(pk=session.pk).indexed_at, timeout=120)
    assert indexed_at is not None, celery_worker_process.log_path.read_text()[-3000:]
    assert Chunk.objects.filter(collection="user_sessions", source_id=str(session.pk)).exists()
    assert "session_artifact_index_task" in celery_worker_process.log_path.read_text()


def test_rag_query_api_respects_the_artifact_acl(finished, user, other_user, api_client):
    """The learner finds the artifact through the public API; another user cannot see it at all."""
    api_client.force_authenticate(user)
    res = api_client.post("/rag/query", {"query": QUERY, "collections": ["user_sessions"]}, format="json")
    assert res.status_code == 200, res.content
    hits = res.json()["results"]
    assert {h["chunk_uid"].split(":")[2] for h in hits} == {str(finished.pk)}
    assert hits[0]["metadata"]["realm_id"] == "kitchen"

    api_client.force_authenticate(other_user)
    res = api_client.post("/rag/query", {"query": QUERY}, format="json")
    assert res.status_code == 200
    assert all(h["collection"] != "user_sessions" for h in res.json()["results"])
    # The collection is not one this user may see: refused like any unknown collection.
    res = api_client.post("/rag/query", {"query": QUERY, "collections": ["user_sessions"]}, format="json")
    assert res.status_code == 404
