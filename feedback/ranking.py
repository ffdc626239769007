"""How judgments change ranking: tuned fusion features, and the direct, bounded effect of a label.

Two mechanisms, each switchable in settings:

* **Tuned fusion** (``KNOWHUB_FEEDBACK_TUNED_RANKING``). The active ``RankingConfig`` replaces the
  static 0.7/0.3 hybrid with ``w_vec·vec + w_txt·txt + w_title·title_match + w_recency·recency +
  w_judgment·document_balance``. ``feedback.fitting`` chooses those weights (cross-validated,
  regularised toward the defaults, from judgments, pairwise preferences and position-debiased
  clicks); ``manage.py tune_ranking`` activates them only when they win on every held-out fold.
* **Direct label effect** (``KNOWHUB_FEEDBACK_LABEL_EFFECT``). A chunk labelled for a query whose
  embedding is close to the current query moves by at most ``+KNOWHUB_FEEDBACK_LABEL_BOOST``
  (positive) or ``−KNOWHUB_FEEDBACK_LABEL_PENALTY`` (negative). Full strength from cosine
  ``KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY`` up, fading linearly to nothing at
  ``KNOWHUB_FEEDBACK_LABEL_REACH`` (see ``label_strength``). Only chunks already among the search's
  candidates move, and unrelated queries (below the reach) are untouched — a label can never pull
  a chunk from nowhere to the top.

Both only act on the weighted ``hybrid`` mode: ``vector``, ``fulltext`` and ``rrf`` stay pure so
``manage.py evaluate`` can still compare the raw signals.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import logging
import math
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields

from django.conf import settings
from django.utils import timezone

from rag.words import STOPWORDS

logger = logging.getLogger(__name__)

FEATURES = ("vec", "txt", "title", "recency", "judgment")


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
    *,
    weights: RankingWeights | None = None,
    tuned: bool | None = None,
    labels: bool | None = None,
    reach: float | None = None,
) -> Iterator[None]:
    """Within the block, search uses ``weights`` (instead of the active config) and/or turns the
    tuned weights or the direct label effect on or off, or gives the label effect another reach.
    For evaluation and fitting code."""
    token = _override.set({"weights": weights, "tuned": tuned, "labels": labels, "reach": reach})
    try:
        yield
    finally:
        _override.reset(token)


def feedback_disabled():
    """Plain hybrid search: neither tuned weights nor label effects (what fitting starts from)."""
    return ranking_override(tuned=False, labels=False)


def _switch(name: str, configured: bool) -> bool:
    """The override of feature ``name`` if one is set, else its setting (``configured``)."""
    current = _override.get()
    if current is not None and current.get(name) is not None:
        return bool(current[name])
    return bool(configured)


# --- features ---------------------------------------------------------------------------------


def query_terms(text: str) -> set[str]:
    """Content words of a query, lower-cased, crudely de-pluralised (for the title feature)."""
    return {
        _norm(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 1
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
        if query_vector is not None and _switch("labels", settings.KNOWHUB_FEEDBACK_LABEL_EFFECT):
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
        if weights_given or not _switch("tuned", settings.KNOWHUB_FEEDBACK_TUNED_RANKING):
            return
        weights = _active_weights()
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


ACTIVE_WEIGHTS_SECONDS = 10.0
_active_cache: dict[str, tuple[float, RankingWeights | None]] = {}
_active_lock = threading.Lock()


def _active_weights() -> RankingWeights | None:
    """The active configuration's weights, read at most once per ``ACTIVE_WEIGHTS_SECONDS`` per
    process (one query saved on nearly every hybrid search; weights only, nothing a caller's ACL
    governs). Activating a configuration in this process is seen at its commit
    (``forget_active_weights``); in another process within the TTL. Inside a transaction the
    database is read every time: a configuration just written there must count, and one a
    rollback will undo must never be remembered."""
    from django.db import connection

    from feedback.selectors import active_ranking_weights

    if connection.in_atomic_block:
        return active_ranking_weights()
    now = time.monotonic()
    hit = _active_cache.get(connection.alias)
    if hit is not None and now - hit[0] < ACTIVE_WEIGHTS_SECONDS:
        return hit[1]
    weights = active_ranking_weights()
    with _active_lock:
        _active_cache[connection.alias] = (now, weights)
    return weights


def forget_active_weights(**_kwargs) -> None:
    """Drop the cached active weights (a configuration was saved; also at each commit of one)."""
    from django.db import transaction

    _active_cache.clear()
    transaction.on_commit(_active_cache.clear)


# --- the direct label effect -----------------------------------------------------------------


def label_strength(similarity: float, *, full: float, reach: float) -> float:
    """How much a label on a query at cosine ``similarity`` counts for the current query (0…1).

    ``similarity`` itself from ``full`` up (a paraphrase), fading linearly to 0 at ``reach`` (a
    neighbour: same topic, other wording), 0 below it. ``reach == full`` is the hard paraphrase cut.
    """
    s = max(0.0, min(1.0, float(similarity)))
    if s >= full:
        return s
    if s < reach or full <= reach:
        return 0.0
    return s * (s - reach) / (full - reach)


@dataclass(frozen=True)
class LabelVote:
    """One label seen from the current query: ``chunk_uid`` judged ``sign`` (+1/−1) on a query at
    cosine ``similarity``; ``preferred_over`` makes it a pair (+ for one chunk, − for the other)."""

    chunk_uid: str
    sign: float
    similarity: float
    preferred_over: str = ""
    weight: float = 1.0


def label_deltas(
    votes: Iterable[LabelVote],
    candidates: Iterable[str],
    *,
    full: float,
    reach: float,
    boost: float,
    penalty: float,
) -> dict[str, float]:
    """Score deltas of candidate chunks from the labels near the current query.

    Each vote counts ``±strength`` for its chunk. A chunk's delta is ``vote_balance · max_strength``
    times ``boost`` (when positive) or ``penalty`` (when negative): bounded whatever the number of
    labels. The one implementation behind search (``selectors.judgment_adjustments``) and the
    offline evaluation (``manage.py feedback_eval``), so what is measured is what runs.
    """
    wanted = set(candidates)
    tally: dict[str, list[float]] = {}  # signed sum, weight sum, max strength

    def vote(uid: str, sign: float, strength: float) -> None:
        if uid not in wanted:
            return
        t = tally.setdefault(uid, [0.0, 0.0, 0.0])
        t[0] += sign * strength
        t[1] += strength
        t[2] = max(t[2], strength)

    for v in votes:
        strength = label_strength(v.similarity, full=full, reach=reach) * v.weight
        if strength <= 0:
            continue
        vote(v.chunk_uid, v.sign, strength)
        if v.preferred_over:
            vote(v.preferred_over, -v.sign, strength)
    deltas = {}
    for uid, (signed, weight, strength) in tally.items():
        if not weight:
            continue
        net = signed / weight  # −1 … 1
        delta = round(net * strength * (boost if net > 0 else penalty), 6)
        if delta:
            deltas[uid] = delta
    return deltas


def label_settings() -> dict[str, float]:
    """The label effect's knobs from settings (``feedback_eval`` overrides ``reach``)."""
    full = settings.KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY
    current = _override.get() or {}
    reach = current.get("reach")
    if reach is None:
        reach = settings.KNOWHUB_FEEDBACK_LABEL_REACH
    return {
        "full": full,
        "reach": min(float(reach), full),
        "boost": settings.KNOWHUB_FEEDBACK_LABEL_BOOST,
        "penalty": settings.KNOWHUB_FEEDBACK_LABEL_PENALTY,
    }
