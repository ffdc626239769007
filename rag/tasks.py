"""Celery tasks of the index: thin wrappers around ``rag`` services."""

from __future__ import annotations

from celery import shared_task

from rag import text_search


@shared_task(name="rag.check_bm25_index")
def check_bm25_index() -> bool:
    """Rebuild the keyword index when its statistics no longer match the chunks (True if it did)."""
    return text_search.check_bm25_index(force=True)
