"""LLM providers behind one protocol (``rag.llm.base.LLMProvider``), chosen by settings.

``get_llm()`` always returns something that can answer (the offline extractive answerer by
default); ``get_chat_llm()`` returns only a *generative* model, or None when knowhub runs offline.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from django.conf import settings

from rag.llm.base import Completion, LLMError, LLMProvider, TransientLLMError

__all__ = [
    "Completion",
    "LLMError",
    "LLMProvider",
    "ModelInfo",
    "TransientLLMError",
    "UnknownModel",
    "available_models",
    "default_model_id",
    "get_chat_llm",
    "get_llm",
    "model_info",
]

logger = logging.getLogger(__name__)


class UnknownModel(LLMError):
    """A model id that is not in the model table, or whose provider is not configured."""


@dataclass(frozen=True)
class ModelInfo:
    """One row of ``KNOWHUB_LLM_MODELS``: what a model is called, who serves it, what it costs."""

    id: str
    provider: str
    label: str = ""
    input_per_1m: float = 0.0
    output_per_1m: float = 0.0
    api_id: str = ""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(prompt_tokens * self.input_per_1m / 1e6 + completion_tokens * self.output_per_1m / 1e6, 8)

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "provider": self.provider,
            "label": self.label or self.id,
            "input_per_1m": self.input_per_1m,
            "output_per_1m": self.output_per_1m,
            "generative": self.provider != "extractive",
        }


def _table() -> dict[str, ModelInfo]:
    rows: dict[str, ModelInfo] = {}
    for row in settings.KNOWHUB_LLM_MODELS:
        info = ModelInfo(
            id=str(row["id"]),
            provider=str(row.get("provider", "openai")),
            label=str(row.get("label", "")),
            input_per_1m=float(row.get("input_per_1m", 0) or 0),
            output_per_1m=float(row.get("output_per_1m", 0) or 0),
            api_id=str(row.get("api_id", "") or row["id"]),
        )
        rows[info.id] = info
    configured = settings.KNOWHUB_LLM_MODEL
    if configured and configured not in rows:
        provider = settings.KNOWHUB_LLM_PROVIDER
        rows[configured] = ModelInfo(id=configured, provider=provider, label=configured, api_id=configured)
    rows.setdefault("extractive", ModelInfo(id="extractive", provider="extractive", label="Extractive (offline)"))
    return rows


def _provider_ready(info: ModelInfo) -> bool:
    if info.provider == "extractive":
        return True
    if info.provider == "openai":
        # Behind LLM_BASE_URL (Ollama, vLLM…) only the configured model is known to be served;
        # with an OpenAI key and no base URL every openai row of the table is.
        if settings.LLM_BASE_URL:
            return info.id == settings.KNOWHUB_LLM_MODEL
        return bool(settings.OPENAI_API_KEY)
    if info.provider == "llamacpp":
        return bool(settings.KNOWHUB_GGUF_PATH) and os.path.exists(settings.KNOWHUB_GGUF_PATH)
    return False


def available_models() -> list[ModelInfo]:
    """The models a user may pick now (extractive always; others when their provider is set up)."""
    return [info for info in _table().values() if _provider_ready(info)]


def default_model_id() -> str:
    configured = settings.KNOWHUB_LLM_MODEL
    table = _table()
    if configured in table and _provider_ready(table[configured]):
        return configured
    return "extractive"


def model_info(model: str | None = None) -> ModelInfo:
    """The table row of ``model`` (default: the configured one); UnknownModel if not offered."""
    model = model or default_model_id()
    info = _table().get(model)
    if info is None or not _provider_ready(info):
        offered = ", ".join(m.id for m in available_models())
        raise UnknownModel(f"Unknown or unconfigured model {model!r}; available: {offered}.")
    return info


def get_llm(model: str | None = None) -> LLMProvider:
    """A provider able to answer with ``model`` (the extractive answerer unless configured)."""
    info = model_info(model)
    if info.provider == "extractive":
        from rag.llm.extractive import ExtractiveLLM

        return ExtractiveLLM()
    if info.provider == "openai":
        from rag.llm.openai import OpenAIChat

        return OpenAIChat(
            info=info,
            base_url=settings.LLM_BASE_URL,
            api_key=settings.OPENAI_API_KEY,
            timeout=settings.KNOWHUB_LLM_TIMEOUT,
        )
    if info.provider == "llamacpp":
        from rag.llm.llamacpp import LlamaCppChat

        return LlamaCppChat.shared(path=settings.KNOWHUB_GGUF_PATH, info=info)
    raise UnknownModel(f"Unknown LLM provider {info.provider!r} for model {info.id!r}.")


def get_chat_llm(model: str | None = None) -> LLMProvider | None:
    """The generative model ``model`` (default: the configured one), or None when offline."""
    try:
        llm = get_llm(model)
    except UnknownModel:
        if model:
            raise
        return None
    return llm if llm.generative else None
