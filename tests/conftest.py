"""Shared fixtures: the real local model, and a labelled stand-in for tests about other things."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

SHARED_DATA = Path(settings.BASE_DIR).parent / "shared" / "data"
if not SHARED_DATA.exists():  # a git worktree (…/wt/<branch>) sits one level deeper
    SHARED_DATA = next(
        (p / "shared" / "data" for p in Path(settings.BASE_DIR).parents if (p / "shared" / "data").exists()),
        SHARED_DATA,
    )


def shared_data(name: str) -> Path:
    """A folder of ../shared/data, or skip: the suite must pass without ../shared."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"../shared/data/{name} is not beside this checkout")
    return path


@pytest.fixture(scope="session")
def local_embedder():
    """The real all-MiniLM-L6-v2 provider (loads once per test session)."""
    from rag.embeddings import get_embedder

    return get_embedder()


class HashingEmbedder:
    """Deterministic bag-of-words vectors. A stand-in for tests that are about something other
    than embedding quality (idempotency counts, failure injection); it says so by its name.

    Each word is a fixed pseudo-random dense direction (seeded by its md5), and a text the
    normalised sum of its words': texts sharing words are close, others nearly orthogonal. Dense
    like a real model's vectors on purpose: one-hot words made whole corpora exactly orthogonal
    to a query (every distance 1.0), and on such ties an HNSW graph leaves rows unreachable."""

    def __init__(self, dims: int | None = None, name: str = "test:hashing"):
        self.dims = dims or settings.KNOWHUB_EMBEDDING_DIMS
        self.name = name
        self.calls: list[int] = []

    @staticmethod
    @functools.lru_cache(maxsize=65536)
    def _word(word: str, dims: int) -> np.ndarray:
        seed = int(hashlib.md5(word.encode()).hexdigest(), 16)
        return np.random.default_rng(seed).standard_normal(dims)

    def _vec(self, text: str) -> list[float]:
        vec = np.zeros(self.dims)
        for word in text.lower().split():
            vec += self._word(word, self.dims)
        norm = float(np.linalg.norm(vec)) or 1.0
        return (vec / norm).tolist()

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        return [self._vec(t) for t in texts]

    def embed_query(self, text):
        return self._vec(text)


@pytest.fixture(autouse=True)
def _no_wrong_credentials_counted_yet():
    """Each test starts with no wrong-credential counts for 127.0.0.1 (knowhub.throttling)."""
    from django.core.cache import caches

    caches["throttle"].clear()


@pytest.fixture
def hashing_embedder():
    return HashingEmbedder()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(username="staff", password="pw-staff-123", is_staff=True)


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


_DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_reset_sequences"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test that used the database (its transaction rolled back, its fixtures gone),
    rebuild the bm25 index over the table as it is now.

    pg_textsearch keeps what rolled-back inserts put in its memtable and counts them in its
    corpus statistics, and a rolled-back DROP INDEX (the sql backend's tests switch inside their
    transaction) makes it restore the memtable without its statistics. Either way the next test's
    scores, and even the order the index returns, would depend on the tests before it."""
    yield
    if item.get_closest_marker("django_db") or _DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        _fresh_bm25_index(item.config)


def _fresh_bm25_index(config) -> None:
    from django.db import connection
    from pytest_django.plugin import blocking_manager_key

    from rag.text_search import BM25_INDEX

    with config.stash[blocking_manager_key].unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [BM25_INDEX])
        if cursor.fetchone()[0]:
            cursor.execute(f"REINDEX INDEX {BM25_INDEX}")


@pytest.fixture(scope="session", autouse=True)
def _side_connections_closed(django_db_setup):
    """Searches outside a transaction (live server, committed-row tests) keep connections for
    their vector half; they must be gone before the test database is dropped."""
    yield
    from rag import side_search

    side_search.close_all()


@pytest.fixture(autouse=True)
def _tasks_inline_unless_a_worker_is_asked_for(request):
    """Tasks run inline in tests, except in tests that start a real worker (they flip it back)."""
    from knowhub.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def _start_workers(count: int, settings, tmp_path, queue: str) -> list:
    """``count`` Celery worker processes (``-P solo``: one task at a time each) on ``queue``,
    using this test database; each has ``log_path``. Fails the test if one does not start."""
    import os
    import subprocess
    import sys
    import time

    from django.db import connection

    env = {
        **os.environ,
        "DATABASE_URL": settings.DATABASE_URL,
        "REDIS_URL": settings.REDIS_URL,
        "KNOWHUB_CELERY_QUEUE": queue,
        "KNOWHUB_TEST_DB_NAME": connection.settings_dict["NAME"],
    }
    procs = []
    for i in range(count):
        log_path = tmp_path / f"worker-{i}.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "knowhub", "worker", "-P", "solo", "-Q", queue,
                 "-n", f"w{i}-{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
                 "-l", "info"],
                cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        proc.log_path = log_path
        procs.append(proc)
    deadline = time.monotonic() + 120
    for proc in procs:
        while "ready." not in proc.log_path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                _stop_workers(procs)
                pytest.fail(f"celery worker did not start:\n{proc.log_path.read_text()[-3000:]}")
            time.sleep(0.2)
    return procs


def _stop_workers(procs) -> None:
    import subprocess

    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def celery_workers(transactional_db, settings, tmp_path):
    """Start real Celery worker processes on the local Redis: ``celery_workers(n)`` returns the
    ``n`` processes, all on one queue of their own, using this test database. Skips when no
    Redis answers (the suite must run anywhere)."""
    import uuid

    from knowhub.celery import app

    if settings.KNOWHUB_BROKER != "redis":
        pytest.skip("no Redis broker on this machine (REDIS_URL unset, nothing on 127.0.0.1:6379)")
    queue = f"knowhub-test-{uuid.uuid4().hex[:10]}"
    started: list = []
    old_queue = app.conf.task_default_queue

    def start(count: int) -> list:
        procs = _start_workers(count, settings, tmp_path, queue)
        started.extend(procs)
        app.conf.task_always_eager = False
        app.conf.task_default_queue = queue
        return procs

    yield start
    app.conf.task_default_queue = old_queue
    _stop_workers(started)


@pytest.fixture
def celery_worker_process(celery_workers):
    """One real Celery worker process (see ``celery_workers``)."""
    return celery_workers(1)[0]


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.25):
    """Poll ``predicate`` until it returns a truthy value or ``timeout`` seconds pass."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()
