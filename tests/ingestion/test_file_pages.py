"""Opening the original everywhere, titles a person recognises, and the admin upload form.

Real files, the real extraction child, database and local embedding model; pages fetched with
Django's client as a signed-in person (the admin form with CSRF checks on).
"""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from ingestion.sources.files import extract
from rag.models import Chunk
from tests.ingestion.bombs import large_pdf_bytes
from tests.ingestion.factories import docx_bytes, pdf_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.KNOWHUB_MEDIA_ROOT = tmp_path / "media"


def test_titles_come_from_the_file_not_the_tool_that_wrote_it():
    # "untitled" in the metadata: the first bookmark names the PDF.
    assert extract(pdf_bytes([("Quarterly review", "Sales rose in every region.")], title="untitled"),
                   name="q.pdf").title == "Quarterly review"  # fmt: skip
    # No bookmark either: a first line short enough to be a heading.
    assert extract(pdf_bytes([(None, "Incident report\nThe database failed over at noon.")], title="untitled"),
                   name="r.pdf").title == "Incident report"  # fmt: skip
    memo = pdf_bytes([(None, "This memo explains the new parking rules.")], title="Microsoft Word - memo.docx")
    assert extract(memo, name="m.pdf").title == ""
    # A DOCX without a title property: its first heading.
    docx = docx_bytes([("h1", "Incident review"), ("p", "The outage lasted forty minutes.")])
    assert extract(docx, name="incident.docx").title == "Incident review"


def _login(django_user_model, name: str, *, staff: bool = False) -> tuple[Client, object]:
    user = django_user_model.objects.create_user(username=name, password="pw-" + name + "-123", is_staff=staff,
                                                 is_superuser=staff)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client, user


def _csrf(client: Client, url: str) -> str:
    page = client.get(url, secure=True)
    assert page.status_code == 200, page.status_code
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)


def test_admin_upload_form_indexes_files_with_the_chosen_access(django_user_model, local_embedder):
    staff, _ = _login(django_user_model, "editor", staff=True)
    changelist = staff.get("/admin/ingestion/ingesteddocument/", secure=True).content.decode()
    assert "Upload files" in changelist
    url = "/admin/ingestion/ingesteddocument/upload/"
    token = _csrf(staff, url)
    pdf = large_pdf_bytes(3 * 1024 * 1024)  # above the in-memory threshold: the on-disk path
    response = staff.post(url, {
        "csrfmiddlewaretoken": token, "collection": "reports", "visibility": "private",
        "files": [SimpleUploadedFile("audit.pdf", pdf), SimpleUploadedFile("notes.txt", b"not a file type")],
    }, secure=True, headers={"referer": "https://testserver" + url})  # fmt: skip
    assert response.status_code == 200
    assert "expected one of" in response.content.decode()  # the whole form refused: nothing stored
    assert not Chunk.objects.exists()
    response = staff.post(url, {
        "csrfmiddlewaretoken": token, "collection": "reports", "visibility": "private",
        "files": [SimpleUploadedFile("audit.pdf", pdf)],
    }, secure=True, headers={"referer": "https://testserver" + url})  # fmt: skip
    body = response.content.decode()
    assert response.status_code == 200 and "1 of 1 file(s) indexed" in body, body[:3000]
    chunk = Chunk.objects.get(source_id="audit.pdf")
    assert (chunk.collection, chunk.visibility, chunk.title) == ("reports", "private", "Audit report")
    assert chunk.breadcrumb == "Audit report > p. 1"


def test_admin_upload_form_refuses_a_post_without_csrf(django_user_model):
    staff, _ = _login(django_user_model, "editor2", staff=True)
    response = staff.post("/admin/ingestion/ingesteddocument/upload/",
                          {"files": [SimpleUploadedFile("a.pdf", pdf_bytes([("A", "Alpha text here.")]))]},
                          secure=True)  # fmt: skip
    assert response.status_code == 403 and not Chunk.objects.exists()


def test_document_page_offers_the_original_to_whoever_may_see_it(django_user_model, local_embedder, api_client):
    staff, staff_user = _login(django_user_model, "boss", staff=True)
    api_client.force_authenticate(staff_user)
    data = pdf_bytes([("Holidays", "Each employee gets twenty-five days of paid leave.")], title="untitled")
    response = api_client.post("/ingest/files", {"files": [SimpleUploadedFile("leave.pdf", data)],
                                                 "visibility": "private"}, format="multipart")  # fmt: skip
    assert response.status_code == 200, response.json()
    (outcome,) = response.json()["files"]
    chunk = Chunk.objects.get(source_id="leave.pdf")
    assert chunk.title == "Holidays" and chunk.breadcrumb == "Holidays > p. 1"  # not "untitled > p. 1"
    page = staff.get(f"/documents/{chunk.chunk_uid}/", secure=True).content.decode()
    assert f'href="{outcome["url"]}"' in page and "Download the original (leave.pdf" in page
    assert staff.get(outcome["url"], secure=True).status_code == 200
    other, _ = _login(django_user_model, "stranger")
    assert other.get(f"/documents/{chunk.chunk_uid}/", secure=True).status_code == 404
    assert other.get(outcome["url"], secure=True).status_code == 404
