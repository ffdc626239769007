"""What a process caches from the index follows changes written by any other process."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from django.db import connection

from rag.acl import Scope
from rag.answering.selectors import RECOUNT_COST_RATIO, _still_fresh, facet_values
from rag.index_version import index_version
from rag.services import chunk_upsert, source_archive, source_delete, source_soft_delete
from rag.units import SourceDocument, Unit
from tests.conftest import HashingEmbedder


def _note(source_id: str) -> SourceDocument:
    return SourceDocument(
        collection="notes", source_type="note", source_id=source_id,
        units=[Unit(unit_anchor="u", title="Standup", content=f"Standup notes {source_id}: the release moved.")],
    )  # fmt: skip


def _counts() -> dict[str, int]:
    return {c["value"]: c["count"] for c in facet_values(scope=Scope.everything()).collections}


@pytest.mark.django_db(transaction=True)
def test_facet_counts_show_a_write_by_another_process_at_once(settings):
    # The facet cache is per process: a Celery worker's write must reach the web process's counts.
    settings.KNOWHUB_FACET_CACHE_SECONDS = 600
    chunk_upsert(documents=[_note("mine")], embedder=HashingEmbedder())
    assert _counts() == {"notes": 1}
    env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL,
           "KNOWHUB_TEST_DB_NAME": connection.settings_dict["NAME"]}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tests.rag.upsert_process", "A"], cwd=settings.BASE_DIR, env=env,
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert _counts() == {"notes": 2}


@pytest.mark.django_db(transaction=True)
def test_the_version_moves_once_a_change_commits_and_not_for_nothing():
    start = index_version()
    chunk_upsert(documents=[_note("a")], embedder=HashingEmbedder())
    assert index_version() == start + 1
    chunk_upsert(documents=[_note("a")], embedder=HashingEmbedder())  # unchanged: nothing to show
    assert index_version() == start + 1
    assert source_soft_delete(collection="notes", source_type="note", source_ids=["a"]) == 1
    assert index_version() == start + 2
    chunk_upsert(documents=[_note("b")], embedder=HashingEmbedder())
    assert source_archive(collection="notes", source_type="note", source_ids=["b"]) == 1  # a Notion page archived
    assert index_version() == start + 4
    assert source_delete(collection="notes", source_type="note", source_ids=["a", "b"]) == 2
    assert index_version() == start + 5


def test_counts_of_an_earlier_version_serve_only_while_recounting_would_cost_too_much():
    now = time.time()

    def made(seconds_ago: float, took: float, version: int = 1) -> dict:
        return {"version": version, "at": now - seconds_ago, "seconds": took, "facets": {}}

    assert _still_fresh(made(600, 0.01), 1)  # this version's counts: until the cache's timeout
    assert not _still_fresh(made(0.05, 0.01), 2)  # a small index is counted again at once
    assert _still_fresh(made(RECOUNT_COST_RATIO * 5 - 5, 5.0), 2)  # counting every chunk took 5 s
    assert not _still_fresh(made(RECOUNT_COST_RATIO * 5 + 5, 5.0), 2)
    assert not _still_fresh(None, 1)
