"""Read replicas, for real: a streaming replica of the embedded server, started by the tests.

``pg_basebackup -R`` copies the running test server (test database included) into a second data
directory, which then streams the primary's WAL. The suite's database aliases get one more,
pointing at that server; the router sends searches, facets and document views there.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from knowhub import embedded_db, replicas
from rag.acl import Scope
from rag.answering.selectors import facet_values
from rag.models import Project
from rag.search import chunk_search
from tests.conftest import wait_for
from tests.rag.factories import doc, load, load_visibility_corpus

pytestmark = pytest.mark.replica

ALIAS = "replica_test"


def _free_port() -> int:
    low, high = (int(p) for p in os.environ.get("KNOWHUB_TEST_REPLICA_PORTS", "55430-55439").split("-"))
    for port in range(low, high + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.skip(f"no free port in {low}-{high} for the test replica (KNOWHUB_TEST_REPLICA_PORTS)")


class Replica:
    def __init__(self, path: Path, port: int):
        self.path, self.port = path, port

    def stop(self):
        connections[ALIAS].close()
        embedded_db.stop_replica(self.path)

    def start(self):
        embedded_db.restart_replica(self.path, self.port)


@pytest.fixture(scope="module")
def replica(django_db_setup, django_db_blocker):
    """A streaming replica of the test server on a free port, as the database alias ``replica_test``."""
    if settings.KNOWHUB_DATABASE != "embedded":
        pytest.skip("the replica tests copy the embedded server (DATABASE_URL is set)")
    path = Path(settings.BASE_DIR) / "var" / f"test-replica-{os.getpid()}"
    port = _free_port()
    with django_db_blocker.unblock():
        embedded_db.start_replica(Path(settings.BASE_DIR), path, port)
    primary = connections["default"].settings_dict
    connections.settings[ALIAS] = {
        **primary, "HOST": "127.0.0.1", "PORT": str(port), "OPTIONS": {},
        # Not a database of its own to create or flush: it holds the primary's test database.
        "TEST": {**primary.get("TEST", {}), "MIRROR": "default"},
    }  # fmt: skip
    yield Replica(path, port)
    with django_db_blocker.unblock():
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]
        embedded_db.stop_replica(path, remove=True)


@pytest.fixture
def routed(replica, settings):
    """The router told about the replica; a fresh request state and health checks."""
    settings.KNOWHUB_REPLICA_ALIASES = [ALIAS]
    settings.KNOWHUB_REPLICA_MAX_LAG = 30.0
    settings.KNOWHUB_REPLICA_CHECK_SECONDS = 0.0
    replicas.forget_health()
    replicas.begin()
    yield replica
    replicas.forget_health()
    replicas.begin()


def caught_up() -> None:
    """Wait until the replica has replayed everything the primary wrote so far."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()")
        target = cursor.fetchone()[0]

    def replayed():
        with connections[ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target])
            return cursor.fetchone()[0]

    assert wait_for(replayed, timeout=60), "the replica did not catch up with the primary"


def replay(paused: bool) -> None:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


