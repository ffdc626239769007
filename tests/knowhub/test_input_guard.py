"""Input no view could answer but with a 500 is refused at the door with a reason: a NUL in the
URL path, query string or form, a JSON body nested thousands deep (also a correctly signed
Notion delivery), a body past the size limit, a URL past the length limit."""

from __future__ import annotations

import hashlib
import hmac

import pytest

pytestmark = pytest.mark.django_db

DEEP = b"[" * 5000 + b"]" * 5000


@pytest.mark.parametrize(
    "path",
    ["/rag/documents/abc%00", "/rag/conversations/abc%00", "/rag/query?collection=x%00y", "/rag/facets?q%00=1"],
)
def test_a_nul_in_the_url_is_a_400_with_a_reason(api_client, user, path):
    api_client.force_authenticate(user)
    response = api_client.get(path)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "nul_character" and "NUL" in body["detail"]


def test_a_nul_in_a_page_url_is_a_400_page(client, user):
    client.force_login(user)
    response = client.get("/documents/abc%00/")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")
    assert b"NUL" in response.content


def test_a_nul_in_a_login_form_is_a_400(client):
    # as a browser sends a form: urlencoded (multipart bodies are left to the views' own parsers)
    response = client.post("/login/", "username=alice%00&password=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and b"NUL" in response.content


@pytest.mark.parametrize("url", ["/rag/query", "/rag/ask", "/rag/feedback", "/sessions/start", "/ingest/documents"])
def test_a_json_body_nested_5000_deep_is_a_400(api_client, staff_user, url):
    api_client.force_authenticate(staff_user)
    response = api_client.post(url, data=b'{"query": ' + DEEP + b"}", content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "too_deep"


def test_nesting_within_the_bound_is_parsed(api_client, user, settings):
    api_client.force_authenticate(user)
    body = b'{"query": "x", "filters": ' + b"[" * 10 + b"]" * 10 + b"}"
    response = api_client.post("/rag/query", data=body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid"  # the serializer's own answer


def test_a_correctly_signed_notion_delivery_nested_5000_deep_is_a_400(client, settings):
    from ingestion.models import NotionDelivery

    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = "guard-test-secret"
    body = b'{"page_id": "p1", "properties": {"x": ' + DEEP + b"}}"
    signature = hmac.new(b"guard-test-secret", body, hashlib.sha256).hexdigest()
    for content_type in ("application/json", "text/plain"):
        response = client.post(
            "/notion/ingest", data=body, content_type=content_type, HTTP_X_KNOWHUB_SIGNATURE=f"sha256={signature}"
        )
        assert response.status_code == 400, response.content
        assert response.json()["error"] == "too_deep"
    assert not NotionDelivery.objects.exists()


def test_a_body_past_the_limit_is_a_413(api_client, user, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    api_client.force_authenticate(user)
    response = api_client.post("/rag/query", data=b'{"query": "' + b"a" * 2000 + b'"}', content_type="application/json")
    assert response.status_code == 413 and response.json()["error"] == "too_large"


def test_a_url_past_the_limit_is_a_json_414(api_client, user):
    api_client.force_authenticate(user)
    response = api_client.get("/rag/facets?q=" + "a" * 5000)
    assert response.status_code == 414
    assert response.json()["error"] == "uri_too_long"
