"""Notion pages → ``SourceDocument``s: API block trees, page properties, the n8n webhook, a puller.

Nothing here writes to the database. ``NotionPuller`` talks to a ``notion_client.Client``-like
object (duck-typed, so tests pass a fake) and hands back page and block dicts; the converters
turn them into markdown and units. Unknown block or property types are skipped with a log line,
never an exception: Notion adds types more often than we release.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from ingestion.sources import markup
from rag.units import SourceDocument, Unit

logger = logging.getLogger(__name__)

_LIST_TYPES = {"bulleted_list_item", "numbered_list_item", "to_do", "toggle"}
_HEADINGS = {"heading_1": 1, "heading_2": 2, "heading_3": 3, "heading_4": 4}
_MEDIA = {"image", "file", "pdf", "video", "audio"}
_SILENT = {"table_of_contents", "breadcrumb", "template", "unsupported", "link_to_page_unsupported"}
_WEBHOOK_FIELDS = {"page_id", "properties", "content", "url"}
_WEBHOOK_PROPERTIES = {"title", "category", "domain", "tags", "date", "author", "people", "entity"}


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


def _plain(items: list[dict] | None) -> str:
    return "".join(i.get("plain_text") or (i.get("text") or {}).get("content", "") for i in items or [])


# -- blocks → markdown -------------------------------------------------------------------------
def _media_url(data: dict) -> str:
    kind = data.get("type")
    if kind in ("external", "file", "file_upload"):
        return (data.get(kind) or {}).get("url", "") or (data.get(kind) or {}).get("id", "")
    return data.get("url", "")


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


def _block_lines(block: dict, number: int) -> list[str] | None:
    """One block (and its children) as markdown lines; ``None`` when it renders to nothing."""
    kind = block.get("type", "")
    data = block.get(kind) or {}
    children = block.get("children") or []
    text = rich_text_to_markdown(data.get("rich_text"))
    caption = rich_text_to_markdown(data.get("caption"))

    if kind in _LIST_TYPES:
        if kind == "bulleted_list_item" or kind == "toggle":
            marker = "- "
        elif kind == "numbered_list_item":
            marker = f"{number}. "
        else:
            marker = "- [x] " if data.get("checked") else "- [ ] "
        child = _blocks_lines(children)
        if not text and not child:
            return None
        return [marker + text, *_prefix(child, " " * len(marker) if kind == "numbered_list_item" else "  ")]
    if kind in _HEADINGS:
        lines = [f"{'#' * _HEADINGS[kind]} {text}"] if text else []
        child = _blocks_lines(children)  # toggle headings carry their content as children
        return [*lines, *([""] if lines and child else []), *child] or None
    if kind == "paragraph":
        child = _blocks_lines(children)
        return [*([text] if text else []), *(["", *child] if child and text else child)] or None
    if kind in ("quote", "callout"):
        icon = data.get("icon") or {}
        emoji = icon.get("emoji", "") if icon.get("type") == "emoji" else ""
        head = f"{emoji} {text}".strip() if kind == "callout" else text
        body = [*head.split("\n"), *(["", *_blocks_lines(children)] if children else [])]
        return _prefix(body, "> ")
    if kind == "code":
        lang = data.get("language") or ""
        lang = "" if lang == "plain text" else lang.replace(" ", "_")
        lines = [f"```{lang}", *_plain(data.get("rich_text")).split("\n"), "```"]
        return [*lines, caption] if caption else lines
    if kind == "divider":
        return ["---"]
    if kind == "equation":
        return ["$$", data.get("expression", ""), "$$"]
    if kind == "table":
        return _table(block) or None
    if kind in _MEDIA:
        url = _media_url(data)
        label = caption or data.get("name") or kind
        return [f"![{label}]({url})" if kind == "image" else f"[{label}]({url})"]
    if kind in ("bookmark", "embed", "link_preview"):
        url = data.get("url", "")
        return [f"[{caption}]({url})" if caption else url] if url else None
    if kind == "child_page":
        return [f"Page: {data.get('title', '')}"]
    if kind == "child_database":
        return [f"Database: {data.get('title', '')}"]
    if kind == "link_to_page":
        target = data.get(data.get("type", ""), "")
        return [f"[linked page](https://www.notion.so/{str(target).replace('-', '')})"] if target else None
    if kind in ("synced_block", "column_list", "column"):
        return _blocks_lines(children) or None
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
        if lines and not (kind in _LIST_TYPES and previous in _LIST_TYPES):
            lines.append("")
        lines.extend(rendered)
        previous = kind
    return lines


def blocks_to_markdown(blocks: list[dict]) -> str:
    """Notion block objects (children attached under ``"children"``) → markdown."""
    return "\n".join(_blocks_lines(blocks)).strip("\n")


# -- properties --------------------------------------------------------------------------------
def _user(user: dict | None) -> str | None:
    if not user:
        return None
    return user.get("name") or user.get("id")


def _date(value: dict | None) -> dict | None:
    if not value or not value.get("start"):
        return None
    return {"start": value.get("start"), "end": value.get("end")}


def _property_value(prop: dict) -> Any:
    """One property (page property or property item) → a plain JSON value."""
    kind = prop.get("type", "")
    value = prop.get(kind)
    if kind in ("title", "rich_text"):
        return _plain(value if isinstance(value, list) else [value] if value else [])
    if kind in ("number", "checkbox", "url", "email", "phone_number", "created_time", "last_edited_time"):
        return value
    if kind in ("select", "status"):
        return (value or {}).get("name")
    if kind == "multi_select":
        return [o.get("name") for o in value or [] if o.get("name")]
    if kind == "date":
        return _date(value)
    if kind == "people":
        users = value if isinstance(value, list) else [value] if value else []
        return [n for n in (_user(u) for u in users) if n]
    if kind in ("created_by", "last_edited_by"):
        return _user(value)
    if kind == "relation":
        items = value if isinstance(value, list) else [value] if value else []
        return [r.get("id") for r in items if r.get("id")]
    if kind == "files":
        return [_media_url(f) or f.get("name", "") for f in value or []]
    if kind == "unique_id":
        if not value or value.get("number") is None:
            return None
        return f"{value['prefix']}-{value['number']}" if value.get("prefix") else str(value["number"])
    if kind == "verification":
        if not value:
            return None
        return {"state": value.get("state"), "verified_by": _user(value.get("verified_by")),
                "date": _date(value.get("date"))}  # fmt: skip
    if kind == "formula":
        inner = value or {}
        result = inner.get(inner.get("type", ""))
        return _date(result) if inner.get("type") == "date" else result
    if kind == "rollup":
        inner = value or {}
        sub = inner.get("type", "")
        if sub == "array":
            out: list[Any] = []
            for item in inner.get("array") or []:
                got = _property_value(item)
                out.extend(got if isinstance(got, list) else [got] if got not in (None, "") else [])
            return out
        return _date(inner.get("date")) if sub == "date" else inner.get(sub)
    if kind == "place":
        if not value:
            return None
        return value.get("name") or value.get("address") or {k: value.get(k) for k in ("lat", "lon")}
    if kind == "button":
        return None
    logger.info("unknown Notion property type %s", kind)
    return value if isinstance(value, str | int | float | bool) else None


def properties_to_metadata(properties: dict) -> dict:
    """Page properties → ``{snake_case_name: plain JSON value}`` (names de-duplicated)."""
    meta: dict[str, Any] = {}
    for name, prop in (properties or {}).items():
        if not isinstance(prop, dict):
            continue
        key = markup.normalise_key(name)
        base, n = key, 1
        while key in meta:
            n += 1
            key = f"{base}_{n}"
        meta[key] = _property_value(prop)
    return meta


# -- pages → documents -------------------------------------------------------------------------
def _find(properties: dict, *names: str, types: tuple[str, ...] = ()) -> tuple[str, dict] | None:
    lowered = {n.lower(): n for n in properties}
    for name in names:
        if name in lowered and (not types or properties[lowered[name]].get("type") in types):
            return lowered[name], properties[lowered[name]]
    return None


def page_title(page: dict) -> str:
    for prop in (page.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "title":
            return _plain(prop.get("title")).strip()
    return ""


def page_to_document(
    page: dict, blocks: list[dict], *, collection: str = "notion", project: str | None = None,
    visibility: str = "public",
) -> SourceDocument:  # fmt: skip
    """A Notion page and its block tree → one document, a unit per heading section.

    Anchors are heading block ids (Notion keeps them across edits) and ``u_0`` for the text
    before the first heading, so editing one section re-embeds only that section.
    """
    page_id = page.get("id") or ""
    if not page_id:
        raise ValueError("page has no id")
    properties = page.get("properties") or {}
    title = page_title(page)
    meta = properties_to_metadata(properties)
    meta.update({"notion_id": page_id, "last_edited_time": page.get("last_edited_time")})

    date = None
    found = _find(properties, "date", "entry date", "day", types=("date",))
    if found is None:
        found = next(((n, p) for n, p in properties.items() if p.get("type") == "date"), None)
    if found is not None:
        date = markup.parse_date((found[1].get("date") or {}).get("start"))
    date = date or markup.parse_date(page.get("created_time"))

    domain = ""
    for name in ("domain", "category"):
        hit = _find(properties, name)
        if hit:
            value = _property_value(hit[1])
            domain = value[0] if isinstance(value, list) and value else value if isinstance(value, str) else ""
            if domain:
                break
    tags = _find(properties, "tags", "tag", types=("multi_select",))
    tag_props = [tags[1]] if tags else [p for p in properties.values() if p.get("type") == "multi_select"]
    concepts = list(dict.fromkeys(markup.concept_key(t) for p in tag_props for t in _property_value(p)))
    people: list[str] = []
    for prop in properties.values():
        if prop.get("type") == "people":
            people.extend(n for n in _property_value(prop) if n not in people)
    meta["people"] = people

    sections: list[tuple[str, list[str], list[dict]]] = [("u_0", [], [])]
    path: list[tuple[int, str]] = []
    for block in blocks:
        level = _HEADINGS.get(block.get("type", ""))
        if level:
            heading = _plain(block[block["type"]].get("rich_text")).strip()
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, heading))
            sections.append((f"h-{block.get('id', len(sections))}", [h for _, h in path], [block]))
        else:
            sections[-1][2].append(block)

    units: list[Unit] = []
    pending = ""  # headings with nothing under them are carried into the next section
    for i, (anchor, heading_path, section_blocks) in enumerate(sections):
        text = blocks_to_markdown(section_blocks)
        if not text.strip():
            continue
        only_heading = (
            len(section_blocks) == 1
            and section_blocks[0].get("type") in _HEADINGS
            and not section_blocks[0].get("children")
        )
        if only_heading and i < len(sections) - 1:
            pending = f"{pending}\n\n{text}" if pending else text
            continue
        if pending:
            text, pending = f"{pending}\n\n{text}", ""
        units.append(
            Unit(
                unit_anchor=anchor, content=text, title=title,
                breadcrumb=" > ".join([title, *heading_path]) if title else " > ".join(heading_path),
                url=page.get("url", ""), domain=domain[:100], concepts=concepts,
                code_languages=markup.code_languages(text), has_image=markup.has_image(text),
                date=date, metadata=dict(meta),
            )
        )  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="notion_page", source_id=page_id, units=units,
        visibility=visibility, project=project,
    )  # fmt: skip


def webhook_to_document(payload: dict, *, collection: str = "notion") -> SourceDocument:
    """The n8n payload of seed 001 → one document with a single unit ``u_0``.

    One unit keeps chunk uids exactly as seed 001 wrote them
    (``notion:notion_note:{page_id}:u_0:{i}``); ``split_text`` cuts the content at 1000/180.
    Raises ``ValueError`` naming the offending field for anything malformed.
    """
    if not isinstance(payload, dict):
        raise ValueError("payload must be a JSON object")
    unknown = sorted(set(payload) - _WEBHOOK_FIELDS)
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(unknown)}")
    page_id = payload.get("page_id")
    if not isinstance(page_id, str) or not page_id.strip():
        raise ValueError("page_id is required and must be a non-empty string")
    page_id = page_id.strip()
    props = payload.get("properties", {})
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise ValueError("properties must be an object")
    unknown = sorted(set(props) - _WEBHOOK_PROPERTIES)
    if unknown:
        raise ValueError(f"unknown properties field(s): {', '.join(unknown)}")
    content = payload.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise ValueError("content must be a string")
    url = payload.get("url") or ""
    if not isinstance(url, str):
        raise ValueError("url must be a string")
    for name in ("title", "category", "domain", "author", "entity"):
        if props.get(name) is not None and not isinstance(props[name], str):
            raise ValueError(f"properties.{name} must be a string")
    lists: dict[str, list[str]] = {}
    for name in ("tags", "people"):
        value = props.get(name)
        if value is None:
            value = []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"properties.{name} must be a list of strings")
        lists[name] = [v.strip() for v in value if v.strip()]
    date = None
    if props.get("date") not in (None, ""):
        raw = props["date"]
        date = markup.parse_date(raw)
        if date is None or not isinstance(raw, str):
            raise ValueError(f"properties.date is not an ISO date: {raw!r}")
        try:  # reject "2025-01-25garbage" that parse_date's 10-char prefix would accept
            dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"properties.date is not an ISO date: {raw!r}") from exc

    title = (props.get("title") or "").strip()
    author = (props.get("author") or "").strip()
    people = list(dict.fromkeys([*([author] if author else []), *lists["people"]]))
    domain = (props.get("domain") or "").strip() or (props.get("category") or "").strip()
    metadata = {
        "notion_id": page_id, "category": props.get("category") or "", "author": author,
        "people": people, "entity": props.get("entity") or "", "tags": lists["tags"],
    }  # fmt: skip
    units = []
    if content.strip():
        units.append(
            Unit(
                unit_anchor="u_0", content=content.strip(), title=title, breadcrumb=title, url=url,
                domain=domain[:100], concepts=list(dict.fromkeys(markup.concept_key(t) for t in lists["tags"])),
                code_languages=markup.code_languages(content), has_image=markup.has_image(content),
                date=date, metadata=metadata,
            )
        )  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="notion_note", source_id=page_id, units=units,
        chunk_size=1000, chunk_overlap=180,
    )  # fmt: skip


# -- pulling -----------------------------------------------------------------------------------
class NotionPullError(RuntimeError):
    """The Notion API kept failing after the retries we allow."""


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "status", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def _parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


class NotionPuller:
    """Reads pages and block trees from a ``notion_client.Client``-like object.

    Rate limits (HTTP 429 / ``rate_limited``) are waited out, honouring ``Retry-After``;
    5xx and timeouts are retried with exponential backoff a few times. ``sleep`` is injectable
    so tests don't wait. Works with both API shapes: ``databases.query`` (before 2025-09-03)
    and ``data_sources.query`` (a database's ``data_sources`` listed by ``databases.retrieve``).
    """

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep,
                 max_retries: int = 5, backoff: float = 1.0, max_backoff: float = 60.0,
                 page_size: int = 100, max_depth: int = 25) -> None:  # fmt: skip
        self.client = client
        self.sleep = sleep
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.page_size = page_size
        self.max_depth = max_depth
        self.calls = 0

    def _call(self, fn: Callable[..., dict], **kwargs: Any) -> dict:
        attempt = 0
        while True:
            self.calls += 1
            try:
                return fn(**kwargs)
            except Exception as exc:
                status = _status(exc)
                code = getattr(exc, "code", None)
                code = getattr(code, "value", code)
                limited = status == 429 or code == "rate_limited"
                transient = limited or (status is not None and status >= 500) or code in (
                    "notionhq_client_request_timeout", "service_unavailable", "internal_server_error",
                )  # fmt: skip
                if not transient or attempt >= self.max_retries:
                    if transient:
                        raise NotionPullError(f"Notion API failed after {attempt + 1} attempts: {exc}") from exc
                    raise
                wait = _retry_after(exc) if limited else None
                if wait is None:
                    wait = min(self.max_backoff, self.backoff * 2**attempt) * (1 + random.random() / 4)
                logger.warning("Notion %s (status %s); retrying in %.1fs", code or "error", status, wait)
                self.sleep(wait)
                attempt += 1

    def _paginate(self, fn: Callable[..., dict], **kwargs: Any) -> Iterator[dict]:
        cursor = None
        while True:
            args = dict(kwargs, page_size=self.page_size)
            if cursor:
                args["start_cursor"] = cursor
            response = self._call(fn, **args)
            yield from response.get("results") or []
            cursor = response.get("next_cursor")
            if not response.get("has_more") or not cursor:
                return

    def _query_targets(self, database_id: str) -> list[tuple[Callable[..., dict], dict]]:
        data_sources = getattr(self.client, "data_sources", None)
        if data_sources is not None and hasattr(data_sources, "query"):
            if not hasattr(self.client.databases, "retrieve"):
                return [(data_sources.query, {"data_source_id": database_id})]
            try:
                database = self._call(self.client.databases.retrieve, database_id=database_id)
            except Exception as exc:
                if _status(exc) not in (400, 404):
                    raise
                # Not a database id: callers may pass a data source id directly.
                return [(data_sources.query, {"data_source_id": database_id})]
            sources = database.get("data_sources") or []
            if sources:
                return [(data_sources.query, {"data_source_id": s["id"]}) for s in sources]
        return [(self.client.databases.query, {"database_id": database_id})]

    def iter_pages(self, *, database_ids: list[str] | None = None,
                   since: dt.datetime | None = None) -> Iterator[dict]:  # fmt: skip
        """Pages of the given databases (or every page the integration can see), newest edits
        first where the API sorts; only pages edited after ``since`` when it is given."""
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=dt.UTC)

        def fresh(page: dict) -> bool:
            if page.get("object", "page") != "page" or page.get("in_trash") or page.get("archived"):
                return False
            edited = _parse_time(page.get("last_edited_time"))
            return since is None or edited is None or edited > since

        sort = {"timestamp": "last_edited_time", "direction": "descending"}
        if database_ids is None:
            for page in self._paginate(self.client.search, filter={"property": "object", "value": "page"},
                                       sort=sort):  # fmt: skip
                edited = _parse_time(page.get("last_edited_time"))
                if since is not None and edited is not None and edited <= since:
                    return  # sorted newest first: everything after this is older
                if fresh(page):
                    yield page
            return
        for database_id in database_ids:
            for fn, args in self._query_targets(database_id):
                if since is not None:
                    args["filter"] = {"timestamp": "last_edited_time",
                                      "last_edited_time": {"after": since.isoformat()}}  # fmt: skip
                args["sorts"] = [sort]
                for page in self._paginate(fn, **args):
                    if fresh(page):
                        yield page

    def fetch_blocks(self, block_id: str, *, _depth: int = 0) -> list[dict]:
        """Every child block of ``block_id``, recursively, children attached as ``"children"``.

        Child pages and databases are separate sources, so the walk does not descend into them.
        """
        blocks = list(self._paginate(self.client.blocks.children.list, block_id=block_id))
        for block in blocks:
            kind = block.get("type")
            if block.get("has_children") and kind not in ("child_page", "child_database"):
                if _depth >= self.max_depth:
                    logger.warning("Notion block %s nested deeper than %d; not descending", block.get("id"), self.max_depth)
                    continue
                block["children"] = self.fetch_blocks(block["id"], _depth=_depth + 1)
        return blocks

    def fetch_document(self, page: dict, **kwargs: Any) -> SourceDocument:
        """Convenience: a page's blocks fetched and turned into a document."""
        return page_to_document(page, self.fetch_blocks(page["id"]), **kwargs)
