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


def test_no_secret_configured_refuses_everything_and_says_which_setting(client, settings):
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = ""
    response = post(client, payload(), token="")
    # Not a 503: n8n presents that as "try again later", and retrying changes nothing.
    assert response.status_code == 403 and response.json()["error"] == "webhook_disabled"
    assert "set KNOWHUB_NOTION_WEBHOOK_SECRET" in response.json()["detail"]
    assert not NotionDelivery.objects.exists()


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"{not json", "valid UTF-8 JSON"),
        (json.dumps({"properties": {}}).encode(), "page_id"),
        (json.dumps({**payload(), "extra": 1}).encode(), "unknown field"),
        (json.dumps({**payload(), "archived": "yes"}).encode(), "archived must be true or false"),
        (json.dumps(payload(date="25/01/2025")).encode(), "properties.date"),
        (json.dumps(payload(tags="rag")).encode(), "properties.tags"),
        (json.dumps([1, 2]).encode(), "object"),
    ],
)  # fmt: skip
def test_malformed_payload_is_400_and_nothing_is_stored(client, secret, raw, message):
    response = post(client, None, raw=raw)
    assert response.status_code == 400
    body = response.json()
    assert message in body["detail"]
    # n8n's HTTP Request node shows the first of cause/error/message…: the reason, not the code.
    assert body["cause"] == body["detail"] and body["error"] in ("invalid", "invalid_json")
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


# --- the page ends as it was last sent ----------------------------------------------------------

PAGE = "1f2e3d4c-5b6a-7988-0123-456789abcdef"
V1 = "The harbour ferry timetable: boats leave at seven and return at nine, weather permitting."
V2 = "The mountain railway schedule: trains climb at noon and descend before dusk every day."


def page(content: str | None = None, *, page_id: str = PAGE, **extra) -> dict:
    body = {"page_id": page_id, "properties": {"title": "Timetable"}, **extra}
    if content is not None:
        body["content"] = content
    return body


def deliver(client, body: dict, callbacks) -> dict:
    with callbacks(execute=True):
        response = post(client, body)
    assert response.status_code == 202, response.content
    return response.json()


def live_texts() -> list[str]:
    return list(live_chunks(collection="notion").values_list("content", flat=True))


def test_v1_v2_revert_archive_restore_and_a_dashless_id_end_as_last_sent(
    client, secret, local_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    from rag.models import ChunkHistory

    monkeypatch.setattr("ingestion.services.core.get_embedder", lambda: local_embedder)
    ferry, railway = "when do the boats leave the harbour", "when do trains climb the mountain"
    steps = [
        (page(V1), V1, ferry), (page(V2), V2, railway),
        (page(V1), V1, ferry),  # a revert: this body was received before, and still applies
    ]  # fmt: skip
    for body, text, query in steps:
        receipt = deliver(client, body, django_capture_on_commit_callbacks)
        assert receipt["replay"] is False
        assert live_texts() == [text]
        assert search_ids(query, embedder=local_embedder, top_k=1) == [PAGE]
    deliver(client, page(archived=True), django_capture_on_commit_callbacks)
    assert live_texts() == [] and search_ids(ferry, embedder=local_embedder) == []
    uid = f"notion:notion_note:{PAGE}:u_0:0"
    assert ChunkHistory.objects.filter(chunk_uid=uid, change="deleted", content=V1).exists()
    deliver(client, page(V1), django_capture_on_commit_callbacks)  # restored: the body of step 3 again
    assert live_texts() == [V1] and search_ids(ferry, embedder=local_embedder, top_k=1) == [PAGE]
    # The same page as a Notion URL's id: no dashes, upper case. One page, one document.
    deliver(client, page(V2, page_id=PAGE.replace("-", "").upper()), django_capture_on_commit_callbacks)
    assert live_texts() == [V2] and search_ids(railway, embedder=local_embedder) == [PAGE]
    assert set(Chunk.objects.values_list("source_id", flat=True)) == {PAGE}
    changes = list(ChunkHistory.objects.filter(chunk_uid=uid).order_by("id").values_list("change", "content"))
    assert changes == [("created", V1), ("updated", V2), ("updated", V1), ("deleted", V1), ("updated", V1),
                       ("updated", V2)]  # fmt: skip
    assert NotionDelivery.objects.filter(page_id=PAGE).count() == 6


def test_a_replay_or_an_unchanged_page_embeds_nothing(
    client, secret, use_hashing_embedder, hashing_embedder, django_capture_on_commit_callbacks
):
    # hashing embedder: about what is embedded, not retrieval.
    deliver(client, page(V1), django_capture_on_commit_callbacks)
    calls = len(hashing_embedder.calls)
    replay = deliver(client, page(V1), django_capture_on_commit_callbacks)
    assert replay["replay"] is True and NotionDelivery.objects.get().replays == 1
    # Not the same bytes (keys reordered), but the same page: stored, applied, nothing changes.
    body = json.dumps({"content": V1, "properties": {"title": "Timetable"}, "page_id": PAGE}).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, None, raw=body)
    assert response.json()["replay"] is False
    assert NotionDelivery.objects.get(pk=response.json()["delivery_id"]).result["unchanged"] == 1
    assert len(hashing_embedder.calls) == calls
    # Archived and restored with the same text: the stored vector comes back, nothing is embedded.
    deliver(client, page(in_trash=True), django_capture_on_commit_callbacks)
    deliver(client, page(V1), django_capture_on_commit_callbacks)
    assert live_texts() == [V1] and len(hashing_embedder.calls) == calls


