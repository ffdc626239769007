"""The one stream format: every event names its type twice (``event:`` and ``data.type``), a
failure midway ends the stream with an ``error`` event, and closing the stream closes its source."""

from __future__ import annotations

import json

from knowhub.sse import Event, encode_events


def _parse(chunks) -> list[tuple[str, dict]]:
    out = []
    for block in b"".join(chunks).decode().strip().split("\n\n"):
        event, data = block.split("\n")
        out.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_each_event_carries_its_type_in_both_lines():
    events = iter([Event("delta", {"text": "Hé [1]"}), Event("done", {"n": 2})])
    assert _parse(encode_events(events, failure_detail="x")) == [
        ("delta", {"type": "delta", "text": "Hé [1]"}),
        ("done", {"type": "done", "n": 2}),
    ]


def test_a_failure_midway_ends_with_an_error_event_and_closes_the_source():
    closed = []

    def source():
        try:
            yield Event("delta", {"text": "a"})
            raise RuntimeError("secret internals")
        finally:
            closed.append(True)

    events = _parse(encode_events(source(), failure_detail="Try again."))
    assert events[-1] == ("error", {"type": "error", "error": "internal", "detail": "Try again."})
    assert closed == [True]


def test_a_client_that_goes_away_closes_the_source():
    closed = []

    def source():
        try:
            while True:
                yield Event("delta", {"text": "more"})
        finally:
            closed.append(True)

    stream = encode_events(source(), failure_detail="x")
    next(stream)
    stream.close()
    assert closed == [True]
