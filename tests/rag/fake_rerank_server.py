"""A FAKE Cohere-style /rerank server for tests. It is about *our* handling of a reranker's
replies (order applied, errors and timeouts falling back), not about reranking quality: it scores
a document 1 when it contains the word ``prefer`` (else by how many query words it contains, /100),
or misbehaves as told."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeRerankServer:
    """``behaviour``: ok | error | slow | not_json | bad_index | no_results."""

    def __init__(self):
        self.behaviour = "ok"
        self.delay = 0.0
        self.prefer = ""
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                server.requests.append(body)
                if server.behaviour == "slow":
                    time.sleep(server.delay)
                if server.behaviour == "error":
                    return self._send(500, b'{"error": "model not loaded"}')
                if server.behaviour == "not_json":
                    return self._send(200, b"<html>Bad gateway</html>")
                if server.behaviour == "no_results":
                    return self._send(200, b'{"data": []}')
                words = set(body["query"].lower().split())
                scored = [
                    {"index": i, "relevance_score": 1.0 if server.prefer and server.prefer in d.lower()
                     else len(words & set(d.lower().split())) / 100}
                    for i, d in enumerate(body["documents"])
                ]  # fmt: skip
                scored.sort(key=lambda r: -r["relevance_score"])
                if server.behaviour == "bad_index":
                    scored[0]["index"] = len(body["documents"]) + 5
                return self._send(200, json.dumps({"results": scored[: body["top_n"]]}).encode())

            def _send(self, code, payload):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up (timeout)
                    self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/rerank"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
