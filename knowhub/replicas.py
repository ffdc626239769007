"""Read replicas: which database a read goes to.

``DATABASE_REPLICA_URLS`` names streaming replicas of the primary; settings add them as the
database aliases ``replica_1``, ``replica_2``… (``replica_aliases``). Writes always go to the
primary. A read goes to a replica only when all of these hold:

- it runs inside ``reads()`` (or a function decorated with ``read_only``): the selectors of
  searches, answers' retrieval, facets and document views. Everything else (sessions, logins,
  admin, ingestion, the interaction log) reads the primary, so nothing reads a row it has just
  written from a server that may not have it yet;
- the current request (or Celery task) has not written: after its first write every read of the
  request goes to the primary (read-your-writes). The router notes ORM writes; code that writes
  with raw SQL calls ``note_write``;
- the primary connection is not inside a transaction (its uncommitted rows exist only there);
- the replica answers and replays the primary's WAL at most ``KNOWHUB_REPLICA_MAX_LAG`` seconds
  behind. That is checked at most every ``KNOWHUB_REPLICA_CHECK_SECONDS`` per process and
  replica; one that fails the check is skipped until the next one.

A request picks one healthy replica (at random, for spreading the load) and keeps it. When a
read on a replica fails because the server went away between checks, ``read_only`` marks the
replica down and runs the read again on the primary: reads are repeatable, so the caller sees
no error, only the primary's answer.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import random
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connections

logger = logging.getLogger(__name__)

REPLICA_PREFIX = "replica_"

# Seconds the replica is behind the primary: 0 while it has replayed all it received (an idle
# primary sends nothing, and the last replay timestamp would otherwise grow without a write).
LAG_SQL = """
    SELECT CASE
        WHEN NOT pg_is_in_recovery() THEN NULL
        WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
        ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
    END
"""


@dataclass
class _RequestState:
    wrote: bool = False
    reading: int = 0
    alias: str | None = None  # the replica (or primary) this request reads from, once chosen
    used: list[str] = field(default_factory=list)  # aliases reads went to, for tests and logs


_state: contextvars.ContextVar[_RequestState | None] = contextvars.ContextVar("knowhub_db_state", default=None)
_health: dict[str, tuple[float, bool, str]] = {}  # alias -> (checked at, usable, why not)
_health_lock = threading.Lock()


def replica_aliases() -> list[str]:
    """The configured replicas' database aliases (``KNOWHUB_REPLICA_ALIASES``)."""
    return list(getattr(settings, "KNOWHUB_REPLICA_ALIASES", ()) or ())


def _current() -> _RequestState:
    state = _state.get()
    if state is None:
        state = _RequestState()
        _state.set(state)
    return state


def begin(**_kwargs) -> None:
    """A new request or task: nothing written yet, no replica chosen (signal receiver)."""
    _state.set(_RequestState())


def note_write() -> None:
    """The current request wrote: its later reads go to the primary."""
    _current().wrote = True


def reads_went_to() -> list[str]:
    """The aliases the current request's replica-eligible reads went to (tests, diagnostics)."""
    return list(_current().used)


@contextmanager
def reads():
    """A block of reads that may go to a replica (see the module docstring)."""
    state = _current()
    state.reading += 1
    try:
        yield
    finally:
        state.reading -= 1


def read_alias() -> str:
    """The alias a read issued now should use."""
    state = _current()
    alias = _choose(state)
    if state.reading and (not state.used or state.used[-1] != alias):
        state.used.append(alias)
    return alias


def _choose(state: _RequestState) -> str:
    aliases = replica_aliases()
    if not aliases or not state.reading or state.wrote or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    if state.alias is None or (state.alias != DEFAULT_DB_ALIAS and not _usable(state.alias)):
        healthy = [a for a in aliases if _usable(a)]
        state.alias = random.choice(healthy) if healthy else DEFAULT_DB_ALIAS
    return state.alias


def read_connection():
    """The connection raw-SQL reads of a ``reads()`` block use."""
    return connections[read_alias()]


def read_only(func):
    """Run ``func`` as a ``reads()`` block; when a replica fails under it (the server stopped
    between health checks, a query cancelled by WAL replay), mark it down and run ``func``
    again on the primary."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with reads():
            alias = read_alias()
            if alias == DEFAULT_DB_ALIAS:
                return func(*args, **kwargs)
            try:
                return func(*args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                fell_over(alias, exc)
            return func(*args, **kwargs)

    return wrapper


def fell_over(alias: str, exc: Exception) -> None:
    """A read on ``alias`` failed: skip it until its next check, read the primary for now."""
    logger.warning("read replica %s failed (%s); reading from the primary", alias, str(exc).strip()[:200])
    _mark(alias, False, str(exc).strip()[:200])
    with suppress(DatabaseError):
        connections[alias].close()
    _current().alias = DEFAULT_DB_ALIAS


def forget_health() -> None:
    """Check every replica again on its next use (tests, after starting or stopping one)."""
    with _health_lock:
        _health.clear()


def _mark(alias: str, ok: bool, why: str) -> None:
    with _health_lock:
        _health[alias] = (time.monotonic(), ok, why)


def _usable(alias: str) -> bool:
    with _health_lock:
        checked = _health.get(alias)
    if checked and time.monotonic() - checked[0] < settings.KNOWHUB_REPLICA_CHECK_SECONDS:
        return checked[1]
    ok, why = check(alias)
    if not ok and (checked is None or checked[1]):
        logger.warning("read replica %s skipped: %s", alias, why)
    _mark(alias, ok, why)
    return ok


def lag_seconds(alias: str) -> float | None:
    """How far ``alias`` is behind the primary (None: it is not a replica)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(LAG_SQL)
        lag = cursor.fetchone()[0]
    return None if lag is None else float(lag)


def check(alias: str) -> tuple[bool, str]:
    """(usable, why not) for one replica: it answers, is in recovery, and lags little enough."""
    conn = connections[alias]
    try:
        conn.close_if_health_check_failed()
        lag = lag_seconds(alias)
    except DatabaseError as exc:
        with suppress(DatabaseError):
            conn.close()
        return False, f"unreachable: {str(exc).strip()[:200]}"
    if lag is None:
        return False, "not a replica (pg_is_in_recovery() is false)"
    if lag > settings.KNOWHUB_REPLICA_MAX_LAG:
        return False, f"{lag:.1f} s behind the primary (KNOWHUB_REPLICA_MAX_LAG={settings.KNOWHUB_REPLICA_MAX_LAG})"
    return True, ""


def status() -> list[dict]:
    """Every replica's state now (for /health and ``manage.py health``)."""
    out = []
    for alias in replica_aliases():
        ok, why = check(alias)
        _mark(alias, ok, why)
        out.append({"alias": alias, "usable": ok, **({"reason": why} if why else {})})
    return out


class ReplicaRouter:
    """Django's database router: writes to the primary, reads per ``read_alias``, migrations on
    the primary only (a replica is a copy of it)."""

    def db_for_read(self, model, **hints):
        return read_alias()

    def db_for_write(self, model, **hints):
        note_write()
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS
