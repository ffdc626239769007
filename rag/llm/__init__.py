"""LLM providers behind one protocol (``rag.llm.base.LLMProvider``)."""

from __future__ import annotations

from rag.llm.base import Completion, LLMError, LLMProvider, TransientLLMError

__all__ = ["Completion", "LLMError", "LLMProvider", "TransientLLMError", "get_chat_llm"]


def get_chat_llm(model: str | None = None) -> LLMProvider | None:
    """The configured generative model, or None when knowhub runs offline (the default).

    Filled in by the answers work: OPENAI_API_KEY / LLM_BASE_URL select the OpenAI-compatible
    provider; nothing configured means None.
    """
    return None
