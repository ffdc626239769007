"""Pulling from the Notion API: pages and block trees, with rate limits and retries.

``NotionPuller`` talks to a ``notion_client.Client``-like object (duck-typed, so tests pass a
fake) and hands back page and block dicts; nothing here writes to the database.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from ingestion.sources.notion.pages import page_to_document
from rag.units import SourceDocument

logger = logging.getLogger(__name__)


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
                    logger.warning(
                        "Notion block %s nested deeper than %d; not descending", block.get("id"), self.max_depth
                    )
                    continue
                block["children"] = self.fetch_blocks(block["id"], _depth=_depth + 1)
        return blocks

    def fetch_document(self, page: dict, **kwargs: Any) -> SourceDocument:
        """Convenience: a page's blocks fetched and turned into a document."""
        return page_to_document(page, self.fetch_blocks(page["id"]), **kwargs)
