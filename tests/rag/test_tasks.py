"""The upsert task, executed by a real Celery worker over the local Redis."""

from __future__ import annotations

import pytest

from rag.models import Chunk
from rag.tasks import enqueue_upsert
from rag.units import SourceDocument, Unit
from tests.conftest import wait_for


@pytest.mark.worker
def test_a_real_worker_embeds_and_stores_a_document(celery_worker_process):
    doc = SourceDocument(
        collection="notes",
        source_type="note",
        source_id="worker-1",
        units=[Unit(unit_anchor="u0", content="The event loop runs microtasks before the next macrotask.")],
    )
    enqueue_upsert([doc])
    chunk = wait_for(lambda: Chunk.objects.filter(source_id="worker-1").first(), timeout=90)
    assert chunk is not None, celery_worker_process.log_path.read_text()[-2000:]
    assert chunk.embedding_model == "local:all-MiniLM-L6-v2"
    assert "succeeded" in wait_for(lambda: "succeeded" in celery_worker_process.log_path.read_text() and celery_worker_process.log_path.read_text())