def search_sources(user, query: str = "knowledge vectors", mode: str = "hybrid") -> set[str]:
    """One request's search: a fresh request state, then the hits' source ids."""
    replicas.begin()
    return {h.source_id for h in chunk_search(query=query, scope=Scope.for_user(user), top_k=10, mode=mode).hits}


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_searches_read_the_replica_and_the_acl_holds_there(
    routed, user, other_user, staff_user, local_embedder, api_client
):
    load_visibility_corpus(member=user, owner=other_user, embedder=local_embedder)
    caught_up()

    # user is in the project; other_user owns the private chunk; staff sees everything.
    assert search_sources(user) == {"open", "closed"}
    assert replicas.reads_went_to() == [ALIAS]
    assert search_sources(other_user) == {"open", "mine"}
    assert replicas.reads_went_to() == [ALIAS]
    assert search_sources(staff_user) == {"open", "closed", "mine"}

    # The same through the API and the document view: both served by the replica.
    api_client.force_authenticate(other_user)
    response = api_client.post("/rag/query", {"query": "knowledge vectors", "top_k": 10}, format="json")
    assert response.status_code == 200, response.content
    assert {h["source_id"] for h in response.json()["results"]} == {"open", "mine"}
    assert replicas.reads_went_to() == [ALIAS]
    replicas.begin()
    facets = facet_values(scope=Scope.for_user(other_user), use_cache=False)
    assert replicas.reads_went_to() == [ALIAS]
    assert "course_content" in facets.values("collections")

    restricted = chunk_search(query="secret knowledge", scope=Scope.for_user(user), top_k=10).hits
    uid = next(h.chunk_uid for h in restricted if h.source_id == "closed")
    api_client.force_authenticate(other_user)  # not in the project: the replica hides it too
    assert api_client.get(f"/rag/documents/{uid}").status_code == 404
    assert replicas.reads_went_to() == [ALIAS]
    api_client.force_authenticate(user)
    assert api_client.get(f"/rag/documents/{uid}").status_code == 200
    assert replicas.reads_went_to() == [ALIAS]


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_writes_on_the_primary_become_searchable_on_the_replica(routed, user, local_embedder):
    load([doc("first", "First", "a note about tidal energy")], local_embedder)
    caught_up()
    assert search_sources(user, "tidal energy") == {"first"}

    # Replay paused: the primary has the new page, the replica (which this search reads) not yet.
    replay(paused=True)
    try:
        load([doc("second", "Second", "another note about tidal energy")], local_embedder)
        assert search_sources(user, "tidal energy", mode="vector") == {"first"}
        assert replicas.reads_went_to() == [ALIAS]
        # pg_textsearch 1.0's index is not replicated: the keyword half asks the primary.
        assert search_sources(user, "tidal energy") == {"first", "second"}
    finally:
        replay(paused=False)
    caught_up()
    assert search_sources(user, "tidal energy", mode="vector") == {"first", "second"}
    assert replicas.reads_went_to() == [ALIAS]
    assert search_sources(user, "tidal energy") == {"first", "second"}


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_a_lagging_replica_is_skipped(routed, settings, user, local_embedder):
    load([doc("first", "First", "a note about tidal energy")], local_embedder)
    caught_up()
    settings.KNOWHUB_REPLICA_MAX_LAG = 0.5
    replay(paused=True)
    try:
        load([doc("second", "Second", "another note about tidal energy")], local_embedder)
        time.sleep(1.0)  # the replica is now more than 0.5 s behind: the primary answers
        assert search_sources(user, "tidal energy") == {"first", "second"}
        assert replicas.reads_went_to() == ["default"]
        assert replicas.check(ALIAS)[0] is False
    finally:
        replay(paused=False)
    caught_up()
    assert search_sources(user, "tidal energy") == {"first", "second"}
    assert replicas.reads_went_to() == [ALIAS]


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_a_request_that_wrote_reads_the_primary(routed, user, local_embedder):
    load([doc("first", "First", "a note about tidal energy")], local_embedder)
    caught_up()
    replicas.begin()
    Project.objects.create(slug="p", name="P")  # a write through the ORM: the router notes it
    chunk_search(query="tidal energy", scope=Scope.for_user(user))
    assert replicas.reads_went_to() == ["default"]


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_a_stopped_replica_falls_back_to_the_primary(routed, settings, user, local_embedder, api_client):
    load([doc("first", "First", "a note about tidal energy")], local_embedder)
    caught_up()
    assert search_sources(user, "tidal energy") == {"first"}
    assert replicas.reads_went_to() == [ALIAS]
    # The last check said "usable" and is trusted for a minute: the next search finds it gone.
    settings.KNOWHUB_REPLICA_CHECK_SECONDS = 60.0
    replicas.forget_health()
    assert search_sources(user, "tidal energy") == {"first"}
    routed.stop()
    try:
        api_client.force_authenticate(user)
        response = api_client.post("/rag/query", {"query": "tidal energy"}, format="json")
        assert response.status_code == 200, response.content
        assert {h["source_id"] for h in response.json()["results"]} == {"first"}
        assert replicas.reads_went_to() == [ALIAS, "default"]
        # Marked down: the next request goes straight to the primary, and so do its facets.
        response = api_client.get("/rag/facets")
        assert response.status_code == 200, response.content
        assert replicas.reads_went_to() == ["default"]
        assert response.json()["collections"]
    finally:
        routed.start()
    replicas.forget_health()
    assert search_sources(user, "tidal energy") == {"first"}
    assert replicas.reads_went_to() == [ALIAS]


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_health_reports_each_replica(routed, settings):
    from rag.selectors import health_status

    status = health_status()
    assert status["replicas"] == {"status": "ok", "replicas": [{"alias": ALIAS, "usable": True}]}
    settings.KNOWHUB_REPLICA_ALIASES = [ALIAS, "default"]  # the primary is no replica: skipped, said why
    status = health_status()
    assert status["replicas"]["status"] == "degraded"
    assert "not a replica" in status["replicas"]["replicas"][1]["reason"]
