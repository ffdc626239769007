"""A counter of index changes, kept in Django's cache: what is cached from the index (the facet
counts of the filters) is keyed by it, so an upload, a sync or a delete shows at once instead of
after the cache's timeout."""

from __future__ import annotations

from django.core.cache import cache

KEY = "rag:index-version"


def index_version() -> int:
    return int(cache.get(KEY) or 0)


def index_changed() -> None:
    """Call after chunks were written, hidden or deleted."""
    try:
        cache.incr(KEY)
    except ValueError:  # not set yet (or evicted)
        cache.set(KEY, index_version() + 1, None)
