"""Brute force slowed: wrong passwords lock an account or an address out of all three login
pages for a while, wrong API credentials from one address are answered 429 with Retry-After,
and authenticated API rates are limited by a setting.

Each test uses addresses of its own (REMOTE_ADDR): the API counters live in Redis when there is
one, and must not carry over from another test or run.
"""

from __future__ import annotations

import random

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db

LOGIN_PAGES = ["/login/", "/admin/login/", "/learn/login/"]


def fresh_ip() -> str:
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


def sign_in(client, url, username, password, ip):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.mark.parametrize("url", LOGIN_PAGES)
def test_wrong_passwords_for_one_account_lock_it_out_even_from_other_addresses(client, staff_user, url):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = sign_in(client, url, "staff", "not-the-password", fresh_ip())
        assert response.status_code == 200  # the form again, with its error
    response = sign_in(client, url, "staff", "not-the-password", fresh_ip())
    assert response.status_code == 429
    # the right password, from yet another address, is refused too, with a clear message
    response = sign_in(client, url, "staff", "pw-staff-123", fresh_ip())
    assert response.status_code == 429 and int(response["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
    page = response.content.decode()
    assert "Too many failed sign-in attempts" in page and "locked for 15 minutes" in page
    assert "_auth_user_id" not in client.session


def test_wrong_passwords_from_one_address_lock_that_address_out(client, user, staff_user):
    ip = fresh_ip()
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "/login/", f"guess-{n}", "whatever", ip)
    assert sign_in(client, "/learn/login/", "alice", "pw-alice-123", ip).status_code == 429
    # the account itself is not locked: from another address it signs in
    response = sign_in(client, "/login/", "alice", "pw-alice-123", fresh_ip())
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(user.pk)


def test_a_right_password_before_the_limit_resets_the_count(client, user):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "/login/", "alice", "wrong", fresh_ip())
    assert sign_in(client, "/login/", "alice", "pw-alice-123", fresh_ip()).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(client, "/login/", "alice", "wrong", fresh_ip())
    assert sign_in(client, "/login/", "alice", "pw-alice-123", fresh_ip()).status_code == 302


def test_invalid_api_tokens_from_one_address_are_throttled_with_retry_after(api_client, user):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user).key
    ip = fresh_ip()
    for _ in range(settings.KNOWHUB_AUTH_FAILURE_LIMIT):
        response = api_client.get("/rag/facets", HTTP_AUTHORIZATION="Token not-a-token", REMOTE_ADDR=ip)
        assert response.status_code == 401
    response = api_client.get("/rag/facets", HTTP_AUTHORIZATION="Token not-a-token", REMOTE_ADDR=ip)
    assert response.status_code == 429 and response.json()["error"] == "throttled"
    assert 0 < int(response["Retry-After"]) <= settings.KNOWHUB_AUTH_FAILURE_WINDOW
    # a right guess from that address cannot be told from a wrong one while it lasts
    assert api_client.get("/rag/facets", HTTP_AUTHORIZATION=f"Token {token}", REMOTE_ADDR=ip).status_code == 429
    # other addresses are not affected
    assert api_client.get("/rag/facets", HTTP_AUTHORIZATION=f"Token {token}", REMOTE_ADDR=fresh_ip()).status_code == 200


def test_wrong_webhook_secrets_are_throttled_too(client, settings):
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = "the-real-secret"
    ip = fresh_ip()
    statuses = [
        client.post("/notion/ingest", data=b"{}", content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer guess-{n}", REMOTE_ADDR=ip).status_code
        for n in range(settings.KNOWHUB_AUTH_FAILURE_LIMIT + 1)
    ]  # fmt: skip
    assert statuses == [401] * settings.KNOWHUB_AUTH_FAILURE_LIMIT + [429]


def test_requests_without_credentials_are_not_counted(api_client):
    ip = fresh_ip()
    for _ in range(settings.KNOWHUB_AUTH_FAILURE_LIMIT + 2):
        assert api_client.get("/rag/facets", REMOTE_ADDR=ip).status_code in (401, 403)


def test_behind_a_trusted_proxy_the_forwarded_address_is_the_client(api_client, settings):
    settings.KNOWHUB_TRUSTED_PROXIES = 1
    proxy, first, second = fresh_ip(), fresh_ip(), fresh_ip()
    for _ in range(settings.KNOWHUB_AUTH_FAILURE_LIMIT):
        api_client.get("/rag/facets", HTTP_AUTHORIZATION="Token x", REMOTE_ADDR=proxy,
                       HTTP_X_FORWARDED_FOR=f"1.2.3.4, {first}")  # fmt: skip
    blocked = api_client.get("/rag/facets", HTTP_AUTHORIZATION="Token x", REMOTE_ADDR=proxy,
                             HTTP_X_FORWARDED_FOR=first)  # fmt: skip
    assert blocked.status_code == 429
    other = api_client.get("/rag/facets", HTTP_AUTHORIZATION="Token x", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=second)
    assert other.status_code == 401


def test_authenticated_api_rate_is_a_setting_and_limits_a_user(api_client, user, monkeypatch):
    from knowhub.throttling import UserRateThrottle

    # the setting is what the API applies...
    assert UserRateThrottle.THROTTLE_RATES["user"] == settings.KNOWHUB_API_USER_RATE
    # ...and a low one (DRF reads the rates once, at import: set on the class for this test)
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/minute"})
    api_client.force_authenticate(user)
    statuses = [api_client.get("/rag/facets").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = api_client.get("/rag/facets")
    assert response.json()["error"] == "throttled" and int(response["Retry-After"]) > 0


def test_a_forwarded_address_that_is_not_one_falls_back_to_the_peer(client, user, settings):
    settings.KNOWHUB_TRUSTED_PROXIES = 1
    response = client.post("/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR=fresh_ip(),
                           HTTP_X_FORWARDED_FOR="not-an-address")  # fmt: skip
    assert response.status_code == 200 and "Wrong username or password" in response.content.decode()


def test_with_the_throttle_cache_down_requests_are_served(api_client, user, settings):
    """Redis unreachable (a closed port): the counters fail open, no request becomes a 500."""
    import socket

    from django.core.cache import caches

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.CACHES = {**settings.CACHES, "throttle": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0",
    }}  # fmt: skip
    try:
        api_client.force_authenticate(user)
        assert api_client.get("/rag/facets").status_code == 200
        api_client.force_authenticate(None)
        assert api_client.get("/rag/facets", HTTP_AUTHORIZATION="Token nope").status_code == 401
    finally:
        caches["throttle"].close()
