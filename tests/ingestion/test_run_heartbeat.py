"""Ingest runs whose process died: heartbeat, shown as interrupted (API, admin), resumed.

A real process is killed with SIGKILL while it holds a run open; what it runs inside the run
(a sleep standing in for a long embedding batch) is beside the point.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from django.db import connection
from django.utils import timezone

from ingestion import services
from ingestion.models import IngestRun
from tests.conftest import wait_for

HOLD_A_RUN = """
    import sys, time, django
    django.setup()
    from ingestion.models import IngestRun
    from ingestion.services.core import Running
    run = IngestRun.objects.get(pk=int(sys.argv[1]))
    with Running(run):
        print("running", flush=True)
        time.sleep(600)
"""


@pytest.mark.django_db(transaction=True)
def test_a_killed_run_shows_interrupted_and_can_be_resumed(settings, api_client, staff_user, client):
    settings.KNOWHUB_RUN_HEARTBEAT_SECONDS = 0.5
    run = services.run_create(source="reindex", types=["documents"])
    env = {
        **os.environ, "DATABASE_URL": settings.DATABASE_URL, "KNOWHUB_TEST_DB_NAME": connection.settings_dict["NAME"],
        "KNOWHUB_RUN_HEARTBEAT_SECONDS": "0.5",
    }  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD_A_RUN), str(run.pk)], cwd=settings.BASE_DIR, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "running"
        first = IngestRun.objects.get(pk=run.pk)
        assert first.status == "running" and first.worker.endswith(f":{proc.pid}")
        # the heartbeat moves while the process lives
        assert wait_for(lambda: IngestRun.objects.get(pk=run.pk).heartbeat_at > first.heartbeat_at, timeout=30)
        api_client.force_authenticate(staff_user)
        assert api_client.get(f"/rag/reindex/{run.pk}").json()["status"] == "running"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    body = api_client.get(f"/rag/reindex/{run.pk}").json()
    assert body["status"] == "interrupted" and "resume" in body["message"]
    staff_user.is_superuser = True  # the admin list needs the model's view permission
    staff_user.save(update_fields=["is_superuser"])
    client.force_login(staff_user)
    assert "Interrupted" in client.get("/admin/ingestion/ingestrun/").content.decode()

    response = api_client.post(f"/rag/reindex/{run.pk}/resume")  # tasks run inline in tests
    assert response.status_code == 202, response.content
    new = IngestRun.objects.get(pk=response.json()["run_id"])
    assert (new.status, new.types, new.options) == ("done", ["documents"], {"resumes": run.pk})
    assert IngestRun.objects.get(pk=run.pk).resumed_as_id == new.pk
    again = api_client.post(f"/rag/reindex/{run.pk}/resume")
    assert again.status_code == 409 and again.json()["error"] == "not_resumable"
    assert api_client.post(f"/rag/reindex/{new.pk}/resume").status_code == 409  # done: nothing to resume


@pytest.mark.django_db
def test_a_run_without_heartbeat_on_another_host_is_interrupted_after_the_stale_time(settings):
    settings.KNOWHUB_RUN_STALE_SECONDS = 60
    now = timezone.now()
    quiet = IngestRun.objects.create(source="reindex", status="running", worker="elsewhere:1",
                                     started_at=now, heartbeat_at=now - dt.timedelta(seconds=120))  # fmt: skip
    alive = IngestRun.objects.create(source="reindex", status="running", worker="elsewhere:2",
                                     started_at=now, heartbeat_at=now - dt.timedelta(seconds=5))  # fmt: skip
    assert services.runs_mark_interrupted() == [quiet.pk]
    assert IngestRun.objects.get(pk=alive.pk).status == "running"


@pytest.mark.django_db
def test_broker_down_keeps_the_run_queued_and_the_sweep_queues_it(monkeypatch, django_capture_on_commit_callbacks):
    from ingestion import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to redis")

    monkeypatch.setattr(tasks.run_reindex, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(source="reindex", types=["documents"])
        services.reindex_enqueue(run=run)
    run.refresh_from_db()
    assert run.status == "queued" and run.message.startswith("waiting for the broker")
    assert services.runs_sweep()["requeued"] == []  # still down: keeps waiting

    sent = []
    monkeypatch.setattr(tasks.run_reindex, "delay", lambda run_id: sent.append(run_id))
    assert services.runs_sweep()["requeued"] == [run.pk] and sent == [run.pk]
    run.refresh_from_db()
    assert run.status == "queued" and run.message == ""
