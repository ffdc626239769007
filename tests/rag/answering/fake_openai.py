"""A tiny OpenAI-compatible HTTP server on 127.0.0.1 for the tests of the openai provider.

A fake where the test is about something else: these tests are about *our* handling of an
OpenAI-compatible server (the real ``openai`` client talking HTTP to it, streaming, usage and cost
accounting, errors, timeouts, disconnects), not about a model's answers — so the replies are
scripted. It speaks the chat-completions JSON and SSE shapes the client parses.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """``mode``: ``ok`` (answers), ``error`` (HTTP 500), ``hang`` (never answers).

    ``reply`` is streamed word by word, ``delay`` seconds apart. A request carrying
    ``response_format`` (query analysis) gets ``analysis`` as its JSON content (a str is sent as is). ``disconnected``
    is set when the client closes a stream before its end.
    """

    def __init__(
        self,
        *,
        mode: str = "ok",
        reply: str = "",
        delay: float = 0.0,
        analysis: dict | str | None = None,
        usage: bool = True,
    ):
        self.mode = mode
        self.reply = reply
        self.delay = delay
        self.analysis = analysis
        self.usage = usage
        self.requests: list[dict] = []
        self.disconnected = threading.Event()
        self.finished_streams = 0
        self.chunks_sent = 0
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                if fake.mode == "error":
                    return self._json(500, {"error": {"message": "model exploded", "type": "server_error"}})
                if fake.mode == "hang":
                    fake._stop.wait(30)
                    return None
                if body.get("response_format"):
                    content = fake.analysis if isinstance(fake.analysis, str) else json.dumps(fake.analysis or {})
                    return self._json(200, _completion(content, body, prompt=120, completion=30))
                if not body.get("stream"):
                    return self._json(
                        200, _completion(fake.reply, body, prompt=200, completion=len(fake.reply.split()))
                    )
                return self._stream(body)

            def _json(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                words = fake.reply.split(" ")
                try:
                    for i, word in enumerate(words):
                        delta = word if i == 0 else " " + word
                        self._event(_chunk(body, {"content": delta}))
                        fake.chunks_sent += 1
                        if fake.delay:
                            time.sleep(fake.delay)
                    self._event(_chunk(body, {}, finish="stop"))
                    if fake.usage:
                        usage = {
                            "prompt_tokens": 321, "completion_tokens": len(words), "total_tokens": 321 + len(words)
                        }
                        self._event({**_chunk(body, {}), "choices": [], "usage": usage})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    fake.finished_streams += 1
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnected.set()
                self.close_connection = True

            def _event(self, payload: dict):
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()


def _completion(text: str, body: dict, *, prompt: int, completion: int) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _chunk(body: dict, delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def use_fake(settings, fake: FakeOpenAI, *, model: str = "fake-model", timeout: float = 10.0) -> None:
    """Point knowhub's openai provider at ``fake`` (prices: $1 / $2 per 1M tokens)."""
    settings.LLM_BASE_URL = fake.base_url
    settings.OPENAI_API_KEY = ""
    settings.KNOWHUB_LLM_PROVIDER = "openai"
    settings.KNOWHUB_LLM_MODEL = model
    settings.KNOWHUB_LLM_TIMEOUT = timeout
    settings.KNOWHUB_LLM_MODELS = [
        {"id": "extractive", "provider": "extractive", "label": "Extractive"},
        {"id": model, "provider": "openai", "label": "Fake", "input_per_1m": 1.0, "output_per_1m": 2.0},
    ]
