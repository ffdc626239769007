"""Brute force slowed: who a client is, sign-in lockouts (django-axes), failed credentials and
API rates throttled.

- Login pages (``/login/``, ``/admin/login/``, ``/learn/login/``): django-axes counts wrong
  passwords per account and per address in the database and locks either out for a while;
  ``lockout_response`` is the page it shows.
- API credentials (a token, a bearer JWT, the webhook secret — whichever class checked them):
  ``FailedCredentialsMiddleware`` counts the 401s of requests that carried credentials per
  address and answers 429 with ``Retry-After`` to that address until the window ends.
- Authenticated API rates: ``knowhub.throttling.UserRateThrottle`` (DRF's, on the shared cache).
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.shortcuts import render

from knowhub.middleware import error_response
from knowhub.throttling import cache_get, cache_set, client_ip

# --- sign-in pages (django-axes) -----------------------------------------------------------------


def lockout_response(request, original_response=None, credentials=None):
    """What a locked-out sign-in gets on any of the login pages: a 429 page that says why and for
    how long (the same for a wrong and a right password: a lockout tells nothing about either)."""
    minutes = max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    response = render(
        request, "registration/locked_out.html",
        {"minutes": minutes, "failure_limit": settings.AXES_FAILURE_LIMIT, "login_url": request.path},
        status=429,
    )  # fmt: skip
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response


# --- API credentials -----------------------------------------------------------------------------


class FailedCredentialsMiddleware:
    """Throttles guessing of API credentials per client address.

    A request that carried credentials (an ``Authorization`` header or a webhook signature) and
    got a 401 counts as one failure; after KNOWHUB_AUTH_FAILURE_LIMIT failures within
    KNOWHUB_AUTH_FAILURE_WINDOW seconds, every request with credentials from that address is
    answered 429 (``Retry-After``: the rest of the window) without being checked — a right
    guess then looks exactly like a wrong one. Counted here rather than in one authentication
    class so that every class (tokens, JWTs, the webhook's secret) is covered alike.
    """

    CREDENTIAL_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_X_KNOWHUB_SIGNATURE")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not any(request.META.get(h) for h in self.CREDENTIAL_HEADERS):
            return self.get_response(request)
        key = f"auth-failures:{client_ip(request)}"
        window = settings.KNOWHUB_AUTH_FAILURE_WINDOW
        state = cache_get(key)
        if state and state["count"] >= settings.KNOWHUB_AUTH_FAILURE_LIMIT:
            wait = max(1, math.ceil(state["since"] + window - time.time()))
            response = error_response(
                request, 429, "throttled",
                f"Too many requests with wrong credentials from this address; try again in {wait} seconds.",
            )  # fmt: skip
            response["Retry-After"] = str(wait)
            return response
        response = self.get_response(request)
        if response.status_code == 401:
            _count_failure(key, window)
        return response


def _count_failure(key: str, window: int) -> None:
    # Read-modify-write: two failures at once may count as one, which only errs towards leniency.
    state = cache_get(key) or {"count": 0, "since": time.time()}
    state["count"] += 1
    remaining = max(1, math.ceil(state["since"] + window - time.time()))
    cache_set(key, state, timeout=remaining)
