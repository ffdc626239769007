"""OCR of scanned PDF pages and PNG/JPEG images with the real Tesseract (Debian's tesseract-ocr).

Scans are drawn in the test (text rendered to an image, no text layer) and go through the real
upload API, extraction child, database, local embedding model and extractive answerer.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from ingestion.sources import ocr
from ingestion.sources.files import FileExtractError, extract
from rag.models import Chunk
from tests.ingestion.conftest import search_ids
from tests.ingestion.factories import scanned_text_pdf_bytes, text_image

MISSING = ocr.unavailable()
needs_ocr = pytest.mark.skipif(MISSING is not None, reason=f"OCR not available: {MISSING}")

MEMO = ["Facilities memo", "The bicycle cellar is locked at nine in the evening.",
        "Ask the front desk for the cellar key."]  # fmt: skip
MIXED = scanned_text_pdf_bytes(["Expense policy\nReceipts are due within thirty days of travel.", MEMO])


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.KNOWHUB_MEDIA_ROOT = tmp_path / "media"


@needs_ocr
def test_pages_with_a_text_layer_keep_it_and_scanned_pages_are_read():
    extracted = extract(MIXED, name="mixed.pdf")
    by_page = {s.page: s for s in extracted.sections}
    assert by_page[1].ocr is False and by_page[1].text.startswith("Expense policy")
    assert by_page[2].ocr is True and "bicycle cellar is locked at nine" in by_page[2].text
    assert extracted.ocr_pages == [2]


def test_without_ocr_a_scanned_pdf_says_why(settings):
    from ingestion.sources.files import Bounds

    with pytest.raises(FileExtractError, match="no text layer .* OCR is switched off"):
        extract(scanned_text_pdf_bytes([MEMO]), name="scan.pdf", bounds=Bounds(ocr=False))


@needs_ocr
@pytest.mark.django_db
def test_a_scanned_pdf_is_answerable_its_source_says_ocr_and_the_original_opens(
    api_client, client, staff_user, local_embedder
):
    api_client.force_authenticate(staff_user)
    response = api_client.post("/ingest/files", {"files": [SimpleUploadedFile("memo.pdf", MIXED)]},
                               format="multipart")  # fmt: skip
    assert response.status_code == 200, response.json()
    (outcome,) = response.json()["files"]
    assert outcome["status"] == "indexed", outcome
    page2 = Chunk.objects.get(source_id="memo.pdf", unit_anchor="p-2")
    assert page2.metadata["ocr"] is True and page2.breadcrumb.endswith("p. 2")
    assert "ocr" not in Chunk.objects.get(source_id="memo.pdf", unit_anchor="p-1").metadata

    client.force_login(staff_user)
    body = client.post("/rag/ask", data=json.dumps({"query": "When is the bicycle cellar locked?"}),
                       content_type="application/json").json()  # fmt: skip
    assert "nine" in body["answer"], body["answer"]
    cited = {c["n"] for c in body["citations"]}
    memo = next(s for s in body["sources"] if s["source_id"] == "memo.pdf")
    assert memo["n"] in cited and memo["ocr"] is True and memo["url"] == outcome["url"]
    page = client.get(f"/documents/{memo['chunk_uid']}/", secure=True).content.decode()
    assert "text read by OCR" in page and f'href="{outcome["url"]}"' in page
    assert client.get(outcome["url"], secure=True).status_code == 200


@needs_ocr
@pytest.mark.django_db
def test_png_and_jpeg_uploads_are_read_by_ocr(api_client, staff_user, local_embedder):
    api_client.force_authenticate(staff_user)
    files = [
        SimpleUploadedFile("whiteboard.png", text_image(["Whiteboard", "The launch moves to the third of May."])),
        SimpleUploadedFile("receipt.jpg", text_image(["Receipt", "Two espressos cost five euros."], fmt="JPEG")),
        SimpleUploadedFile("broken.png", b"\x89PNG\r\n\x1a\n not really"),
    ]
    response = api_client.post("/ingest/files", {"files": files}, format="multipart")
    assert response.status_code == 200, response.json()
    status = {f["name"]: (f["status"], f["error"]) for f in response.json()["files"]}
    assert status["whiteboard.png"] == ("indexed", "") and status["receipt.jpg"] == ("indexed", "")
    assert status["broken.png"][0] == "failed" and "image" in status["broken.png"][1]
    assert "whiteboard.png" in search_ids("when does the launch move", embedder=local_embedder)
    assert Chunk.objects.get(source_id="receipt.jpg").metadata["ocr"] is True
