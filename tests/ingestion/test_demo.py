"""The demo course loads idempotently and answers the questions a new user asks first."""

from __future__ import annotations

import pytest

from ingestion.demo import load_demo_content
from ingestion.models import Page
from rag.acl import Scope
from rag.models import Chunk
from rag.search import SearchFilters, chunk_search

pytestmark = pytest.mark.django_db


def top(query: str, embedder, **filters):
    result = chunk_search(query=query, scope=Scope.for_user(None), embedder=embedder,
                          filters=SearchFilters(**filters) if filters else None)  # fmt: skip
    return result.hits[0]


def test_demo_course_is_indexed_once_and_found(local_embedder):
    first = load_demo_content()
    assert first["pages_created"] == 8 and first["failed"] == 0 and first["created"] > 25
    again = load_demo_content()
    assert (again["pages_created"], again["created"], again["updated"], again["embedded"]) == (0, 0, 0, 0)
    assert Page.objects.count() == 8

    hit = top("why does my promise callback run before setTimeout 0", local_embedder)
    assert "Event Loop" in hit.breadcrumb
    hit = top("all my loop callbacks print 3", local_embedder)
    assert hit.breadcrumb.endswith("Closures in practice: loops, private state, memoization")
    # A question made mostly of common words: BM25 lets the promises page (which mentions "the
    # same time") compete, so the concurrency page must be among the first results, not first.
    hits = chunk_search(query="run two fetches at the same time", scope=Scope.for_user(None),
                        embedder=local_embedder, dedupe=True).hits  # fmt: skip
    assert str(Page.objects.get(slug="async-await").pk) in [h.source_id for h in hits[:2]]
    mnemonic = top("restaurant chef VIP tickets", local_embedder, collections=["mnemonics"])
    assert mnemonic.mnemonic_tags and mnemonic.domain == "javascript"
    assert Chunk.objects.filter(collection="course_content", domain="javascript", has_image=True).exists()
