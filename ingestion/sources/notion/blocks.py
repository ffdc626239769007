"""Notion rich text and block trees → markdown.

Unknown block types are skipped with a log line, never an exception: Notion adds types more
often than we release.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

LIST_TYPES = {"bulleted_list_item", "numbered_list_item", "to_do", "toggle"}
HEADINGS = {"heading_1": 1, "heading_2": 2, "heading_3": 3, "heading_4": 4}
_MEDIA = {"image", "file", "pdf", "video", "audio"}
_SILENT = {"table_of_contents", "breadcrumb", "template", "unsupported", "link_to_page_unsupported"}


# -- rich text ---------------------------------------------------------------------------------
def rich_text_to_markdown(items: list[dict] | None) -> str:
    """Notion rich text → inline markdown (bold/italic/code/strikethrough, links, equations)."""
    out: list[str] = []
    for item in items or []:
        kind = item.get("type")
        if kind == "equation":
            text = f"${item.get('equation', {}).get('expression', item.get('plain_text', ''))}$"
            out.append(text)
            continue
        text = item.get("plain_text")
        if text is None:
            text = (item.get("text") or {}).get("content", "")
        if not text:
            continue
        ann = item.get("annotations") or {}
        href = item.get("href") or ((item.get("text") or {}).get("link") or {}).get("url")
        # Markers must hug the words: "**bold **" is not bold in markdown.
        lead = text[: len(text) - len(text.lstrip())]
        trail = text[len(text.rstrip()) :]
        core = text.strip()
        if not core:
            out.append(text)
            continue
        if ann.get("code"):
            core = f"`{core}`"
        if ann.get("bold"):
            core = f"**{core}**"
        if ann.get("italic"):
            core = f"*{core}*"
        if ann.get("strikethrough"):
            core = f"~~{core}~~"
        if href:
            core = href if core == href else f"[{core}]({href})"
        out.append(f"{lead}{core}{trail}")
    return "".join(out)


def plain_text(items: list[dict] | None) -> str:
    """Notion rich text → its plain text, no markup."""
    return "".join(i.get("plain_text") or (i.get("text") or {}).get("content", "") for i in items or [])


def media_url(data: dict) -> str:
    """Where a file, image or other media object lives (a URL, or an upload id)."""
    kind = data.get("type")
    if kind in ("external", "file", "file_upload"):
        return (data.get(kind) or {}).get("url", "") or (data.get(kind) or {}).get("id", "")
    return data.get("url", "")


# -- blocks → markdown -------------------------------------------------------------------------
def _prefix(lines: list[str], prefix: str, first: str | None = None) -> list[str]:
    out = []
    for i, line in enumerate(lines):
        lead = first if (i == 0 and first is not None) else prefix
        out.append(f"{lead}{line}" if line else lead.rstrip())
    return out


def _table(block: dict) -> list[str]:
    rows = [c for c in block.get("children", []) if c.get("type") == "table_row"]
    if not rows:
        return []
    grid = [
        [rich_text_to_markdown(cell).replace("|", "\\|").replace("\n", " ").strip()
         for cell in row["table_row"].get("cells", [])]
        for row in rows
    ]  # fmt: skip
    width = max(len(r) for r in grid)
    grid = [r + [""] * (width - len(r)) for r in grid]
    lines = ["| " + " | ".join(grid[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in grid[1:]]
    return lines


# Each renderer: (block, its type, its type's data, its number in a numbered list) → lines or None.
_Renderer = Callable[[dict, str, dict, int], "list[str] | None"]


def _list_item(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    if kind == "bulleted_list_item" or kind == "toggle":
        marker = "- "
    elif kind == "numbered_list_item":
        marker = f"{number}. "
    else:
        marker = "- [x] " if data.get("checked") else "- [ ] "
    text = rich_text_to_markdown(data.get("rich_text"))
    child = _blocks_lines(block.get("children") or [])
    if not text and not child:
        return None
    return [marker + text, *_prefix(child, " " * len(marker) if kind == "numbered_list_item" else "  ")]


def _heading(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    text = rich_text_to_markdown(data.get("rich_text"))
    lines = [f"{'#' * HEADINGS[kind]} {text}"] if text else []
    child = _blocks_lines(block.get("children") or [])  # toggle headings carry their content as children
    return [*lines, *([""] if lines and child else []), *child] or None


def _paragraph(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    text = rich_text_to_markdown(data.get("rich_text"))
    child = _blocks_lines(block.get("children") or [])
    return [*([text] if text else []), *(["", *child] if child and text else child)] or None


def _quote(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    text = rich_text_to_markdown(data.get("rich_text"))
    children = block.get("children") or []
    icon = data.get("icon") or {}
    emoji = icon.get("emoji", "") if icon.get("type") == "emoji" else ""
    head = f"{emoji} {text}".strip() if kind == "callout" else text
    body = [*head.split("\n"), *(["", *_blocks_lines(children)] if children else [])]
    return _prefix(body, "> ")


def _code(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    lang = data.get("language") or ""
    lang = "" if lang == "plain text" else lang.replace(" ", "_")
    lines = [f"```{lang}", *plain_text(data.get("rich_text")).split("\n"), "```"]
    caption = rich_text_to_markdown(data.get("caption"))
    return [*lines, caption] if caption else lines


def _media(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    url = media_url(data)
    label = rich_text_to_markdown(data.get("caption")) or data.get("name") or kind
    return [f"![{label}]({url})" if kind == "image" else f"[{label}]({url})"]


def _link(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    url = data.get("url", "")
    caption = rich_text_to_markdown(data.get("caption"))
    return [f"[{caption}]({url})" if caption else url] if url else None


def _link_to_page(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    target = data.get(data.get("type", ""), "")
    return [f"[linked page](https://www.notion.so/{str(target).replace('-', '')})"] if target else None


def _container(block: dict, kind: str, data: dict, number: int) -> list[str] | None:
    return _blocks_lines(block.get("children") or []) or None


_RENDERERS: dict[str, _Renderer] = {
    **dict.fromkeys(LIST_TYPES, _list_item),
    **dict.fromkeys(HEADINGS, _heading),
    "paragraph": _paragraph,
    "quote": _quote,
    "callout": _quote,
    "code": _code,
    "divider": lambda block, kind, data, number: ["---"],
    "equation": lambda block, kind, data, number: ["$$", data.get("expression", ""), "$$"],
    "table": lambda block, kind, data, number: _table(block) or None,
    **dict.fromkeys(_MEDIA, _media),
    **dict.fromkeys(("bookmark", "embed", "link_preview"), _link),
    "child_page": lambda block, kind, data, number: [f"Page: {data.get('title', '')}"],
    "child_database": lambda block, kind, data, number: [f"Database: {data.get('title', '')}"],
    "link_to_page": _link_to_page,
    **dict.fromkeys(("synced_block", "column_list", "column"), _container),
}


def _block_lines(block: dict, number: int) -> list[str] | None:
    """One block (and its children) as markdown lines; ``None`` when it renders to nothing."""
    kind = block.get("type", "")
    render = _RENDERERS.get(kind)
    if render is not None:
        return render(block, kind, block.get(kind) or {}, number)
    if kind not in _SILENT:
        logger.info("skipping unknown Notion block type %s (%s)", kind, block.get("id"))
    return None


def _blocks_lines(blocks: list[dict]) -> list[str]:
    lines: list[str] = []
    number = 0
    previous = ""
    for block in blocks:
        kind = block.get("type", "")
        number = number + 1 if kind == "numbered_list_item" else 0
        rendered = _block_lines(block, number)
        if not rendered:
            continue
        # List items of one list sit on consecutive lines; everything else is a paragraph.
        if lines and not (kind in LIST_TYPES and previous in LIST_TYPES):
            lines.append("")
        lines.extend(rendered)
        previous = kind
    return lines


def blocks_to_markdown(blocks: list[dict]) -> str:
    """Notion block objects (children attached under ``"children"``) → markdown."""
    return "\n".join(_blocks_lines(blocks)).strip("\n")
