"""CORS for browser clients on other origins: none by default; the configured origins may call
the API with a token in the Authorization header, never with the user's cookies."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

ORIGIN = "https://wiki.example.com"


def _preflight(client):
    return client.options(
        "/rag/query", HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )  # fmt: skip


def test_no_origin_is_allowed_by_default(client):
    response = _preflight(client)
    assert "access-control-allow-origin" not in response.headers


def test_a_configured_origin_calls_the_api_with_a_token_and_without_credentials(client, settings, user):
    settings.CORS_ALLOWED_ORIGINS = [ORIGIN]
    response = _preflight(client)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "authorization" in response.headers["access-control-allow-headers"]
    assert "access-control-allow-credentials" not in response.headers

    key = Token.objects.create(user=user).key
    answer = client.get("/rag/conversations", HTTP_ORIGIN=ORIGIN, HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert "access-control-allow-credentials" not in answer.headers

    other = _preflight_from(client, "https://evil.example.net")
    assert "access-control-allow-origin" not in other.headers


def _preflight_from(client, origin):
    return client.options("/rag/query", HTTP_ORIGIN=origin, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
