"""Two processes upserting the same source at once never produce duplicates or errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from rag.models import Chunk, ChunkHistory


@pytest.mark.django_db(transaction=True)
def test_two_processes_on_one_source(settings):
    env = {**os.environ, "DATABASE_URL": settings.DATABASE_URL,
           "KNOWHUB_TEST_DB_NAME": connection.settings_dict["NAME"]}  # fmt: skip
    procs = [
        subprocess.Popen([sys.executable, "-m", "tests.rag.upsert_process", version], cwd=settings.BASE_DIR,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for version in ("A", "B")
    ]  # fmt: skip
    outputs = [p.communicate(timeout=180) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]

    uids = list(Chunk.objects.values_list("chunk_uid", flat=True))
    assert len(uids) == len(set(uids))
    # The source ends as exactly one of the two versions, whole.
    contents = " ".join(Chunk.objects.order_by("chunk_idx").values_list("content", flat=True))
    assert ("Version A" in contents) != ("Version B" in contents)
    assert sum(r["created"] for r in results) == len(uids)
    # Whichever ran second rewrote the first one's chunks and recorded each change.
    assert ChunkHistory.objects.filter(change="updated").count() == sum(r["updated"] for r in results)
