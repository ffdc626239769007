"""The vector half of a hybrid search on a second connection, while the keyword half runs.

A PostgreSQL connection runs one statement at a time, so the two halves of a hybrid search
(the HNSW walk and the BM25 index walk) take the sum of their times on one connection. On a
connection of its own, from a worker thread, the vector half overlaps the keyword half and a
hybrid search takes about the longer of the two.

The worker sees its own snapshot, so it returns row ids only; the caller joins them back under
its own WHERE (the ACL and filters), and a chunk hidden or deleted in between is dropped there.
A caller inside a transaction (its own writes are not visible to other connections) searches
on its one connection instead (``usable``). Connections are kept for reuse (a new one costs a
few milliseconds), per process, and closed by ``close_all``.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg
from django.conf import settings
from django.db import connection as default_connection

logger = logging.getLogger(__name__)

WORKERS = 4  # vector halves in flight at once per process; more requests wait for a free worker

_lock = threading.Lock()
_state: dict = {}


def usable(connection=None) -> bool:
    """Whether the vector half may run on a side connection for a caller reading ``connection``
    (default: the primary's)."""
    connection = connection or default_connection
    return (
        settings.KNOWHUB_SEARCH_PARALLEL
        and not connection.in_atomic_block
        and not default_connection.in_atomic_block  # its uncommitted rows are visible to it only
    )


def _pool(connection) -> tuple[ThreadPoolExecutor, queue.LifoQueue, dict]:
    """This process's worker threads, and the idle connections and connection parameters of the
    server ``connection`` reaches (the primary, a replica); a forked process starts its own: the
    parent's sockets are not shared."""
    params = connection.get_connection_params()
    server = (params.get("host"), params.get("port"), params.get("dbname"), params.get("user"))
    with _lock:
        if _state.get("pid") != os.getpid():
            _close_locked()
            _state.update(
                pid=os.getpid(),
                executor=ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="knowhub-vector"),
                servers={},
            )
        if server not in _state["servers"]:
            _state["servers"][server] = (
                queue.LifoQueue(maxsize=WORKERS),
                # Client-side binding, as Django's own cursors use: the same SQL and parameters.
                {**params, "cursor_factory": psycopg.ClientCursor, "autocommit": False},
            )
        idle, conn_params = _state["servers"][server]
        return _state["executor"], idle, conn_params


def submit(sql: str, params: dict, *, settings_sql: str = "", conn=None, rows: bool = False) -> Future:
    """Run ``sql`` (returning ids) in a transaction of its own on the server ``conn`` (a Django
    connection; default the primary's) reaches; ``settings_sql`` first (SET LOCAL …).
    The future gives the list of first-column values (whole rows with ``rows``), or raises what
    the database raised."""
    executor, idle, conn_params = _pool(conn or default_connection)
    return executor.submit(_run, idle, conn_params, sql, params, settings_sql, rows)


def _run(
    idle: queue.LifoQueue, conn_params: dict, sql: str, params: dict, settings_sql: str, rows: bool = False
) -> list:
    try:
        conn = idle.get_nowait()
    except queue.Empty:
        conn = None
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(**conn_params)
    try:
        with conn.cursor() as cursor:
            if settings_sql:
                cursor.execute(settings_sql)
            cursor.execute(sql, params)
            ids = cursor.fetchall() if rows else [row[0] for row in cursor.fetchall()]
        conn.rollback()  # read only: nothing to commit, and SET LOCAL ends with it
    except BaseException:
        conn.close()
        raise
    try:
        idle.put_nowait(conn)
    except queue.Full:
        conn.close()
    return ids


def close_all() -> None:
    """Close every kept connection and stop the workers (tests, before their database goes)."""
    with _lock:
        _close_locked()


def _close_locked() -> None:
    executor, servers = _state.get("executor"), _state.get("servers") or {}
    same_process = _state.get("pid") == os.getpid()
    _state.clear()
    if executor is not None and same_process:
        executor.shutdown(wait=True)
    for idle, _params in servers.values():
        while True:
            try:
                conn = idle.get_nowait()
            except queue.Empty:
                break
            if same_process:  # a forked child leaves the parent's sockets alone
                conn.close()
