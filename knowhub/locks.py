"""Session-level PostgreSQL advisory locks, waited for without holding a transaction open.

Waiting inside ``pg_advisory_lock`` keeps a statement, and so a transaction, open for as long as
the wait lasts, and ``REINDEX``/``CREATE INDEX … CONCURRENTLY`` waits for every transaction older
than each of its phases to end. A lock holder that rebuilds an index concurrently would then wait
for the waiter while the waiter waits for it: a deadlock that PostgreSQL breaks by failing one of
them. So the wait here is a poll of short statements, each its own transaction outside an atomic
block.
"""

from __future__ import annotations

import time

POLL_SECONDS = 0.1


def lock_key(cursor, name: str) -> int:
    """The 64-bit advisory-lock key of ``name`` (the one ``hashtextextended(name, 0)`` gives in SQL)."""
    cursor.execute("SELECT hashtextextended(%s, 0)", [name])
    return cursor.fetchone()[0]


def session_lock(cursor, key: int, *, wait: bool = True) -> bool:
    """Take the session-level advisory lock ``key``: True once held; with ``wait=False`` a single
    try (False when another session holds it). Release with ``session_unlock``."""
    while True:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        if cursor.fetchone()[0]:
            return True
        if not wait:
            return False
        time.sleep(POLL_SECONDS)


def session_unlock(cursor, key: int) -> None:
    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def holds_session_locks(cursor) -> bool:
    """Whether this session holds an advisory lock that another session may be waiting for."""
    cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted)"
    )
    return cursor.fetchone()[0]
