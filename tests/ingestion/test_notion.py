"""Notion: real API fixtures → markdown/metadata, webhook validation, the puller against fakes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from ingestion.sources.notion import (
    NotionPuller,
    NotionPullError,
    blocks_to_markdown,
    canonical_page_id,
    page_to_document,
    properties_to_metadata,
    rich_text_to_markdown,
    webhook_delivery,
    webhook_to_document,
)
from rag.chunking import split_text
from tests.conftest import shared_data


def _fixtures() -> Path:
    return shared_data("notion") / "notion_ruby_mapping_fixtures"


def _load(name: str) -> dict:
    return json.loads((_fixtures() / f"{name}.json").read_text())


def _test_page_blocks() -> list[dict]:
    """The recorded children of the fixture page, with their own recorded children attached."""
    blocks = _load("retrieve_block_children_block_test_page")["results"]
    for block in blocks:
        if block["type"] == "table":
            block["children"] = _load("retrieve_block_children_table")["results"]
        if block["type"] == "column_list":
            columns = _load("retrieve_block_children_column_list")["results"]
            for column in columns:
                column["children"] = _load("retrieve_block_children_column1")["results"]
            block["children"] = columns
    return blocks


# -- blocks → markdown (real responses) --------------------------------------------------------
def test_real_page_blocks_to_markdown():
    md = blocks_to_markdown(_test_page_blocks())
    expected = [
        "Text", "Page: Child page", "Database: Child database", "# Heading 1", "## Heading 2",
        "### Heading 3", "| Title | Contents |\n| --- | --- |\n| Title 1 | Contents 1 |",
        "- Bulleted list\n1. Numbered list\n- Toggle", "> Quote", "\n---\n", "> ✅ Callout",
        "Inline contents: @Hiroyuki KOBAYASHI, [notion_ruby_mapping_test_data](https://www.notion.so/",
        "$y = f(x)$", "![image](https://cdn.worldvectorlogo.com/logos/notion-logo-1.svg)",
        "https://hkob.notion.site/", "[video](https://youtu.be/gp2yhkVw0z4)",
        "```shell\n% ls -l\n```", "$$\nx = \\frac{-b\\pm\\sqrt{b^2-4ac}}{2a}\n$$",
        "# Toggle Heading 1", "[file](https://s3.us-west-2.amazonaws.com/",
        "https://twitter.com/hkob/status/1517825460025331712",
        "https://www.dropbox.com/s/8d6kjlpdlfqiec5/complex.pdf?dl=0", "left",
    ]  # fmt: skip
    for piece in expected:
        assert piece in md, piece
    # Table of contents, breadcrumb, template and unsupported blocks render to nothing.
    assert "Add a new to-do" not in md and "table_of_contents" not in md


def _single_block_fixtures() -> list[str]:
    folder = shared_data("notion") / "notion_ruby_mapping_fixtures"
    return sorted(p.stem for p in folder.glob("retrieve_block_*.json")
                  if json.loads(p.read_text()).get("object") == "block")  # fmt: skip


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("retrieve_block_paragraph", None), ("retrieve_block_heading_1", "# "),
        ("retrieve_block_heading_2", "## "), ("retrieve_block_heading_3", "### "),
        ("retrieve_block_heading_4", "#### "), ("retrieve_block_bulleted_list_item", "- "),
        ("retrieve_block_numbered_list_item", "1. "), ("retrieve_block_to_do", ""),
        ("retrieve_block_toggle", "- "), ("retrieve_block_quote", "> "),
        ("retrieve_block_callout", "> ✅ "), ("retrieve_block_code", "```"),
        ("retrieve_block_divider", "---"), ("retrieve_block_equation", "$$"),
        ("retrieve_block_image_external", "!["), ("retrieve_block_image_file", "!["),
        ("retrieve_block_file", "["), ("retrieve_block_pdf", "["), ("retrieve_block_video", "["),
        ("retrieve_block_audio", "["), ("retrieve_block_bookmark", "http"),
        ("retrieve_block_embed_twitter", "https://twitter.com"),
        ("retrieve_block_link_preview_dropbox", "https://www.dropbox.com"),
        ("retrieve_block_child_page", "Page: "), ("retrieve_block_child_database", "Database: "),
        ("retrieve_block_link_to_page", "[linked page](https://www.notion.so/"),
    ],
)  # fmt: skip
def test_each_real_block_type(name, expected):
    block = _load(name)
    md = blocks_to_markdown([block])
    if expected == "":  # the recorded to-do is empty: an empty checkbox says nothing
        assert md == ""
        return
    assert md.strip(), f"{name} rendered to nothing"
    if expected:
        assert md.startswith(expected), md


def test_every_recorded_block_renders_without_error():
    names = _single_block_fixtures()
    assert len(names) > 40
    for name in names:
        assert isinstance(blocks_to_markdown([_load(name)]), str)


def test_nested_lists_todo_toggle_and_containers():
    def block(kind, text="", children=(), **extra):
        data = {"rich_text": [{"type": "text", "plain_text": text, "annotations": {}}], **extra}
        return {"id": text or kind, "type": kind, kind: data, "children": list(children)}

    blocks = [
        block("numbered_list_item", "first", [block("bulleted_list_item", "nested")]),
        block("numbered_list_item", "second"),
        block("to_do", "done", checked=True),
        block("to_do", "open", checked=False),
        block("toggle", "More", [block("paragraph", "hidden detail")]),
        {"id": "s", "type": "synced_block", "synced_block": {"synced_from": None},
         "children": [block("paragraph", "synced text")]},
        {"id": "c", "type": "callout", "callout": {"rich_text": [{"plain_text": "Note"}],
         "icon": {"type": "emoji", "emoji": "💡"}}, "children": [block("paragraph", "inside")]},
        {"id": "x", "type": "brand_new_block", "brand_new_block": {}},
    ]  # fmt: skip
    md = blocks_to_markdown(blocks)
    assert "1. first\n   - nested\n2. second\n- [x] done\n- [ ] open\n- More\n  hidden detail" in md
    assert "synced text" in md
    assert "> 💡 Note\n>\n> inside" in md
    assert "brand_new_block" not in md


def test_rich_text_annotations_and_links():
    def rt(text, href=None, **ann):
        return {"type": "text", "plain_text": text, "href": href, "annotations": ann}

    md = rich_text_to_markdown([
        rt("bold ", bold=True), rt("italic", italic=True), rt(" and "), rt("code", code=True),
        rt(" "), rt("gone", strikethrough=True), rt(" "), rt("site", href="https://x.org"),
    ])  # fmt: skip
    assert md == "**bold** *italic* and `code` ~~gone~~ [site](https://x.org)"


# -- properties ---------------------------------------------------------------------------------
def test_properties_of_every_type_from_a_real_page():
    meta = properties_to_metadata(_load("retrieve_page_db_first")["properties"])
    assert meta["title"] == "ABC"
    assert meta["text_title"] == "def"
    assert meta["number_title"] == 1.41421356
    assert meta["select_title"] == "Select 3"
    assert meta["status_title"] == "In progress"
    assert meta["multi_select_title"] == ["Multi Select 2", "Multi Select 1"]
    assert meta["date_title"] == {"start": "2022-02-25T01:23:00.000+09:00", "end": None}
    assert meta["user_title"] == ["Hiroyuki KOBAYASHI"]
    assert meta["checkbox_title"] is True
    assert meta["url_title"] == "https://hkob.hatenablog.com/"
    assert meta["mail_title"] == "hkobhkob@gmail.com"
    assert meta["tel_title"] == "xx-xxxx-xxxx"
    assert meta["relation_title"] == ["860753bb-6d1f-48de-9621-1fa6e0e31f82"]
    assert meta["formula_title"] == {"start": "2025-08-31T09:43:00.000+00:00", "end": None}
    assert meta["rollup_title"] == ["Tag 1"]
    assert meta["created_time_title"] == "2022-02-07T21:29:00.000Z"
    assert meta["last_edited_time_title"] == "2022-09-01T04:35:00.000Z"
    assert meta["created_by_title"] == "Hiroyuki KOBAYASHI"
    assert meta["last_edited_by_title"] == "Hiroyuki KOBAYASHI"
    assert meta["file_media_title"] == ["https://img.icons8.com/ios-filled/250/000000/mac-os.png"]
    assert meta["id"] == "ST-3"
    json.dumps(meta)  # plain JSON all the way down

    second = properties_to_metadata(_load("retrieve_page_db_second")["properties"])
    assert second["date_title"] == {"start": "2022-02-11", "end": "2022-02-12"}


def test_verification_place_and_unicode_names():
    wiki = properties_to_metadata(_load("retrieve_page_wiki")["properties"])
    assert wiki["ページ"] == "Wiki page"
    assert wiki["有効期限"]["state"] == "expired"
    assert wiki["オーナー"] == ["Hiroyuki KOBAYASHI"]
    items = {"Where": _load("retrieve_property_place"), "Checked": _load("retrieve_property_verification")}
    meta = properties_to_metadata(items)
    assert meta["where"] is None
    assert meta["checked"]["state"] == "verified"
    assert meta["checked"]["date"] == {"start": "2025-08-31T15:00:00.000Z", "end": "2025-11-29T15:00:00.000Z"}


# -- page → document ---------------------------------------------------------------------------
def test_real_page_to_document():
    page = _load("retrieve_page_db_first")
    doc = page_to_document(page, _test_page_blocks(), collection="notion", project="p")
    assert doc.source_type == "notion_page" and doc.source_id == page["id"] and doc.project == "p"
    first = doc.units[0]
    assert first.unit_anchor == "u_0" and first.content.startswith("Text")
    assert first.title == "ABC" and first.url == page["url"]
    assert first.date == dt.date(2022, 2, 25)
    assert first.concepts == ["multi select 2", "multi select 1"]
    assert first.metadata["notion_id"] == page["id"]
    assert first.metadata["last_edited_time"] == "2022-09-01T04:35:00.000Z"
    assert first.metadata["people"] == ["Hiroyuki KOBAYASHI"]
    crumbs = [u.breadcrumb for u in doc.units]
    assert "ABC > Heading 1 > Heading 2 > Heading 3" in crumbs
    table_unit = next(u for u in doc.units if "| Title 1 |" in u.content)
    # Headings with nothing under them travel with the next section instead of being units.
    assert table_unit.content.startswith("# Heading 1\n\n## Heading 2\n\n### Heading 3")
    assert table_unit.unit_anchor == "h-fef62d73-8d83-4791-b2da-681816f56389"
    assert len({u.unit_anchor for u in doc.units}) == len(doc.units)


def _page(props: dict, **extra) -> dict:
    return {"object": "page", "id": "pg-1", "url": "https://notion.so/pg-1",
            "created_time": "2024-01-02T10:00:00.000Z", "last_edited_time": "2024-02-01T10:00:00.000Z",
            "properties": props, **extra}  # fmt: skip


def _heading(block_id: str, text: str) -> dict:
    return {"id": block_id, "type": "heading_2", "heading_2": {"rich_text": [{"plain_text": text}]}}


def _para(text: str) -> dict:
    return {"id": text[:8], "type": "paragraph", "paragraph": {"rich_text": [{"plain_text": text}]}}


def test_page_domain_tags_date_and_stable_heading_anchors():
    props = {
        "Name": {"type": "title", "title": [{"plain_text": "RAG design"}]},
        "Category": {"type": "select", "select": {"name": "ideas"}},
        "Domain": {"type": "select", "select": {"name": "ai-systems"}},
        "Tags": {"type": "multi_select", "multi_select": [{"name": "RAG"}, {"name": "Search"}]},
        "Other": {"type": "multi_select", "multi_select": [{"name": "ignored"}]},
        "Date": {"type": "date", "date": {"start": "2025-01-25"}},
        "Friends": {"type": "people", "people": [{"name": "Ana"}, {"name": "Bo"}]},
    }
    blocks = [_para("Intro"), _heading("h1", "Retrieval"), _para("Hybrid search."),
              _heading("h2", "Answers"), _para("Cited answers.")]  # fmt: skip
    doc = page_to_document(_page(props), blocks)
    assert [u.unit_anchor for u in doc.units] == ["u_0", "h-h1", "h-h2"]
    unit = doc.units[1]
    assert unit.domain == "ai-systems" and unit.concepts == ["rag", "search"]
    assert unit.date == dt.date(2025, 1, 25) and unit.breadcrumb == "RAG design > Retrieval"
    assert unit.metadata["people"] == ["Ana", "Bo"] and unit.metadata["category"] == "ideas"
    # Editing one section leaves the other anchors and contents alone.
    blocks[2] = _para("Hybrid search with RRF.")
    again = page_to_document(_page(props), blocks)
    assert [u.unit_anchor for u in again.units] == ["u_0", "h-h1", "h-h2"]
    assert again.units[2].content == doc.units[2].content

    no_domain = page_to_document(_page({k: v for k, v in props.items() if k not in ("Domain", "Date")}), blocks)
    assert no_domain.units[0].domain == "ideas"
    assert no_domain.units[0].date == dt.date(2024, 1, 2)  # created_time fallback


# -- webhook ------------------------------------------------------------------------------------
SEED_PAYLOAD = {
    "page_id": "abc123-notion-page-id",
    "properties": {"title": "RAG System Design Discussion", "category": "transcripts",
                   "domain": "ai-systems", "tags": ["rag", "architecture"], "date": "2025-01-25",
                   "author": "keith"},
    "content": "# RAG System Design\n\n" + "Full page content about retrieval. " * 60,
    "url": "https://notion.so/rag-abc123",
}  # fmt: skip


def test_webhook_seed_payload():
    from rag.services import make_chunk_uid

    doc = webhook_to_document(SEED_PAYLOAD)
    assert (doc.collection, doc.source_type, doc.source_id) == ("notion", "notion_note", "abc123-notion-page-id")
    (unit,) = doc.units
    assert unit.domain == "ai-systems" and unit.concepts == ["rag", "architecture"]
    assert unit.date == dt.date(2025, 1, 25) and unit.url == "https://notion.so/rag-abc123"
    assert unit.metadata["people"] == ["keith"] and unit.metadata["category"] == "transcripts"
    pieces = split_text(unit.content, size=doc.chunk_size, overlap=doc.chunk_overlap)
    assert len(pieces) > 1
    uids = [make_chunk_uid(doc.collection, doc.source_type, doc.source_id, unit.unit_anchor, i)
            for i in range(len(pieces))]  # fmt: skip
    assert uids[1] == "notion:notion_note:abc123-notion-page-id:u_0:1"

    payload = {**SEED_PAYLOAD, "properties": {"category": "research", "tags": []}}
    assert webhook_to_document(payload).units[0].domain == "research"


def test_webhook_takes_property_names_as_a_notion_database_spells_them():
    payload = {**SEED_PAYLOAD, "properties": {
        "Title": "RAG System Design Discussion", " TAGS ": ["rag"], "Date": {"start": "2025-01-25", "end": None},
        "Author": "keith", "Due Date": "2025-02-01", "Notion ID": "shadow", "Status": "Draft",
    }}  # fmt: skip
    (unit,) = webhook_to_document(payload).units
    assert unit.title == "RAG System Design Discussion" and unit.concepts == ["rag"]
    assert unit.date == dt.date(2025, 1, 25) and unit.metadata["author"] == "keith"
    # Unmapped properties are kept (normalised), never over the webhook's own metadata.
    assert unit.metadata["due_date"] == "2025-02-01" and unit.metadata["status"] == "Draft"
    assert unit.metadata["notion_id"] == "abc123-notion-page-id" and unit.metadata["notion_id_2"] == "shadow"
    # A people or multi-select property for a one-value field: its first value (all authors are people).
    payload["properties"] = {"Author": ["Keith", "Ann"], "Category": ["transcripts", "notes"], "Entity": []}
    (unit,) = webhook_to_document(payload).units
    assert unit.metadata["author"] == "Keith" and unit.metadata["people"] == ["Keith", "Ann"]
    assert unit.domain == "transcripts" and unit.metadata["entity"] == ""


@pytest.mark.parametrize(
    "raw",
    [
        "1f2e3d4c-5b6a-7988-0123-456789abcdef", "1f2e3d4c5b6a79880123456789abcdef", "1F2E3D4C5B6A79880123456789ABCDEF",
        "https://www.notion.so/acme/RAG-Design-1f2e3d4c5b6a79880123456789abcdef?pvs=4",
        " https://www.notion.so/1f2e3d4c5b6a79880123456789abcdef ",
    ],
)  # fmt: skip
def test_a_notion_page_id_has_one_canonical_form(raw):
    assert canonical_page_id(raw) == "1f2e3d4c-5b6a-7988-0123-456789abcdef"
    assert webhook_to_document({**SEED_PAYLOAD, "page_id": raw}).source_id == "1f2e3d4c-5b6a-7988-0123-456789abcdef"


def test_webhook_delivery_reads_notions_flags_and_edit_time():
    checked = webhook_delivery({"page_id": "p1", "archived": True, "last_edited_time": "2025-01-25T10:00:00.000Z"})
    assert checked.gone and checked.edited_at == dt.datetime(2025, 1, 25, 10, tzinfo=dt.UTC)
    assert webhook_delivery({"page_id": "p1", "in_trash": True}).gone
    assert not webhook_delivery({**SEED_PAYLOAD, "archived": False}).gone


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"page_id": None}, "page_id"),
        ({"page_id": "  "}, "page_id"),
        ({"properties": ["title"]}, "properties must be an object"),
        ({"properties": {"date": "25/01/2025"}}, "properties.date"),
        ({"properties": {"date": "2025-02-30"}}, "properties.date"),
        ({"properties": {"date": "2025-01-25garbage"}}, "properties.date"),
        ({"properties": {"tags": "rag"}}, "properties.tags"),
        ({"properties": {"tags": ["rag", 3]}}, "properties.tags"),
        ({"properties": {"Title": "A", "title": "B"}}, "are the same property (title)"),
        ({"archived": "yes"}, "archived must be true or false"),
        ({"properties": {"Title": ["a"]}}, "properties.title must be a string"),
        ({"properties": {"author": 7}}, "properties.author must be a string or a list of strings"),
        ({"last_edited_time": "yesterday"}, "last_edited_time"),
        ({"content": {"blocks": []}}, "content must be a string"),
        ({"extra": 1}, "unknown field(s): extra"),
        ({"url": 5}, "url"),
    ],
)
def test_webhook_rejects_bad_payloads(change, message):
    payload = {**SEED_PAYLOAD, **change}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        webhook_delivery(payload)


def test_webhook_missing_page_id_and_non_object():
    with pytest.raises(ValueError, match="page_id"):
        webhook_to_document({k: v for k, v in SEED_PAYLOAD.items() if k != "page_id"})
    with pytest.raises(ValueError, match="JSON object"):
        webhook_to_document(["not", "a", "dict"])  # type: ignore[arg-type]


# -- puller against fakes -----------------------------------------------------------------------
class ApiError(Exception):
    def __init__(self, status: int, code: str, headers: dict | None = None):
        super().__init__(f"{status} {code}")
        self.status, self.code, self.headers = status, code, headers or {}


class FakeClient:
    """Pages and blocks in memory, served in pages of ``page_size`` with opaque cursors."""

    def __init__(self, pages: list[dict], children: dict[str, list[dict]], failures: list | None = None):
        self._pages, self._children = pages, children
        self.failures = list(failures or [])
        self.requests: list[tuple[str, dict]] = []
        self.search = self._endpoint("search", lambda kw: self._pages)
        self.databases = SimpleNamespace(query=self._endpoint("databases.query", self._query))
        self.blocks = SimpleNamespace(children=SimpleNamespace(
            list=self._endpoint("blocks.children.list",
                                lambda kw: self._children.get(kw["block_id"], []))))  # fmt: skip

    def _query(self, kw):
        pages = self._pages
        after = (kw.get("filter") or {}).get("last_edited_time", {}).get("after")
        if after:
            pages = [p for p in pages if p["last_edited_time"] > after.replace("+00:00", ".000Z")]
        return pages

    def _endpoint(self, name, items_for):
        def call(**kw):
            self.requests.append((name, kw))
            if self.failures:
                raise self.failures.pop(0)
            items = items_for(kw)
            start = int(kw.get("start_cursor") or 0)
            size = kw.get("page_size", 100)
            chunk = items[start : start + size]
            more = start + size < len(items)
            return {"object": "list", "results": chunk, "has_more": more,
                    "next_cursor": str(start + size) if more else None}  # fmt: skip

        return call


def _pages(n: int) -> list[dict]:
    return [{"object": "page", "id": f"p{i}", "last_edited_time": f"2024-01-{i + 1:02d}T00:00:00.000Z",
             "properties": {}} for i in range(n)]  # fmt: skip


def test_puller_paginates_database_query_and_filters_since():
    client = FakeClient(list(reversed(_pages(7))), {})
    puller = NotionPuller(client, page_size=3, sleep=lambda s: None)
    assert [p["id"] for p in puller.iter_pages(database_ids=["db"])] == [f"p{i}" for i in range(6, -1, -1)]
    queries = [kw for name, kw in client.requests if name == "databases.query"]
    assert [kw.get("start_cursor") for kw in queries] == [None, "3", "6"]
    since = dt.datetime(2024, 1, 4, tzinfo=dt.UTC)
    assert [p["id"] for p in puller.iter_pages(database_ids=["db"], since=since)] == ["p6", "p5", "p4"]


def test_puller_search_stops_at_since():
    client = FakeClient(list(reversed(_pages(10))), {})
    puller = NotionPuller(client, page_size=2, sleep=lambda s: None)
    got = [p["id"] for p in puller.iter_pages(database_ids=None, since=dt.datetime(2024, 1, 8))]
    assert got == ["p9", "p8"]
    assert len([r for r in client.requests if r[0] == "search"]) == 2  # stopped early


def test_puller_uses_data_sources_when_available():
    client = FakeClient(_pages(2), {})
    seen = []
    client.databases = SimpleNamespace(
        retrieve=lambda database_id: {"object": "database", "data_sources": [{"id": "ds1"}, {"id": "ds2"}]},
    )
    client.data_sources = SimpleNamespace(query=lambda **kw: seen.append(kw["data_source_id"]) or
                                          {"results": _pages(1), "has_more": False})  # fmt: skip
    pages = list(NotionPuller(client, sleep=lambda s: None).iter_pages(database_ids=["db"]))
    assert seen == ["ds1", "ds2"] and len(pages) == 2


def test_fetch_blocks_paginates_and_nests_children():
    def para(i, has_children=False):
        return {"id": f"b{i}", "type": "paragraph", "has_children": has_children,
                "paragraph": {"rich_text": [{"plain_text": f"text {i}"}]}}  # fmt: skip

    children = {
        "page": [para(0, True), para(1), para(2), {"id": "cp", "type": "child_page", "has_children": True,
                                                   "child_page": {"title": "Sub"}}],
        "b0": [para(10, True)],
        "b10": [para(100)],
        "cp": [para(999)],
    }  # fmt: skip
    client = FakeClient([], children)
    blocks = NotionPuller(client, page_size=2, sleep=lambda s: None).fetch_blocks("page")
    assert [b["id"] for b in blocks] == ["b0", "b1", "b2", "cp"]
    assert blocks[0]["children"][0]["children"][0]["id"] == "b100"
    assert "children" not in blocks[3]  # child pages are separate sources
    assert "text 100" in blocks_to_markdown(blocks)


def test_rate_limit_honours_retry_after_then_succeeds():
    waits: list[float] = []
    client = FakeClient(_pages(1), {}, failures=[ApiError(429, "rate_limited", {"retry-after": "7"}),
                                                 ApiError(503, "service_unavailable")])  # fmt: skip
    puller = NotionPuller(client, sleep=waits.append, backoff=0.5)
    assert [p["id"] for p in puller.iter_pages(database_ids=["db"])] == ["p0"]
    assert waits[0] == 7.0
    assert 1.0 <= waits[1] <= 1.0 * 1.25  # second retry: 0.5 * 2, plus jitter


def test_persistent_5xx_gives_up_and_4xx_is_not_retried():
    waits: list[float] = []
    client = FakeClient(_pages(1), {}, failures=[ApiError(502, "bad_gateway")] * 10)
    with pytest.raises(NotionPullError, match="after 4 attempts"):
        list(NotionPuller(client, sleep=waits.append, max_retries=3).iter_pages(database_ids=["db"]))
    assert len(waits) == 3
    client = FakeClient(_pages(1), {}, failures=[ApiError(400, "validation_error")])
    with pytest.raises(ApiError):
        list(NotionPuller(client, sleep=waits.append).iter_pages(database_ids=["db"]))
    assert len(waits) == 3


def test_real_notion_client_rate_limited_response():
    """The real SDK's 429 error (status, code, headers) is understood by the puller."""
    from notion_client import Client

    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "3"},
                                  json={"object": "error", "status": 429, "code": "rate_limited",
                                        "message": "slow down"})  # fmt: skip
        return httpx.Response(200, json={"object": "list", "results": [_para("hello")],
                                         "has_more": False, "next_cursor": None})  # fmt: skip

    client = Client(auth="secret", retry=False, client=httpx.Client(transport=httpx.MockTransport(handler)))
    waits: list[float] = []
    blocks = NotionPuller(client, sleep=waits.append).fetch_blocks("blk")
    assert waits == [3.0] and len(calls) == 2 and blocks[0]["id"] == "hello"


