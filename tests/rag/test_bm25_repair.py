"""A bm25 index that lost its statistics is rebuilt before it answers again.

pg_textsearch 1.0 restores its memtable after a server restart without the corpus statistics (the
index then counts no documents and keyword search finds nothing). Restarting the test server
under the rest of the suite is not an option, so these tests use the other way to reach the same
state: a transaction that drops the index and rolls back makes pg_textsearch restore the memtable
from disk in the same way. Committed rows are needed for that, hence ``transaction=True``.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from rag import text_search
from rag.acl import Scope
from rag.search import chunk_search
from tests.rag.factories import doc, load, topic_corpus

pytestmark = pytest.mark.django_db(transaction=True)


def _counts() -> tuple[int, int | None]:
    with connection.cursor() as cursor:
        return text_search.bm25_index_counts(cursor)


def _lose_the_statistics() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {text_search.BM25_INDEX}")
        transaction.set_rollback(True)


def _fulltext(query, embedder):
    return chunk_search(query=query, scope=Scope.everything(), mode="fulltext", embedder=embedder)


def test_an_index_short_of_documents_is_rebuilt_and_finds_them_again(pg_textsearch, hashing_embedder, caplog):
    load(topic_corpus() + [doc(f"n{i}", f"Note {i}", f"filler note number {i}") for i in range(40)], hashing_embedder)
    assert _fulltext("mitochondria", hashing_embedder).hits[0].source_id == "mitochondria"
    rows, documents = _counts()
    assert documents == rows == 46

    _lose_the_statistics()
    rows, documents = _counts()
    assert documents < rows  # what a restart leaves: postings back, statistics gone

    assert text_search.check_bm25_index(force=True) is True
    assert "rebuilding it" in caplog.text
    assert _counts() == (46, 46)
    assert _fulltext("mitochondria", hashing_embedder).hits[0].source_id == "mitochondria"
    assert text_search.check_bm25_index(force=True) is False  # whole: nothing to do


def test_each_new_connection_checks_once_per_server_start(pg_textsearch, hashing_embedder):
    load(topic_corpus(), hashing_embedder)
    _fulltext("closures", hashing_embedder)
    assert getattr(connection, text_search.CHECKED_FLAG) is True

    connection.close()
    _lose_the_statistics()  # opens a new connection: not checked yet
    assert getattr(connection, text_search.CHECKED_FLAG) is False
    # The same server start was checked already in this process: the new connection only asks
    # when the server started, and a restart (a new start time) is what triggers the count.
    assert text_search.check_bm25_index() is False
    text_search.reset()
    assert _fulltext("closures", hashing_embedder).hits[0].source_id == "closures"
    assert getattr(connection, text_search.CHECKED_FLAG) is True
    rows, documents = _counts()
    assert documents == rows


def test_chunks_replaced_by_an_ingest_run_leave_the_statistics_and_the_run_rebuilds(
    pg_textsearch, hashing_embedder, tmp_path, caplog
):
    from ingestion.services import ingest_document_paths

    notes = [doc(f"n{i}", f"Note {i}", f"filler note number {i}") for i in range(20)]
    load(notes, hashing_embedder)
    load([doc(f"n{i}", f"Note {i}", f"rewritten note number {i}") for i in range(20)], hashing_embedder)
    rows, documents = _counts()
    assert documents == 2 * rows == 40  # pg_textsearch still counts the replaced versions
    assert text_search.check_bm25_index(force=True) is True
    assert "replaced or deleted" in caplog.text
    assert _counts() == (20, 20)

    # The same through an ingest run: when it replaced chunks, it has the index checked after.
    for i in range(20):
        (tmp_path / f"m{i}.md").write_text(f"# Meeting {i}\n\nThe budget for quarter {i} was agreed.\n")
    ingest_document_paths(paths=[tmp_path], collection="notes", embedder=hashing_embedder)
    assert _counts() == (40, 40)  # new chunks only: nothing to rebuild
    for i in range(20):
        (tmp_path / f"m{i}.md").write_text(f"# Meeting {i}\n\nThe budget for quarter {i} was cut.\n")
    caplog.clear()
    run = ingest_document_paths(paths=[tmp_path], collection="notes", embedder=hashing_embedder)
    assert run.updated == 20
    assert "replaced or deleted" in caplog.text
    assert _counts() == (40, 40)
    hit = _fulltext("budget cut", hashing_embedder).hits[0]
    assert hit.collection == "notes" and "cut" in hit.content


def test_a_process_waiting_for_a_rebuild_neither_blocks_it_nor_deadlocks(pg_textsearch, hashing_embedder):
    """Another process holds the rebuild lock and rebuilds concurrently, which waits for every
    older transaction: a process waiting for that lock must not be one of them."""
    load(topic_corpus(), hashing_embedder)
    rebuilder = connections.create_connection(DEFAULT_DB_ALIAS)
    outcome: dict[str, object] = {}

    def check_in_another_connection() -> None:
        try:
            outcome["rebuilt"] = text_search.check_bm25_index(force=True)
            outcome["checked"] = getattr(connections[DEFAULT_DB_ALIAS], text_search.CHECKED_FLAG)
        except Exception as exc:  # noqa: BLE001 - the test reports whatever went wrong
            outcome["error"] = exc
        finally:
            connections.close_all()

    try:
        with rebuilder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [text_search._REPAIR_LOCK])
            waiter = threading.Thread(target=check_in_another_connection)
            waiter.start()
            time.sleep(0.5)  # the waiter is at the lock by now
            assert waiter.is_alive()
            cursor.execute("SET lock_timeout = '20s'")
            cursor.execute(f"REINDEX INDEX CONCURRENTLY {text_search.BM25_INDEX}")
            cursor.execute("SELECT pg_advisory_unlock(%s)", [text_search._REPAIR_LOCK])
        waiter.join(timeout=30)
    finally:
        rebuilder.close()
    assert outcome == {"rebuilt": False, "checked": True}

    # Inside a transaction, waiting cannot help (the rebuild waits for that transaction): the
    # check is skipped and the connection left unchecked, so a later one checks again.
    rebuilder = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with rebuilder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [text_search._REPAIR_LOCK])
            setattr(connection, text_search.CHECKED_FLAG, False)
            with transaction.atomic():
                assert text_search.check_bm25_index(force=True) is False
            assert getattr(connection, text_search.CHECKED_FLAG) is False
    finally:
        rebuilder.close()
    assert text_search.check_bm25_index(force=True) is False
    assert getattr(connection, text_search.CHECKED_FLAG) is True


def test_a_worker_holding_a_sync_lock_leaves_the_rebuild_to_others(pg_textsearch, hashing_embedder):
    """A webhook delivery waits for its page's lock inside its transaction, and a concurrent
    rebuild by that lock's holder would wait for the transaction: the holder does not rebuild,
    the next connection holding no lock does."""
    from ingestion.services.core import source_lock

    load(topic_corpus(), hashing_embedder)
    _lose_the_statistics()
    rows, documents = _counts()
    assert documents < rows

    setattr(connection, text_search.CHECKED_FLAG, False)
    with source_lock("notion_page", "page-1"):
        assert text_search.check_bm25_index(force=True) is False
        assert getattr(connection, text_search.CHECKED_FLAG) is False
        assert _counts()[1] < rows
    assert text_search.check_bm25_index(force=True) is True
    assert _counts() == (rows, rows)


def _memtable_documents() -> int:
    import re

    with connection.cursor() as cursor:
        cursor.execute("SELECT bm25_summarize_index(%s)", [text_search.BM25_INDEX])
        summary = cursor.fetchone()[0]
    return int(re.search(r"Memtable:\s*terms:\s*\d+\s*documents:\s*(\d+)", summary)[1])


def test_settling_moves_the_rows_waiting_in_memory_to_disk_and_keeps_them_found(pg_textsearch, hashing_embedder):
    from rag.text_query import settle_bm25_index

    load(topic_corpus(), hashing_embedder)
    assert _memtable_documents() == 6  # a small corpus waits in memory until a restart
    with connection.cursor() as cursor:
        settle_bm25_index(cursor)
    assert _memtable_documents() == 0
    assert _counts() == (6, 6)
    assert _fulltext("mitochondria", hashing_embedder).hits[0].source_id == "mitochondria"
