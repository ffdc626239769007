"""POST /ingest/documents and manage.py ingest_documents: notes and transcripts with metadata."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from ingestion.models import IngestedDocument
from ingestion.sources.documents import qmsum_to_document
from rag.acl import Scope
from rag.models import Chunk
from rag.search import SearchFilters, chunk_search
from tests.conftest import shared_data

pytestmark = pytest.mark.django_db

URL = "/ingest/documents"

NOTE = {
    "id": "ic-2025-03-14", "title": "Investment committee — Fund III", "format": "markdown",
    "date": "2025-03-14", "entity": "Fund III", "people": ["Ana", "Ben"], "tags": ["ic", "pipeline"],
    "text": "# Decisions\n\nWe approved the follow-on in Acme at a 12M pre-money valuation.\n\n"
            "# Risks\n\nCustomer concentration: the top two customers are 60% of revenue.",
}  # fmt: skip
TRANSCRIPT = {
    "id": "standup-0412", "title": "Stand-up 12 April", "date": "2025-04-12", "entity": "Client Zeta",
    "turns": [
        {"speaker": "Ana", "text": "The migration to the new billing API is blocked on the sandbox keys."},
        {"speaker": "Ben", "text": "I will ask Zeta's ops team for the keys today."},
        {"speaker": "Ana", "text": "Then we can demo the invoices on Friday."},
    ],
}  # fmt: skip


def test_staff_posts_a_note_and_a_transcript_and_finds_them_with_filters(api_client, staff_user, local_embedder):
    api_client.force_authenticate(staff_user)
    response = api_client.post(URL, {"documents": [NOTE, TRANSCRIPT]}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "done" and body["failed"] == 0 and body["created"] >= 3
    decision = Chunk.objects.get(source_id="ic-2025-03-14", content__contains="follow-on")
    assert decision.metadata["entity"] == "Fund III" and decision.metadata["people"] == ["Ana", "Ben"]
    assert decision.date.isoformat() == "2025-03-14" and decision.collection == "documents"
    turns = Chunk.objects.filter(source_id="standup-0412", collection="meetings")
    assert turns.exists() and all(c.content.startswith("Ana:") or "\nBen:" in c.content for c in turns)
    result = chunk_search(
        query="who is getting the sandbox keys", scope=Scope.everything(), embedder=local_embedder,
        filters=SearchFilters(entity="Client Zeta"),
    )  # fmt: skip
    assert result.hits and result.hits[0].source_id == "standup-0412" and "Ben:" in result.hits[0].content
    assert IngestedDocument.objects.count() == 2

    again = api_client.post(URL, {"documents": [NOTE, TRANSCRIPT]}, format="json").json()
    assert (again["created"], again["updated"], again["deleted"], again["embedded"]) == (0, 0, 0, 0)


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"documents": [NOTE, {**TRANSCRIPT, "date": "12/04/2025"}]}, "documents[1]"),
        ({"documents": [{**NOTE, "surprise": 1}]}, "unknown field"),
        ({"documents": [NOTE, NOTE]}, "appears twice"),
        ({"documents": []}, "documents"),
        ({"documents": [NOTE], "extra": True}, "extra"),
        ({"documents": [NOTE], "visibility": "restricted"}, "project"),
        ({"documents": [NOTE], "project": "nope", "visibility": "restricted"}, "unknown project"),
    ],
)  # fmt: skip
def test_bad_documents_are_400_and_nothing_is_written(api_client, staff_user, body, fragment):
    api_client.force_authenticate(staff_user)
    response = api_client.post(URL, body, format="json")
    # a project that does not exist is a 404 (a name, like any identifier); the rest 400
    assert response.status_code == (404 if fragment == "unknown project" else 400), response.content
    assert fragment in json.dumps(response.json())
    assert not Chunk.objects.exists() and not IngestedDocument.objects.exists()


@pytest.mark.parametrize(
    "raw, fragment",
    [
        # JSON allows both escapes; no PostgreSQL text column can store the result.
        (b'{"documents": [{"id": "a", "text": "fine"}, {"id": "b\\u0000", "text": "x"}]}', "documents[1].id"),
        (b'{"documents": [{"id": "a", "text": "fine", "entity": "G\\ud800"}]}', "unpaired surrogate"),
        (b'{"documents": [{"id": "a", "turns": [{"speaker": "A", "text": "\\u0000"}]}]}', "NUL"),
    ],
)  # fmt: skip
def test_unstorable_strings_are_400_and_nothing_is_written(api_client, staff_user, raw, fragment):
    api_client.force_authenticate(staff_user)
    response = api_client.post(URL, data=raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "parse_error" and fragment in response.json()["detail"]
    assert not Chunk.objects.exists() and not IngestedDocument.objects.exists()
    from ingestion.models import IngestRun

    assert not IngestRun.objects.exists()


def test_a_failure_named_with_unstorable_text_is_still_recorded(staff_user):
    from ingestion.models import IngestRun
    from ingestion.services.core import RunRecorder

    run = IngestRun.objects.create(source="documents")
    RunRecorder(run).fail("notes/b\x00\ud800d", "DataError: NUL in \x00 text")
    run.refresh_from_db()
    assert run.failed == 1 and run.errors == [{"source": "notes/b\\0\\ud800d", "error": "DataError: NUL in \\0 text"}]


def test_malformed_json_is_400(api_client, staff_user):
    api_client.force_authenticate(staff_user)
    response = api_client.post(URL, data=b"{nope", content_type="application/json")
    assert response.status_code == 400


def test_non_staff_cannot_ingest(api_client, user):
    assert api_client.post(URL, {"documents": [NOTE]}, format="json").status_code in (401, 403)
    api_client.force_authenticate(user)
    assert api_client.post(URL, {"documents": [NOTE]}, format="json").status_code == 403
    assert not Chunk.objects.exists()


def test_private_documents_are_owned_by_the_poster(api_client, staff_user, user, use_hashing_embedder, monkeypatch):
    # hashing embedder: about ACL fields.
    api_client.force_authenticate(staff_user)
    response = api_client.post(URL, {"documents": [NOTE], "visibility": "private"}, format="json")
    assert response.status_code == 200
    from rag.acl import user_hash

    assert set(Chunk.objects.values_list("visibility", "owner_hash")) == {("private", user_hash(staff_user.pk))}


def test_command_on_files_is_incremental(tmp_path, capsys, use_hashing_embedder, monkeypatch):
    # hashing embedder: about counts.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "board.md").write_text("# Board meeting\n\nWe hired a CFO.\n")
    (tmp_path / "standup.json").write_text(json.dumps(TRANSCRIPT))
    (tmp_path / "budget.xlsx").write_bytes(b"PK\x03\x04")  # not a supported type
    call_command("ingest_documents", str(tmp_path), "--entity", "Acme", "--tags", "board,hiring", "--json")
    first = json.loads(capsys.readouterr().out)
    assert first["sources"] == 3 and first["failed"] == 1 and "unsupported" in first["errors"][0]["error"]
    board = Chunk.objects.get(source_id="notes/board")
    assert board.metadata["entity"] == "Acme" and board.metadata["tags"] == ["board", "hiring"]
    assert board.title == "Board meeting"
    call_command("ingest_documents", str(tmp_path), "--entity", "Acme", "--tags", "board,hiring", "--json")
    second = json.loads(capsys.readouterr().out)
    assert (second["created"], second["embedded"], second["skipped"]) == (0, 0, 2)
    (tmp_path / "notes" / "board.md").unlink()
    call_command("ingest_documents", str(tmp_path), "--entity", "Acme", "--tags", "board,hiring", "--json")
    third = json.loads(capsys.readouterr().out)
    assert third["removed"] == 1 and not Chunk.objects.filter(source_id="notes/board").exists()


def test_one_real_qmsum_meeting_keeps_speakers(tmp_path, use_hashing_embedder, monkeypatch):
    # hashing embedder: checks the real file's shape, not retrieval.
    source = shared_data("qmsum-val") / "Bed002.json"
    (tmp_path / "Bed002.json").write_bytes(source.read_bytes())
    call_command("ingest_documents", str(tmp_path), "--json")
    chunks = Chunk.objects.filter(collection="meetings", source_id="Bed002")
    assert chunks.count() > 10
    assert all(":" in c.content.split("\n", 1)[0] for c in chunks)  # every chunk starts on a turn


def test_qmsum_tokenisation_reads_as_text(tmp_path):
    path = tmp_path / "Bro011.json"
    said = 'we \'re overloading the term " feature " {disfmarker} again , are n\'t we ?'
    path.write_text(json.dumps({"meeting_transcripts": [{"speaker": "Professor A", "content": said}]}))
    (unit,) = qmsum_to_document(path).units
    assert unit.content == 'Professor A: we\'re overloading the term "feature" again, aren\'t we?'
