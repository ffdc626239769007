"""Second-stage reranking of the fused candidates, chosen by ``KNOWHUB_RERANK_PROVIDER``.

``none`` (default, offline) serves the fused order. ``http`` posts the top N candidates to a
Cohere-style ``/rerank`` endpoint; ``llm`` asks the configured chat model for a listwise order.
Reranking never fails a search: an error, a timeout or a malformed reply serves the fused order,
and ``RerankInfo`` (recorded on the interaction) says which order was served and why.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace

from django.conf import settings

from rag.rerank.base import Ranked, Reranker, RerankError

__all__ = ["Ranked", "RerankError", "RerankInfo", "Reranker", "get_reranker", "rerank_hits", "reranked_search"]

logger = logging.getLogger(__name__)
PROVIDERS = ("none", "http", "llm")
# Providers run here so the caller's wait is bounded even if a socket or a model ignores its own
# timeout; a thread left running past it only finishes its request and is discarded.
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rerank")


@dataclass
class RerankInfo:
    """Which order a search served: ``reranked`` or ``fused`` (provider none, or a fallback)."""

    provider: str = "none"
    served: str = "fused"
    candidates: int = 0
    error: str = ""
    ms: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {"provider": self.provider, "served": self.served, "candidates": self.candidates,
               "ms": round(self.ms, 1)}  # fmt: skip
        if self.error:
            out["error"] = self.error
        return out


def get_reranker(provider: str | None = None) -> Reranker | None:
    """The configured reranker, or None for ``none``. A misconfiguration raises ``RerankError``."""
    provider = (provider or settings.KNOWHUB_RERANK_PROVIDER or "none").lower()
    if provider == "none":
        return None
    if provider == "http":
        from rag.rerank.http import HttpReranker

        return HttpReranker(
            url=settings.KNOWHUB_RERANK_URL,
            model=settings.KNOWHUB_RERANK_MODEL,
            api_key=settings.KNOWHUB_RERANK_API_KEY,
        )
    if provider == "llm":
        from rag.llm import get_chat_llm
        from rag.rerank.llm import LlmReranker

        llm = get_chat_llm(settings.KNOWHUB_RERANK_MODEL or None)
        if llm is None:
            raise RerankError("KNOWHUB_RERANK_PROVIDER=llm needs a generative model (OPENAI_API_KEY or LLM_BASE_URL)")
        return LlmReranker(llm=llm)
    raise RerankError(f"unknown KNOWHUB_RERANK_PROVIDER {provider!r}; choose from {', '.join(PROVIDERS)}")


def rerank_hits(
    *, query: str, hits: list, reranker: Reranker | None, top_n: int | None = None, timeout: float | None = None,
) -> tuple[list, RerankInfo]:  # fmt: skip
    """Reorder the first ``top_n`` hits by ``reranker``; the rest keep their fused order below them.

    Hits the reranker left out of its answer follow the ones it ranked, in fused order, so
    nothing retrieved is dropped. Ranks are renumbered; fused scores are left as they were.
    """
    if reranker is None or not hits:
        return hits, RerankInfo(provider="none" if reranker is None else reranker.name)
    top_n = top_n or settings.KNOWHUB_RERANK_TOP_N
    timeout = timeout if timeout is not None else settings.KNOWHUB_RERANK_TIMEOUT
    head, tail = hits[:top_n], hits[top_n:]
    documents = [_document_text(h) for h in head]
    info = RerankInfo(provider=reranker.name, candidates=len(head))
    started = time.perf_counter()
    future = _POOL.submit(reranker.rerank, query=query, documents=documents, top_n=len(head), timeout=timeout)
    try:
        ranked = future.result(timeout=timeout + 0.5)
    except FutureTimeout:
        future.cancel()
        info.error = f"timeout after {timeout:g}s"
    except RerankError as exc:
        info.error = str(exc)[:300]
    except Exception as exc:  # a provider bug must not break search either
        logger.exception("reranker %s failed", reranker.name)
        info.error = f"{type(exc).__name__}: {exc}"[:300]
    else:
        order = [r.index for r in ranked]
        order += [i for i in range(len(head)) if i not in set(order)]
        head = [head[i] for i in order]
        info.served = "reranked"
        info.scores = {hits[r.index].chunk_uid: r.score for r in ranked}
    info.ms = (time.perf_counter() - started) * 1000
    if info.error:
        logger.warning("rerank (%s) fell back to the fused order: %s", reranker.name, info.error)
        return hits, info
    out = [replace(h, rank=i + 1) if hasattr(h, "rank") else h for i, h in enumerate([*head, *tail])]
    return out, info


def _document_text(hit) -> str:
    title = getattr(hit, "title", "") or ""
    content = getattr(hit, "content", "") or ""
    return f"{title}\n{content}" if title and not content.startswith(title) else content


def reranked_search(*, top_k: int = 8, reranker: Reranker | None | str = "default", search=None, **search_kwargs):
    """``chunk_search`` followed by the rerank stage: the one place callers apply it.

    With a reranker, the search fetches ``max(top_k, KNOWHUB_RERANK_TOP_N)`` fused hits, the
    reranker orders them, and the first ``top_k`` are served. Returns ``(SearchResult, RerankInfo)``.
    """
    from rag.search import chunk_search as default_search

    chunk_search = search or default_search  # callers may hand their own (tests patch theirs)
    if reranker == "default":
        try:
            reranker = get_reranker()
        except RerankError as exc:
            result = chunk_search(top_k=top_k, **search_kwargs)
            return result, RerankInfo(provider=settings.KNOWHUB_RERANK_PROVIDER, error=str(exc))
    if reranker is None:
        return chunk_search(top_k=top_k, **search_kwargs), RerankInfo()
    n = max(top_k, settings.KNOWHUB_RERANK_TOP_N)
    result = chunk_search(top_k=n, **search_kwargs)
    hits, info = rerank_hits(query=search_kwargs["query"], hits=result.hits, reranker=reranker, top_n=n)
    result.hits = hits[:top_k]
    result.took_ms += info.ms
    return result, info
