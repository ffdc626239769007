"""PDF / DOCX / HTML / PPTX ingestion: real files built in the test, the real parsers, the real
database and local embedding model. A user notices: page numbers and headings on hits, a clear
reason for each file that cannot be read while the others go in, and a download that only the
people who may see the document get."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion import services
from ingestion.models import StoredFile
from ingestion.sources.files import FileExtractError, extract, file_to_document
from rag.acl import Scope
from rag.models import Chunk, Project
from rag.search import chunk_search
from tests.ingestion.factories import (
    HTML,
    docx_bytes,
    pdf_bytes,
    pptx_bytes,
    scanned_pdf_bytes,
)

URL = "/ingest/files"

HANDBOOK = [
    ("Introduction", "Welcome to ACME Robotics.\nThis handbook explains how we work."),
    (None, "Our office opens at nine and the kitchen is shared by everyone."),
    ("Holidays", "Each employee gets twenty-five days of paid leave per year.\nCarry-over is limited to five days."),
    ("Expenses", "Travel is booked through the portal; receipts are due within thirty days."),
]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.KNOWHUB_MEDIA_ROOT = tmp_path / "media"
    return settings.KNOWHUB_MEDIA_ROOT


# --- parsers --------------------------------------------------------------------------------------


def test_pdf_pages_and_outline_headings():
    doc = file_to_document(data=pdf_bytes(HANDBOOK), name="handbook.pdf", source_id="handbook.pdf")
    pages = {u.metadata["page"]: u for u in doc.units}
    assert sorted(pages) == [1, 2, 3, 4]
    assert pages[3].breadcrumb == "Staff handbook > Holidays > p. 3"
    assert pages[2].breadcrumb == "Staff handbook > Introduction > p. 2"  # still under the last heading
    assert "twenty-five days" in pages[3].content
    assert pages[3].metadata["file"]["name"] == "handbook.pdf"
    assert len(pages[3].metadata["file"]["sha256"]) == 64 and pages[3].metadata["pages"] == 4


def test_docx_html_pptx_keep_headings():
    docx = extract(docx_bytes([("h1", "Policies"), ("p", "We work remotely."), ("h2", "Travel"),
                               ("li", "Book trains"), ("p", "Flights need approval.")], title="Handbook"),
                   name="a.docx")  # fmt: skip
    assert docx.title == "Handbook"
    assert [(s.path, s.text) for s in docx.sections] == [
        (["Policies"], "We work remotely."), (["Policies", "Travel"], "- Book trains\nFlights need approval.")
    ]
    html = extract(HTML, name="guide.html")
    assert html.title == "Onboarding guide"
    text = " ".join(s.text for s in html.sections)
    assert "VPN client" in text and "var x" not in text and "Home | About" not in text and "ACME" not in text
    assert ["Onboarding guide", "Expenses"] in [s.path for s in html.sections]
    deck = file_to_document(data=pptx_bytes([("Q3 results", "Revenue grew 12%"), ("Next steps", "Hire two engineers")]),
                            name="q3.pptx", source_id="q3.pptx")  # fmt: skip
    assert [(u.metadata["slide"], u.breadcrumb) for u in deck.units] == [
        (1, "Q3 results > slide 1"), (2, "Q3 results > Next steps > slide 2")
    ]


@pytest.mark.parametrize(
    ("data", "name", "reason"),
    [
        (pdf_bytes([("Secret", "The launch date is in May.")], password="hunter2"), "s.pdf", "encrypted"),
        (b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage", "c.pdf", "corrupt"),
        (b"", "e.pdf", "empty"),
        (scanned_pdf_bytes(), "scan.pdf", "no text layer"),
        (b"PK\x03\x04 not really a zip", "c.docx", "corrupt"),
        (b"<html><body><script>x()</script></body></html>", "blank.html", "no text"),
    ],
)  # fmt: skip
def test_unreadable_files_say_why(data, name, reason):
    with pytest.raises(FileExtractError, match=reason):
        extract(data, name=name)


# --- upload API -----------------------------------------------------------------------------------


def _upload(client, *files, **fields):
    data = {"files": [SimpleUploadedFile(name, content) for name, content in files], **fields}
    return client.post(URL, data, format="multipart")


@pytest.fixture
def staff_client(api_client, staff_user):
    api_client.force_authenticate(staff_user)
    return api_client


@pytest.mark.django_db
def test_upload_batch_goes_on_past_bad_files(staff_client, local_embedder, media):
    handbook = pdf_bytes(HANDBOOK)
    response = _upload(
        staff_client,
        ("handbook.pdf", handbook),
        ("locked.pdf", pdf_bytes([("Secret", "The launch date is in May.")], password="hunter2")),
        ("scan.pdf", scanned_pdf_bytes()),
        ("guide.html", HTML),
        ("policies.docx", docx_bytes([("h1", "Policies"), ("p", "Remote work needs a manager's approval.")])),
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    status = {f["name"]: (f["status"], f["error"]) for f in body["files"]}
    assert status["handbook.pdf"] == ("indexed", "")
    assert status["guide.html"][0] == status["policies.docx"][0] == "indexed"
    assert status["locked.pdf"][0] == "failed" and "encrypted" in status["locked.pdf"][1]
    assert status["scan.pdf"][0] == "failed" and "no text layer" in status["scan.pdf"][1]
    assert body["failed"] == 2 and body["created"] >= 6

    hits = chunk_search(query="how many days of paid leave do employees get", scope=Scope.everything(), top_k=3).hits
    assert hits[0].source_id == "handbook.pdf"
    assert hits[0].metadata["page"] == 3 and hits[0].breadcrumb.endswith("Holidays > p. 3")
    file_meta = hits[0].metadata["file"]
    assert hits[0].url == file_meta["url"] == f"/ingest/files/{file_meta['sha256']}"
    # The original is kept (outside the repo) and downloadable byte for byte.
    download = staff_client.get(file_meta["url"])
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == handbook
    assert "handbook.pdf" in download["Content-Disposition"]
    assert not StoredFile.objects.filter(name="locked.pdf").exists()


@pytest.mark.django_db
def test_bad_requests_store_nothing(staff_client, user, settings):
    from rest_framework.test import APIClient

    member = APIClient()
    member.force_authenticate(user)
    assert _upload(member, ("a.html", HTML)).status_code == 403  # staff only
    assert staff_client.post(URL, {}, format="multipart").status_code == 400
    response = _upload(staff_client, ("a.html", HTML), ("notes.exe", b"MZ"))
    assert response.status_code == 400 and "notes.exe" in response.json()["detail"]
    response = _upload(staff_client, ("a.html", HTML), visibility="restricted", project="nope")
    assert response.status_code == 400
    settings.KNOWHUB_INGEST_MAX_FILE_BYTES = 100
    response = _upload(staff_client, ("a.html", HTML))
    assert response.status_code == 413 and "a.html" in response.json()["detail"]
    assert response.json()["error"] == "too_large"
    assert Chunk.objects.count() == 0 and StoredFile.objects.count() == 0


@pytest.mark.django_db
def test_restricted_file_download_follows_the_acl(staff_client, user, other_user, local_embedder):
    from rest_framework.test import APIClient

    project = Project.objects.create(slug="board", name="Board")
    project.members.add(user)
    response = _upload(staff_client,
                       ("minutes.pdf", pdf_bytes([("Board minutes", "The acquisition of Beta Corp was approved.")])),
                       visibility="restricted", project="board")  # fmt: skip
    assert response.status_code == 200, response.json()
    url = response.json()["files"][0]["url"]
    api_client = APIClient()
    assert api_client.get(url).status_code in (401, 403)  # anonymous
    api_client.force_authenticate(other_user)
    assert api_client.get(url).status_code == 404  # not a member: as if it did not exist
    assert not chunk_search(query="acquisition Beta Corp", scope=Scope.for_user(other_user)).hits
    api_client.force_authenticate(user)
    assert api_client.get(url).status_code == 200
    uid = Chunk.objects.get(source_id="minutes.pdf").chunk_uid
    assert services.chunk_file(chunk_uid=uid, scope=Scope.for_user(user))["name"] == "minutes.pdf"
    assert services.chunk_file(chunk_uid=uid, scope=Scope.for_user(other_user)) is None


@pytest.mark.django_db
def test_reuploading_a_new_version_replaces_it(staff_client, local_embedder):
    _upload(staff_client, ("faq.html", HTML))
    v2 = HTML.replace(b"thirty days", b"sixty days")
    body = _upload(staff_client, ("faq.html", v2)).json()
    assert body["files"][0]["status"] == "indexed"
    contents = " ".join(
        Chunk.objects.filter(source_id="faq.html", deleted_at__isnull=True).values_list("content", flat=True)
    )
    assert "sixty days" in contents and "thirty days" not in contents


# --- folders --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_folder_of_files_with_a_broken_one(tmp_path, local_embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "handbook.pdf").write_bytes(pdf_bytes(HANDBOOK))
    (folder / "guide.html").write_bytes(HTML)
    (folder / "deck.pptx").write_bytes(pptx_bytes([("Roadmap", "Ship the gripper arm in spring")]))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 truncated")
    run = services.ingest_document_paths(paths=[folder], collection="handbooks")
    assert run.failed == 1 and "broken.pdf" in run.errors[0]["error"]
    assert set(Chunk.objects.filter(collection="handbooks").values_list("source_id", flat=True)) == {
        "handbook.pdf", "guide.html", "deck.pptx"
    }
    again = services.ingest_document_paths(paths=[folder], collection="handbooks")
    assert again.skipped == 3 and again.embedded == 0  # unchanged files are not re-read
    assert StoredFile.objects.filter(name="deck.pptx").exists()
