"""Helpers shared by the Logseq, Notion, markdown, document and file parsers.

Pure functions over strings: front matter, ``key:: value`` properties, heading sections, the
wiki-style links (``[[Page]]``, ``#tag``, ``#[[multi word]]``) that Logseq, Obsidian and plain
markdown notes all use, and the dates and name lists that callers pass to the parsers. Code
(fenced blocks and inline spans) is left untouched so a ``#include`` in a snippet never becomes
a concept.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

PROPERTY_RE = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_\-.]*)::(?:\s+(.*)|\s*)$")
FENCE_RE = re.compile(r"^\s*(```|~~~)\s*([\w+#.\-]*)")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1", re.S)
# Order matters: labelled links first, then #[[multi word]] tags, then [[links]], then #tags.
_LABELLED_PAGE_RE = re.compile(r"\[([^\]\n]+)\]\(\[\[([^\]\n]+)\]\]\)")
_TAG_PAGE_RE = re.compile(r"#\[\[([^\]\n]+)\]\]")
_PAGE_RE = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_TAG_RE = re.compile(r"(?<![\w#/&;:=?.\-])#([^\s#,;:!?()\[\]{}\"'`<>+]+)")


def short_hash(*parts: str, length: int = 12) -> str:
    """A short stable digest used in unit anchors."""
    digest = hashlib.sha1("\x1f".join(parts).encode("utf-8"), usedforsecurity=False)
    return digest.hexdigest()[:length]


def normalise_key(key: str) -> str:
    """``Created-At`` / ``Due Date`` → ``created_at`` / ``due_date`` (unicode letters kept)."""
    key = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key.strip())
    key = re.sub(r"[^\w]+", "_", key, flags=re.UNICODE).strip("_").lower()
    return re.sub(r"_+", "_", key) or "property"


def concept_key(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip()).lower()


def parse_date(value: object) -> dt.date | None:
    """An ISO date or datetime string (``2025-01-25``, ``2022-02-25T01:23:00.000+09:00``)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def split_code(text: str) -> list[tuple[bool, str]]:
    """Split text into (is_code, piece) so transforms can skip fenced blocks and code spans."""
    out: list[tuple[bool, str]] = []
    buf: list[str] = []
    fence: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        is_fence = bool(FENCE_RE.match(line))
        if in_fence:
            fence.append(line)
            if is_fence:
                out.append((True, "\n".join(fence)))
                fence, in_fence = [], False
            continue
        if is_fence:
            if buf:
                out.append((False, "\n".join(buf)))
                buf = []
            fence, in_fence = [line], True
            continue
        buf.append(line)
    if buf:
        out.append((False, "\n".join(buf)))
    if fence:
        out.append((True, "\n".join(fence)))
    # Newlines between the pieces were consumed by the split: give them back.
    pieces: list[tuple[bool, str]] = []
    for i, (is_code, piece) in enumerate(out):
        suffix = "\n" if i < len(out) - 1 else ""
        if is_code:
            pieces.append((True, piece + suffix))
            continue
        last = 0
        for match in _CODE_SPAN_RE.finditer(piece):
            if match.start() > last:
                pieces.append((False, piece[last : match.start()]))
            pieces.append((True, match.group(0)))
            last = match.end()
        pieces.append((False, piece[last:] + suffix))
    return [(c, p) for c, p in pieces if p]


@dataclass
class Rendered:
    """Text with wiki links made readable, and the concepts they named (lower-cased, in order)."""

    text: str
    concepts: list[str] = field(default_factory=list)


