"""Production defaults: the secret, errors as JSON when the database is down, the embedded
server restarted, static files served with DEBUG off.

The outage tests run Django in a subprocess: one against a DATABASE_URL on a closed port, one
against an embedded server of its own (a temporary data folder) that it really stops, so the
suite's own test database is never touched.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest
from django.conf import settings


def run_django(script: str, env: dict, timeout: int = 240) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "KNOWHUB_HTTPS": "false", **env}
    full_env.pop("KNOWHUB_TEST_DB_NAME", None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], cwd=settings.BASE_DIR, env=full_env,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


OUTAGE_SCRIPT = """
    import json, django
    django.setup()
    from django.test import Client
    c = Client(raise_request_exception=False)
    out = {}
    r = c.post("/rag/query", {"query": "closures"}, content_type="application/json",
               HTTP_AUTHORIZATION="Token abc")
    out["query"] = [r.status_code, r["Content-Type"], r.content.decode()]
    r = c.post("/rag/ask", {"query": "closures"}, content_type="application/json",
               HTTP_AUTHORIZATION="Token abc")
    out["ask"] = [r.status_code, r["Content-Type"], r.content.decode()]
    r = c.get("/health")
    out["health"] = [r.status_code, r["Content-Type"], r.content.decode()]
    r = c.post("/login/", {"username": "alice", "password": "pw"})  # an HTML page that needs the database
    out["page"] = [r.status_code, r["Content-Type"], r.content.decode()]
    r = c.get("/no/such/endpoint")
    out["missing"] = [r.status_code, r["Content-Type"], r.content.decode()]
    print("RESULT" + json.dumps(out))
"""


@pytest.mark.parametrize("debug", ["false", "true"])
def test_database_down_is_a_json_503_never_a_debug_page(debug):
    proc = run_django(OUTAGE_SCRIPT, {
        "DATABASE_URL": f"postgresql://knowhub:x@127.0.0.1:{closed_port()}/knowhub",
        "DJANGO_DEBUG": debug, "DJANGO_SECRET_KEY": "outage-test-secret-" + "k" * 40,
    })  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    for name in ("query", "ask"):
        status, content_type, body = out[name]
        assert status == 503 and content_type == "application/json", out[name]
        assert json.loads(body)["error"] == "database_unavailable"
        assert "Traceback" not in body and "settings" not in body.lower()
    assert out["health"][0] == 503 and json.loads(out["health"][2])["database"]["status"] == "error"
    status, content_type, body = out["page"]
    assert status == 503 and content_type.startswith("text/html") and "Traceback" not in body
    assert "DATABASES" not in body and str(settings.BASE_DIR) not in body
    status, content_type, body = out["missing"]
    if debug == "false":  # with DEBUG on Django shows its own 404 page (a developer asked for it)
        assert status == 404 and json.loads(body)["error"] == "not_found"


def test_the_embedded_server_is_started_again_after_it_stopped(tmp_path):
    script = """
        import json, django
        django.setup()
        from django.conf import settings
        from django.test import Client
        from knowhub import embedded_db
        c = Client(raise_request_exception=False)
        out = {"first": c.get("/health").json()["database"]["status"]}
        out["stopped"] = embedded_db.stop(settings.BASE_DIR)
        r = c.get("/health")  # fails: the server is down; it is started again for the next one
        out["down"] = [r.status_code, r.json()["database"]["status"]]
        out["again"] = c.get("/health").json()["database"]["status"]
        embedded_db.stop(settings.BASE_DIR)
        print("RESULT" + json.dumps(out))
    """
    pgdata = tmp_path / "pgdata"
    proc = run_django(script, {
        "KNOWHUB_PGDATA": str(pgdata), "DATABASE_URL": "", "DJANGO_SECRET_KEY": "restart-test-secret-" + "k" * 40,
    })  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    assert out["first"] == "ok" and out["stopped"] is True
    assert out["down"] == [503, "error"]
    assert out["again"] == "ok"  # the next request reaches the restarted server


def test_refuses_the_built_in_secret_without_debug(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=tmp_path,  # no .env here
        env={**{k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"},
             "DJANGO_SETTINGS_MODULE": "knowhub.settings", "PYTHONPATH": str(settings.BASE_DIR),
             "DJANGO_DEBUG": "false", "DATABASE_URL": "postgresql://x@127.0.0.1:1/x"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if (settings.BASE_DIR / ".env").exists() and "DJANGO_SECRET_KEY" in (settings.BASE_DIR / ".env").read_text():
        pytest.skip("this checkout's .env sets DJANGO_SECRET_KEY (settings read it whatever the cwd)")
    assert proc.returncode != 0
    assert "refusing to start with the built-in development key" in proc.stderr


def test_deploy_checks_are_clean_in_the_production_configuration():
    proc = run_django(
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('check', '--deploy', '--fail-level', 'WARNING')",
        {"DJANGO_DEBUG": "false", "KNOWHUB_HTTPS": "true", "DJANGO_SECRET_KEY": "deploy-check-" + "s3cr3t-" * 8,
         "DATABASE_URL": "postgresql://x@127.0.0.1:1/x"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.django_db
def test_admin_static_files_are_served_with_debug_off(client):
    assert settings.DEBUG is False
    response = client.get("/static/admin/css/base.css")
    assert response.status_code == 200
    assert b"".join(response.streaming_content if response.streaming else [response.content]).strip()
