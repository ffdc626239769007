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
from django.db import connection, transaction
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
    source_lock_key,
    sources_remove,
    this_worker,
)
from ingestion.services.folders import Candidate, source_states, sync_candidates
from ingestion.services.source_settings import apply_setting, setting_for_document
from rag.embeddings import Embedder, TransientEmbeddingError, get_embedder
from rag.services import source_archive, source_soft_delete

logger = logging.getLogger(__name__)

# --- Notion: pushed (n8n webhook) ---------------------------------------------------------------


def notion_webhook_secret() -> str:
    return settings.KNOWHUB_NOTION_WEBHOOK_SECRET or ""


@dataclass
class DeliveryReceipt:
    delivery: NotionDelivery
    replay: bool


def _lock_page(page_id: str) -> None:
    """Serialise the inbox per page (held until the transaction ends): what "the page's latest
    delivery" is must not change while a delivery is received. The same lock as the page's
    ``source_lock``, which applying and re-indexing hold."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [source_lock_key("notion_page", page_id)]
        )


def notion_delivery_receive(
    *, body: bytes, page_id: str, edited_at: dt.datetime | None = None, gone: bool = False,
) -> DeliveryReceipt:  # fmt: skip
    """Store a validated webhook body, then queue its processing once the row is committed.

    A body equal to the page's latest delivery is a replay: it returns that row and queues
    nothing (unless that one failed). Any other body is stored and applied, even one seen
    before — a page reverted to an earlier text, or restored, must end as it was last sent.
    Applying a body equal to what is stored changes and embeds nothing (chunk content hashes).
    """
    from ingestion.tasks import process_notion_delivery

    digest = hashlib.sha256(body).hexdigest()
    page_id = page_id[:200]
    with transaction.atomic():
        _lock_page(page_id)
        delivery = NotionDelivery.objects.filter(page_id=page_id).order_by("-pk").first()
        replay = delivery is not None and delivery.body_hash == digest
        if replay:
            NotionDelivery.objects.filter(pk=delivery.pk).update(replays=delivery.replays + 1)
        else:
            delivery = NotionDelivery.objects.create(
                body=body.decode("utf-8"), body_hash=digest, page_id=page_id, edited_at=edited_at, gone=gone
            )
        if not replay or delivery.status == NotionDelivery.Status.FAILED:
            # robust: a broker outage must not turn a stored delivery into a 500; the sweeper
            # (sweep_notion_deliveries) picks up whatever stayed pending.
            transaction.on_commit(lambda: process_notion_delivery.delay(delivery.pk), robust=True)
    return DeliveryReceipt(delivery=delivery, replay=replay)


def _newer_applied(delivery: NotionDelivery) -> bool:
    """Whether the page already shows a newer delivery: a later ``last_edited_time`` when both
    give one, else the later arrival (rows of one page are created in arrival order)."""
    applied = (
        NotionDelivery.objects.filter(page_id=delivery.page_id, status=NotionDelivery.Status.DONE)
        .exclude(pk=delivery.pk)
        .exclude(result__has_key="superseded")
    )
    later = Q(pk__gt=delivery.pk)
    if delivery.edited_at is None:
        return applied.filter(later).exists()
    return applied.filter(
        Q(edited_at__gt=delivery.edited_at) | (later & (Q(edited_at=delivery.edited_at) | Q(edited_at__isnull=True)))
    ).exists()


def _apply(delivery: NotionDelivery, *, embedder: Embedder | None, raise_transient: bool) -> tuple[str, dict]:
    """Make the page's chunks what ``delivery`` says: ``(error, result)``."""
    from ingestion.sources.notion import webhook_delivery

    try:
        checked = webhook_delivery(json.loads(delivery.body), collection=NOTION_COLLECTION)
        doc = checked.document
        if not checked.gone:
            # The database's setting (re-read now: it may have changed since the delivery came).
            apply_setting(doc, setting_for_document(doc))
    except (ValueError, TypeError) as exc:
        return f"invalid payload: {exc}", {}
    if checked.gone:
        hidden = sum(
            source_archive(collection=NOTION_COLLECTION, source_type=kind, source_ids=_id_forms([doc.source_id]))
            for kind in ("notion_note", "notion_page")
        )
        return "", {"archived": hidden}
    recorder = RunRecorder(IngestRun(source="notion_webhook"))
    index_documents(documents=[doc], recorder=recorder, embedder=embedder, raise_transient=raise_transient)
    if recorder.run.errors:
        return "; ".join(e["error"] for e in recorder.run.errors), recorder.run.counts()
    _supersede(source_type="notion_page", page_ids=[doc.source_id])
    # Copies stored under another spelling of the id before ids were made canonical.
    older_spellings = [f for f in _id_forms([doc.source_id]) if f != doc.source_id]
    source_soft_delete(collection=NOTION_COLLECTION, source_type="notion_note", source_ids=older_spellings)
    return "", recorder.run.counts()


