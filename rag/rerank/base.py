"""The reranker protocol: every second-stage ranker (none, an HTTP /rerank server, an LLM) speaks it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class RerankError(Exception):
    """The reranker could not give a usable order (error, timeout, malformed reply)."""


@dataclass(frozen=True)
class Ranked:
    """One reranked document: its index in the list the reranker was given, and its score."""

    index: int
    score: float


@runtime_checkable
class Reranker(Protocol):
    """Orders ``documents`` by relevance to ``query``; best first, at most ``top_n`` of them.

    Implementations raise ``RerankError`` for anything that is not a clean, complete answer:
    the caller then serves the fused order, so a half-parsed reply must never leak through.
    """

    name: str

    def rerank(self, *, query: str, documents: list[str], top_n: int, timeout: float) -> list[Ranked]: ...


def validated(raw: list[tuple[int, float]], *, count: int) -> list[Ranked]:
    """Indices must be integers inside ``range(count)`` and appear once; else ``RerankError``."""
    seen: set[int] = set()
    out: list[Ranked] = []
    for index, score in raw:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise RerankError(f"index {index!r} is not one of the {count} documents sent")
        if index in seen:
            raise RerankError(f"index {index} appears twice")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise RerankError(f"score {score!r} of index {index} is not a number")
        seen.add(index)
        out.append(Ranked(index=index, score=float(score)))
    if not out:
        raise RerankError("the reranker returned no results")
    return out
