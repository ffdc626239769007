"""The provider's discovery document (``/.well-known/openid-configuration``), fetched and cached."""

from __future__ import annotations

import threading
import time

import requests
from django.conf import settings


class ProviderUnavailable(Exception):
    """The OpenID provider could not be reached or answered nonsense."""


_lock = threading.Lock()
_documents: dict[str, tuple[float, dict]] = {}


def configuration(issuer: str | None = None) -> dict:
    """The discovery document of ``issuer`` (default: KNOWHUB_OIDC_ISSUER), cached for
    KNOWHUB_OIDC_DISCOVERY_CACHE_SECONDS. Raises ProviderUnavailable."""
    issuer = (issuer or settings.KNOWHUB_OIDC_ISSUER).rstrip("/")
    if not issuer:
        raise ProviderUnavailable("no OpenID provider is configured (KNOWHUB_OIDC_ISSUER)")
    now = time.monotonic()
    with _lock:
        cached = _documents.get(issuer)
        if cached and now - cached[0] < settings.KNOWHUB_OIDC_DISCOVERY_CACHE_SECONDS:
            return cached[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.KNOWHUB_OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    # The document must be the issuer's own (OpenID Connect Discovery 1.0, section 4.3).
    if not isinstance(document, dict) or str(document.get("issuer", "")).rstrip("/") != issuer:
        raise ProviderUnavailable(f"{url} names another issuer: {document.get('issuer')!r}")
    with _lock:
        _documents[issuer] = (now, document)
    return document


def forget() -> None:
    """Drop every cached document (tests; a changed provider)."""
    with _lock:
        _documents.clear()
