"""A person's own files (the ask page's attachments) through their REST twin ``/ingest/my-files``.

Real files, the real extraction child, database, local embedding model and extractive answerer.
What a person notices: their file is answered from and cited, the question can be restricted to
it, nobody else finds it by any road (search, ask, document page, download, listing, delete),
quotas refuse before anything is stored, delete removes it.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from ingestion.models import IngestedDocument, StoredFile
from rag.models import Chunk
from tests.ingestion.factories import docx_bytes, pdf_bytes

pytestmark = pytest.mark.django_db
URL = "/ingest/my-files"

GARDEN = pdf_bytes([("Allotment rules", "The allotment gate code is 4417.\nWatering is allowed before eight.")],
                   title="Allotment rules")  # fmt: skip


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.KNOWHUB_MEDIA_ROOT = tmp_path / "media"
    return settings.KNOWHUB_MEDIA_ROOT


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _attach(client, *files):
    return client.post(URL, {"files": [SimpleUploadedFile(n, d) for n, d in files]}, format="multipart")


def _ask(client, query, **extra):
    return client.post("/rag/ask", {"query": query, **extra}, format="json").json()


def test_own_file_is_answered_cited_and_private(user, other_user, local_embedder):
    alice, bob = _client(user), _client(other_user)
    response = _attach(alice, ("garden.pdf", GARDEN))
    assert response.status_code == 200, response.json()
    body = response.json()
    (result,) = body["results"]
    assert result["status"] == "indexed", result
    (mine,) = body["files"]
    assert mine["name"] == "garden.pdf" and mine["source_id"].endswith("/garden.pdf")
    assert body["quota"]["count"] == 1 and body["quota"]["bytes"] == len(GARDEN)
    chunk = Chunk.objects.get(source_id=mine["source_id"])
    assert (chunk.collection, chunk.visibility) == ("my-files", "private")

    answer = _ask(alice, "What is the allotment gate code?", source_ids=[mine["source_id"]])
    assert "4417" in answer["answer"], answer
    assert {s["source_id"] for s in answer["sources"]} == {mine["source_id"]}  # restricted to the file
    assert answer["citations"] and answer["citations"][0]["url"] == mine["url"]

    # Bob: not in his search, his answer, his listing; no document page, download or delete.
    other = _ask(bob, "What is the allotment gate code?")
    assert "4417" not in json.dumps(other)
    restricted = _ask(bob, "What is the allotment gate code?", source_ids=[mine["source_id"]])
    assert "4417" not in json.dumps(restricted) and restricted["sources"] == []
    query = bob.post("/rag/query", {"query": "allotment gate code", "source_ids": [mine["source_id"]]}, format="json")
    assert query.status_code == 200 and query.json()["results"] == []
    assert bob.get(URL).json()["files"] == []
    assert bob.get(f"/rag/documents/{mine['chunk_uid']}").status_code == 404
    assert bob.get(mine["url"]).status_code == 404
    assert bob.delete(f"{URL}/{mine['source_id']}").status_code == 404
    assert Chunk.objects.filter(source_id=mine["source_id"]).exists()
    assert alice.get(mine["url"]).status_code == 200


def test_two_people_with_the_same_file_name_keep_their_own(user, other_user, local_embedder):
    a = _attach(_client(user), ("notes.docx", docx_bytes([("h1", "Alpha"), ("p", "Alice keeps bees.")])))
    b = _attach(_client(other_user), ("notes.docx", docx_bytes([("h1", "Beta"), ("p", "Bob keeps goats.")])))
    ids = {a.json()["files"][0]["source_id"], b.json()["files"][0]["source_id"]}
    assert len(ids) == 2
    assert Chunk.objects.filter(collection="my-files").values("source_id").distinct().count() == 2


def test_quotas_refuse_before_anything_is_stored(user, settings, local_embedder):
    alice = _client(user)
    settings.KNOWHUB_USER_FILES_MAX_COUNT = 1
    assert _attach(alice, ("garden.pdf", GARDEN)).status_code == 200
    # The same name again replaces it: still one file.
    assert _attach(alice, ("garden.pdf", GARDEN)).status_code == 200
    response = _attach(alice, ("more.pdf", pdf_bytes([("More", "Another file with text in it.")])))
    assert response.status_code == 413 and response.json()["error"] == "quota_exceeded"
    assert "at most 1 files" in response.json()["detail"]
    settings.KNOWHUB_USER_FILES_MAX_COUNT = 10
    settings.KNOWHUB_USER_FILES_MAX_BYTES = len(GARDEN) + 100
    response = _attach(alice, ("more.pdf", pdf_bytes([("More", "Another file with text in it.")])))
    assert response.status_code == 413 and "bytes" in response.json()["detail"]
    assert not Chunk.objects.filter(source_id__endswith="/more.pdf").exists()
    assert IngestedDocument.objects.filter(collection="my-files").count() == 1


def test_delete_removes_the_file_from_search_and_disk(user, local_embedder, media, django_capture_on_commit_callbacks):
    alice = _client(user)
    mine = _attach(alice, ("garden.pdf", GARDEN)).json()["files"][0]
    assert StoredFile.objects.filter(sha256=mine["sha256"]).exists()
    with django_capture_on_commit_callbacks(execute=True):  # the original goes once the delete commits
        assert alice.delete(f"{URL}/{mine['source_id']}").status_code == 204
    assert not Chunk.objects.filter(source_id=mine["source_id"]).exists()
    assert not StoredFile.objects.filter(sha256=mine["sha256"]).exists()
    assert not any(p.is_file() for p in media.rglob("*"))
    assert alice.get(URL).json()["files"] == []
    assert "4417" not in json.dumps(_ask(alice, "What is the allotment gate code?"))


def test_bad_requests_are_clear_and_store_nothing(user, api_client):
    assert api_client.get(URL).status_code in (401, 403)  # signed-in people only
    alice = _client(user)
    response = _attach(alice, ("notes.txt", b"plain text"))
    assert response.status_code == 400 and response.json()["error"] == "unsupported"
    assert alice.post(URL, {}, format="multipart").status_code == 400
    assert not Chunk.objects.exists()


def test_reindex_rebuilds_own_files_as_they_were(user, other_user, local_embedder):
    from ingestion.services.reindexing import reindex

    mine = _attach(_client(user), ("garden.pdf", GARDEN)).json()["files"][0]
    before = {(c.chunk_uid, c.content_hash, c.owner_hash, c.visibility) for c in Chunk.objects.all()}
    run = reindex(types=["documents"], embedder=local_embedder)
    assert run.status == "done" and run.failed == 0, run.errors
    after = {(c.chunk_uid, c.content_hash, c.owner_hash, c.visibility) for c in Chunk.objects.all()}
    assert after == before and run.embedded == 0  # same private chunks, nothing re-embedded
    assert _client(other_user).get(URL).json()["files"] == []
    assert _client(user).get(URL).json()["files"][0]["source_id"] == mine["source_id"]
