"""Ingestion test helpers."""

from __future__ import annotations

import pytest

from rag.acl import Scope
from rag.models import Chunk
from rag.search import chunk_search


def live_chunks(**filters):
    return Chunk.objects.filter(deleted_at__isnull=True, **filters)


def search_ids(query: str, *, scope: Scope | None = None, embedder=None, top_k: int = 20) -> list[str]:
    """Source ids a search returns (through the real ACL-enforcing selector)."""
    result = chunk_search(query=query, scope=scope or Scope.everything(), top_k=top_k, embedder=embedder)
    return [hit.source_id for hit in result.hits]


@pytest.fixture
def use_hashing_embedder(monkeypatch, hashing_embedder):
    """Make every ingestion service default to the hashing stand-in (tests about counts/flows)."""
    import sys

    for name in ("core", "reindexing", "folders", "notion", "documents", "cms"):
        module = sys.modules[f"ingestion.services.{name}"]
        if hasattr(module, "get_embedder"):
            monkeypatch.setattr(module, "get_embedder", lambda: hashing_embedder)
    return hashing_embedder