def render_links(text: str, *, transform: Callable[[str], str] | None = None) -> Rendered:
    """``[[Foo]]`` → ``Foo``, ``#[[a b]]`` → ``a b``, ``#tag`` → ``tag``; concepts collected.

    ``transform`` runs first on every non-code piece (the Logseq parser resolves block refs
    and embeds there, before links are flattened).
    """
    concepts: list[str] = []

    def note(name: str) -> str:
        key = concept_key(name)
        if key and key not in concepts:
            concepts.append(key)
        return name.strip()

    out: list[str] = []
    for is_code, piece in split_code(text):
        if is_code:
            out.append(piece)
            continue
        if transform is not None:
            piece = transform(piece)
        piece = _LABELLED_PAGE_RE.sub(lambda m: (note(m.group(2)), m.group(1))[1], piece)
        piece = _TAG_PAGE_RE.sub(lambda m: note(m.group(1)), piece)
        piece = _PAGE_RE.sub(lambda m: note(m.group(1)), piece)
        piece = _TAG_RE.sub(lambda m: note(m.group(1).rstrip(".")) + ("." if m.group(1).endswith(".") else ""), piece)
        out.append(piece)
    return Rendered("".join(out), concepts)


def link_values(value: str) -> list[str]:
    """A property value as a list: ``[[a]], [[b c]], #d`` or ``a, b`` → ``["a", "b c", "d"]``."""
    names = _PAGE_RE.findall(value) + _TAG_PAGE_RE.findall(value)
    rest = _PAGE_RE.sub("", _TAG_PAGE_RE.sub("", value))
    names += [p.strip().lstrip("#") for p in rest.split(",")]
    out: list[str] = []
    for name in names:
        name = name.strip()
        if name and name not in out:
            out.append(name)
    return out


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split ``---``-delimited ``key: value`` front matter from the body.

    Only flat ``key: value`` lines are read (YAML lists written as ``[a, b]`` stay strings and are
    split by callers that expect lists); anything fancier is kept as the raw string.
    """
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text
    meta: dict[str, str] = {}
    current = ""
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[:1] in (" ", "\t", "-") and current:
            # A YAML block list under the previous key: "  - item".
            item = line.strip().lstrip("-").strip()
            meta[current] = f"{meta[current]}, {item}" if meta[current] else item
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        current = key.strip()
        meta[current] = value.strip().strip("'\"").strip("[]")
    return meta, "\n".join(lines[end + 1 :])


@dataclass
class Section:
    """A heading (``level`` 0 for text before the first heading) and the text under it."""

    level: int
    heading: str
    path: list[str]
    body: str


def split_sections(text: str) -> list[Section]:
    """Cut markdown at ATX headings (not inside code fences), tracking the heading path."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    current = Section(0, "", [], "")
    body: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        match = None if in_fence else HEADING_RE.match(line)
        if match is None:
            body.append(line)
            continue
        current.body = "\n".join(body).strip("\n")
        sections.append(current)
        level, heading = len(match.group(1)), match.group(2).strip()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, heading))
        current = Section(level, heading, [h for _, h in path], "")
        body = []
    current.body = "\n".join(body).strip("\n")
    sections.append(current)
    return [s for s in sections if s.body.strip() or s.level]


def code_languages(text: str) -> list[str]:
    langs: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        match = FENCE_RE.match(line)
        if not match:
            continue
        if not in_fence and match.group(2):
            lang = match.group(2).lower()
            if lang not in langs:
                langs.append(lang)
        in_fence = not in_fence
    return langs


def has_image(text: str) -> bool:
    return bool(re.search(r"!\[[^\]]*\]\([^)]+\)", text))


def iso_date(value: dt.date | str | None, *, field: str = "date") -> dt.date | None:
    """A date, a datetime or an ISO string; anything else is a ``ValueError`` naming ``field``."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            if len(value.strip()) == 10:
                return dt.date.fromisoformat(value.strip())
            return dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date()
        except ValueError:
            pass
    raise ValueError(f"{field} is not an ISO date (YYYY-MM-DD): {value!r}")


def unique_names(values: Iterable[str] | None) -> list[str]:
    """Names (people, tags) stripped, blanks dropped, each once, in first-seen order."""
    out: list[str] = []
    for value in values or ():
        value = str(value).strip()
        if value and value not in out:
            out.append(value)
    return out
