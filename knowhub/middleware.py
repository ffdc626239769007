"""Errors outside DRF's views as JSON on API paths, and a database outage as a 503 everywhere."""

from __future__ import annotations

import logging
from http import HTTPStatus

from django.http import HttpResponse, JsonResponse

from knowhub.api import DATABASE_ERRORS, DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS, database_failed

logger = logging.getLogger(__name__)

# Paths that serve HTML to people; everything else is an API and answers JSON.
PAGE_PREFIXES = ("/admin/", "/login/", "/logout/", "/learn/", "/documents/", "/api/docs/", "/static/")


def is_page(path: str) -> bool:
    return path == "/" or path.startswith(PAGE_PREFIXES)


def error_response(request, status: int, error: str, detail: str) -> HttpResponse:
    """The error answer for ``request``: JSON on API paths, a short plain page on HTML pages."""
    if is_page(request.path):
        reason = HTTPStatus(status).phrase
        return HttpResponse(
            f"<!doctype html><title>{status} {reason}</title><h1>{reason}</h1><p>{detail}</p>",
            status=status, content_type="text/html; charset=utf-8",
        )  # fmt: skip
    return JsonResponse({"error": error, "detail": detail}, status=status)


class JsonErrorMiddleware:
    """Turns a database outage in any view into a 503 (JSON on API paths) before Django's
    500 handling (or, with DEBUG on, its debug page) sees it, and restarts the embedded
    server for the next request. Other errors go on to the handlers in ``knowhub.views``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, DATABASE_ERRORS):
            return None
        database_failed(exception)
        response = error_response(request, 503, DATABASE_UNAVAILABLE["error"], DATABASE_UNAVAILABLE["detail"])
        response["Retry-After"] = RETRY_AFTER_SECONDS
        return response
