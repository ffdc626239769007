"""How judgments change ranking: tuned fusion features, and the direct, bounded effect of a label.

Two mechanisms, each switchable in settings:

* **Tuned fusion** (``KNOWHUB_FEEDBACK_TUNED_RANKING``). The active ``RankingConfig`` replaces the
  static 0.7/0.3 hybrid with ``w_vec·vec + w_txt·txt + w_title·title_match + w_recency·recency +
  w_judgment·document_balance``. ``fit_weights`` chooses those weights by coordinate search on the
  labelled interactions; ``manage.py tune_ranking`` activates them only when they beat the current
  ones on a held-back validation split.
* **Direct label effect** (``KNOWHUB_FEEDBACK_LABEL_EFFECT``). A chunk labelled for a query whose
  embedding is within ``KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY`` (cosine) of the current query moves
  by at most ``+KNOWHUB_FEEDBACK_LABEL_BOOST`` (positive) or ``−KNOWHUB_FEEDBACK_LABEL_PENALTY``
  (negative), scaled by that similarity. Only chunks already among the search's candidates move,
  and unrelated queries (below the similarity threshold) are untouched — a label can never pull a
  chunk from nowhere to the top.

Both only act on the weighted ``hybrid`` mode: ``vector``, ``fulltext`` and ``rrf`` stay pure so
``manage.py evaluate`` can still compare the raw signals.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import logging
import math
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields, replace

from django.conf import settings
from django.utils import timezone

logger = logging.getLogger(__name__)

FEATURES = ("vec", "txt", "title", "recency", "judgment")

# Grids searched per coordinate. ``alpha`` is w_vec (w_txt = 1 − alpha), so the fused score keeps
# the [0, 1] scale the direct label effect's bounds are expressed in.
ALPHA_GRID = tuple(round(x * 0.05, 2) for x in range(21))
TITLE_GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)
RECENCY_GRID = (0.0, 0.025, 0.05, 0.1, 0.2)
JUDGMENT_GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2)

_STOP = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "do",
        "does",
        "did",
        "can",
        "my",
        "me",
        "we",
        "you",
        "your",
        "our",
        "not",
        "no",
    }
)


@dataclass(frozen=True)
class RankingWeights:
    """Coefficients of the fused score. The default is the static hybrid of settings."""

    w_vec: float = 0.7
    w_txt: float = 0.3
    w_title: float = 0.0
    w_recency: float = 0.0
    w_judgment: float = 0.0

    @classmethod
    def default(cls) -> RankingWeights:
        return cls(
            w_vec=settings.KNOWHUB_HYBRID_VECTOR_WEIGHT, w_txt=settings.KNOWHUB_HYBRID_TEXT_WEIGHT
        )

    @classmethod
    def from_dict(cls, data: dict) -> RankingWeights:
        """Build from stored JSON; unknown keys are an error (a typo must not mean 0)."""
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown ranking weight(s): {', '.join(sorted(unknown))}")
        values = {}
        for name, value in data.items():
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number")
            values[name] = value
        return cls(**values)

    def as_dict(self) -> dict:
        return {k: round(v, 6) for k, v in asdict(self).items()}

    def vector(self) -> tuple[float, ...]:
        return (self.w_vec, self.w_txt, self.w_title, self.w_recency, self.w_judgment)


# --- switches ---------------------------------------------------------------------------------

_override: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "feedback_ranking_override", default=None
)


@contextlib.contextmanager
def ranking_override(
    *, weights: RankingWeights | None = None, tuned: bool | None = None, labels: bool | None = None
) -> Iterator[None]:
    """Within the block, search uses ``weights`` (instead of the active config) and/or turns the
    tuned weights or the direct label effect on or off. For evaluation and fitting code."""
    token = _override.set({"weights": weights, "tuned": tuned, "labels": labels})
    try:
        yield
    finally:
        _override.reset(token)


def feedback_disabled():
    """Plain hybrid search: neither tuned weights nor label effects (what fitting starts from)."""
    return ranking_override(tuned=False, labels=False)


def _switch(name: str, setting: str) -> bool:
    current = _override.get()
    if current is not None and current.get(name) is not None:
        return bool(current[name])
    return bool(getattr(settings, setting, True))


# --- features ---------------------------------------------------------------------------------


def query_terms(text: str) -> set[str]:
    """Content words of a query, lower-cased, crudely de-pluralised (for the title feature)."""
    return {
        _norm(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 1
    }


def _norm(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def title_match(terms: set[str], title: str) -> float:
    """Share of the query's content words that appear in the chunk's title (0…1)."""
    if not terms or not title:
        return 0.0
    return len(terms & query_terms(title)) / len(terms)


def recency(date: dt.date | None, today: dt.date | None = None) -> float:
    """1 for today, halving every ``KNOWHUB_FEEDBACK_RECENCY_HALF_LIFE_DAYS``; 0 when undated."""
    if date is None:
        return 0.0
    if isinstance(date, dt.datetime):
        date = date.date()
    today = today or timezone.now().date()
    age = max((today - date).days, 0)
    return 0.5 ** (age / max(settings.KNOWHUB_FEEDBACK_RECENCY_HALF_LIFE_DAYS, 1))


def document_key(collection: str, source_type: str, source_id: str) -> str:
    return f"{collection}:{source_type}:{source_id}"


def balance(pos: float, neg: float) -> float:
    """Smoothed judgment balance of a document in (−1, 1): one label alone gives ±0.5."""
    return (pos - neg) / (pos + neg + 1.0)


def row_features(
    row: dict, terms: set[str], doc_balance: dict[str, float], today: dt.date
) -> tuple[float, ...]:
    key = document_key(row["collection"], row["source_type"], row["source_id"])
    return (
        float(row["vec_score"]),
        float(row["txt_score"]),
        title_match(terms, row.get("title") or ""),
        recency(row.get("date"), today),
        doc_balance.get(key, 0.0),
    )


def fused(features: Sequence[float], weights: RankingWeights) -> float:
    return sum(f * w for f, w in zip(features, weights.vector(), strict=True))


# --- the hook rag.search calls ----------------------------------------------------------------


def rescore(
    rows: list[dict],
    *,
    query: str,
    query_vector: Sequence[float] | None,
    mode: str,
    weights_given: bool = False,
    embedder_name: str | None = None,
) -> list[dict]:
    """Re-score hybrid candidate rows in place with the active ranking config and label effects.

    ``rows`` are the candidate dicts of ``rag.search.chunk_search`` (chunk_uid, collection,
    source_type, source_id, title, date, vec_score, txt_score, score). The caller sorts them
    afterwards. Explicit ``weights`` passed to the search win over the active config.
    """
    if mode != "hybrid" or not rows:
        return rows
    try:
        _apply_tuned(rows, query=query, weights_given=weights_given)
        if query_vector is not None and _switch("labels", "KNOWHUB_FEEDBACK_LABEL_EFFECT"):
            from feedback.selectors import judgment_adjustments

            deltas = judgment_adjustments(
                query_vector=query_vector,
                chunk_uids=[r["chunk_uid"] for r in rows],
                embedding_model=embedder_name,
            )
            for r in rows:
                delta = deltas.get(r["chunk_uid"])
                if delta:
                    r["score"] = r["score"] + delta
                    r["label_delta"] = delta
    except Exception:  # ranking must never take search down with it
        logger.exception("feedback rescoring failed; keeping the plain hybrid scores")
    return rows


def _apply_tuned(rows: list[dict], *, query: str, weights_given: bool) -> None:
    current = _override.get() or {}
    weights = current.get("weights")
    if weights is None:
        if weights_given or not _switch("tuned", "KNOWHUB_FEEDBACK_TUNED_RANKING"):
            return
        from feedback.selectors import active_ranking_weights

        weights = active_ranking_weights()
        if weights is None:
            return
    doc_balance: dict[str, float] = {}
    if weights.w_judgment:
        from feedback.selectors import document_balances

        doc_balance = document_balances(
            {document_key(r["collection"], r["source_type"], r["source_id"]) for r in rows}
        )
    terms = query_terms(query)
    today = timezone.now().date()
    for r in rows:
        r["score"] = fused(row_features(r, terms, doc_balance, today), weights)


# --- fitting ----------------------------------------------------------------------------------


@dataclass
class Candidate:
    chunk_uid: str
    doc_key: str
    features: tuple[float, ...]  # judgment feature left at 0: it depends on which labels count


@dataclass
class LabelledQuery:
    """One distinct query with its candidates and the chunks people judged relevant."""

    group: str
    query: str
    candidates: list[Candidate]
    positives: set[str]  # chunk uids (or doc keys, at document granularity)
    interaction_ids: list[int] = field(default_factory=list)
    # judgments of this query per document: {doc_key: (pos, neg)}, for leave-one-query-out
    doc_labels: dict[str, tuple[int, int]] = field(default_factory=dict)


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, key in enumerate(ranked[:k]) if key in relevant)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / idcg if idcg else 0.0


def _doc_counts(queries: Iterable[LabelledQuery]) -> dict[str, list[int]]:
    totals: dict[str, list[int]] = {}
    for q in queries:
        for key, (pos, neg) in q.doc_labels.items():
            t = totals.setdefault(key, [0, 0])
            t[0] += pos
            t[1] += neg
    return totals


@dataclass
class _Prepared:
    query: LabelledQuery
    feats: list[tuple[float, ...]]
    keys: list[str]


def _prepare(
    queries: list[LabelledQuery], label_source: list[LabelledQuery], granularity: str
) -> list[_Prepared]:
    """Fill the judgment feature from ``label_source``'s labels, leaving each query's own out."""
    totals = _doc_counts(label_source)
    in_source = {id(q) for q in label_source}
    prepared = []
    for q in queries:
        own = q.doc_labels if id(q) in in_source else {}
        feats, keys = [], []
        for c in q.candidates:
            pos, neg = totals.get(c.doc_key, (0, 0))
            opos, oneg = own.get(c.doc_key, (0, 0))
            b = balance(pos - opos, neg - oneg)
            feats.append(c.features[:4] + (b,))
            keys.append(c.doc_key if granularity == "document" else c.chunk_uid)
        prepared.append(_Prepared(q, feats, keys))
    return prepared


def _mean_ndcg(prepared: list[_Prepared], weights: RankingWeights, k: int = 10) -> float:
    if not prepared:
        return 0.0
    w = weights.vector()
    total = 0.0
    for p in prepared:
        order = sorted(
            range(len(p.keys)),
            key=lambda i: (-sum(a * b for a, b in zip(p.feats[i], w, strict=True)), p.keys[i]),
        )
        ranked, seen = [], set()
        for i in order:
            key = p.keys[i]
            if key in seen:
                continue
            seen.add(key)
            ranked.append(key)
            if len(ranked) >= k:
                break
        total += ndcg_at(ranked, p.query.positives, k)
    return total / len(prepared)


def evaluate_weights(
    queries: list[LabelledQuery],
    weights: RankingWeights,
    *,
    label_source: list[LabelledQuery] | None = None,
    granularity: str = "chunk",
) -> float:
    """Mean nDCG@10 of ``queries`` ranked by ``weights`` (judgment balance from ``label_source``)."""
    return _mean_ndcg(_prepare(queries, label_source or [], granularity), weights)


def fit_weights(
    train: list[LabelledQuery],
    *,
    start: RankingWeights,
    granularity: str = "chunk",
    label_source: list[LabelledQuery] | None = None,
    rounds: int = 4,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[RankingWeights, float]:
    """Coordinate search maximising mean nDCG@10 on ``train`` (leave-one-query-out balances).

    The judgment feature of each train query counts the labels of ``label_source`` (default:
    ``train``) except its own. A coordinate moves only on a strict improvement, so with nothing to
    learn ``start`` comes back unchanged.
    """
    prepared = _prepare(train, label_source if label_source is not None else train, granularity)
    best, best_score = start, _mean_ndcg(prepared, start)
    max_judgment = settings.KNOWHUB_FEEDBACK_MAX_JUDGMENT_WEIGHT
    coords: list[tuple[str, Sequence[float]]] = [
        ("alpha", ALPHA_GRID),
        ("w_title", TITLE_GRID),
        ("w_recency", RECENCY_GRID),
        ("w_judgment", tuple(v for v in JUDGMENT_GRID if v <= max_judgment)),
    ]
    for _ in range(rounds):
        improved = False
        for name, grid in coords:
            for value in grid:
                if name == "alpha":
                    cand = replace(best, w_vec=value, w_txt=round(1.0 - value, 6))
                else:
                    cand = replace(best, **{name: value})
                if cand == best:
                    continue
                score = _mean_ndcg(prepared, cand)
                if score > best_score + 1e-9:
                    best, best_score, improved = cand, score, True
            if progress:
                progress(name, best_score)
        if not improved:
            break
    return best, best_score


def split_queries(
    queries: list[LabelledQuery], *, validation_fraction: float, seed: int
) -> tuple[list[LabelledQuery], list[LabelledQuery]]:
    """Deterministic split by distinct query: a query never lands on both sides."""
    ordered = sorted(queries, key=lambda q: q.group)
    random.Random(seed).shuffle(ordered)
    n_val = round(len(ordered) * validation_fraction)
    if len(ordered) >= 2:
        n_val = min(max(n_val, 1), len(ordered) - 1)
    return ordered[n_val:], ordered[:n_val]
