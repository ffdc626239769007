"""The LLM provider protocol: every generator (extractive, OpenAI-compatible, local) speaks it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class LLMError(Exception):
    """Generation failed for good (bad request, invalid output, misconfiguration)."""


class TransientLLMError(LLMError):
    """Generation failed in a way that may pass (timeout, rate limit, 5xx)."""


@dataclass
class Completion:
    """A finished generation with its accounting."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@runtime_checkable
class LLMProvider(Protocol):
    """A chat model. ``generative`` is False for the offline extractive answerer, which only
    quotes what it is given; callers that need free text (the session guide) check it."""

    name: str
    generative: bool

    def complete(
        self,
        *,
        messages: list[dict],
        max_tokens: int = 800,
        temperature: float = 0.2,
        json_schema: dict | None = None,
        timeout: float | None = None,
    ) -> Completion: ...

    def stream(
        self,
        *,
        messages: list[dict],
        max_tokens: int = 800,
        temperature: float = 0.2,
        timeout: float | None = None,
    ) -> Iterator[str | Completion]:
        """Yield text deltas, then one final ``Completion`` with the whole text and tokens."""
        ...
