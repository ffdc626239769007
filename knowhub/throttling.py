"""The API's rate limits and who a client is.

Its own module: DRF reads DEFAULT_THROTTLE_CLASSES when ``rest_framework.views`` is imported, so
the throttle cannot live beside code that imports the views.
"""

from __future__ import annotations

import contextlib
import ipaddress

from django.conf import settings
from django.core.cache import caches
from django.utils.connection import ConnectionProxy
from rest_framework import throttling

# Redis when there is one (settings CACHES["throttle"]): every worker process counts the same
# requests, and a restart does not forgive a lockout.
throttle_cache = ConnectionProxy(caches, "throttle")


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

    def get_ident(self, request):
        return client_ip(request)
