"""POST /rag/reindex, the admin (save → reindex after commit, actions, reindex page), real worker."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from ingestion.models import ContentBlock, IngestRun, Page
from rag.models import Chunk
from tests.conftest import wait_for
from tests.ingestion import factories
from tests.ingestion.conftest import live_chunks

URL = "/rag/reindex"


@pytest.mark.django_db
def test_reindex_api_is_staff_only(api_client, user):
    assert api_client.post(URL, {}, format="json").status_code in (401, 403)
    api_client.force_authenticate(user)
    assert api_client.post(URL, {}, format="json").status_code == 403
    assert not IngestRun.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body", [{"types": ["pages", "tweets"]}, {"since": "yesterday"}, {"dry_run": "maybe"}, {"typo": 1}]
)
def test_reindex_api_rejects_bad_input(api_client, staff_user, body):
    api_client.force_authenticate(staff_user)
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 400 and not IngestRun.objects.exists()


@pytest.mark.django_db
def test_reindex_api_runs_and_reports(api_client, staff_user, local_embedder, django_capture_on_commit_callbacks):
    _, _, sub = factories.course_tree()
    factories.page(sub)
    api_client.force_authenticate(staff_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(URL, {"types": ["pages"], "dry_run": True}, format="json")
    assert response.status_code == 202
    run_id = response.json()["run_id"]
    dry = api_client.get(f"{URL}/{run_id}").json()
    assert dry["status"] == "done" and dry["dry_run"] and dry["created"] == 3 and not Chunk.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        run_id = api_client.post(URL, {"types": ["pages"]}, format="json").json()["run_id"]
    done = api_client.get(f"{URL}/{run_id}").json()
    assert done["status"] == "done" and done["created"] == 3 and done["types"] == ["pages"]
    assert done["duration_s"] is not None and IngestRun.objects.get(pk=run_id).triggered_by == staff_user


@pytest.mark.django_db
def test_reindex_command_json_and_bad_types(capsys, use_hashing_embedder, monkeypatch):
    # hashing embedder: about the command's output.
    _, _, sub = factories.course_tree()
    factories.page(sub)
    call_command("reindex", "--types", "pages,imagimodels", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["created"] == 3 and out["types"] == ["pages", "imagimodels"] and out["status"] == "done"
    call_command("reindex", "--json")  # all types: nothing else configured, nothing changes
    out = json.loads(capsys.readouterr().out)
    assert (out["created"], out["updated"], out["embedded"], out["unchanged"]) == (0, 0, 0, 3)
    with pytest.raises(CommandError, match="unknown type"):
        call_command("reindex", "--types", "tweets")
    with pytest.raises(CommandError, match="not an ISO date"):
        call_command("reindex", "--since", "last tuesday")


def _admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")
    client.force_login(admin)
    return client


def _page_form(page: Page, **changes) -> dict:
    blocks = list(page.blocks.all())
    data = {
        "title": page.title, "slug": page.slug, "subchapter": page.subchapter_id, "page_type": page.page_type,
        "order": page.order, "visible": "on" if page.visible else "", "summary": page.summary,
        "concepts": ",".join(page.concepts),
        "published_at_0": page.published_at.strftime("%Y-%m-%d") if page.published_at else "",
        "published_at_1": page.published_at.strftime("%H:%M:%S") if page.published_at else "",
        "blocks-TOTAL_FORMS": str(len(blocks)), "blocks-INITIAL_FORMS": str(len(blocks)),
        "blocks-MIN_NUM_FORMS": "0", "blocks-MAX_NUM_FORMS": "1000",
    }  # fmt: skip
    for i, b in enumerate(blocks):
        for name in ("id", "page", "order", "kind", "heading", "text", "image_url", "image_alt", "image_caption",
                     "image_classification", "code", "language", "video_url", "video_title", "transcript"):  # fmt: skip
            value = getattr(b, "page_id" if name == "page" else name)
            data[f"blocks-{i}-{name}"] = "" if value is None else value
        data[f"blocks-{i}-files"] = json.dumps(b.files)
    data.update(changes)
    return data


@pytest.mark.django_db
def test_admin_save_reindexes_after_commit_and_unpublish_hides(
    client, django_user_model, local_embedder, django_capture_on_commit_callbacks
):
    client = _admin_client(client, django_user_model)
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    url = reverse("admin:ingestion_page_change", args=[page.pk])
    form = _page_form(page, **{"blocks-0-text": "A closure remembers the lexical environment it was created in."})
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert callbacks  # queued on commit, not during the request's transaction
    assert live_chunks(source_id=str(page.pk), content__contains="lexical environment").exists()
    run = IngestRun.objects.filter(source="admin").latest("pk")
    assert run.status == "done" and run.options == {"ids": [page.pk]}

    page.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, _page_form(page, visible=""))
    assert not live_chunks(source_id=str(page.pk)).exists()

    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:ingestion_page_delete", args=[page.pk]), {"post": "yes"})
    assert not Chunk.objects.filter(collection="course_content", source_id=str(page.pk)).exists()


@pytest.mark.django_db
def test_admin_pages_render(client, django_user_model):
    client = _admin_client(client, django_user_model)
    _, _, sub = factories.course_tree()
    page = factories.page(sub)
    factories.imagimodel()
    IngestRun.objects.create(source="reindex", status=IngestRun.Status.RUNNING, types=["pages"], total=10, sources=4)
    for name in ("ingestion_page_changelist", "ingestion_ingestrun_changelist", "ingestion_imagimodel_changelist",
                 "ingestion_notiondelivery_changelist", "ingestion_course_changelist",
                 "ingestion_ingestrun_reindex"):  # fmt: skip
        response = client.get(reverse(f"admin:{name}"))
        assert response.status_code == 200, name
    runs = client.get(reverse("admin:ingestion_ingestrun_changelist")).content.decode()
    assert "4/10" in runs and 'http-equiv="refresh"' in runs
    assert client.get(reverse("admin:ingestion_page_change", args=[page.pk])).status_code == 200


@pytest.mark.django_db
def test_admin_reindex_page_queues_a_run(
    client, django_user_model, use_hashing_embedder, monkeypatch, django_capture_on_commit_callbacks
):
    # hashing embedder: about the admin flow.
    client = _admin_client(client, django_user_model)
    _, _, sub = factories.course_tree()
    factories.page(sub)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("admin:ingestion_ingestrun_reindex"), {"types": ["pages"], "dry_run": "on"})
    assert response.status_code == 302
    run = IngestRun.objects.get(source="reindex")
    assert run.status == "done" and run.dry_run and run.created == 3 and not Chunk.objects.exists()


@pytest.mark.worker
def test_admin_save_triggers_reindex_in_a_real_worker(celery_worker_process, client, django_user_model):
    """The admin save commits, the task goes through Redis, the worker process embeds with the
    real local model, and the chunks appear."""
    client = _admin_client(client, django_user_model)
    _, _, sub = factories.course_tree()
    page = factories.page(
        sub, blocks=[{"kind": ContentBlock.Kind.TEXT, "text": "Microtasks run before the next task."}]
    )
    assert not Chunk.objects.exists()
    response = client.post(reverse("admin:ingestion_page_change", args=[page.pk]), _page_form(page))
    assert response.status_code == 302
    chunk = wait_for(lambda: Chunk.objects.filter(source_id=str(page.pk)).first(), timeout=120)
    assert chunk is not None, celery_worker_process.log_path.read_text()[-3000:]
    assert chunk.embedding_model.endswith("all-MiniLM-L6-v2") or "MiniLM" in chunk.embedding_model
    assert "ingestion.reindex_objects" in celery_worker_process.log_path.read_text()
