"""The openai provider itself, through the real ``openai`` client against the fake server."""

from __future__ import annotations

import pytest

from rag.llm import (
    Completion,
    LLMError,
    TransientLLMError,
    UnknownModel,
    available_models,
    get_chat_llm,
    get_llm,
)
from tests.rag.answering.fake_openai import FakeOpenAI, use_fake

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there, how are you?"}]


def test_streams_deltas_then_a_completion_with_usage_and_cost(settings):
    with FakeOpenAI(reply="Fine thanks and you") as fake:
        use_fake(settings, fake)
        llm = get_chat_llm()
        parts = list(llm.stream(messages=MESSAGES))
        sent = fake.requests[0]
    assert parts[:-1] == ["Fine", " thanks", " and", " you"]
    final = parts[-1]
    assert isinstance(final, Completion) and final.text == "Fine thanks and you"
    assert (final.prompt_tokens, final.completion_tokens) == (321, 4)
    assert final.cost_usd == pytest.approx((321 * 1.0 + 4 * 2.0) / 1e6)
    assert sent["model"] == "fake-model" and sent["stream"] is True and sent["messages"] == MESSAGES


def test_a_server_without_usage_gets_estimated_tokens(settings):
    with FakeOpenAI(reply="Fine thanks and you", usage=False) as fake:
        use_fake(settings, fake)
        final = list(get_llm().stream(messages=MESSAGES))[-1]
    assert final.prompt_tokens > 0 and final.completion_tokens > 0 and final.cost_usd > 0


def test_errors_are_transient_or_not(settings):
    with FakeOpenAI(mode="error") as fake:
        use_fake(settings, fake)
        with pytest.raises(TransientLLMError, match="500"):
            list(get_llm().stream(messages=MESSAGES))
    with FakeOpenAI(mode="hang") as fake:
        use_fake(settings, fake, timeout=0.5)
        with pytest.raises(TransientLLMError):
            get_llm().complete(messages=MESSAGES)


def test_structured_output_must_be_json(settings):
    with FakeOpenAI(analysis="Sure! Here are your filters: none") as fake:
        use_fake(settings, fake)
        with pytest.raises(LLMError, match="invalid JSON"):
            get_llm().complete(messages=MESSAGES, json_schema={"title": "x", "type": "object"})


def test_model_table_offers_only_configured_providers(settings):
    assert [m.id for m in available_models()] == ["extractive"]
    assert get_chat_llm() is None
    with pytest.raises(UnknownModel):
        get_llm("gpt-4o")  # in the table, but no key configured
    settings.OPENAI_API_KEY = "sk-test"
    assert {"extractive", "gpt-4o-mini", "gpt-4o"} <= {m.id for m in available_models()}
    settings.OPENAI_API_KEY = ""
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.KNOWHUB_LLM_MODEL = "llama3.1:8b"
    settings.KNOWHUB_LLM_PROVIDER = "openai"
    assert [m.id for m in available_models()] == ["extractive", "llama3.1:8b"]  # an Ollama tag, price 0
    assert get_chat_llm().name == "llama3.1:8b"
