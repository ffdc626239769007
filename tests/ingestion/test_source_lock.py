"""A worker waiting for a source's lock never deadlocks the holder's concurrent index rebuild.

The holder of a sync lock may rebuild an index ``CONCURRENTLY`` (the bm25 check does, on a
connection's first search or write), which waits for every older transaction to end; a worker
blocked inside ``pg_advisory_lock`` would be one of them while waiting for the holder.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import DEFAULT_DB_ALIAS, connections

from ingestion.services.core import source_lock, source_lock_key
from knowhub import locks

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_worker_waiting_for_a_source_lets_its_holder_rebuild_an_index_concurrently():
    holder = connections.create_connection(DEFAULT_DB_ALIAS)
    events: list[str] = []
    errors: list[Exception] = []

    def sync_the_same_folder() -> None:
        try:
            with source_lock("markdown", "/notes", "notes"):
                events.append("waiter synced")
        except Exception as exc:  # noqa: BLE001 - the test reports whatever went wrong
            errors.append(exc)
        finally:
            connections.close_all()

    try:
        with holder.cursor() as cursor:
            key = locks.lock_key(cursor, source_lock_key("markdown", "/notes", "notes"))
            assert locks.session_lock(cursor, key)
            waiter = threading.Thread(target=sync_the_same_folder)
            waiter.start()
            time.sleep(0.5)
            assert waiter.is_alive() and not events  # waiting for the holder
            cursor.execute("SET lock_timeout = '20s'")
            cursor.execute("REINDEX INDEX CONCURRENTLY rag_chunk_pkey")
            events.append("holder rebuilt")
            locks.session_unlock(cursor, key)
        waiter.join(timeout=30)
    finally:
        holder.close()
    assert errors == []
    assert events == ["holder rebuilt", "waiter synced"]


def test_a_single_try_does_not_wait():
    holder = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with holder.cursor() as theirs, connections[DEFAULT_DB_ALIAS].cursor() as ours:
            key = locks.lock_key(ours, "knowhub-test-lock")
            assert locks.session_lock(theirs, key)
            started = time.perf_counter()
            assert locks.session_lock(ours, key, wait=False) is False
            assert time.perf_counter() - started < 1
            locks.session_unlock(theirs, key)
            assert locks.session_lock(ours, key, wait=False) is True
            locks.session_unlock(ours, key)
    finally:
        holder.close()