def notion_delivery_process(
    *, delivery_id: int, embedder: Embedder | None = None, raise_transient: bool = False,
) -> NotionDelivery | None:  # fmt: skip
    """Apply one stored delivery. Idempotent: a delivery already done is left alone, and one
    older than what the page already shows (``_newer_applied``) is recorded as superseded."""
    with transaction.atomic():
        delivery = NotionDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status == NotionDelivery.Status.DONE:
            return delivery
        delivery.status = NotionDelivery.Status.PROCESSING
        delivery.attempts += 1
        delivery.save(update_fields=["status", "attempts", "updated_at"])
    try:
        # One page at a time, across workers: what "the page's latest delivery" is must not change
        # while this one is applied. A session lock, not a transaction: indexing spans several
        # transactions, and a keyword-index rebuild it may start waits for open ones.
        with source_lock("notion_page", delivery.page_id):
            if _newer_applied(delivery):
                error, delivery.result = "", {"superseded": True}
            else:
                error, delivery.result = _apply(delivery, embedder=embedder, raise_transient=raise_transient)
            delivery.status = NotionDelivery.Status.FAILED if error else NotionDelivery.Status.DONE
            delivery.error = error
            delivery.processed_at = timezone.now()
            delivery.result = {**(delivery.result or {}), "worker": this_worker()}  # who did it
            delivery.save(update_fields=["status", "error", "result", "processed_at", "updated_at"])
    except TransientEmbeddingError:
        NotionDelivery.objects.filter(pk=delivery.pk).update(status=NotionDelivery.Status.PENDING)
        raise
    return delivery


def _id_forms(page_ids) -> list[str]:
    """A Notion id as n8n may send it (with or without dashes) and as the API returns it."""
    forms: set[str] = set()
    for page_id in page_ids:
        bare = page_id.replace("-", "")
        forms |= {page_id, bare, bare.upper()}
        if len(bare) == 32:
            dashed = f"{bare[:8]}-{bare[8:12]}-{bare[12:16]}-{bare[16:20]}-{bare[20:]}"
            forms |= {dashed, dashed.lower(), dashed.upper()}
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
    """Per page, the delivery applied last (what its chunks show)."""
    qs = NotionDelivery.objects.filter(status=NotionDelivery.Status.DONE).exclude(result__has_key="superseded")
    if page_id is not None:
        qs = qs.filter(page_id=page_id)
    if since is not None:
        qs = qs.filter(received_at__gte=since)
    latest: dict[str, NotionDelivery] = {}
    for delivery in qs.order_by("page_id", "-processed_at", "-pk"):
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
        with source_lock("notion_page", page_id):  # not overwritten by an older delivery meanwhile
            latest = _latest_deliveries(since, page_id=page_id)
            if not latest:  # deleted meanwhile
                continue
            delivery = latest[0]
            if delivery.gone:  # archived: its chunks stay hidden until the page is sent live again
                recorder.count(skipped=1)
                continue
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
