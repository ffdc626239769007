"""Per-source settings: a Notion journal database restricted to a project, its Family/Friends
multi-selects mapped to people, and the webhook unable to widen access.

The Notion API is replaced by a client serving pages in the API's recorded shape (parent data
source, typed properties, paginated block children) — the Notion service itself cannot run here.
Everything after it is real: the sync, PostgreSQL, the local embedding model, search, facets,
counting, ask and the document download.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from ingestion import services
from ingestion.models import NotionDelivery, SourceSetting
from ingestion.services.source_settings import source_setting_save
from rag.acl import Scope
from rag.answering.selectors import count_sources, facet_values
from rag.models import Chunk, Project
from rag.search import SearchFilters, chunk_search
from tests.conftest import shared_data

pytestmark = pytest.mark.django_db

DATABASE = "1a2b3c4d-0000-4000-8000-00000000da7a"
DATA_SOURCE = "5e6f7a8b-0000-4000-8000-000000000d5c"
SECRET = "s3cret-webhook"


def rich(text):
    return [{"type": "text", "text": {"content": text, "link": None}, "plain_text": text, "href": None,
             "annotations": {"bold": False, "italic": False, "strikethrough": False, "underline": False,
                             "code": False, "color": "default"}}]  # fmt: skip


def journal_page(n: int, day: str, family: list[str], friends: list[str], text: str) -> dict:
    page_id = f"00000000-0000-4000-8000-{n:012d}"
    return {
        "object": "page", "id": page_id, "created_time": f"{day}T20:00:00.000Z",
        "last_edited_time": f"{day}T21:00:00.000Z", "archived": False, "in_trash": False,
        "url": f"https://www.notion.so/{page_id.replace('-', '')}",
        "parent": {"type": "data_source_id", "data_source_id": DATA_SOURCE, "database_id": DATABASE},
        "properties": {
            "Name": {"id": "title", "type": "title", "title": rich(f"Journal {day}")},
            "Entry date": {"id": "d", "type": "date", "date": {"start": day, "end": None}},
            "Family": {"id": "f", "type": "multi_select",
                       "multi_select": [{"id": x, "name": x, "color": "blue"} for x in family]},
            "Friends": {"id": "g", "type": "multi_select",
                        "multi_select": [{"id": x, "name": x, "color": "red"} for x in friends]},
            "Mood": {"id": "m", "type": "select", "select": {"id": "m1", "name": "calm", "color": "green"}},
        },
        "_text": text,
    }  # fmt: skip


PAGES = [
    journal_page(1, "2026-03-02", ["Mum"], ["Leo"], "Climbed at the boulder gym with Leo, then dinner at Mum's."),
    journal_page(2, "2026-04-11", [], ["Leo", "Ana"], "Board games night; Leo won Catan twice."),
    journal_page(3, "2026-05-20", ["Mum", "Dad"], [], "Sunday lunch, Dad talked about his allotment tomatoes."),
    journal_page(4, "2026-06-07", [], ["Leo"], "Ran the harbour 10k with Leo in the rain."),
]


def fake_client(pages):
    """Serves ``pages`` like the Notion API: database → data source → query (one page per
    response, so the listing paginates) → block children."""
    by_id = {p["id"]: p for p in pages}

    def query(**kw):
        i = int(kw.get("start_cursor") or 0)
        page = {k: v for k, v in pages[i].items() if k != "_text"}
        more = i + 1 < len(pages)
        return {"object": "list", "results": [page], "has_more": more, "next_cursor": str(i + 1) if more else None}

    def children(**kw):
        text = by_id[kw["block_id"]]["_text"]
        return {"object": "list", "has_more": False, "next_cursor": None, "results": [
            {"object": "block", "id": kw["block_id"][:-4] + "b10c", "type": "paragraph", "has_children": False,
             "paragraph": {"rich_text": rich(text), "color": "default"}}]}  # fmt: skip

    return SimpleNamespace(
        databases=SimpleNamespace(retrieve=lambda **kw: {"object": "database", "id": DATABASE,
                                                         "data_sources": [{"id": DATA_SOURCE, "name": "Journal"}]}),
        data_sources=SimpleNamespace(query=query),
        blocks=SimpleNamespace(children=SimpleNamespace(list=children)),
    )  # fmt: skip


@pytest.fixture
def family(db, user):
    project = Project.objects.create(slug="family", name="Family")
    project.members.add(user)
    return project


@pytest.fixture(autouse=True)
def fresh_facets():
    cache.clear()  # facet values are cached per scope; each test sees its own data
    yield
    cache.clear()


def sync(embedder):
    run = services.notion_sync(client=fake_client(PAGES), database_ids=[DATABASE], embedder=embedder,
                               sleep=lambda s: None)  # fmt: skip
    assert run.status == "done", run.errors
    return run


def names(facet_list):
    return {f["value"]: f["count"] for f in facet_list}


def test_without_a_mapping_names_stay_out_of_people(local_embedder):
    sync(local_embedder)
    assert "Leo" not in names(facet_values(scope=Scope.everything(), use_cache=False).people)
    assert Chunk.objects.filter(visibility="public").count() == len(PAGES)  # today's default


def test_mapping_and_restriction_apply_to_a_pull(local_embedder, family, user, other_user):
    source_setting_save(kind="notion_database", key=DATABASE, visibility="restricted", project="family",
                        mapping={"people": ["Family", "Friends"], "date": "Entry date"})  # fmt: skip
    sync(local_embedder)
    member, outsider = Scope.for_user(user), Scope.for_user(other_user)

    people = names(facet_values(scope=member, use_cache=False).people)
    assert people["Leo"] == 3 and people["Mum"] == 2 and people["Ana"] == 1
    assert count_sources(scope=member, filters=SearchFilters(people=["Leo"])).sources == 3
    hits = chunk_search(query="running in the rain", scope=member, filters=SearchFilters(people=["Leo"])).hits
    assert hits and hits[0].metadata["people"] == ["Leo"] and str(hits[0].date) == "2026-06-07"

    # A non-member sees none of it: hits, facets, counts.
    assert chunk_search(query="Leo board games Catan", scope=outsider).hits == []
    assert "Leo" not in names(facet_values(scope=outsider, use_cache=False).people)
    assert count_sources(scope=outsider, filters=SearchFilters(people=["Leo"])).sources == 0


def test_counting_question_and_ask_respect_the_project(local_embedder, family, user, other_user, client):
    source_setting_save(kind="notion_database", key=DATA_SOURCE, visibility="restricted", project="family",
                        mapping={"people": ["Family", "Friends"], "date": "Entry date"})  # fmt: skip
    sync(local_embedder)
    client.force_login(user)
    body = client.post("/rag/ask", {"query": "How many times did I see Leo?"}, content_type="application/json").json()
    assert body["count"]["sources"] == 3 and body["count"]["target"] == "Leo"
    assert body["answer"].startswith("**3** ")
    client.force_login(other_user)
    cache.clear()
    body = client.post("/rag/ask", {"query": "How many times did I see Leo?"}, content_type="application/json").json()
    assert not body.get("count") or body["count"]["sources"] == 0
    assert "Catan" not in json.dumps(body) and "harbour" not in json.dumps(body)
    facets = client.get("/rag/facets").json()
    assert "Leo" not in [p["value"] for p in facets["people"]]


def test_changing_the_mapping_updates_stored_chunks_without_reembedding(local_embedder, family, user):
    setting, _ = source_setting_save(kind="notion_database", key=DATABASE, mapping={"people": ["Friends"]})
    sync(local_embedder)
    before = dict(Chunk.objects.values_list("chunk_uid", "content_hash"))
    embeddings = {uid: list(v) for uid, v in Chunk.objects.values_list("chunk_uid", "embedding")}
    assert "Mum" not in names(facet_values(scope=Scope.everything(), use_cache=False).people)

    _, changed = source_setting_save(kind="notion_database", key=DATABASE, visibility="restricted", project="family",
                                     mapping={"people": ["Family", "Friends"], "tags": ["Mood"]})  # fmt: skip
    assert changed == len(PAGES)
    assert dict(Chunk.objects.values_list("chunk_uid", "content_hash")) == before
    assert {uid: list(v) for uid, v in Chunk.objects.values_list("chunk_uid", "embedding")} == embeddings
    assert names(facet_values(scope=Scope.for_user(user), use_cache=False).people)["Mum"] == 2
    assert set(Chunk.objects.values_list("visibility", flat=True)) == {"restricted"}
    assert Chunk.objects.filter(metadata__tags=["calm"]).count() == len(PAGES)
    # The next pull agrees with what was re-applied: nothing to embed, nothing to rewrite.
    run = services.notion_sync(client=fake_client(PAGES), database_ids=[DATABASE], embedder=local_embedder,
                               full=True, sleep=lambda s: None)  # fmt: skip
    assert run.embedded == 0 and run.created == 0 and run.updated == 0


def test_bad_settings_are_refused(family):
    with pytest.raises(services.IngestError, match="needs a project"):
        source_setting_save(kind="notion_database", key=DATABASE, visibility="restricted")
    with pytest.raises(services.IngestError, match="unknown mapping target"):
        source_setting_save(kind="notion_database", key=DATABASE, mapping={"friends": ["Friends"]})
    with pytest.raises(CommandError, match="needs an owner"):
        call_command("source_settings", "set", "notion_database", DATABASE, "--visibility", "private")
    assert not SourceSetting.objects.exists()


# --- webhook: narrower only -----------------------------------------------------------------------


def deliver(api_client, **payload):
    body = {"page_id": "p-webhook-1", "content": "Met Leo for coffee at the harbour.",
            "properties": {"title": "Coffee", "people": ["Leo"]}, **payload}  # fmt: skip
    return api_client.post("/notion/ingest", data=json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {SECRET}")  # fmt: skip


@pytest.fixture
def webhook(settings):
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = SECRET
    settings.CELERY_TASK_ALWAYS_EAGER = True


def test_webhook_cannot_widen_but_may_narrow(api_client, webhook, family, local_embedder, user, other_user):
    source_setting_save(kind="notion_database", key=DATABASE, visibility="restricted", project="family")
    response = deliver(api_client, database_id=DATABASE, visibility="public")
    assert response.status_code == 400 and response.json()["error"] == "access_widening"
    Project.objects.create(slug="work", name="Work")
    response = deliver(api_client, database_id=DATABASE, visibility="restricted", project="work")
    assert response.status_code == 400 and "cannot move it" in response.json()["detail"]
    assert not NotionDelivery.objects.exists()

    # No visibility given: the database's setting applies.
    assert deliver(api_client, database_id=DATABASE).status_code == 202
    delivery = NotionDelivery.objects.get()
    services.notion_delivery_process(delivery_id=delivery.pk, embedder=local_embedder)
    chunk = Chunk.objects.get(source_id="p-webhook-1")
    assert chunk.visibility == "restricted" and chunk.project.slug == "family"
    assert chunk_search(query="coffee harbour", scope=Scope.for_user(other_user)).hits == []

    # A database without a setting is public, and a delivery may restrict its page.
    response = deliver(api_client, page_id="p-webhook-2", visibility="restricted", project="family")
    assert response.status_code == 202
    services.notion_delivery_process(delivery_id=response.json()["delivery_id"], embedder=local_embedder)
    assert Chunk.objects.get(source_id="p-webhook-2").visibility == "restricted"
    # Re-applying a wider setting later does not widen what a delivery narrowed.
    source_setting_save(kind="notion_database", key=DATABASE, visibility="public")
    assert Chunk.objects.get(source_id="p-webhook-1").visibility == "public"
    assert Chunk.objects.get(source_id="p-webhook-2").visibility == "restricted"


# --- folders --------------------------------------------------------------------------------------


def test_folder_setting_restricts_and_maps_markdown(tmp_path, local_embedder, family, other_user):
    folder = tmp_path / "journal"
    folder.mkdir()
    (folder / "2026-02-01.md").write_text("# Walk\n\nWalked the dog with Ana by the canal.\n")
    run = services.ingest_document_paths(paths=[folder], collection="diary", people=["Ana"])
    assert run.created and Chunk.objects.filter(visibility="public").exists()
    call_command("source_settings", "set", "folder", str(folder), "--visibility", "restricted", "--project", "family")
    assert set(Chunk.objects.filter(collection="diary").values_list("visibility", flat=True)) == {"restricted"}
    assert chunk_search(query="dog walk canal", scope=Scope.for_user(other_user)).hits == []
    again = services.ingest_document_paths(paths=[folder], collection="diary", people=["Ana"])
    assert again.embedded == 0
    assert set(Chunk.objects.filter(collection="diary").values_list("visibility", flat=True)) == {"restricted"}


# --- the recorded Notion API responses ------------------------------------------------------------


def test_recorded_notion_responses_with_a_people_mapping(local_embedder, family, user, other_user):
    """Replays the real recorded data-source query (three paginated responses) with a mapping that
    puts the MultiSelectTitle property into people, restricted to a project."""
    root = shared_data("notion") / "notion_ruby_mapping_fixtures"

    def load(name):
        return json.loads((root / f"{name}.json").read_text())

    responses = [load("query_data_source_limit_2"), load("query_data_source_next_2"), load("query_data_source_last_2")]
    database_id = responses[0]["results"][0]["parent"]["database_id"]
    calls: list[dict] = []

    def query(**kw):
        calls.append(kw)
        return responses[len(calls) - 1]

    test_page = load("retrieve_block_children_block_test_page")
    page_ids = {p["id"] for r in responses for p in r["results"]}
    client = SimpleNamespace(
        databases=SimpleNamespace(retrieve=lambda **kw: load("retrieve_database_database")),
        data_sources=SimpleNamespace(query=query),
        # The one recorded block tree stands in for every page's body (pages without a body have no chunks).
        blocks=SimpleNamespace(children=SimpleNamespace(
            list=lambda **kw: test_page if kw["block_id"] in page_ids else {"results": [], "has_more": False})),
    )  # fmt: skip
    source_setting_save(kind="notion_database", key=database_id, visibility="restricted", project="family",
                        mapping={"people": ["MultiSelectTitle", "UserTitle"]})  # fmt: skip
    run = services.notion_sync(client=client, database_ids=[database_id], embedder=local_embedder, sleep=lambda s: None)
    assert run.status == "done" and run.failed == 0, run.errors
    expected = {}
    for response in responses:
        for page in response["results"]:
            for prop in ("MultiSelectTitle", "UserTitle"):
                value = page["properties"][prop]
                for name in (
                    [o["name"] for o in value.get("multi_select", [])]
                    + [u.get("name") for u in value.get("people", [])]
                ):
                    expected.setdefault(name, set()).add(page["id"])
    people = names(facet_values(scope=Scope.for_user(user), use_cache=False).people)
    assert expected and {k: len(v) for k, v in expected.items()} == {k: people.get(k) for k in expected}
    name = max(expected, key=lambda k: len(expected[k]))
    assert (
        count_sources(scope=Scope.for_user(user), filters=SearchFilters(people=[name])).sources
        == len(expected[name])
    )
    assert names(facet_values(scope=Scope.for_user(other_user), use_cache=False).people) == {}
    assert chunk_search(query="Heading 1", scope=Scope.for_user(other_user)).hits == []


# --- admin ----------------------------------------------------------------------------------------


def test_admin_saves_validates_and_reapplies(client, django_user_model, local_embedder, family, other_user,
                                             django_capture_on_commit_callbacks):
    admin_user = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin_user)
    sync(local_embedder)
    url = "/admin/ingestion/sourcesetting/add/"
    assert client.get(url).status_code == 200
    form = {"kind": "notion_database", "key": DATABASE, "name": "Journal", "collection": "", "visibility": "restricted",
            "project": "", "owner": "", "mapping": json.dumps({"people": ["Family", "Friends"]})}  # fmt: skip
    page = client.post(url, form)
    assert page.status_code == 200 and "Restricted sources need a project." in page.content.decode()
    page = client.post(url, {**form, "mapping": json.dumps({"pals": ["Friends"]})})
    assert "unknown mapping target" in page.content.decode()
    assert not SourceSetting.objects.exists()  # nothing saved by the refused forms
    with django_capture_on_commit_callbacks(execute=True):  # the re-apply runs after the commit
        response = client.post(url, {**form, "project": str(family.pk)})
    assert response.status_code == 302, response.content.decode()[:2000]
    setting = SourceSetting.objects.get()
    assert setting.key == DATABASE.replace("-", "") and setting.applied_at is not None
    assert set(Chunk.objects.values_list("visibility", flat=True)) == {"restricted"}
    assert chunk_search(query="Leo Catan board games", scope=Scope.for_user(other_user)).hits == []


def test_a_public_delivery_naming_a_project_is_refused_as_invalid_access_not_widening(api_client, webhook, family):
    response = deliver(api_client, visibility="public", project="family")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_access" and "only used with visibility 'restricted'" in body["detail"]
    response = deliver(api_client, visibility="restricted", project="no-such-project")
    assert response.status_code == 400 and response.json()["error"] == "unknown_project"
    assert not NotionDelivery.objects.exists()
