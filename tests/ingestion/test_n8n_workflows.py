"""The shipped n8n workflows (examples/n8n), imported into a real n8n and run against a live
knowhub: what knowhub stores is what the Notion page last said.

n8n is the pinned CLI that scripts/install_n8n.sh installs into var/n8n; without node or that
install these tests skip. Only the nodes that would call Notion are fed recorded items
(ingestion/n8n_runner.py says how); the rest of each workflow runs unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestion.models import NotionDelivery
from ingestion.n8n_runner import (
    N8n,
    credential_refs,
    header_credential,
    n8n_missing,
    shipped,
    substituted,
    workflow_ids,
)
from rag.models import Chunk, ChunkHistory
from tests.ingestion.conftest import live_chunks, search_ids

pytestmark = [
    pytest.mark.n8n,
    pytest.mark.skipif(bool(n8n_missing()), reason=n8n_missing() or "n8n available"),
]

SECRET = "n8n-test-webhook-secret"
API_TOKEN = "0123456789abcdef0123456789abcdef01234567"  # a DRF token key: 40 characters
RECORDED = json.loads((Path(__file__).parent / "fixtures" / "n8n_recorded_notion.json").read_text())
PAGE, DATABASE = RECORDED["page"], RECORDED["database"]
SYNC, SIGNED, TRASH = "notion-to-knowhub.json", "notion-to-knowhub-signed.json", "notion-archive-to-knowhub.json"
CHAT = "knowhub-chat.json"
# The recorded states the sync workflow is run with, each as one workflow to execute.
SYNC_RUNS = ["v1", "v2", "v1_reverted", "restored", "v2_dashless", "tags_as_text"]


def _sync_variant(filename: str, state: str, workflow_id: str) -> dict:
    items = RECORDED[state]
    return substituted(
        shipped(filename), trigger="Notion Trigger", workflow_id=workflow_id,
        recorded={"Notion Trigger": items["pages"], "Get blocks": items["blocks"]},
    )  # fmt: skip


@pytest.fixture(scope="module")
def n8n(tmp_path_factory):
    """One n8n home with the shipped workflows' credentials and every recorded variant imported
    (importing once: each n8n command starts a whole n8n)."""
    n8n = N8n(tmp_path_factory.mktemp("n8n-home"), env={"KNOWHUB_NOTION_WEBHOOK_SECRET": SECRET})
    refs = credential_refs(shipped(SYNC)) | credential_refs(shipped(TRASH))
    hook = [(kind, cid, name) for kind, cid, name in refs if kind == "httpHeaderAuth"]
    assert len(hook) == 1, refs  # the sync and trash workflows name one credential: knowhub's secret
    ((_, token_id, token_name),) = credential_refs(shipped(CHAT))  # the chat asks with a user's API token
    n8n.import_credentials([
        header_credential(hook[0][1], hook[0][2], f"Bearer {SECRET}"),
        header_credential(token_id, token_name, f"Token {API_TOKEN}"),
    ])  # fmt: skip
    ids = workflow_ids("knowhubtest")
    n8n.ids = {}
    workflows = []
    for state in SYNC_RUNS:
        n8n.ids[state] = next(ids)
        workflows.append(_sync_variant(SYNC, state, n8n.ids[state]))
    n8n.ids["signed"] = next(ids)
    workflows.append(_sync_variant(SIGNED, "v1", n8n.ids["signed"]))
    n8n.ids["trashed"] = next(ids)
    workflows.append(
        substituted(shipped(TRASH), trigger="Notion events", workflow_id=n8n.ids["trashed"],
                    recorded={"Notion events": [RECORDED["trashed_event"]]})  # fmt: skip
    )
    n8n.ids["chat"] = next(ids)
    question = {"sessionId": "s1", "action": "sendMessage", "chatInput": "When do the boats leave the harbour?"}
    workflows.append(
        substituted(shipped(CHAT), trigger="When chat message received", workflow_id=n8n.ids["chat"],
                    recorded={"When chat message received": [question]})  # fmt: skip
    )
    n8n.import_workflows(workflows)
    return n8n


@pytest.fixture
def knowhub(live_server, settings, local_embedder, monkeypatch):
    """The live knowhub n8n posts to, with the webhook secret set and embeddings counted."""
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = SECRET
    calls: list[int] = []

    class Counting:
        name = local_embedder.name
        dims = getattr(local_embedder, "dims", None)

        def embed_documents(self, texts):
            calls.append(len(texts))
            return local_embedder.embed_documents(texts)

        def embed_query(self, text):
            return local_embedder.embed_query(text)

    monkeypatch.setattr("ingestion.services.core.get_embedder", Counting)
    live_server.embedded = calls
    return live_server


def run(n8n: N8n, knowhub, name: str):
    n8n.env["KNOWHUB_URL"] = knowhub.url
    return n8n.execute(n8n.ids[name])


def sent(execution) -> dict:
    """knowhub's answer to the workflow's HTTP Request (one page per run)."""
    assert execution.ok, execution.output[-4000:]
    (answer,) = execution.node_items("Send to knowhub")
    return answer


def live_text() -> str:
    return "\n".join(live_chunks(collection="notion").order_by("chunk_uid").values_list("content", flat=True))


def test_the_sync_workflow_keeps_what_the_page_last_said(n8n, knowhub, local_embedder):
    from ingestion.services.source_settings import source_setting_save

    # The database maps its "Family" property to people; nothing maps "Status".
    source_setting_save(kind="notion_database", key=DATABASE.replace("-", ""), mapping={"people": ["Family"]})

    # A new page: stored with its Notion-cased properties (Name as title, Tags, Date, Author).
    assert sent(run(n8n, knowhub, "v1")) == {"delivery_id": NotionDelivery.objects.get().pk, "status": "pending",
                                             "replay": False}  # fmt: skip
    chunk = live_chunks(source_id=PAGE).get()
    assert "## Timetable" in chunk.content and "seven in the morning" in chunk.content
    assert chunk.title == "Ferry timetable" and sorted(chunk.concepts) == ["harbour", "travel"]
    assert chunk.date.isoformat() == "2025-03-01" and chunk.metadata["author"] == "Keith"
    assert chunk.metadata["people"] == ["Ann"] and chunk.metadata["status"] == "Draft"
    assert chunk.url.endswith(PAGE.replace("-", "")) and chunk.metadata["notion_database"] == DATABASE.replace("-", "")
    assert search_ids("when do boats leave the harbour", embedder=local_embedder, top_k=1) == [PAGE]
    embedded = sum(knowhub.embedded)

    # The same poll result again: a replay, nothing stored twice, nothing embedded.
    assert sent(run(n8n, knowhub, "v1"))["replay"] is True
    assert NotionDelivery.objects.count() == 1 and NotionDelivery.objects.get().replays == 1
    assert sum(knowhub.embedded) == embedded

    # An edit: the new text, with the old one in the history.
    sent(run(n8n, knowhub, "v2"))
    assert "evening crossing was cancelled" in live_text() and "seven in the morning" not in live_text()
    uid = live_chunks(source_id=PAGE).get().chunk_uid
    assert ChunkHistory.objects.filter(chunk_uid=uid, change="updated").count() == 1

    # Reverted to the first text in Notion: applied again.
    sent(run(n8n, knowhub, "v1_reverted"))
    assert "seven in the morning" in live_text()
    assert search_ids("when do boats leave the harbour", embedder=local_embedder, top_k=1) == [PAGE]
    embedded = sum(knowhub.embedded)

    # Moved to the trash (the trash workflow, from Notion's page.deleted event): hidden, with history.
    assert sent(run(n8n, knowhub, "trashed"))["replay"] is False
    assert live_text() == "" and Chunk.objects.filter(source_id=PAGE, deleted_at__isnull=False).exists()
    assert ChunkHistory.objects.filter(chunk_uid=uid, change="deleted").exists()
    assert search_ids("when do boats leave the harbour", embedder=local_embedder) == []

    # Restored and edited in Notion: back, with the vectors it had (nothing embedded).
    sent(run(n8n, knowhub, "restored"))
    assert "seven in the morning" in live_text() and sum(knowhub.embedded) == embedded
    assert search_ids("when do boats leave the harbour", embedder=local_embedder, top_k=1) == [PAGE]

    # The same page with a dash-less id: still one document.
    sent(run(n8n, knowhub, "v2_dashless"))
    assert "evening crossing was cancelled" in live_text()
    assert set(Chunk.objects.values_list("source_id", flat=True)) == {PAGE}
    assert search_ids("was the evening ferry crossing cancelled", embedder=local_embedder) == [PAGE]


def test_a_malformed_page_fails_in_n8n_with_the_reason(n8n, knowhub):
    # A database whose "Tags" is a text property: knowhub refuses it and n8n shows why.
    execution = run(n8n, knowhub, "tags_as_text")
    assert not execution.ok
    error = execution.error()
    assert error["httpCode"] == "400" and error["message"] == "Bad request - please check your parameters"
    assert error["description"] == "properties.tags must be a list of strings"  # not the code, "invalid"
    assert not NotionDelivery.objects.exists() and not Chunk.objects.exists()


def test_a_wrong_secret_is_refused_with_401(n8n, knowhub, settings):
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = "another-secret"
    execution = run(n8n, knowhub, "v1")
    assert not execution.ok
    error = execution.error()
    assert error["httpCode"] == "401" and error["message"] == "Authorization failed - please check your credentials"
    assert error["description"].startswith("missing or wrong webhook secret: send 'Authorization: Bearer")
    # A knowhub without a secret says which setting to set, and n8n does not present it as "retry later".
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = ""
    error = run(n8n, knowhub, "v1").error()
    assert error["httpCode"] == "403" and "try again" not in error["message"]
    assert "set KNOWHUB_NOTION_WEBHOOK_SECRET on the knowhub server" in error["description"]
    assert not NotionDelivery.objects.exists() and not Chunk.objects.exists()


def test_the_signed_workflow_is_accepted_and_a_wrong_key_is_not(n8n, knowhub, settings):
    answer = sent(run(n8n, knowhub, "signed"))
    assert answer["replay"] is False and "seven in the morning" in live_text()
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = "another-secret"
    execution = run(n8n, knowhub, "signed")
    assert not execution.ok and execution.error()["httpCode"] == "401"
    assert NotionDelivery.objects.count() == 1


def test_the_chat_workflow_answers_from_knowhub_with_an_api_token(n8n, knowhub, django_user_model):
    from rest_framework.authtoken.models import Token

    Token.objects.create(key=API_TOKEN, user=django_user_model.objects.create_user("n8n-chat", password="x"))
    sent(run(n8n, knowhub, "v1"))  # the page the question is about, synced by the sync workflow
    execution = run(n8n, knowhub, "chat")
    assert execution.ok, execution.output[-4000:]
    ((answer,),) = [execution.node_items("Ask knowhub")]
    assert answer["sources"][0]["source_id"] == PAGE and answer["citations"]
    (reply,) = execution.node_items("Reply")
    assert "seven" in reply["output"] and "Sources:\n[1] Ferry timetable" in reply["output"]
