"""Embedding providers behind one protocol, chosen by ``KNOWHUB_EMBEDDING_PROVIDER``."""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from rag.embeddings.base import Embedder, EmbeddingError, TransientEmbeddingError

__all__ = ["Embedder", "EmbeddingError", "TransientEmbeddingError", "get_embedder", "build_embedder"]


BACKENDS = ("torch", "onnx", "onnx-int8")


def build_embedder(
    provider: str, *, model: str, dims: int, base_url: str | None = None, backend: str | None = None
) -> Embedder:
    """Construct a provider by name; ``backend`` is the local model's runtime (default
    ``KNOWHUB_EMBEDDING_BACKEND``). Unknown names are a configuration error."""
    if provider == "local":
        backend = backend or settings.KNOWHUB_EMBEDDING_BACKEND
        if backend == "torch":
            from rag.embeddings.local import LocalEmbedder

            return LocalEmbedder(model=model, dims=dims)
        if backend in ("onnx", "onnx-int8"):
            from rag.embeddings.onnx import OnnxEmbedder

            return OnnxEmbedder(
                model=model, dims=dims, quantized=backend == "onnx-int8",
                threads=settings.KNOWHUB_EMBEDDING_TORCH_THREADS,
            )  # fmt: skip
        raise EmbeddingError(
            f"Unknown local embedding backend {backend!r}: set KNOWHUB_EMBEDDING_BACKEND to {', '.join(BACKENDS)}."
        )
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
