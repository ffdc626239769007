"""notion_sync: only edited pages re-fetched, nested/paginated blocks, 429 backoff, vanished pages."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from notion_client import APIResponseError

from ingestion import services
from ingestion.models import IngestRun, NotionSyncState
from rag.models import Chunk
from tests.conftest import shared_data
from tests.ingestion.conftest import live_chunks, search_ids

pytestmark = pytest.mark.django_db


def rich(text: str) -> list[dict]:
    return [{"type": "text", "text": {"content": text, "link": None}, "plain_text": text, "href": None,
             "annotations": {"bold": False, "italic": False, "strikethrough": False, "underline": False,
                             "code": False, "color": "default"}}]  # fmt: skip


def block(block_id: str, kind: str, text: str = "", *, children: bool = False, **extra) -> dict:
    body = {"rich_text": rich(text), **extra} if kind != "divider" else {}
    return {"object": "block", "id": block_id, "type": kind, "has_children": children, kind: body}


def page(page_id: str, title: str, edited: str, *, tags=("javascript",)) -> dict:
    return {
        "object": "page", "id": page_id, "last_edited_time": edited, "created_time": "2024-01-01T00:00:00.000Z",
        "archived": False, "in_trash": False, "url": f"https://www.notion.so/{page_id.replace('-', '')}",
        "properties": {
            "Name": {"id": "title", "type": "title", "title": rich(title)},
            "Tags": {"id": "t", "type": "multi_select", "multi_select": [{"name": t} for t in tags]},
            "Date": {"id": "d", "type": "date", "date": {"start": "2024-05-02", "end": None}},
            "Reviewed": {"id": "r", "type": "checkbox", "checkbox": True},
        },
    }  # fmt: skip


def rate_limited(retry_after: str = "7") -> APIResponseError:
    """The exception notion-client raises on HTTP 429."""
    return APIResponseError(code="rate_limited", status=429, message="rate limited",
                            headers=httpx.Headers({"Retry-After": retry_after}), raw_body_text="{}")  # fmt: skip


class FakeNotion:
    """A notion-client stand-in serving hand-made pages one result per response (so every list is
    paginated), with optional failures injected before the next call."""

    def __init__(self):
        self.pages: dict[str, dict] = {}
        self.children: dict[str, list[dict]] = {}
        self.failures: list[Exception] = []
        self.calls: list[tuple[str, str]] = []
        self.databases = SimpleNamespace(query=self._query)
        self.blocks = SimpleNamespace(children=SimpleNamespace(list=self._children))

    def _paginate(self, items, kw):
        if self.failures:
            raise self.failures.pop(0)
        start = int(kw.get("start_cursor") or 0)
        more = start + 1 < len(items)
        return {"object": "list", "results": items[start : start + 1], "has_more": more,
                "next_cursor": str(start + 1) if more else None}  # fmt: skip

    def _query(self, **kw):
        self.calls.append(("query", kw["database_id"]))
        return self._paginate(sorted(self.pages.values(), key=lambda p: p["last_edited_time"], reverse=True), kw)

    def _children(self, **kw):
        self.calls.append(("children", kw["block_id"]))
        return self._paginate(self.children.get(kw["block_id"], []), kw)

    def fetched_pages(self) -> set[str]:
        return {bid for kind, bid in self.calls if kind == "children" and bid in self.pages}


@pytest.fixture
def notion():
    fake = FakeNotion()
    fake.pages["p-closures"] = page("p-closures", "Closures explained", "2024-05-02T10:00:00.000Z")
    fake.children["p-closures"] = [
        block("b1", "paragraph", "A closure captures variables from its defining scope."),
        block("b2", "heading_2", "Pitfalls"),
        block("b3", "bulleted_list_item", "Loops with var share one binding", children=True),
        block("b4", "code", "for (var i = 0; i < 3; i++) setTimeout(() => console.log(i));", language="javascript"),
    ]
    fake.children["b3"] = [block("b3a", "bulleted_list_item", "Use let to get a fresh binding per iteration")]
    fake.pages["p-promises"] = page("p-promises", "Promises", "2024-05-03T10:00:00.000Z", tags=("async",))
    fake.children["p-promises"] = [block("c1", "paragraph", "A promise settles once: fulfilled or rejected.")]
    return fake


def sync(fake, embedder, **kw):
    sleeps: list[float] = []
    run = services.notion_sync(client=fake, database_ids=["db1"], embedder=embedder, sleep=sleeps.append, **kw)
    return run, sleeps


def test_pull_indexes_pages_with_nested_blocks_and_metadata(notion, local_embedder):
    run, _ = sync(notion, local_embedder)
    assert run.status == "done" and run.sources == 2 and run.failed == 0 and run.created >= 3
    pitfalls = Chunk.objects.get(source_id="p-closures", breadcrumb="Closures explained > Pitfalls")
    assert "Use let to get a fresh binding" in pitfalls.content  # nested child fetched (paginated)
    assert "```javascript" in pitfalls.content and pitfalls.code_languages == ["javascript"]
    assert pitfalls.concepts == ["javascript"] and pitfalls.date.isoformat() == "2024-05-02"
    assert pitfalls.url == "https://www.notion.so/pclosures"
    assert pitfalls.metadata["reviewed"] is True  # every property type lands in metadata
    assert search_ids("why does a var loop log the same number", embedder=local_embedder)[0] == "p-closures"


def test_second_sync_fetches_nothing_and_changes_nothing(notion, local_embedder):
    sync(notion, local_embedder)
    notion.calls.clear()
    run, _ = sync(notion, local_embedder)
    assert notion.fetched_pages() == set()  # only the (cheap) page listing was read
    assert (run.created, run.updated, run.deleted, run.embedded, run.skipped) == (0, 0, 0, 0, 2)


def test_only_edited_pages_are_refetched_and_a_shrunk_page_leaves_no_orphans(notion, hashing_embedder):
    # hashing embedder: about fetch and chunk counts.
    sync(notion, hashing_embedder)
    before = Chunk.objects.filter(source_id="p-closures").count()
    assert before >= 2
    notion.pages["p-closures"]["last_edited_time"] = "2024-06-01T00:00:00.000Z"
    notion.children["p-closures"] = [block("b1", "paragraph", "A closure captures variables.")]
    notion.calls.clear()
    run, _ = sync(notion, hashing_embedder)
    assert notion.fetched_pages() == {"p-closures"}
    assert run.skipped == 1 and run.deleted == before - 1
    assert Chunk.objects.filter(source_id="p-closures").count() == 1


def test_rate_limit_waits_retry_after(notion, hashing_embedder):
    # hashing embedder: about backoff.
    notion.failures = [rate_limited("7"), rate_limited("3")]
    run, sleeps = sync(notion, hashing_embedder)
    assert run.status == "done" and sleeps[:2] == [7.0, 3.0]
    assert live_chunks(source_id="p-promises").exists()


def test_vanished_page_is_soft_deleted_then_revived(notion, hashing_embedder):
    # hashing embedder: about removal.
    sync(notion, hashing_embedder)
    gone = notion.pages.pop("p-promises")
    run, _ = sync(notion, hashing_embedder)
    assert run.removed == 1
    assert not live_chunks(source_id="p-promises").exists() and Chunk.objects.filter(source_id="p-promises").exists()
    assert NotionSyncState.objects.get(key="db1").known_page_ids == ["p-closures"]
    notion.pages["p-promises"] = gone  # shared again, same last_edited_time
    sync(notion, hashing_embedder)
    assert live_chunks(source_id="p-promises").exists()
    notion.pages.pop("p-promises")
    sync(notion, hashing_embedder, prune=True)
    assert not Chunk.objects.filter(source_id="p-promises").exists()


def test_listing_failure_removes_nothing(notion, hashing_embedder):
    # hashing embedder: about failure safety.
    sync(notion, hashing_embedder)
    notion.failures = [RuntimeError("network down")]
    with pytest.raises(RuntimeError, match="network down"):
        sync(notion, hashing_embedder)
    run = IngestRun.objects.latest("pk")
    assert run.status == "failed" and "network down" in run.message
    assert live_chunks(source_id="p-promises").exists() and live_chunks(source_id="p-closures").exists()


def test_dry_run_fetches_but_writes_nothing(notion, hashing_embedder):
    # hashing embedder: about writes.
    run, _ = sync(notion, hashing_embedder, dry_run=True)
    assert run.created >= 3 and not Chunk.objects.exists() and not NotionSyncState.objects.exists()


def test_command_without_token_says_what_to_set(settings):
    settings.NOTION_TOKEN = ""
    with pytest.raises(CommandError, match="NOTION_TOKEN is not set"):
        call_command("notion_sync", "--json")


def test_recorded_real_api_responses(hashing_embedder):
    """Replays real notion API responses: a data source query paginated over three responses
    (limit_2 → next_2 → last_2) and the recorded block tree of a real page."""
    # hashing embedder: the test is about the real response shapes flowing through the sync.
    root = shared_data("notion") / "notion_ruby_mapping_fixtures"

    def load(name):
        return json.loads((root / f"{name}.json").read_text())

    responses = [load("query_data_source_limit_2"), load("query_data_source_next_2"), load("query_data_source_last_2")]
    calls: list[dict] = []

    def query(**kw):
        calls.append(kw)
        return responses[len(calls) - 1]

    test_page = load("retrieve_block_children_block_test_page")

    def children(**kw):
        return test_page if kw["block_id"] == responses[0]["results"][0]["id"] else {"results": [], "has_more": False}

    client = SimpleNamespace(
        databases=SimpleNamespace(retrieve=lambda **kw: load("retrieve_database_database")),
        data_sources=SimpleNamespace(query=query),
        blocks=SimpleNamespace(children=SimpleNamespace(list=children)),
    )
    run = services.notion_sync(
        client=client, database_ids=["c37a2c66"], embedder=hashing_embedder, sleep=lambda s: None
    )
    assert run.status == "done" and run.sources == 5, run.errors
    assert calls[0]["data_source_id"] == "4f93db51-4e1d-4015-b07f-876e34c3b0b1"
    assert [c.get("start_cursor") for c in calls] == [None, responses[0]["next_cursor"], responses[1]["next_cursor"]]
    first = responses[0]["results"][0]["id"]
    contents = " ".join(Chunk.objects.filter(source_id=first).values_list("content", flat=True))
    assert "Heading 1" in contents and "% ls -l" in contents


def test_a_page_pushed_and_pulled_is_one_page_in_search(notion, hashing_embedder):
    """The webhook (notion_note) and the pull (notion_page) describe the same page: whichever
    arrived last is live, the other is hidden. (Stand-in embedder: this is about bookkeeping.)"""
    from ingestion.sources.notion import webhook_to_document
    from rag.services import chunk_upsert

    note = webhook_to_document({"page_id": "p-closures", "properties": {"title": "Closures (pushed)"},
                                "content": "Pushed copy of the closures page.", "url": ""})  # fmt: skip
    chunk_upsert(documents=[note], embedder=hashing_embedder)
    sync(notion, hashing_embedder)
    live = set(live_chunks().values_list("source_type", "source_id"))
    assert ("notion_page", "p-closures") in live and ("notion_note", "p-closures") not in live
