"""Every admin page a superuser or a plain staff member can reach renders, no page links to a 403,
and every save the admin offers works: change forms posted back unchanged save, add forms posted
empty answer with errors (never a 500). Pipeline-written models offer no Add form."""

from __future__ import annotations

import re
from collections import deque
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib import admin
from django.urls import reverse

pytestmark = pytest.mark.django_db

# Written only by the pipeline (ingestion, learners' sessions, search logging): no Add form.
PIPELINE_WRITTEN = {
    "ingestion.IngestRun", "ingestion.NotionDelivery", "ingestion.NotionSyncState", "ingestion.SourceState",
    "ingestion.IngestedDocument", "ingestion.StoredFile", "learning_sessions.LearningSession",
    "learning_sessions.SessionProgress", "feedback.Interaction", "feedback.Judgment", "feedback.JudgmentLog",
    "feedback.ClickEvent", "feedback.RankingConfig", "feedback.GradeContest", "rag.Chunk", "rag.ChunkHistory",
}
MAX_PAGES = 700  # per user: the walk follows every admin link, but filter combinations are endless


class _Page(HTMLParser):
    """The admin links of a page, and the fields of its main form."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.fields: list[tuple[str, str]] = []
        self._in_form = False
        self._select: str | None = None
        self._select_value: str | None = None
        self._textarea: str | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "form" and (a.get("id") or "").endswith("_form"):
            self._in_form = True
        if not self._in_form:
            return
        name = a.get("name")
        if tag == "input" and name:
            kind = (a.get("type") or "text").lower()
            if kind in ("submit", "button", "file", "image", "reset"):
                return
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            self.fields.append((name, a.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "select" and name:
            self._select, self._select_value = name, None
        elif tag == "option" and self._select is not None and ("selected" in a and self._select_value is None):
            self._select_value = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea, self._text = name, ""

    def handle_data(self, data):
        if self._textarea is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "form":
            self._in_form = False
        elif tag == "select" and self._select is not None:
            if self._select_value is not None:
                self.fields.append((self._select, self._select_value))
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            self.fields.append((self._textarea, self._text.removeprefix("\n")))
            self._textarea = None


def _parse(response) -> _Page:
    page = _Page()
    page.feed(response.content.decode("utf-8", "replace"))
    return page


def _admin_links(page: _Page, base: str) -> list[str]:
    out = []
    for href in page.links:
        url = urljoin(base, href)
        parts = urlsplit(url)
        if parts.netloc or not parts.path.startswith("/admin/"):
            continue
        if parts.path in ("/admin/logout/",) or parts.path.startswith("/admin/r/"):
            continue
        out.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return out


@pytest.fixture
def admin_data(hashing_embedder, tmp_path, django_user_model):
    """A hub with something in every part: the demo corpus (on its ingest run), the demo course,
    a logged search with a judgment, a ranking configuration, files, states and a session."""
    from feedback import services as feedback_services
    from feedback.models import Interaction
    from feedback.ranking import RankingWeights
    from ingestion.demo import _create_content
    from ingestion.models import IngestedDocument, NotionDelivery, NotionSyncState, SourceRoot, SourceState
    from ingestion.services import store_original
    from rag.demo import demo_load
    from rag.models import Chunk
    from sessions.models import LearningSession

    demo_load(credentials_path=tmp_path / "creds.json", embedder=hashing_embedder)
    _create_content()
    chunks = list(Chunk.objects.order_by("id")[:3])
    interaction = Interaction.objects.create(
        query="what did acme decide", kind="ask", answer="They chose Postgres.", outcome=-1,
        filters={"collections": ["meetings"], "date_from": "2024-01-01"},
        retrieved=[
            {"chunk_uid": c.chunk_uid, "collection": c.collection, "rank": i + 1, "score": 0.5}
            for i, c in enumerate(chunks)
        ],
    )  # fmt: skip
    feedback_services.judgment_set(
        interaction=interaction, chunk_uid=chunks[0].chunk_uid, preferred_over="", label="positive", reason="",
        actor=None, source="admin",
    )  # fmt: skip
    feedback_services.ranking_config_record(weights=RankingWeights.default(), metrics={}, activate=False)
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"meeting notes")
    store_original(path=notes, name="notes.txt", content_type="text/plain")
    IngestedDocument.objects.create(collection="docs", source_type="api", source_id="a", payload={}, payload_hash="0")
    SourceState.objects.create(collection="docs", source_type="markdown", source_id="a.md")
    NotionSyncState.objects.create(key="default")
    NotionDelivery.objects.create(body="{}", body_hash="0" * 64)
    SourceRoot.objects.create(kind="markdown", path=str(tmp_path), collection="notes")
    LearningSession.objects.create(user=django_user_model.objects.get(username="admin"), realm_id="fantasy",
                                   topic_id="js-closures")  # fmt: skip


def _walk(client, start: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """GET every admin page reachable from ``start``; the status of each, and where each link was seen."""
    statuses: dict[str, int] = {}
    linked_from: dict[str, str] = {}
    per_path: dict[str, int] = {}
    todo = deque(start)
    while todo and len(statuses) < MAX_PAGES:
        url = todo.popleft()
        if url in statuses:
            continue
        path = url.split("?")[0]
        per_path[path] = per_path.get(path, 0) + 1
        if "?" in url and per_path[path] > 6:  # a few filter/sort combinations per list are enough
            continue
        response = client.get(url)
        statuses[url] = response.status_code
        assert response.status_code != 500, url
        if response.status_code == 200 and "html" in response.get("Content-Type", ""):
            for link in _admin_links(_parse(response), url):
                linked_from.setdefault(link, url)
                if link not in statuses:
                    todo.append(link)
    return statuses, linked_from


def _model_urls() -> list[str]:
    urls = []
    for model, _model_admin in admin.site._registry.items():
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:{}_{}_changelist".format(*info)))
        urls.append(reverse("admin:{}_{}_add".format(*info)))
        obj = model._default_manager.order_by("pk").first()
        if obj is not None:
            urls.append(reverse("admin:{}_{}_change".format(*info), args=[obj.pk]))
    return urls


@pytest.mark.parametrize("who", ["superuser", "plain staff"])
def test_every_admin_page_renders_and_no_link_is_a_403(client, admin_data, django_user_model, who):
    if who == "superuser":
        user = django_user_model.objects.get(username="admin")
    else:
        user = django_user_model.objects.create_user("clerk", password="pw-clerk-123", is_staff=True)
    client.force_login(user)
    statuses, linked_from = _walk(client, ["/admin/", *_model_urls()])
    forbidden_links = {u: linked_from[u] for u, s in statuses.items() if s == 403 and u in linked_from}
    assert not forbidden_links, forbidden_links
    broken = {u: s for u, s in statuses.items() if s >= 500 or s == 404 and u in linked_from}
    assert not broken, broken
    if who == "superuser":
        assert len(statuses) > 60
        assert statuses["/admin/"] == 200


def test_pipeline_written_models_offer_no_add_form(rf, django_user_model):
    user = django_user_model(is_superuser=True, is_staff=True, is_active=True)
    request = rf.get("/admin/")
    request.user = user
    for model, model_admin in admin.site._registry.items():
        if model._meta.label in PIPELINE_WRITTEN:
            assert not model_admin.has_add_permission(request), model._meta.label


def test_every_change_form_saves_unchanged_and_every_add_form_refuses_empty_input(
    client, admin_data, django_user_model
):
    client.force_login(django_user_model.objects.get(username="admin"))
    failures = {}
    for model, model_admin in admin.site._registry.items():
        info = (model._meta.app_label, model._meta.model_name)
        obj = model._default_manager.order_by("pk").first()
        if obj is not None:
            url = reverse("admin:{}_{}_change".format(*info), args=[obj.pk])
            page = client.get(url)
            assert page.status_code == 200, url
            if b'name="_save"' in page.content:  # a save is offered: it must work
                response = client.post(url, _form_data(page))
                if response.status_code != 302:
                    errors = re.findall(rb'class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content, re.S)
                    failures[url] = (response.status_code, [e.decode()[:200] for e in errors][:5])
        if model_admin.has_add_permission(_request(django_user_model)):
            url = reverse("admin:{}_{}_add".format(*info))
            response = client.post(url, {})
            assert response.status_code in (200, 302), (url, response.status_code)
    assert not failures, failures


def _request(django_user_model):
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = django_user_model.objects.get(username="admin")
    return request


def _form_data(page) -> dict[str, list[str]]:
    data: dict[str, list[str]] = {}
    for name, value in _parse(page).fields:
        data.setdefault(name, []).append(value)
    data["_save"] = ["Save"]
    return data
