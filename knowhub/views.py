"""Django's error handlers: JSON with a stable ``error`` code on API paths, plain pages elsewhere."""

from __future__ import annotations

import logging

from knowhub.logs import current_request_id
from knowhub.middleware import error_response

logger = logging.getLogger(__name__)


def bad_request(request, exception=None):
    return error_response(request, 400, "bad_request", "Bad request.")


def permission_denied(request, exception=None):
    return error_response(request, 403, "permission_denied", "You do not have permission to do this.")


def not_found(request, exception=None):
    return error_response(request, 404, "not_found", "Not found.")


def server_error(request):
    """Django has logged the exception with its traceback (logger ``django.request``) under the
    request id this body names, so a user's report leads to the log line."""
    request_id = getattr(request, "request_id", None) or current_request_id.get()
    return error_response(
        request, 500, "server_error",
        "Something went wrong on our side; it has been logged under this request id.", request_id=request_id,
    )  # fmt: skip
