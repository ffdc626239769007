"""The demo corpus (handbook, engineering notes, meeting notes of ``rag.demo``) as an ingestion
source: ``load_demo`` indexes it on a recorded run, and ``reindex demo`` rebuilds what was loaded."""

from __future__ import annotations

from ingestion.models import IngestRun
from ingestion.services.core import Running, RunRecorder, index_documents, live_source_ids, run_create
from rag.demo import demo_documents
from rag.embeddings import Embedder, get_embedder
from rag.units import SourceDocument

DEMO_SOURCE_TYPE = "demo"


def _loaded(documents: list[SourceDocument]) -> list[SourceDocument]:
    """The demo documents that are in the index now: a reindex never adds the demo to a real hub."""
    live: dict[str, set[str]] = {}
    for doc in documents:
        if doc.collection not in live:
            live[doc.collection] = live_source_ids(doc.collection, DEMO_SOURCE_TYPE)
    return [d for d in documents if d.source_id in live[d.collection]]


def demo_corpus_reindex(*, recorder: RunRecorder, dry_run: bool, embedder: Embedder) -> None:
    """Rebuild the loaded demo documents from their text in ``rag.demo`` (the ``demo`` type)."""
    documents = _loaded(demo_documents())
    recorder.count(sources=len(documents), total=len(documents))
    index_documents(documents=documents, recorder=recorder, dry_run=dry_run, embedder=embedder)


def demo_corpus_load(documents: list[SourceDocument], embedder: Embedder | None = None) -> dict:
    """Index the demo corpus on an ingest run of its own (``load_demo``); the run's counts."""
    run = run_create(source="load_demo", types=[DEMO_SOURCE_TYPE])
    with Running(run) as recorder:
        recorder.count(sources=len(documents), total=len(documents))
        index_documents(documents=documents, recorder=recorder, embedder=embedder or get_embedder())
        recorder.flush(force=True)
    run.refresh_from_db()
    return {k: v for k, v in run.summary().items() if k in ("run_id", *IngestRun.COUNTS)}
