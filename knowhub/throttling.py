"""The API's rate limits and who a client is.

Its own module: DRF reads DEFAULT_THROTTLE_CLASSES when ``rest_framework.views`` is imported, so
the throttle cannot live beside code that imports the views.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging

from django.conf import settings
from django.core.cache import caches
from django.utils.connection import ConnectionProxy
from rest_framework import throttling

# Redis when there is one (settings CACHES["throttle"]): every worker process counts the same
# requests, and a restart does not forgive a lockout.
throttle_cache = ConnectionProxy(caches, "throttle")
logger = logging.getLogger(__name__)


def cache_get(key: str, default=None):
    """The counter at ``key``; with the cache down, ``default``: a Redis outage must not turn
    every API request into a 500 (it fails open, and says so in the log)."""
    try:
        return throttle_cache.get(key, default)
    except Exception:  # noqa: BLE001 — whatever the cache backend raises when it is unreachable
        logger.warning("throttle cache unavailable; not counting", exc_info=True)
        return default


def cache_set(key: str, value, timeout: int) -> None:
    try:
        throttle_cache.set(key, value, timeout=timeout)
    except Exception:  # noqa: BLE001 — as in cache_get
        logger.warning("throttle cache unavailable; not counting", exc_info=True)


def client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, or with KNOWHUB_TRUSTED_PROXIES proxies in front, the
    address the outermost trusted proxy saw (the entries a client adds itself are ignored).
    None when the request has none (a login made in code, not over HTTP)."""
    proxies = settings.KNOWHUB_TRUSTED_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            hop = hops[-min(proxies, len(hops))]
            with contextlib.suppress(ValueError):  # not an address: a client wrote it, not a proxy
                return str(ipaddress.ip_address(hop))
    return request.META.get("REMOTE_ADDR") or None


class UserRateThrottle(throttling.UserRateThrottle):
    """DRF's per-user rate (``DEFAULT_THROTTLE_RATES["user"]``; anonymous: per address), counted
    in the shared cache."""

    cache = throttle_cache

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception:  # noqa: BLE001 — the cache is down: serve the request (cache_get says why)
            logger.warning("throttle cache unavailable; request not counted", exc_info=True)
            return True

    def get_ident(self, request):
        return client_ip(request)
