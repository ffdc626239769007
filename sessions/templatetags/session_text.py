"""Showing a guide message as readable parts: paragraphs become separate bubbles, fenced code
stays a code block with its lines (the page's script mirrors this for streamed replies)."""

from __future__ import annotations

import re

from django import template

register = template.Library()

_FENCE = re.compile(r"```[\w-]*\n(.*?)\n?```", re.S)


def split_parts(text: str) -> list[list[dict]]:
    """``text`` as parts (split at blank lines outside code fences), each a list of segments
    ``{"code": bool, "text": str}``."""
    parts: list[list[dict]] = [[]]
    pos = 0

    def add_text(chunk: str) -> None:
        pieces = re.split(r"\n\s*\n", chunk)
        for i, piece in enumerate(pieces):
            if i > 0 and parts[-1]:
                parts.append([])
            piece = piece.strip("\n")
            if piece.strip():
                parts[-1].append({"code": False, "text": piece})

    for m in _FENCE.finditer(text or ""):
        add_text(text[pos : m.start()])
        parts[-1].append({"code": True, "text": m.group(1)})
        pos = m.end()
    add_text((text or "")[pos:])
    return [p for p in parts if p]


@register.filter
def guide_parts(text: str) -> list[list[dict]]:
    return split_parts(text)
