"""Log records that name their request: a request id on every line, and JSON lines by setting.

The id is set by ``knowhub.middleware.RequestIdMiddleware`` for the length of one request (a
context variable, so threads and async tasks each see their own) and printed by both formats;
the 500 body and the ``X-Request-ID`` response header carry the same id, so an error a user
reports can be found in the log, and gunicorn's access log (gunicorn.conf.py) shows it too.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid

NO_REQUEST = "-"
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("knowhub_request_id", default=NO_REQUEST)

# An id a proxy in front already gave the request is kept if it looks like one: short, plain
# characters only, so a header cannot forge log lines or smuggle markup into the error body.
_INCOMING_ID = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")


def request_id_for(incoming: str | None) -> str:
    """The id of a request: the proxy's ``X-Request-ID`` when it is plain, else a new one."""
    if incoming and _INCOMING_ID.match(incoming):
        return incoming
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Gives every record a ``request_id`` (``-`` outside a request) for the formatters."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC), level, logger, message, request_id, and the traceback."""

    converter = time.gmtime

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", NO_REQUEST),
        }
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["traceback"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)

