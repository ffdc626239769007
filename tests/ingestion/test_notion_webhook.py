"""POST /notion/ingest: shared secret, stored before processing, replay-safe, no orphans."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from ingestion import services
from ingestion.models import NotionDelivery
from rag.models import Chunk
from tests.ingestion.conftest import live_chunks, search_ids

pytestmark = pytest.mark.django_db

SECRET = "s3cret-for-tests"
URL = "/notion/ingest"


def payload(content: str | None = None, **props) -> dict:
    return {
        "page_id": "abc123-notion-page-id",
        "properties": {
            "title": "RAG System Design Discussion", "category": "transcripts", "domain": "ai-systems",
            "tags": ["rag", "architecture"], "date": "2025-01-25", "author": "keith", **props,
        },
        "content": content if content is not None else (
            "# RAG System Design\n\nWe chose hybrid retrieval: 0.7 vector similarity plus 0.3 full-text rank, "
            "because exact identifiers like error codes are missed by embeddings alone."
        ),
        "url": "https://notion.so/rag-abc123",
    }  # fmt: skip


def post(client, body, *, token: str | None = SECRET, signature: str | None = None, raw: bytes | None = None):
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {}
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    if signature is not None:
        headers["HTTP_X_KNOWHUB_SIGNATURE"] = signature
    return client.post(URL, data=data, content_type="application/json", **headers)


@pytest.fixture
def secret(settings):
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = SECRET
    return SECRET


def test_bearer_delivery_is_stored_processed_and_searchable(
    client, secret, local_embedder, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, payload())
    assert response.status_code == 202, response.content
    delivery = NotionDelivery.objects.get(pk=response.json()["delivery_id"])
    assert delivery.status == NotionDelivery.Status.DONE and delivery.attempts == 1
    chunk = Chunk.objects.get(chunk_uid="notion:notion_note:abc123-notion-page-id:u_0:0")
    assert chunk.domain == "ai-systems" and chunk.concepts == ["architecture", "rag"]
    assert chunk.url == "https://notion.so/rag-abc123" and chunk.date.isoformat() == "2025-01-25"
    assert chunk.metadata["category"] == "transcripts"
    assert (
        search_ids("why combine keyword search with embeddings", embedder=local_embedder)[0]
        == "abc123-notion-page-id"
    )


def test_hmac_signature_is_accepted(client, secret, django_capture_on_commit_callbacks):
    body = json.dumps(payload()).encode()
    good = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    with django_capture_on_commit_callbacks(execute=False):
        assert post(client, None, token=None, signature=good, raw=body).status_code == 202
        bad = "sha256=" + hmac.new(b"wrong", body, hashlib.sha256).hexdigest()
        assert post(client, None, token=None, signature=bad, raw=body + b" ").status_code == 401


@pytest.mark.parametrize("token", ["wrong", "", None])
def test_bad_secret_is_401_and_nothing_is_stored(client, secret, token):
    response = post(client, payload(), token=token)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert not NotionDelivery.objects.exists() and not Chunk.objects.exists()


def test_no_secret_configured_refuses_everything(client, settings):
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = ""
    response = post(client, payload(), token="")
    assert response.status_code == 503 and "KNOWHUB_NOTION_WEBHOOK_SECRET" in response.json()["detail"]
    assert not NotionDelivery.objects.exists()


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"{not json", "valid UTF-8 JSON"),
        (json.dumps({"properties": {}}).encode(), "page_id"),
        (json.dumps({**payload(), "extra": 1}).encode(), "unknown field"),
        (json.dumps(payload(date="25/01/2025")).encode(), "properties.date"),
        (json.dumps(payload(tags="rag")).encode(), "properties.tags"),
        (json.dumps([1, 2]).encode(), "object"),
    ],
)  # fmt: skip
def test_malformed_payload_is_400_and_nothing_is_stored(client, secret, raw, message):
    response = post(client, None, raw=raw)
    assert response.status_code == 400
    assert message in json.dumps(response.json())
    assert not NotionDelivery.objects.exists()


def test_oversize_body_is_413(client, secret, settings):
    settings.KNOWHUB_NOTION_MAX_BODY_BYTES = 1000
    response = post(client, payload(content="x" * 2000))
    assert response.status_code == 413 and not NotionDelivery.objects.exists()


def test_replay_returns_the_same_delivery_and_changes_nothing(
    client, secret, use_hashing_embedder, hashing_embedder, django_capture_on_commit_callbacks
):
    # hashing embedder: the test is about replays, not retrieval.
    with django_capture_on_commit_callbacks(execute=True):
        first = post(client, payload())
    snapshot = list(Chunk.objects.values_list("chunk_uid", "content_hash", "updated_at"))
    calls = len(hashing_embedder.calls)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        replay = post(client, payload())
    assert replay.status_code == 202
    assert replay.json()["delivery_id"] == first.json()["delivery_id"] and replay.json()["replay"] is True
    assert callbacks == []  # nothing queued
    assert NotionDelivery.objects.count() == 1 and NotionDelivery.objects.get().replays == 1
    assert list(Chunk.objects.values_list("chunk_uid", "content_hash", "updated_at")) == snapshot
    assert len(hashing_embedder.calls) == calls


def test_a_page_that_shrinks_leaves_no_orphans(
    client, secret, use_hashing_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    # hashing embedder: about chunk counts.
    long = "\n\n".join(f"Paragraph {i}: " + "retrieval design notes and trade-offs " * 20 for i in range(8))
    with django_capture_on_commit_callbacks(execute=True):
        post(client, payload(content=long))
    assert Chunk.objects.filter(source_id="abc123-notion-page-id").count() > 3
    with django_capture_on_commit_callbacks(execute=True):
        post(client, payload(content="Short now: we settled on hybrid retrieval."))
    chunks = Chunk.objects.filter(source_id="abc123-notion-page-id")
    assert chunks.count() == 1 and chunks.get().chunk_uid.endswith(":u_0:0")


def test_broker_outage_loses_nothing_the_sweeper_processes_it(
    client, secret, use_hashing_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    # hashing embedder: about delivery bookkeeping.
    from ingestion import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("redis is down")

    real_delay = tasks.process_notion_delivery.delay
    monkeypatch.setattr(tasks.process_notion_delivery, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, payload())
    assert response.status_code == 202  # stored: the sender need not retry
    delivery = NotionDelivery.objects.get()
    assert delivery.status == NotionDelivery.Status.PENDING and not Chunk.objects.exists()
    monkeypatch.setattr(tasks.process_notion_delivery, "delay", real_delay)  # the broker is back
    NotionDelivery.objects.filter(pk=delivery.pk).update(updated_at=delivery.updated_at.replace(year=2020))
    assert tasks.sweep_notion_deliveries() == 1  # runs inline in tests
    delivery.refresh_from_db()
    assert delivery.status == NotionDelivery.Status.DONE
    assert live_chunks(source_id="abc123-notion-page-id").exists()


def test_an_older_delivery_processed_late_does_not_overwrite_a_newer_one(secret, hashing_embedder):
    # hashing embedder: about ordering.
    old = services.notion_delivery_receive(
        body=json.dumps(payload(content="old text")).encode(), page_id="abc123-notion-page-id"
    )
    new = services.notion_delivery_receive(
        body=json.dumps(payload(content="new text")).encode(), page_id="abc123-notion-page-id"
    )
    services.notion_delivery_process(delivery_id=new.delivery.pk, embedder=hashing_embedder)
    done = services.notion_delivery_process(delivery_id=old.delivery.pk, embedder=hashing_embedder)
    assert done.result["superseded"] is True
    assert Chunk.objects.get(source_id="abc123-notion-page-id").content == "new text"


def test_a_delivery_is_chunked_once(client, secret, hashing_embedder, monkeypatch, django_capture_on_commit_callbacks):
    # hashing embedder: about how often the content is cut, not about retrieval.
    import rag.services

    cuts = []
    real = rag.services.split_text
    monkeypatch.setattr(rag.services, "split_text", lambda text, **kw: cuts.append(text) or real(text, **kw))
    monkeypatch.setattr("ingestion.services.core.get_embedder", lambda: hashing_embedder)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, payload(" ".join(["A sentence about hybrid retrieval."] * 100)))
    assert response.status_code == 202, response.content
    assert NotionDelivery.objects.get().status == NotionDelivery.Status.DONE
    assert len(cuts) == 1 and Chunk.objects.count() > 1
