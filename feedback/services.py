"""Writes of the feedback app."""

from __future__ import annotations

from feedback.models import Interaction


def interaction_record(
    *,
    user,
    kind: str,
    query: str,
    filters: dict,
    hits: list,
    answer: str = "",
    strategy: str = "",
    model: str = "",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    cost_usd: float = 0.0,
    latency_ms: float = 0.0,
    selected: list[str] | None = None,
) -> Interaction:
    """Log one query or ask with what it retrieved (uids, ranks and scores) and answered."""
    retrieved = [
        {
            "chunk_uid": h.chunk_uid,
            "rank": h.rank,
            "score": h.score,
            "vec_score": h.vec_score,
            "txt_score": h.txt_score,
            "collection": h.collection,
        }
        for h in hits
    ]
    domains = {h.domain for h in hits if h.domain}
    return Interaction.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        kind=kind,
        query=query,
        filters=filters,
        retrieved=retrieved,
        selected=selected or [],
        answer=answer,
        strategy=strategy,
        domain=filters.get("domain") or (domains.pop() if len(domains) == 1 else ""),
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd,
        latency_ms=int(latency_ms),
    )
