"""A fully local generator: a GGUF file served in-process by xllamacpp (a prebuilt llama.cpp).

xllamacpp starts llama.cpp's own OpenAI-compatible HTTP server on 127.0.0.1 inside this process;
we talk to it with the same ``OpenAIChat`` provider as any compatible server, so streaming,
JSON-schema output (llama.cpp grammars), token counts and cancellation behave the same. One
server per GGUF path per process, started on first use (loading takes a few seconds).
"""

from __future__ import annotations

import logging
import os
import threading

from django.conf import settings

from rag.llm.base import LLMError
from rag.llm.openai import OpenAIChat

logger = logging.getLogger(__name__)

_servers: dict[str, object] = {}
_lock = threading.Lock()


def _server_url(path: str) -> str:
    with _lock:
        server = _servers.get(path)
        if server is None:
            if not os.path.exists(path):
                raise LLMError(f"KNOWHUB_GGUF_PATH {path!r} does not exist.")
            try:
                import xllamacpp
            except ImportError as exc:
                raise LLMError("The llamacpp provider needs the 'xllamacpp' package (pip install xllamacpp).") from exc
            params = xllamacpp.CommonParams()
            params.model.path = path
            params.n_ctx = settings.KNOWHUB_GGUF_CTX
            params.cpuparams.n_threads = settings.KNOWHUB_GGUF_THREADS
            params.cpuparams_batch.n_threads = settings.KNOWHUB_GGUF_THREADS
            try:
                server = xllamacpp.Server(params)
            except Exception as exc:
                raise LLMError(f"llama.cpp could not load {path}: {exc}") from exc
            _servers[path] = server
            logger.info("llama.cpp serves %s at %s", path, server.listening_address)
        return server.listening_address


class LlamaCppChat(OpenAIChat):
    """``OpenAIChat`` pointed at the in-process llama.cpp server of one GGUF file."""

    @classmethod
    def shared(cls, *, path: str, info) -> LlamaCppChat:
        return cls(
            info=info,
            base_url=_server_url(path).rstrip("/") + "/v1",
            api_key="local",
            timeout=settings.KNOWHUB_LLM_TIMEOUT,
        )
