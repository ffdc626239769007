"""Notion: pushed deliveries (n8n webhook) and the pull sync (notion-client)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ingestion.models import (
    IngestRun,
    NotionDelivery,
    NotionSyncState,
    SourceState,
)
from ingestion.services.core import (
    NOTION_COLLECTION,
    IngestError,
    Running,
    RunRecorder,
    index_documents,
    run_or_create,
    source_lock,
    sources_remove,
    this_worker,
)
from ingestion.services.folders import Candidate, source_states, sync_candidates
from ingestion.services.source_settings import apply_setting, setting_for_document
from rag.embeddings import Embedder, TransientEmbeddingError, get_embedder
from rag.services import source_soft_delete

logger = logging.getLogger(__name__)

# --- Notion: pushed (n8n webhook) ---------------------------------------------------------------


def notion_webhook_secret() -> str:
    return settings.KNOWHUB_NOTION_WEBHOOK_SECRET or ""


@dataclass
class DeliveryReceipt:
    delivery: NotionDelivery
    replay: bool


def notion_delivery_receive(*, body: bytes, page_id: str) -> DeliveryReceipt:
    """Store a validated webhook body, then queue its processing once the row is committed.

    The sha256 of the raw body is unique: a replayed delivery returns the row it created the
    first time and queues nothing (unless that one failed), so replays change nothing.
    """
    from ingestion.tasks import process_notion_delivery

    digest = hashlib.sha256(body).hexdigest()
    with transaction.atomic():
        delivery, created = NotionDelivery.objects.get_or_create(
            body_hash=digest, defaults={"body": body.decode("utf-8"), "page_id": page_id[:200]}
        )
        if not created:
            NotionDelivery.objects.filter(pk=delivery.pk).update(replays=delivery.replays + 1)
        if created or delivery.status == NotionDelivery.Status.FAILED:
            # robust: a broker outage must not turn a stored delivery into a 500; the sweeper
            # (sweep_notion_deliveries) picks up whatever stayed pending.
            transaction.on_commit(lambda: process_notion_delivery.delay(delivery.pk), robust=True)
    return DeliveryReceipt(delivery=delivery, replay=not created)


def notion_delivery_process(
    *, delivery_id: int, embedder: Embedder | None = None, raise_transient: bool = False,
) -> NotionDelivery | None:  # fmt: skip
    """Index one stored delivery. Idempotent: a delivery already done is left alone, and one
    superseded by a newer delivery of the same page that is already done is not applied."""
    with transaction.atomic():
        delivery = NotionDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status == NotionDelivery.Status.DONE:
            return delivery
        delivery.status = NotionDelivery.Status.PROCESSING
        delivery.attempts += 1
        delivery.save(update_fields=["status", "attempts", "updated_at"])
    # One page at a time: a newer delivery processed by another worker meanwhile either finished
    # first (this one is then superseded) or waits until this one is stored and marked done.
    with page_lock(delivery.page_id):
        error = _delivery_apply(delivery, embedder=embedder, raise_transient=raise_transient)
        delivery.status = NotionDelivery.Status.FAILED if error else NotionDelivery.Status.DONE
        delivery.error = error
        delivery.processed_at = timezone.now()
        delivery.result = {**(delivery.result or {}), "worker": this_worker()}  # who did it
        delivery.save(update_fields=["status", "error", "result", "processed_at", "updated_at"])
    return delivery


def page_lock(page_id: str):
    """The ingest lock of one Notion page, whichever form (dashes or not) its id arrives in."""
    return source_lock("notion_page", page_id.replace("-", "").lower())


def _delivery_apply(delivery: NotionDelivery, *, embedder: Embedder | None, raise_transient: bool) -> str:
    """Index a delivery unless a newer one of its page is done; sets ``result``, returns the error."""
    from ingestion.sources.notion import webhook_to_document

    newer_done = NotionDelivery.objects.filter(
        page_id=delivery.page_id, status=NotionDelivery.Status.DONE, received_at__gt=delivery.received_at
    ).exists()
    recorder = RunRecorder(IngestRun(source="notion_webhook"))
    error = ""
    if newer_done:
        delivery.result = {"superseded": True}
    else:
        try:
            doc = webhook_to_document(json.loads(delivery.body), collection=NOTION_COLLECTION)
            # The database's setting (re-read now: it may have changed since the delivery came).
            apply_setting(doc, setting_for_document(doc))
        except (ValueError, TypeError) as exc:
            error = f"invalid payload: {exc}"
        else:
            try:
                index_documents(documents=[doc], recorder=recorder, embedder=embedder, raise_transient=raise_transient)
            except TransientEmbeddingError:
                NotionDelivery.objects.filter(pk=delivery.pk).update(status=NotionDelivery.Status.PENDING)
                raise
            if recorder.run.errors:
                error = "; ".join(e["error"] for e in recorder.run.errors)
            else:
                _supersede(source_type="notion_page", page_ids=[doc.source_id])
            delivery.result = recorder.run.counts()
    return error


def _id_forms(page_ids) -> list[str]:
    """A Notion id as n8n may send it (with or without dashes) and as the API returns it."""
    forms: set[str] = set()
    for page_id in page_ids:
        bare = page_id.replace("-", "")
        forms |= {page_id, bare}
        if len(bare) == 32:
            forms.add(f"{bare[:8]}-{bare[8:12]}-{bare[12:16]}-{bare[16:20]}-{bare[20:]}")
    return sorted(forms)


def _supersede(*, source_type: str, page_ids) -> int:
    """Hide the other route's copy of the same pages: a page pushed by the webhook and pulled by
    the sync is one page, and the version that arrived last is the one search shows."""
    if not page_ids:
        return 0
    return source_soft_delete(collection=NOTION_COLLECTION, source_type=source_type, source_ids=_id_forms(page_ids))


def notion_deliveries_due(*, older_than: dt.timedelta = dt.timedelta(minutes=2), max_attempts: int = 5) -> list[int]:
    """Deliveries that should have been processed by now (lost task, broker outage, crash)."""
    cutoff = timezone.now() - older_than
    return list(
        NotionDelivery.objects.filter(
            Q(status=NotionDelivery.Status.PENDING) | Q(status=NotionDelivery.Status.PROCESSING)
            | Q(status=NotionDelivery.Status.FAILED, attempts__lt=max_attempts),
            updated_at__lt=cutoff,
        ).values_list("pk", flat=True)[:500]
    )  # fmt: skip


def _latest_deliveries(since: dt.datetime | None, page_id: str | None = None) -> list[NotionDelivery]:
    qs = NotionDelivery.objects.exclude(status=NotionDelivery.Status.FAILED, attempts__gte=5)
    if page_id is not None:
        qs = qs.filter(page_id=page_id)
    if since is not None:
        qs = qs.filter(received_at__gte=since)
    latest: dict[str, NotionDelivery] = {}
    for delivery in qs.order_by("page_id", "-received_at"):
        latest.setdefault(delivery.page_id, delivery)
    return list(latest.values())


def notion_deliveries_reindex(
    *, recorder: RunRecorder, since: dt.datetime | None, dry_run: bool, embedder: Embedder,
) -> None:  # fmt: skip
    """Rebuild pushed Notion notes from the newest stored delivery of each page.

    Page by page under the page's lock, reading its newest delivery again once the lock is held:
    a delivery that a worker stored meanwhile is not overwritten by the older one read here."""
    from ingestion.sources.notion import webhook_to_document

    for page_id in [d.page_id for d in _latest_deliveries(since)]:
        recorder.count(sources=1, total=1)
        with page_lock(page_id):
            latest = _latest_deliveries(since, page_id=page_id)
            if not latest:  # deleted meanwhile
                continue
            delivery = latest[0]
            try:
                doc = webhook_to_document(json.loads(delivery.body), collection=NOTION_COLLECTION)
                doc = apply_setting(doc, setting_for_document(doc))
            except (ValueError, TypeError) as exc:
                recorder.fail(f"delivery {delivery.pk}", str(exc))
                continue
            index_documents(documents=[doc], recorder=recorder, dry_run=dry_run, embedder=embedder)


# --- Notion: pulled (notion-client) -------------------------------------------------------------


def notion_client_from_settings():
    """A ``notion_client.Client`` for ``NOTION_TOKEN``, or an ``IngestError`` saying what to set."""
    token = settings.NOTION_TOKEN
    if not token:
        raise IngestError(
            "NOTION_TOKEN is not set: create an internal integration at https://www.notion.so/my-integrations, "
            "share your databases with it, and set NOTION_TOKEN (and KNOWHUB_NOTION_DATABASES)."
        )
    from notion_client import Client

    return Client(auth=token, timeout_ms=settings.KNOWHUB_NOTION_TIMEOUT_MS)


def notion_sync(
    *, client=None, database_ids: list[str] | None = None, full: bool = False, since: dt.datetime | None = None,
    dry_run: bool = False, prune: bool = False, run: IngestRun | None = None, embedder: Embedder | None = None,
    sleep: Callable[[float], None] = time.sleep, progress_factory: Callable[[int], Callable[[int], None]] | None = None,
) -> IngestRun:  # fmt: skip
    """Pull Notion pages; fetch blocks only of pages edited since their last sync.

    Every page of the databases (or, with none given, every page the integration sees) is
    listed — page objects are cheap, block trees are not — so a page that is no longer listed
    (deleted, archived, unshared) is known to have vanished and is soft-deleted (deleted for
    good with ``prune``). Nothing is removed unless the listing completed.
    """
    from ingestion.sources.notion import NotionPuller, page_to_document

    if database_ids is None:
        database_ids = list(settings.KNOWHUB_NOTION_DATABASES)
    client = client if client is not None else notion_client_from_settings()
    embedder = embedder or get_embedder()
    run = run_or_create(
        run, source="notion_sync", types=["notion"], since=since, dry_run=dry_run, prune=prune,
        options={"databases": database_ids, "full": full},
    )  # fmt: skip
    with Running(run) as recorder:
        puller = NotionPuller(client, sleep=sleep)
        key = ",".join(sorted(database_ids)) or "*"
        state = NotionSyncState.objects.filter(key=key).first()
        started = timezone.now()
        pages = list(puller.iter_pages(database_ids=database_ids or None, since=None))
        recorder.count(total=len(pages))
        states = source_states(collection=NOTION_COLLECTION, source_types=["notion_page"])
        progress = progress_factory(len(pages)) if progress_factory else None
        candidates: list[Candidate] = []
        seen: set[str] = set()
        for page in pages:
            page_id = page.get("id") or ""
            seen.add(page_id)
            version = str(page.get("last_edited_time") or "")
            old = states.get(page_id)
            edited = _parse_iso(version)
            stale = since is not None and edited is not None and edited < since
            if not full and old is not None and (old.remote_version == version or stale):
                recorder.count(sources=1, skipped=1)
                if progress:
                    progress(1)
                continue
            try:
                document = page_to_document(page, puller.fetch_blocks(page_id), collection=NOTION_COLLECTION)
            except Exception as exc:  # one page failing (permissions, a 404 mid-sync) is recorded
                logger.warning("Notion page %s: %s", page_id, exc)
                candidates.append(Candidate(label=page_id, fingerprint="", error=f"{type(exc).__name__}: {exc}"))
                continue
            candidates.append(Candidate(label=page_id, fingerprint="", document=document, remote_version=version))
        sync_candidates(
            candidates=candidates, states=states, recorder=recorder, root=None, dry_run=dry_run, force=full,
            embedder=embedder, progress=progress,
        )  # fmt: skip
        if not dry_run:
            _supersede(source_type="notion_note", page_ids=[c.label for c in candidates if c.document is not None])
            # A page whose blocks were unchanged still records its new version (no re-fetch next time).
            for cand in candidates:
                if cand.document is not None:
                    SourceState.objects.filter(
                        collection=NOTION_COLLECTION, source_type="notion_page", source_id=cand.label
                    ).update(remote_version=cand.remote_version)
        known = set(state.known_page_ids) if state else set()
        vanished = sorted(known - seen)
        sources_remove(
            collection=NOTION_COLLECTION, source_type="notion_page", source_ids=vanished, hard=prune,
            dry_run=dry_run, recorder=recorder,
        )  # fmt: skip
        if vanished and not dry_run:
            gone = SourceState.objects.filter(
                collection=NOTION_COLLECTION, source_type="notion_page", source_id__in=vanished
            )
            if prune:
                gone.delete()
            else:  # a page that comes back must be fetched and revived, whatever its version
                gone.update(fingerprint="", remote_version="")
        if not dry_run:
            NotionSyncState.objects.update_or_create(
                key=key, defaults={"last_synced_at": started, "known_page_ids": sorted(seen)}
            )
    return run


def _parse_iso(value: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
