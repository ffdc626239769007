"""Embedding providers behind one protocol, chosen by ``KNOWHUB_EMBEDDING_PROVIDER``."""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from rag.embeddings.base import Embedder, EmbeddingError, TransientEmbeddingError

__all__ = ["Embedder", "EmbeddingError", "TransientEmbeddingError", "get_embedder", "build_embedder"]


def build_embedder(provider: str, *, model: str, dims: int, base_url: str | None = None) -> Embedder:
    """Construct a provider by name. Unknown names are a configuration error."""
    if provider == "local":
        from rag.embeddings.local import LocalEmbedder

        return LocalEmbedder(model=model, dims=dims)
    if provider == "openai":
        from rag.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(model=model, dims=dims, base_url=base_url, api_key=settings.OPENAI_API_KEY)
    raise EmbeddingError(
        f"Unknown embedding provider {provider!r}: set KNOWHUB_EMBEDDING_PROVIDER to 'local' or 'openai'."
    )


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    """The configured provider, built once per process (the local model loads in ~1 s)."""
    return build_embedder(
        settings.KNOWHUB_EMBEDDING_PROVIDER,
        model=settings.KNOWHUB_EMBEDDING_MODEL,
        dims=settings.KNOWHUB_EMBEDDING_DIMS,
        base_url=settings.KNOWHUB_EMBEDDING_BASE_URL,
    )
