"""Chat completions through the ``openai`` client: OpenAI or any compatible server.

``LLM_BASE_URL`` points the client at Ollama, vLLM, a llama.cpp server, Groq… Streaming asks for
usage in the last chunk (``stream_options.include_usage``); servers that ignore it get token
counts estimated from the text (≈4 characters a token), flagged in the log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from rag.llm.base import Completion, LLMError, TransientLLMError

logger = logging.getLogger(__name__)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class OpenAIChat:
    """One model of the model table served by an OpenAI-compatible endpoint."""

    generative = True

    def __init__(self, *, info, base_url: str | None, api_key: str, timeout: float = 60.0):
        if not api_key and not base_url:
            raise LLMError("The openai LLM provider needs OPENAI_API_KEY or LLM_BASE_URL.")
        import openai

        self._openai = openai
        self.info = info
        self.name = info.id
        self.timeout = timeout
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout, max_retries=0
        )

    def _translate(self, exc: Exception) -> LLMError:
        openai = self._openai
        if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
            return TransientLLMError(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, openai.APIStatusError):
            cls = TransientLLMError if exc.status_code >= 500 else LLMError
            return cls(f"HTTP {exc.status_code}: {exc}")
        return LLMError(f"{type(exc).__name__}: {exc}")

    def _completion(self, text: str, messages: list[dict], usage) -> Completion:
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            prompt, completion = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
        else:
            logger.info("%s returned no usage; estimating tokens from the text", self.name)
            prompt = estimate_tokens("".join(str(m.get("content", "")) for m in messages))
            completion = estimate_tokens(text)
        return Completion(
            text=text,
            model=self.name,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=self.info.cost(prompt, completion),
        )

    def complete(
        self,
        *,
        messages: list[dict],
        max_tokens: int = 800,
        temperature: float = 0.2,
        json_schema: dict | None = None,
        timeout: float | None = None,
    ) -> Completion:
        kwargs: dict = {
            "model": self.info.api_id or self.info.id,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "timeout": timeout or self.timeout,
        }
        if json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": json_schema.get("title", "output"), "schema": json_schema, "strict": False},
            }
        try:
            response = self._client.chat.completions.create(**kwargs)
        except Exception as exc:
            raise self._translate(exc) from exc
        if not response.choices:
            raise LLMError(f"{self.name} returned no choices")
        text = response.choices[0].message.content or ""
        if json_schema is not None:
            try:
                json.loads(text)
            except ValueError as exc:
                raise LLMError(f"{self.name} returned invalid JSON: {text[:200]!r}") from exc
        return self._completion(text, messages, response.usage)

    def stream(
        self,
        *,
        messages: list[dict],
        max_tokens: int = 800,
        temperature: float = 0.2,
        timeout: float | None = None,
    ) -> Iterator[str | Completion]:
        kwargs: dict = {
            "model": self.info.api_id or self.info.id,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": timeout or self.timeout,
        }
        try:
            try:
                stream = self._client.chat.completions.create(**kwargs)
            except self._openai.BadRequestError as exc:
                if "stream_options" not in str(exc):
                    raise
                # Older compatible servers reject stream_options: stream without usage instead.
                kwargs.pop("stream_options")
                stream = self._client.chat.completions.create(**kwargs)
        except Exception as exc:
            raise self._translate(exc) from exc
        parts: list[str] = []
        usage = None
        try:
            for chunk in stream:
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                for choice in chunk.choices or []:
                    delta = getattr(choice.delta, "content", None)
                    if delta:
                        parts.append(delta)
                        yield delta
        except LLMError:
            raise
        except Exception as exc:
            raise self._translate(exc) from exc
        finally:
            # A closed generator (client gone) closes the HTTP stream: the server stops generating.
            stream.close()
        yield self._completion("".join(parts), messages, usage)
