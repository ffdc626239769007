"""Uploads of any size up to the limit, and files that cannot take the server down (issue 25).

Real files built in code (tests/ingestion/bombs.py), the real multipart parser and upload
handlers (files above Django's 2.5 MB in-memory threshold go to disk, where the old bug lived),
the real extraction child process, database and local embedding model.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory

from ingestion.apis import FilesIngestApi
from ingestion.extraction import extract_file
from ingestion.models import IngestedDocument, StoredFile
from ingestion.sources.files import FileExtractError
from rag.models import Chunk
from tests.ingestion.bombs import (
    docx_paragraph_bomb,
    docx_paragraph_bomb_large,
    docx_text_node_bomb,
    large_html_bytes,
    large_pdf_bytes,
)
from tests.ingestion.conftest import search_ids
from tests.ingestion.factories import docx_bytes

URL = "/ingest/files"
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.KNOWHUB_MEDIA_ROOT = tmp_path / "media"
    return settings.KNOWHUB_MEDIA_ROOT


@pytest.fixture
def staff_client(api_client, staff_user):
    api_client.force_authenticate(staff_user)
    return api_client


def _upload(client, *files):
    return client.post(URL, {"files": [SimpleUploadedFile(n, c) for n, c in files]}, format="multipart")


@pytest.mark.django_db
def test_files_above_the_memory_threshold_ingest_and_are_searchable(staff_client, local_embedder, settings):
    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE < 3 * MB  # these go through the on-disk path
    pdf = large_pdf_bytes(3 * MB)
    html = large_html_bytes(20 * MB)
    limit = large_html_bytes(settings.KNOWHUB_INGEST_MAX_FILE_BYTES, fact="The limit page mentions heron ponds.")
    assert len(pdf) > 3 * MB and len(limit) == 25 * MB
    for name, data in (("audit.pdf", pdf), ("cafeteria.html", html), ("limit.html", limit)):
        response = _upload(staff_client, (name, data))
        assert response.status_code == 200, response.content[:500]
        (outcome,) = response.json()["files"]
        assert (outcome["status"], outcome["error"]) == ("indexed", ""), outcome
        assert StoredFile.objects.get(sha256=outcome["sha256"]).size == len(data)
    assert "audit.pdf" in search_ids("how many open issues did the quarterly audit find", embedder=local_embedder)
    assert "cafeteria.html" in search_ids("lentil soup thursdays", embedder=local_embedder)
    assert "limit.html" in search_ids("heron ponds", embedder=local_embedder)


@pytest.mark.django_db
def test_one_byte_over_the_limit_is_413_json_naming_the_limit(staff_client, settings, media):
    data = large_html_bytes(settings.KNOWHUB_INGEST_MAX_FILE_BYTES + 1)
    response = _upload(staff_client, ("big.html", data))
    assert response.status_code == 413
    body = response.json()
    assert body["error"] == "too_large"
    assert str(settings.KNOWHUB_INGEST_MAX_FILE_BYTES) in body["detail"] and "25 MB" in body["detail"]
    assert not StoredFile.objects.exists() and not Chunk.objects.exists()
    assert not media.exists() or not any(media.rglob("*"))


@pytest.mark.django_db
def test_without_content_length_the_body_is_not_read_past_the_limit(staff_user, settings):
    """A chunked request (no Content-Length) is never read into a file: refused, nothing stored."""
    factory = RequestFactory()
    data = large_html_bytes(settings.KNOWHUB_INGEST_MAX_FILE_BYTES + 1)
    request = factory.post(URL, {"files": SimpleUploadedFile("big.html", data)})
    del request.META["CONTENT_LENGTH"]
    request.META["HTTP_TRANSFER_ENCODING"] = "chunked"
    request.user = staff_user
    request._dont_enforce_csrf_checks = True
    from rest_framework.test import force_authenticate

    force_authenticate(request, user=staff_user)
    response = FilesIngestApi.as_view()(request)
    assert response.status_code == 411 and response.data["error"] == "length_required", response.data
    assert not StoredFile.objects.exists() and not Chunk.objects.exists()


@pytest.mark.django_db
def test_docx_bombs_are_refused_per_file_and_the_batch_goes_on(staff_client, local_embedder, media):
    good = docx_bytes([("h1", "Parking"), ("p", "Visitors park on level minus two.")])
    response = _upload(
        staff_client,
        ("text-node.docx", docx_text_node_bomb()),
        ("paragraphs.docx", docx_paragraph_bomb()),
        ("paragraphs-large.docx", docx_paragraph_bomb_large()),
        ("parking.docx", good),
    )
    assert response.status_code == 200, response.content[:500]
    files = {f["name"]: f for f in response.json()["files"]}
    assert files["parking.docx"]["status"] == "indexed"
    for name in ("text-node.docx", "paragraphs.docx", "paragraphs-large.docx"):
        assert files[name]["status"] == "failed"
        assert "decompression bomb" in files[name]["error"], files[name]
        assert not StoredFile.objects.filter(sha256=files[name]["sha256"]).exists()
        assert not Chunk.objects.filter(source_id=name).exists()
        assert not IngestedDocument.objects.filter(source_id=name).exists()
    assert response.json()["failed"] == 3


def test_the_wall_clock_bound_stops_a_slow_file(settings, tmp_path):
    settings.KNOWHUB_EXTRACT_MAX_ZIP_RATIO = 1e9  # let the bomb past the zip check: the clock must stop it
    settings.KNOWHUB_EXTRACT_TIMEOUT_S = 3
    path = tmp_path / "slow.docx"
    path.write_bytes(docx_paragraph_bomb())
    with pytest.raises(FileExtractError, match="longer than 3 s"):
        extract_file(path, name="slow.docx")


def test_the_memory_bound_stops_a_hungry_file(settings, tmp_path):
    settings.KNOWHUB_EXTRACT_MAX_ZIP_RATIO = 1e9  # past the zip check: the memory limit must stop it
    settings.KNOWHUB_EXTRACT_MEMORY_BYTES = 400 * MB
    settings.KNOWHUB_EXTRACT_TIMEOUT_S = 120
    path = tmp_path / "hungry.docx"
    path.write_bytes(docx_paragraph_bomb_large())
    with pytest.raises(FileExtractError, match="more than 400 MB"):
        extract_file(path, name="hungry.docx")


def test_a_text_node_too_long_is_a_clear_error_not_a_crash(settings, tmp_path):
    settings.KNOWHUB_EXTRACT_MAX_ZIP_RATIO = 1e9
    settings.KNOWHUB_EXTRACT_MAX_UNZIPPED_BYTES = 10**10
    path = tmp_path / "node.docx"
    path.write_bytes(docx_text_node_bomb())
    with pytest.raises(FileExtractError, match="DOCX"):
        extract_file(path, name="node.docx")


# --- the production server (gunicorn), as a client without Content-Length meets it ---------------


@pytest.fixture
def gunicorn(transactional_db, tmp_path, settings):
    """gunicorn serving knowhub on a loopback port against this test's database."""
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    from django.db import connection

    db = connection.settings_dict
    port = 8141
    socket_dir = (db.get("OPTIONS") or {}).get("host")  # the embedded server listens on a socket
    where = f"@/{db['NAME']}?host={socket_dir}" if socket_dir else f"@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env = {
        **os.environ, "DATABASE_URL": f"postgresql://{db['USER']}:{db['PASSWORD']}{where}",
        "KNOWHUB_MEDIA_ROOT": str(tmp_path / "media"), "OMP_NUM_THREADS": "1",
    }  # fmt: skip
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "knowhub.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--threads", "2", "--timeout", "120"],
        cwd=str(settings.BASE_DIR), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                pytest.fail(f"gunicorn did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
        yield port
    finally:
        proc.terminate()
        proc.wait(30)


def _raw_upload(port: int, token: str, data: bytes, *, chunked: bool) -> tuple[int, dict]:
    import http.client
    import json

    boundary = "knowhub-boundary-7"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="big.html"\r\n'
            "Content-Type: text/html\r\n\r\n").encode()  # fmt: skip
    body = head + data + f"\r\n--{boundary}--\r\n".encode()
    headers = {"Authorization": f"Token {token}", "Content-Type": f"multipart/form-data; boundary={boundary}",
               "X-Forwarded-Proto": "https"}  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    if chunked:
        pieces = (body[i : i + 65536] for i in range(0, len(body), 65536))
        conn.request("POST", URL, body=pieces, headers=headers, encode_chunked=True)
    else:
        conn.request("POST", URL, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def test_gunicorn_refuses_oversized_and_unmeasured_uploads_with_json(gunicorn, staff_user, settings):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=staff_user).key
    over = large_html_bytes(settings.KNOWHUB_INGEST_MAX_FILE_BYTES + 1)
    status, body = _raw_upload(gunicorn, token, over, chunked=True)
    assert status == 411 and body["error"] == "length_required", body
    status, body = _raw_upload(gunicorn, token, over, chunked=False)
    assert status == 413 and "25 MB" in body["detail"], body
    assert not StoredFile.objects.exists() and not Chunk.objects.exists()


@pytest.mark.django_db
def test_an_upload_with_more_text_than_the_limit_says_so(staff_client, settings):
    settings.KNOWHUB_INGEST_MAX_CHARS = 5000
    page = ("<html><body><main>" + "<p>Ordinary words in a long report, one paragraph after another.</p>" * 200
            + "</main></body></html>").encode()  # fmt: skip
    response = _upload(staff_client, ("long.html", page))
    assert response.status_code == 200
    (outcome,) = response.json()["files"]
    assert outcome["status"] == "failed" and "KNOWHUB_INGEST_MAX_CHARS" in outcome["error"], outcome
    assert not Chunk.objects.exists() and not StoredFile.objects.exists()