def test_an_older_edit_never_overwrites_a_newer_one(
    client, secret, use_hashing_embedder, django_capture_on_commit_callbacks
):
    # hashing embedder: about ordering.
    deliver(client, page(V2, last_edited_time="2025-03-02T10:00:00.000Z"), django_capture_on_commit_callbacks)
    late = deliver(client, page(V1, last_edited_time="2025-03-01T10:00:00.000Z"), django_capture_on_commit_callbacks)
    assert NotionDelivery.objects.get(pk=late["delivery_id"]).result["superseded"] is True
    assert live_texts() == [V2]
    # An archive older than the shown edit is not applied either; a newer edit is.
    deliver(client, page(archived=True, last_edited_time="2025-03-01T12:00:00Z"), django_capture_on_commit_callbacks)
    assert live_texts() == [V2]
    deliver(client, page(V1, last_edited_time="2025-03-03T10:00:00+00:00"), django_capture_on_commit_callbacks)
    assert live_texts() == [V1]


def test_notion_cased_properties_go_through_the_databases_mapping(
    client, secret, use_hashing_embedder, django_capture_on_commit_callbacks
):
    # hashing embedder: about metadata.
    from ingestion.services.source_settings import source_setting_save

    database = "a" * 32
    source_setting_save(kind="notion_database", key=database, mapping={"people": ["Family"], "entity": "Client"})
    body = page(V1, database_id=database)
    body["properties"] = {"Title": "Timetable", "Tags": ["Travel"], "Date": "2025-01-25", "Author": "keith",
                          "Family": ["Ann", "Bo"], "Client": "Acme", "Status": "Draft"}  # fmt: skip
    deliver(client, body, django_capture_on_commit_callbacks)
    chunk = live_chunks(source_id=PAGE).get()
    assert chunk.title == "Timetable" and chunk.concepts == ["travel"] and chunk.date.isoformat() == "2025-01-25"
    assert chunk.metadata["people"] == ["Ann", "Bo"] and chunk.metadata["entity"] == "Acme"
    assert chunk.metadata["status"] == "Draft"  # nobody mapped it: kept, not refused


def test_a_webhook_page_and_the_pulled_page_are_one_document(
    client, secret, use_hashing_embedder, hashing_embedder, django_capture_on_commit_callbacks
):
    # hashing embedder: about which copy is live.
    from ingestion.services.core import index_documents
    from ingestion.sources.notion import page_to_document

    pulled = {"id": PAGE.replace("-", "").upper(), "properties": {}, "url": "https://www.notion.so/x"}
    blocks = [{"type": "paragraph", "paragraph": {"rich_text": [{"plain_text": V1, "type": "text"}]}}]
    doc = page_to_document(pulled, blocks)
    assert doc.source_id == PAGE
    index_documents(documents=[doc], embedder=hashing_embedder)
    deliver(client, page(V2, page_id=f"https://www.notion.so/acme/Timetable-{PAGE.replace('-', '')}"),
            django_capture_on_commit_callbacks)  # fmt: skip
    assert set(live_chunks().values_list("source_type", "source_id")) == {("notion_note", PAGE)}


def test_reindex_rebuilds_each_page_from_what_it_last_showed(
    client, secret, use_hashing_embedder, hashing_embedder, django_capture_on_commit_callbacks
):
    # hashing embedder: about which delivery a reindex rebuilds from.
    from ingestion.services.reindexing import reindex

    other = "2f2e3d4c-5b6a-7988-0123-456789abcdef"
    deliver(client, page(V2, last_edited_time="2025-03-02T10:00:00Z"), django_capture_on_commit_callbacks)
    deliver(client, page(V1, last_edited_time="2025-03-01T10:00:00Z"), django_capture_on_commit_callbacks)  # older
    deliver(client, page(V1, page_id=other), django_capture_on_commit_callbacks)
    deliver(client, page(page_id=other, archived=True), django_capture_on_commit_callbacks)
    Chunk.objects.all().delete()  # lost, e.g. an index rebuilt from scratch
    run = reindex(types=["notion"], embedder=hashing_embedder)
    assert run.status == "done", run.errors
    # The newer edit, not the late older one; the archived page stays hidden.
    assert live_texts() == [V2] and not Chunk.objects.filter(source_id=other).exists()
