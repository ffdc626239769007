"""Logseq's org-mode pages → the outline text its markdown pages are written in.

A Logseq graph may hold ``.org`` files beside its ``.md`` ones (older graphs are mostly org).
Both are the same tree of blocks, written differently: a headline's stars (``** text``) are a
bullet's indentation (``  - text``), a ``:PROPERTIES:`` drawer is ``key:: value`` lines, and
``#+TITLE:`` before the first headline is a page property. ``org_outline`` rewrites an org page
into that markdown outline, so one parser reads both and block ids, references and embeds work
across the two formats. Inline markup becomes its markdown twin (``[[url][label]]`` a markdown
link, ``~code~`` and ``=verbatim=`` code spans, ``*bold*`` bold); source blocks become fences.
"""

from __future__ import annotations

import re

_HEADLINE_RE = re.compile(r"^(\*+)\s+(.*)$")
_DRAWER_START_RE = re.compile(r"^\s*:PROPERTIES:\s*$", re.I)
_DRAWER_END_RE = re.compile(r"^\s*:END:\s*$", re.I)
_DRAWER_PROP_RE = re.compile(r"^\s*:([^:\s]+):\s*(.*)$")
_KEYWORD_RE = re.compile(r"^\s*#\+([A-Za-z][\w-]*):\s*(.*)$")
_SRC_START_RE = re.compile(r"^(\s*)#\+BEGIN_SRC\b\s*([\w+#.\-]*)", re.I)
_SRC_END_RE = re.compile(r"^\s*#\+END_SRC\b", re.I)
# A headline's trailing tags (":tag1:tag2:") are Logseq tags.
_HEADLINE_TAGS_RE = re.compile(r"\s+:((?:[\w@#%-]+:)+)\s*$")
_LINK_RE = re.compile(r"\[\[([^\[\]\n]+)\]\[([^\[\]\n]+)\]\]")
_URL_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|/|\./|\.\./)", re.I)
# Emphasis between spaces or punctuation, as org reads it: "~code~" and "=verbatim=" (code, taken
# first: what is inside is shown as typed), then "*bold*".
_CODE_RE = re.compile(r"(?<![\w~=])([~=])(?=\S)([^\n]*?\S)\1(?![\w~=])")
_BOLD_RE = re.compile(r"(?<![\w*])\*(?=\S)([^\n*]*?\S)\*(?![\w*])")


def org_outline(text: str) -> str:
    """The org page ``text`` as Logseq markdown outline text (see the module's docstring)."""
    out: list[str] = []
    level = 0  # the current headline's depth; 0 before the first
    pad = ""  # a continuation line's indentation under the current headline
    in_drawer = False
    src_indent: int | None = None  # inside a source block: its #+BEGIN_SRC line's indentation
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if src_indent is not None:
            if _SRC_END_RE.match(line):
                out.append(f"{pad}```")
                src_indent = None
            else:
                cut = min(src_indent, len(line) - len(line.lstrip()))
                out.append(f"{pad}{line[cut:]}" if line.strip() else "")
            continue
        if in_drawer:
            if _DRAWER_END_RE.match(line):
                in_drawer = False
            elif prop := _DRAWER_PROP_RE.match(line):
                out.append(f"{pad}{prop.group(1).lower()}:: {prop.group(2).strip()}".rstrip())
            continue
        if _DRAWER_START_RE.match(line):
            in_drawer = True
            continue
        if headline := _HEADLINE_RE.match(line):
            level = len(headline.group(1))
            indent = "  " * (level - 1)
            pad = indent + "  "
            out.append(f"{indent}- {_inline(_headline_text(headline.group(2)))}".rstrip())
            continue
        if src := _SRC_START_RE.match(line):
            src_indent = len(src.group(1))
            out.append(f"{pad}```{src.group(2)}")
            continue
        if (
            level == 0
            and (keyword := _KEYWORD_RE.match(line))
            and not keyword.group(1).upper().startswith(("BEGIN_", "END_"))
        ):
            out.append(f"{keyword.group(1).lower()}:: {keyword.group(2).strip()}".rstrip())
            continue
        out.append(f"{pad}{_inline(line.strip())}" if line.strip() else "")
    return "\n".join(out)


def _headline_text(text: str) -> str:
    """A headline's text with its trailing ``:tags:`` written as Logseq tags."""
    tags = _HEADLINE_TAGS_RE.search(text)
    if not tags:
        return text
    names = [t for t in tags.group(1).split(":") if t]
    return f"{text[: tags.start()]} " + " ".join(f"#{name}" for name in names)


def _inline(text: str) -> str:
    """Org's inline markup as markdown: code and verbatim spans as typed, then links and bold."""

    def link(m: re.Match) -> str:
        target, label = m.group(1).strip(), m.group(2).strip()
        if _URL_RE.match(target):
            return f"[{label}]({target})"
        return f"[{label}]([[{target}]])"  # a page of the graph, shown under another name

    out, last = [], 0
    for code in _CODE_RE.finditer(text):
        out.append(_BOLD_RE.sub(r"**\1**", _LINK_RE.sub(link, text[last : code.start()])))
        out.append(f"`{code.group(2)}`")
        last = code.end()
    out.append(_BOLD_RE.sub(r"**\1**", _LINK_RE.sub(link, text[last:])))
    return "".join(out)
