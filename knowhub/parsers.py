"""The request parser every JSON endpoint uses.

Its own module: DRF's APIView reads DEFAULT_PARSER_CLASSES when ``rest_framework.views`` is
imported, so the parser cannot live beside code that imports the views.
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser as DRFJSONParser


def unstorable_text(data, path: str = "body") -> str | None:
    """Where ``data`` holds a string PostgreSQL cannot store, or ``None``.

    A text column cannot hold NUL, and a lone surrogate (valid in JSON's ``\\ud800`` escape)
    cannot be encoded as UTF-8. Refusing them at the door, for every field, keeps such a
    string from failing half-way through a write.
    """
    if isinstance(data, str):
        if "\x00" in data:
            return f"{path} contains a NUL (\\u0000) character"
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path} contains an unpaired surrogate (\\ud800-\\udfff)"
        return None
    if isinstance(data, dict):
        for key, value in data.items():
            found = unstorable_text(key, f"{path} (a key)") or unstorable_text(value, f"{path}.{key}")
            if found:
                return found
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found = unstorable_text(value, f"{path}[{i}]")
            if found:
                return found
    return None


class JSONParser(DRFJSONParser):
    """DRF's JSON parser, refusing (400) strings that no text column can store."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        problem = unstorable_text(data)
        if problem:
            raise ParseError(f"JSON parse error - {problem}")
        return data
