"""OpenAI embeddings (text-embedding-3-small) or any OpenAI-compatible server."""

from __future__ import annotations

from rag.embeddings.base import EmbeddingError, TransientEmbeddingError


class OpenAIEmbedder:
    """The ``openai`` client; ``base_url`` points it at a compatible server (vLLM, Ollama…)."""

    def __init__(self, *, model: str, dims: int, base_url: str | None, api_key: str):
        if not api_key and not base_url:
            raise EmbeddingError("The openai embedding provider needs OPENAI_API_KEY or KNOWHUB_EMBEDDING_BASE_URL.")
        import openai

        self._openai = openai
        self._client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, timeout=60, max_retries=0)
        self.name = f"openai:{model}"
        self.model = model
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        kwargs = {"model": self.model, "input": texts}
        if self.model.startswith("text-embedding-3"):
            kwargs["dimensions"] = self.dims
        try:
            response = self._client.embeddings.create(**kwargs)
        except (self._openai.APITimeoutError, self._openai.APIConnectionError, self._openai.RateLimitError) as exc:
            raise TransientEmbeddingError(str(exc)) from exc
        except self._openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise TransientEmbeddingError(str(exc)) from exc
            raise EmbeddingError(str(exc)) from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        if vectors and len(vectors[0]) != self.dims:
            raise EmbeddingError(f"{self.model} returned {len(vectors[0])}-dim vectors, expected {self.dims}.")
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
