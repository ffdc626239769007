"""Thin Celery tasks around the index services."""

from __future__ import annotations

from celery import shared_task

from rag.embeddings import TransientEmbeddingError
from rag.services import chunk_upsert
from rag.units import SourceDocument


@shared_task(
    bind=True,
    autoretry_for=(TransientEmbeddingError,),
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=6,
)
def upsert_documents(self, documents: list[dict]) -> dict:
    """Upsert source documents given as ``SourceDocument.to_dict()``; retries transient
    provider errors only (a bad document is a bug to see, not to retry)."""
    return chunk_upsert(documents=[SourceDocument.from_dict(d) for d in documents]).as_dict()


def enqueue_upsert(documents: list[SourceDocument]):
    """Queue an upsert (inline when no broker runs)."""
    return upsert_documents.delay([d.to_dict() for d in documents])
