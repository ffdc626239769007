"""The embedding provider protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class EmbeddingError(Exception):
    """The provider cannot embed (bad configuration, refused input). Not worth retrying."""


class TransientEmbeddingError(EmbeddingError):
    """A failure that may pass (timeout, rate limit, 5xx): tasks retry these with backoff."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of ``dims`` floats.

    ``name`` is recorded on every chunk it embeds; a query is only compared with chunks embedded
    by the same ``name``.
    """

    name: str
    dims: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...
