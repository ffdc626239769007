"""Server-sent events: the one stream format of every streaming endpoint (ask, session chat).

Each event goes out as ``event: <type>`` and ``data: <one JSON object>``, and the object carries
``"type"`` as well, so a client can read either line. A stream that breaks midway ends with an
``error`` event (``{"type": "error", "error": "internal", "detail": …}``) instead of being cut.
Errors known before the stream starts are ordinary JSON error responses, whatever ``Accept``
said (``EventStreamNegotiation``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.http import StreamingHttpResponse
from rest_framework.negotiation import DefaultContentNegotiation

logger = logging.getLogger(__name__)

CONTENT_TYPE = "text/event-stream"
INTERNAL = "internal"


@dataclass
class Event:
    """One event of a stream: its ``type`` (``delta``, ``done``, ``error``…) and its fields."""

    type: str
    data: dict = field(default_factory=dict)

    def encode(self) -> bytes:
        payload = {"type": self.type, **self.data}
        return f"event: {self.type}\ndata: {json.dumps(payload, default=str)}\n\n".encode()


def encode_events(events: Iterable[Event], *, failure_detail: str, name: str = "event") -> Iterator[bytes]:
    """The wire bytes of ``events``. An exception becomes a final ``error`` event with
    ``failure_detail`` (the exception is logged, not shown). Closing this closes ``events``,
    so a client that goes away stops the work behind the stream."""
    try:
        for event in events:
            yield event.encode()
    except Exception:
        logger.exception("%s stream failed", name)
        yield Event("error", {"error": INTERNAL, "detail": failure_detail}).encode()
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def event_stream_response(
    events: Iterable[Event], *, failure_detail: str, name: str = "event"
) -> StreamingHttpResponse:
    """``events`` as a streaming response, unbuffered by caches and proxies."""
    response = StreamingHttpResponse(
        encode_events(events, failure_detail=failure_detail, name=name), content_type=CONTENT_TYPE
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


class EventStreamNegotiation(DefaultContentNegotiation):
    """For streaming endpoints (and their JSON twins): a client sends ``Accept:
    text/event-stream``, yet an error before the stream (bad input, 404, 409) is answered as
    JSON by the view's first renderer. Request bodies are negotiated as everywhere (JSON)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
