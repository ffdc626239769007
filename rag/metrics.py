"""Measures every app shares: nDCG of a ranking, cosine of two vectors (one copy of each).

Pure Python, no Django: the feedback app's fitting and the sessions' grader import them too.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence


def ndcg_at(ranked: Sequence[str], rels: Mapping[str, int] | Collection[str], k: int = 10) -> float:
    """nDCG@k of ``ranked`` with graded gains ``2^rel − 1``.

    ``rels`` maps a key to its grade; a plain collection of keys (a set) makes each of them
    relevant with grade 1, which is binary nDCG."""
    if not isinstance(rels, Mapping):
        rels = dict.fromkeys(rels, 1)
    dcg = sum((2 ** rels.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors of the same length (0 when one of them is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(y * y for y in b)) or 1.0
    return dot / (na * nb)
