"""Checks on raw request input that must run before anything parses it."""

from __future__ import annotations

import re

# A JSON string (with its escapes, or unterminated to the end) or a bracket: brackets inside a
# string nest nothing. Possessive, so no input makes the match backtrack.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


def json_depth_exceeds(body: bytes, limit: int) -> bool:
    """Whether ``body``, read as JSON, opens more than ``limit`` arrays/objects inside each other.

    Python's json module recurses once per level and a few thousand levels end in a
    RecursionError (a 500) wherever it is called; counting brackets outside strings on the
    bytes is linear and cannot recurse. A body that is not JSON at all is left to the parser.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False  # cannot nest deeper than it has brackets
    depth = 0
    for match in _TOKEN.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth = max(depth - 1, 0)
    return False