def test_recorded_block_children_pagination_replayed():
    """Replays the notion-sdk-py cassette of a block listed two children at a time."""
    import yaml

    cassette = shared_data("notion") / "notion_sdk_py_tests" / "cassettes" / "test_iterate_paginated_api.yaml"
    recorded: dict[str | None, dict] = {}
    for interaction in yaml.safe_load(cassette.read_text())["interactions"]:
        request = interaction["request"]
        if request["method"] != "GET" or "/children" not in request["uri"]:
            continue
        url = httpx.URL(request["uri"])
        recorded.setdefault(url.params.get("start_cursor"), json.loads(interaction["response"]["body"]["string"]))

    def list_children(*, block_id, start_cursor=None, page_size=100):
        return recorded[start_cursor]

    client = SimpleNamespace(blocks=SimpleNamespace(children=SimpleNamespace(list=list_children)))
    blocks = NotionPuller(client, sleep=lambda s: None).fetch_blocks("393abc1e-edcd-814b-aee5-cf69471e5a43")
    assert len(blocks) == 5 and len({b["id"] for b in blocks}) == 5
    assert all(b["type"] == "paragraph" for b in blocks)


def test_data_source_id_passed_directly():
    """With Notion-Version 2025-09-03 callers may hold data source ids: a 404 from
    databases.retrieve means "query it as a data source"."""
    seen = []

    def retrieve(database_id):
        raise ApiError(404, "object_not_found")

    client = SimpleNamespace(
        databases=SimpleNamespace(retrieve=retrieve),
        data_sources=SimpleNamespace(query=lambda **kw: seen.append(kw["data_source_id"]) or
                                     {"results": _pages(2), "has_more": False}),
    )  # fmt: skip
    pages = list(NotionPuller(client, sleep=lambda s: None).iter_pages(database_ids=["ds-9"]))
    assert seen == ["ds-9"] and [p["id"] for p in pages] == ["p0", "p1"]
