"""Every server error is logged once, with its traceback, under the request id its 500 body names.

Each case runs Django in a subprocess with production logging (DEBUG off, the log on stderr)
and a view made to fail; the database is a closed port (the failing view needs none), so the
suite's own database is never touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.conf import settings

from tests.knowhub.test_production import closed_port, run_django

FAILING_VIEW = """
    import json, logging, django
    django.setup()
    from django.test import Client
    from rag.apis import HealthApi

    def boom(self, request):
        logging.getLogger("rag.apis").warning("about to fail on purpose")
        raise RuntimeError("forced failure for the test")

    HealthApi.get = boom
    c = Client(raise_request_exception=False)
    r = c.get("/health", **HEADERS)
    print("RESULT" + json.dumps([r.status_code, r["X-Request-ID"], r.json()]))
"""


def _fail_once(log_format: str, headers: dict) -> tuple[int, str, dict, str]:
    script = FAILING_VIEW.replace("HEADERS", repr(headers))
    proc = run_django(script, {
        "DATABASE_URL": f"postgresql://knowhub:x@127.0.0.1:{closed_port()}/knowhub", "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "logging-test-secret-" + "k" * 40, "KNOWHUB_LOG_FORMAT": log_format,
    })  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, header_id, body = json.loads(proc.stdout.split("RESULT", 1)[1])
    return status, header_id, body, proc.stderr


def test_a_failing_view_is_logged_once_with_traceback_and_the_request_id_of_its_500():
    status, header_id, body, log = _fail_once("plain", {})
    assert status == 500
    assert body["error"] == "server_error" and re.fullmatch(r"[0-9a-f]{32}", body["request_id"])
    assert header_id == body["request_id"]
    assert log.count("Traceback (most recent call last)") == 1, log
    assert "RuntimeError: forced failure for the test" in log
    error_line = next(line for line in log.splitlines() if "Internal Server Error: /health" in line)
    assert f"[{body['request_id']}]" in error_line
    # the view's own line, written during the same request, carries the same id
    warning = next(line for line in log.splitlines() if "about to fail on purpose" in line)
    assert f"[{body['request_id']}]" in warning


def test_json_logs_carry_the_request_id_on_every_line_of_the_request():
    status, _, body, log = _fail_once("json", {"HTTP_X_REQUEST_ID": "proxy-given-id-1234"})
    assert status == 500 and body["request_id"] == "proxy-given-id-1234"  # a proxy's plain id is kept
    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    of_request = [e for e in entries if e["request_id"] == "proxy-given-id-1234"]
    assert [e["message"] for e in of_request] == ["about to fail on purpose", "Internal Server Error: /health"]
    error = of_request[1]
    assert error["level"] == "ERROR" and error["logger"] == "django.request"
    assert "Traceback" in error["traceback"] and "RuntimeError: forced failure for the test" in error["traceback"]
    assert sum("traceback" in e for e in entries) == 1


def test_a_forged_request_id_is_replaced():
    _, header_id, body, log = _fail_once("plain", {"HTTP_X_REQUEST_ID": "x\ninjected log line"})
    assert body["request_id"] == header_id and re.fullmatch(r"[0-9a-f]{32}", header_id)
    assert "injected log line" not in log


def _free_port() -> int:
    # The ports this worktree may use (8160-8169), the first free one.
    for port in range(8160, 8170):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.skip("no free port in 8160-8169")


def test_the_gunicorn_access_log_names_the_request_id():
    if not shutil.which("gunicorn", path=os.path.dirname(sys.executable)) and not shutil.which("gunicorn"):
        pytest.skip("gunicorn is not installed")
    port = _free_port()
    env = {
        **os.environ, "KNOWHUB_HTTPS": "false", "DJANGO_DEBUG": "false",
        "DATABASE_URL": f"postgresql://knowhub:x@127.0.0.1:{closed_port()}/knowhub",
        "DJANGO_SECRET_KEY": "access-log-test-secret-" + "k" * 40, "DJANGO_SETTINGS_MODULE": "knowhub.settings",
    }  # fmt: skip
    env.pop("KNOWHUB_TEST_DB_NAME", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "knowhub.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        request_id = None
        deadline = time.monotonic() + 120
        while request_id is None and time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/no/such/endpoint", timeout=30)
            except urllib.error.HTTPError as exc:
                assert exc.code == 404
                request_id = exc.headers["X-Request-ID"]
            except OSError:
                time.sleep(0.5)
        assert request_id, "gunicorn did not answer"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output = server.communicate(timeout=30)[0]
    line = next(line for line in output.splitlines() if "/no/such/endpoint" in line)
    assert f"request_id={request_id}" in line and " 404 " in line
