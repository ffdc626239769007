"""Errors outside DRF's views as JSON on API paths, a database outage as a 503 everywhere, a
request id on every request, and input no view can handle refused at the door."""

from __future__ import annotations

import logging
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse

from knowhub.api import DATABASE_ERRORS, DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS, database_failed
from knowhub.inputs import json_depth_exceeds
from knowhub.logs import current_request_id, request_id_for

logger = logging.getLogger(__name__)

# Paths that serve HTML to people; everything else is an API and answers JSON.
PAGE_PREFIXES = ("/admin/", "/login/", "/logout/", "/learn/", "/documents/", "/api/docs/", "/static/")


def is_page(path: str) -> bool:
    return path == "/" or path.startswith(PAGE_PREFIXES)


def error_response(request, status: int, error: str, detail: str, **extra) -> HttpResponse:
    """The error answer for ``request``: JSON on API paths, a short plain page on HTML pages.

    ``extra`` (the request id of a 500) goes into the JSON body, and onto the page as a line."""
    if is_page(request.path):
        reason = HTTPStatus(status).phrase
        lines = "".join(
            f"<p>{name.replace('_', ' ').capitalize()}: <code>{value}</code></p>" for name, value in extra.items()
        )
        return HttpResponse(
            f"<!doctype html><title>{status} {reason}</title><h1>{reason}</h1><p>{detail}</p>{lines}",
            status=status, content_type="text/html; charset=utf-8",
        )  # fmt: skip
    return JsonResponse({"error": error, "detail": detail, **extra}, status=status)


class RequestIdMiddleware:
    """Gives each request an id: kept on ``request.request_id``, set for the log records of the
    request (``knowhub.logs``), and answered in the ``X-Request-ID`` header, which gunicorn's
    access log prints. The outermost middleware, so every other one logs with it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_for(request.META.get("HTTP_X_REQUEST_ID"))
        token = current_request_id.set(request.request_id)
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request.request_id
            return response
        finally:
            current_request_id.reset(token)


class PermissionsPolicyMiddleware:
    """Sends KNOWHUB_PERMISSIONS_POLICY (browser features the pages may use) with every response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.KNOWHUB_PERMISSIONS_POLICY:
            response.setdefault("Permissions-Policy", settings.KNOWHUB_PERMISSIONS_POLICY)
        return response


def _has_nul(request) -> str | None:
    """Where the URL or a form body holds a NUL (PostgreSQL refuses it in any text), or None."""
    if "\x00" in request.path:
        return "The URL path contains a NUL (%00) character."
    if any("\x00" in key or any("\x00" in v for v in values) for key, values in request.GET.lists()):
        return "The query string contains a NUL (%00) character."
    # Forms are what pages post (login, chat); an API's body is its parser's to judge.
    if is_page(request.path) and request.content_type == "application/x-www-form-urlencoded" and any(
        "\x00" in key or any("\x00" in v for v in values) for key, values in request.POST.lists()
    ):
        return "The form contains a NUL (%00) character."
    return None


def _looks_like_json(request) -> bool:
    if request.content_type.startswith(("multipart/", "application/x-www-form-urlencoded")):
        return False
    return request.method in ("POST", "PUT", "PATCH", "DELETE")


class InputGuardMiddleware:
    """Refuses, before any view or parser sees them, requests no view could answer but with a
    500: a URL longer than KNOWHUB_MAX_URL_CHARS (414), a NUL in the path, query string or form
    (400), a body past DATA_UPLOAD_MAX_MEMORY_SIZE (413), and a JSON body nested deeper than
    KNOWHUB_MAX_JSON_DEPTH (400) — counted on the raw bytes, so the parser (Python's recursive
    one, or a view's own ``json.loads`` like the signed Notion webhook) never recurses into it.
    JSON on API paths, a plain page on HTML ones, like every other error."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self._refusal(request) or self.get_response(request)

    def _refusal(self, request) -> HttpResponse | None:
        limit = settings.KNOWHUB_MAX_URL_CHARS
        if len(request.get_full_path()) > limit:
            return error_response(request, 414, "uri_too_long", f"The URL is longer than {limit} characters.")
        problem = _has_nul(request)
        if problem:
            return error_response(request, 400, "nul_character", problem)
        if not _looks_like_json(request):
            return None
        max_bytes = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        try:
            if max_bytes is not None and declared > max_bytes:
                raise RequestDataTooBig
            body = request.body
        except RequestDataTooBig:
            return error_response(request, 413, "too_large", f"The request body is larger than {max_bytes} bytes.")
        depth = settings.KNOWHUB_MAX_JSON_DEPTH
        if json_depth_exceeds(body, depth):
            return error_response(request, 400, "too_deep", f"The JSON body is nested deeper than {depth} levels.")
        return None


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
