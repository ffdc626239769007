"""Django's error handlers: JSON with a stable ``error`` code on API paths, plain pages elsewhere."""

from __future__ import annotations

import logging

from knowhub.middleware import error_response

logger = logging.getLogger(__name__)


def bad_request(request, exception=None):
    return error_response(request, 400, "bad_request", "Bad request.")


def permission_denied(request, exception=None):
    return error_response(request, 403, "permission_denied", "You do not have permission to do this.")


def not_found(request, exception=None):
    return error_response(request, 404, "not_found", "Not found.")


def server_error(request):
    return error_response(request, 500, "server_error", "Something went wrong on our side; it has been logged.")
