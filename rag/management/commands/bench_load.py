"""``manage.py bench_load``: the production server under N closed-loop clients.

Starts gunicorn on 127.0.0.1 (a free port) against the current index and database, drives
``--clients`` concurrent clients that each send ``POST /rag/query`` with real queries and wait
for the answer before sending the next, for ``--seconds``; prints throughput, latency
percentiles and error counts, then stops the server it started and removes its bench user
(and that user's logged interactions).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

BENCH_USERNAME = "bench-load"
FALLBACK_QUERIES = [
    "how does search rank results", "what is a closure in javascript", "hybrid search with pgvector",
    "how are private chunks protected", "what does the reranker do", "react hooks state",
    "postgresql full text search", "how to reset a password", "meeting notes about the budget",
    "what is an embedding", "vector similarity cosine distance", "how do learning sessions work",
]  # fmt: skip


def default_queries() -> list[str]:
    """SciFact claims from ../shared/data when beside the checkout, else a few demo questions."""
    for parent in Path(settings.BASE_DIR).parents:
        path = parent / "shared" / "data" / "scifact" / "queries.jsonl"
        if path.exists():
            return read_queries(path)
    return list(FALLBACK_QUERIES)


def read_queries(path: Path) -> list[str]:
    """A BEIR ``queries.jsonl`` (``text`` of each line) or a text file with one query a line."""
    queries = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            line = str(json.loads(line).get("text", "")).strip()
        if line:
            queries.append(line[:1000])
    return queries


def served_as() -> dict:
    """The workers and threads gunicorn.conf.py gives a server started here: what the image and
    compose serve with, so what the benchmark measures unless told otherwise."""
    config = runpy.run_path(str(Path(settings.BASE_DIR) / "gunicorn.conf.py"))
    return {"workers": int(config["workers"]), "threads": int(config["threads"])}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


class Command(BaseCommand):
    help = "Load-test /rag/query on a gunicorn started on loopback: throughput, p50/p95/p99, errors."

    def add_arguments(self, parser):
        parser.add_argument("--clients", type=int, default=1, help="concurrent closed-loop clients")
        parser.add_argument("--seconds", type=float, default=30.0, help="measured duration")
        parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
        parser.add_argument("--workers", type=int, help="gunicorn worker processes (default: gunicorn.conf.py's)")
        parser.add_argument("--threads", type=int, help="threads per gunicorn worker (default: gunicorn.conf.py's)")
        parser.add_argument("--queries", help="queries.jsonl (BEIR) or a text file, one query a line")
        parser.add_argument("--top-k", type=int, default=8)
        parser.add_argument("--staff", action="store_true", help="query as staff (no ACL clause)")
        parser.add_argument("--timeout", type=float, default=60.0, help="per-request timeout (s)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if opts["clients"] < 1 or opts["seconds"] <= 0:
            raise CommandError("--clients must be >= 1 and --seconds > 0")
        queries = read_queries(Path(opts["queries"])) if opts["queries"] else default_queries()
        if not queries:
            raise CommandError("no queries to send")
        served = served_as()
        opts["workers"] = opts["workers"] or served["workers"]
        opts["threads"] = opts["threads"] or served["threads"]
        token, user_id = self._bench_user(staff=opts["staff"])
        port = free_port()
        server = self._start_gunicorn(port, opts["workers"], opts["threads"])
        try:
            self._wait_ready(server, port)
            result = self._drive(port, token, queries, opts)
        finally:
            self._stop(server)
            self._drop_bench_user(user_id)
        result.update(
            clients=opts["clients"], workers=opts["workers"], threads=opts["threads"], queries_pool=len(queries),
            staff=opts["staff"],
        )  # fmt: skip
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=2))
        else:
            self.stdout.write(
                f"{result['clients']} client(s), {result['seconds']} s, "
                f"gunicorn {result['workers']}x{result['threads']}: "
                f"{result['requests']} requests, {result['throughput_rps']} req/s, "
                f"p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms, "
                f"errors {result['errors']} {result['error_kinds'] or ''}"
            )

    # --- the server ---------------------------------------------------------------------------

    def _start_gunicorn(self, port: int, workers: int, threads: int) -> subprocess.Popen:
        env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,  # the same server and database as this command
            "KNOWHUB_HTTPS": "false",  # plain HTTP on loopback
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        }
        # The database this command uses (the test suite's, when a test runs it).
        env["KNOWHUB_TEST_DB_NAME"] = settings.DATABASES["default"]["NAME"]
        cmd = [
            sys.executable, "-m", "gunicorn", "knowhub.wsgi:application", "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers), "--threads", str(threads), "--timeout", "120",
            "--log-level", "warning",
            "--access-logfile", "-" if os.environ.get("KNOWHUB_BENCH_ACCESS_LOG") else "/dev/null",
        ]  # fmt: skip
        self.stderr.write(f"starting gunicorn on 127.0.0.1:{port} ({workers} workers x {threads} threads)")
        return subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, start_new_session=True)

    def _wait_ready(self, server: subprocess.Popen, port: int, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError(f"gunicorn exited with {server.returncode} before answering")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("GET", "/health")
                status = conn.getresponse().status
                conn.close()
                if status in (200, 503):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise CommandError(f"gunicorn did not answer on port {port} within {timeout:.0f} s")

    def _stop(self, server: subprocess.Popen) -> None:
        if server.poll() is None:
            try:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)
        self.stderr.write("gunicorn stopped")

    # --- the bench user -----------------------------------------------------------------------

    def _bench_user(self, *, staff: bool) -> tuple[str, int]:
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token

        user, _ = get_user_model().objects.get_or_create(username=BENCH_USERNAME, defaults={"is_staff": staff})
        if user.is_staff != staff:
            user.is_staff = staff
            user.save(update_fields=["is_staff"])
        token, _ = Token.objects.get_or_create(user=user)
        return token.key, user.pk

    def _drop_bench_user(self, user_id: int) -> None:
        from django.contrib.auth import get_user_model

        from rag.interactions import interactions_delete_of_user

        interactions_delete_of_user(user_id=user_id)  # the bench's queries are not feedback
        get_user_model().objects.filter(pk=user_id).delete()

    # --- the clients --------------------------------------------------------------------------

    def _drive(self, port: int, token: str, queries: list[str], opts: dict) -> dict:
        latencies: list[float] = []
        errors: Counter = Counter()
        lock = threading.Lock()
        start_at = time.monotonic() + opts["warmup"]
        stop_at = start_at + opts["seconds"]
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}

        def client(seed: int) -> None:
            rng = random.Random(seed)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=opts["timeout"])
            while True:
                now = time.monotonic()
                if now >= stop_at:
                    break
                body = json.dumps({"query": rng.choice(queries), "top_k": opts["top_k"]})
                t0 = time.monotonic()
                kind = None
                try:
                    conn.request("POST", "/rag/query", body=body, headers=headers)
                    response = conn.getresponse()
                    response.read()
                    if response.status != 200:
                        kind = f"http_{response.status}"
                except (OSError, http.client.HTTPException) as exc:
                    kind = type(exc).__name__
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=opts["timeout"])
                t1 = time.monotonic()
                if t0 < start_at or t1 > stop_at:
                    continue  # warm-up, or finished after the window: not measured
                with lock:
                    if kind:
                        errors[kind] += 1
                    else:
                        latencies.append((t1 - t0) * 1000)
            conn.close()

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(opts["clients"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=opts["warmup"] + opts["seconds"] + opts["timeout"] + 30)
        done = len(latencies)
        return {
            "seconds": opts["seconds"],
            "requests": done + sum(errors.values()),
            "ok": done,
            "throughput_rps": round(done / opts["seconds"], 2),
            "p50_ms": round(percentile(latencies, 50), 1),
            "p95_ms": round(percentile(latencies, 95), 1),
            "p99_ms": round(percentile(latencies, 99), 1),
            "errors": sum(errors.values()),
            "error_kinds": dict(errors),
        }
