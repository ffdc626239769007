"""Celery tasks: thin wrappers that take ids, re-fetch, and call a service.

Only transient failures (embedding provider timeouts, lost database connections) are retried,
with exponential backoff and jitter; everything else is recorded on the run or delivery.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from ingestion import services
from ingestion.models import IngestRun
from rag.embeddings import TransientEmbeddingError

logger = logging.getLogger(__name__)

TRANSIENT = (TransientEmbeddingError, OperationalError, InterfaceError)
_RETRY = {
    "autoretry_for": TRANSIENT,
    "retry_backoff": True,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 8,
}


@shared_task(name="ingestion.reindex_objects", **_RETRY)
def reindex_objects(kind: str, ids: list[int]) -> int:
    """Re-index CMS objects after an admin save or delete (missing ids: their chunks go)."""
    if kind not in services.CMS:
        logger.error("reindex_objects: unknown kind %r", kind)
        return 0
    run = services.cms_reindex_objects(kind=kind, ids=list(ids), raise_transient=True)
    return run.pk


@shared_task(name="ingestion.run_reindex", **_RETRY)
def run_reindex(run_id: int) -> str:
    """Execute a queued reindex run (API, admin)."""
    run = IngestRun.objects.filter(pk=run_id).first()
    if run is None:
        return "missing"
    if run.status == IngestRun.Status.DONE:
        return run.status  # a redelivered task does not run a finished reindex again
    services.reindex(
        types=run.types, since=run.since, dry_run=run.dry_run, prune=run.prune, run=run
    )
    return run.status


@shared_task(name="ingestion.process_notion_delivery", **_RETRY)
def process_notion_delivery(delivery_id: int) -> str:
    delivery = services.notion_delivery_process(delivery_id=delivery_id, raise_transient=True)
    return delivery.status if delivery else "missing"


@shared_task(name="ingestion.sweep_notion_deliveries")
def sweep_notion_deliveries() -> int:
    """Queue deliveries whose task was lost (broker down when they arrived, worker crash)."""
    due = services.notion_deliveries_due()
    for delivery_id in due:
        process_notion_delivery.delay(delivery_id)
    if due:
        logger.info("requeued %d Notion deliveries", len(due))
    return len(due)


@shared_task(name="ingestion.notion_sync", **_RETRY)
def notion_sync() -> int:
    """The periodic Notion pull (scheduled only when NOTION_TOKEN is set)."""
    run = services.notion_sync()
    return run.pk


@shared_task(name="ingestion.sweep_runs")
def sweep_runs() -> dict:
    """Mark runs whose process died as interrupted; queue runs the broker could not take."""
    return services.runs_sweep()
