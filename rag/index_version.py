"""A counter of index changes, kept in the database so that every process sees it: what is cached
from the index (the facet counts of the filters) is keyed by it, so an upload, a sync by a Celery
worker or a delete shows at once in every web process instead of after the cache's timeout."""

from __future__ import annotations

import logging

from django.db import connections, router, transaction

from rag.models import IndexVersion

logger = logging.getLogger(__name__)

ROW = 1


def index_version() -> int:
    """Read where the caller's other reads go (a replica within ``replicas.reads``), so the version
    is never newer than the rows read beside it."""
    version = IndexVersion.objects.filter(pk=ROW).values_list("version", flat=True).first()
    return int(version or 0)


def _bump() -> None:
    with connections[router.db_for_write(IndexVersion)].cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {IndexVersion._meta.db_table} (id, version) VALUES (%s, 1) "
            f"ON CONFLICT (id) DO UPDATE SET version = {IndexVersion._meta.db_table}.version + 1",
            [ROW],
        )


def index_changed() -> None:
    """Call after chunks were written, hidden or deleted. Counted once the write commits (a reader
    that sees the new version sees the rows), in a statement of its own, so concurrent writers
    hold the counter's row for no longer than that statement. A counter that could not be moved
    leaves the cache to its timeout; it never undoes the write."""

    def bump() -> None:
        try:
            _bump()
        except Exception:  # the write it counts has committed; a stale count is the lesser harm
            logger.exception("could not count an index change; cached facets expire on their timeout")

    transaction.on_commit(bump)
