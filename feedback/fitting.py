"""Fitting the fusion weights on what people told us, in a way that generalises.

What counts (per distinct query, mixed into one utility in 0…1):

* pointwise judgments: nDCG@10 of the chunks (or documents) judged relevant;
* pairwise judgments (``preferred_over``): the share of pairs the ranking puts the right way round;
* clicks, a weak signal: clicked results are biased toward the top of what was shown, so each
  click counts ``1 / propensity(rank)`` with an examination propensity ``(1/rank)^eta`` (inverse
  propensity scoring, clipped), and a query's clicks weigh ``KNOWHUB_FEEDBACK_CLICK_WEIGHT`` of a
  judged query.

The fit is a coordinate search over a small grid, penalised by the distance from the default
weights (``KNOWHUB_FEEDBACK_FIT_REGULARISATION`` of utility per unit of weight), and it is
cross-validated: k folds over distinct queries, each fold fitted on the others and measured on
itself. ``cross_validate`` says "activate" only when the fit beats the current weights on every
held-out fold, and reports each feature's weight with how consistently the folds chose it.

Everything is packed in numpy arrays (``FitData``) so one weight vector scores every query at
once: a fit tries a few hundred weight vectors over hundreds of queries.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np
from django.conf import settings

from feedback.ranking import RankingWeights, balance
from rag.metrics import ndcg_at  # noqa: F401  (binary nDCG when given a set; importable from here)

K = 10  # nDCG@10, as everywhere in knowhub's evaluation

# Grids searched per coordinate. ``alpha`` is w_vec (w_txt = 1 − alpha), so the fused score keeps
# the [0, 1] scale the direct label effect's bounds are expressed in.
ALPHA_GRID = tuple(round(x * 0.05, 2) for x in range(21))
TITLE_GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)
RECENCY_GRID = (0.0, 0.025, 0.05, 0.1, 0.2)
JUDGMENT_GRID = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2)

MAX_INVERSE_PROPENSITY = 20.0  # clipped IPS: one click deep down must not outweigh everything


@dataclass
class Candidate:
    chunk_uid: str
    doc_key: str
    features: tuple[float, ...]  # judgment feature left at 0: it depends on which labels count


@dataclass
class LabelledQuery:
    """One distinct query with its candidates and what people said about them.

    Keys (in ``positives``, ``pairs``, ``clicks``) are chunk uids, or document keys at document
    granularity.
    """

    group: str
    query: str
    candidates: list[Candidate]
    positives: set[str]
    interaction_ids: list[int] = field(default_factory=list)
    # judgments of this query per document: {doc_key: (pos, neg)}, for leave-one-query-out
    doc_labels: dict[str, tuple[int, int]] = field(default_factory=dict)
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (preferred, other)
    clicks: dict[str, float] = field(default_factory=dict)  # key -> debiased clicks per impression

    @property
    def evaluable(self) -> bool:
        return bool(self.positives or self.pairs or self.clicks)


def propensity(rank: int, eta: float | None = None) -> float:
    """Probability that a result shown at ``rank`` (1-based) is looked at: ``(1/rank)^eta``."""
    eta = settings.KNOWHUB_FEEDBACK_CLICK_ETA if eta is None else eta
    return (1.0 / max(int(rank), 1)) ** eta


def click_weights(
    clicks: Iterable[tuple[str, int]], *, impressions: int, eta: float | None = None
) -> dict[str, float]:
    """``{key: Σ 1/propensity(rank) / impressions}``: an unbiased (clipped) estimate of how often
    each key would be clicked if every result were looked at."""
    out: dict[str, float] = {}
    for key, rank in clicks:
        w = min(1.0 / propensity(rank, eta), MAX_INVERSE_PROPENSITY)
        out[key] = out.get(key, 0.0) + w
    n = max(impressions, 1)
    return {k: v / n for k, v in out.items()}


def click_mass(
    clicks: Iterable[tuple[str, int]], *, eta: float | None = None, weight: float | None = None
) -> dict[str, float]:
    """What clicks add to the positive side of a document's judgment balance: each click counts
    ``weight`` (``KNOWHUB_FEEDBACK_CLICK_WEIGHT``) of a label times its clipped inverse
    propensity, so a click deep in the list says more than one on the top result."""
    weight = settings.KNOWHUB_FEEDBACK_CLICK_WEIGHT if weight is None else weight
    out: dict[str, float] = {}
    for key, rank in clicks:
        out[key] = out.get(key, 0.0) + weight * min(
            1.0 / propensity(rank, eta), MAX_INVERSE_PROPENSITY
        )
    return out


def click_vote_weight(rank: int, *, eta: float | None = None, weight: float | None = None) -> float:
    """How much one click counts in the direct label effect, next to a judgment's 1: the click
    weight times its clipped inverse propensity, at most 1 (a click is never more than a label)."""
    weight = settings.KNOWHUB_FEEDBACK_CLICK_WEIGHT if weight is None else weight
    return min(1.0, weight * min(1.0 / propensity(rank, eta), MAX_INVERSE_PROPENSITY))


def _doc_counts(queries: Iterable[LabelledQuery]) -> dict[str, list[int]]:
    totals: dict[str, list[int]] = {}
    for q in queries:
        for key, (pos, neg) in q.doc_labels.items():
            t = totals.setdefault(key, [0, 0])
            t[0] += pos
            t[1] += neg
    return totals


_DISCOUNT = 1.0 / np.log2(np.arange(K) + 2.0)


class FitData:
    """Queries packed into arrays: candidate features, key ids, relevance, click weights, pairs.

    The judgment feature of each query counts the labels of ``label_source`` except its own
    (leave-one-query-out), so a query never learns from its own labels.
    """

    def __init__(
        self,
        queries: list[LabelledQuery],
        *,
        label_source: list[LabelledQuery] | None = None,
        granularity: str = "chunk",
        click_weight: float | None = None,
    ):
        click_weight = (
            settings.KNOWHUB_FEEDBACK_CLICK_WEIGHT if click_weight is None else click_weight
        )
        self.queries = queries
        self.uids: list[list[str]] = []  # candidate chunk uids per query, in array order
        totals = _doc_counts(label_source or [])
        in_source = {id(q) for q in label_source or []}
        nq = max(len(queries), 1)
        n = max((len(q.candidates) for q in queries), default=1) or 1
        key_ids: list[dict[str, int]] = []
        for q in queries:
            ids: dict[str, int] = {}
            for c in q.candidates:
                ids.setdefault(c.doc_key if granularity == "document" else c.chunk_uid, len(ids))
            key_ids.append(ids)
        nk = max((len(ids) for ids in key_ids), default=1) or 1
        self.features = np.zeros((nq, n, 5))
        self.valid = np.zeros((nq, n), dtype=bool)
        self.keys = np.full((nq, n), -1, dtype=np.int64)
        self.rel = np.zeros((nq, nk))
        self.clk = np.zeros((nq, nk))
        self.idcg_rel = np.zeros(nq)
        self.idcg_clk = np.zeros(nq)
        self.w_rel = np.zeros(nq)
        self.w_clk = np.zeros(nq)
        self.w_pair = np.zeros(nq)
        pq, pa, pb = [], [], []
        for qi, (q, ids) in enumerate(zip(queries, key_ids, strict=True)):
            own = q.doc_labels if id(q) in in_source else {}
            # candidates in chunk uid order, so a stable sort breaks score ties as search does
            ordered = sorted(q.candidates, key=lambda c: c.chunk_uid)
            self.uids.append([c.chunk_uid for c in ordered])
            for ci, c in enumerate(ordered):
                pos, neg = totals.get(c.doc_key, (0, 0))
                opos, oneg = own.get(c.doc_key, (0, 0))
                self.features[qi, ci, :4] = c.features[:4]
                self.features[qi, ci, 4] = balance(pos - opos, neg - oneg)
                self.valid[qi, ci] = True
                self.keys[qi, ci] = ids[c.doc_key if granularity == "document" else c.chunk_uid]
            if q.positives:
                for key in q.positives:
                    if key in ids:
                        self.rel[qi, ids[key]] = 1.0
                self.idcg_rel[qi] = _DISCOUNT[: min(len(q.positives), K)].sum()
                self.w_rel[qi] = 1.0
            if q.clicks and click_weight > 0:
                for key, w in q.clicks.items():
                    if key in ids:
                        self.clk[qi, ids[key]] = w
                best = sorted(q.clicks.values(), reverse=True)[:K]
                self.idcg_clk[qi] = float(np.dot(best, _DISCOUNT[: len(best)]))
                self.w_clk[qi] = click_weight if self.idcg_clk[qi] > 0 else 0.0
            usable = 0
            for a, b in q.pairs:
                ia, ib = ids.get(a, -1), ids.get(b, -1)
                if ia < 0 and ib < 0:
                    continue  # neither shown: the ranking cannot get this pair right or wrong
                pq.append(qi)
                pa.append(ia)
                pb.append(ib)
                usable += 1
            self.w_pair[qi] = 1.0 if usable else 0.0
        self.pq = np.asarray(pq, dtype=np.int64)
        self.pa = np.asarray(pa, dtype=np.int64)
        self.pb = np.asarray(pb, dtype=np.int64)
        self.n_pairs = np.bincount(self.pq, minlength=nq) if len(pq) else np.zeros(nq)
        self.nk = nk
        self.weight = self.w_rel + self.w_clk + self.w_pair
        self.total = float(self.weight.sum())

    def offsets(self, deltas: Sequence[dict[str, float]]) -> np.ndarray:
        """Per-query ``{chunk_uid: score delta}`` (the direct label effect) as an array."""
        out = np.zeros(self.valid.shape)
        for qi, (uids, d) in enumerate(zip(self.uids, deltas, strict=True)):
            if d:
                for ci, uid in enumerate(uids):
                    out[qi, ci] = d.get(uid, 0.0)
        return out

    def per_query(self, weights: RankingWeights, offset: np.ndarray | None = None) -> np.ndarray:
        """Each query's utility in 0…1 (weighted mean of nDCG, click nDCG, pair accuracy).

        ``offset`` is added to the fused scores (the direct label effect, see ``offsets``).
        """
        nq, n = self.valid.shape
        scores = self.features @ np.asarray(weights.vector())
        if offset is not None:
            scores = scores + offset
        scores = np.where(self.valid, scores, -np.inf)
        order = np.argsort(-scores, axis=1, kind="stable")
        sk = np.take_along_axis(self.keys, order, axis=1)
        rows = np.arange(nq)[:, None]
        flat = (rows * (self.nk + 1) + (sk + 1)).ravel()
        _, first_idx = np.unique(flat, return_index=True)
        first = np.zeros(flat.shape, dtype=bool)
        first[first_idx] = True
        first = first.reshape(nq, n) & (sk >= 0)
        rank = np.cumsum(first, axis=1) - 1  # 0-based rank of each key's best candidate
        top = first & (rank < K)
        disc = np.where(top, 1.0 / np.log2(np.clip(rank, 0, None) + 2.0), 0.0)
        safe = np.clip(sk, 0, None)
        out = np.zeros(nq)
        if self.w_rel.any():
            dcg = (np.take_along_axis(self.rel, safe, axis=1) * disc).sum(axis=1)
            out += self.w_rel * np.divide(
                dcg, self.idcg_rel, out=np.zeros(nq), where=self.idcg_rel > 0
            )
        if self.w_clk.any():
            dcg = (np.take_along_axis(self.clk, safe, axis=1) * disc).sum(axis=1)
            out += self.w_clk * np.divide(
                dcg, self.idcg_clk, out=np.zeros(nq), where=self.idcg_clk > 0
            )
        if len(self.pq):
            rank_of = np.full((nq, self.nk + 1), np.inf)  # last column: "not shown"
            rr, cc = np.nonzero(first)
            rank_of[rr, sk[rr, cc]] = rank[rr, cc]
            ra = rank_of[self.pq, np.where(self.pa < 0, self.nk, self.pa)]
            rb = rank_of[self.pq, np.where(self.pb < 0, self.nk, self.pb)]
            right = np.bincount(self.pq, weights=(ra < rb).astype(float), minlength=nq)
            acc = np.divide(right, self.n_pairs, out=np.zeros(nq), where=self.n_pairs > 0)
            out += self.w_pair * acc
        return np.divide(out, self.weight, out=np.zeros(nq), where=self.weight > 0)

    def utility(self, weights: RankingWeights, offset: np.ndarray | None = None) -> float:
        """Mean utility over the queries, each weighted by what it carries (clicks count less)."""
        if not self.total:
            return 0.0
        return float((self.per_query(weights, offset) * self.weight).sum() / self.total)


def evaluate_weights(
    queries: list[LabelledQuery],
    weights: RankingWeights,
    *,
    label_source: list[LabelledQuery] | None = None,
    granularity: str = "chunk",
    click_weight: float | None = None,
) -> float:
    """Mean utility (nDCG@10 when only pointwise judgments) of ``queries`` ranked by ``weights``."""
    data = FitData(
        queries, label_source=label_source, granularity=granularity, click_weight=click_weight
    )
    return data.utility(weights)


def distance(weights: RankingWeights, anchor: RankingWeights) -> float:
    """L1 distance between two weightings (alpha counted once: w_txt follows w_vec)."""
    return (
        abs(weights.w_vec - anchor.w_vec)
        + abs(weights.w_title - anchor.w_title)
        + abs(weights.w_recency - anchor.w_recency)
        + abs(weights.w_judgment - anchor.w_judgment)
    )


def fit_weights(
    train: list[LabelledQuery],
    *,
    start: RankingWeights,
    granularity: str = "chunk",
    label_source: list[LabelledQuery] | None = None,
    regularisation: float | None = None,
    click_weight: float | None = None,
    rounds: int = 4,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[RankingWeights, float]:
    """Coordinate search maximising ``utility − regularisation · distance(weights, defaults)``.

    Returns the weights and their (unpenalised) train utility. A coordinate moves only on a
    strict improvement, so with nothing to learn ``start`` comes back unchanged.
    """
    data = FitData(
        train,
        label_source=label_source if label_source is not None else train,
        granularity=granularity,
        click_weight=click_weight,
    )
    lam = settings.KNOWHUB_FEEDBACK_FIT_REGULARISATION if regularisation is None else regularisation
    anchor = RankingWeights.default()

    def objective(w: RankingWeights) -> float:
        return data.utility(w) - lam * distance(w, anchor)

    best, best_score = start, objective(start)
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
                score = objective(cand)
                if score > best_score + 1e-9:
                    best, best_score, improved = cand, score, True
            if progress:
                progress(name, best_score)
        if not improved:
            break
    return best, data.utility(best)


def fold_split(queries: list[LabelledQuery], *, folds: int, seed: int) -> list[list[LabelledQuery]]:
    """Deterministic k-fold split by distinct query: a query lands in exactly one fold."""
    ordered = sorted(queries, key=lambda q: q.group)
    random.Random(seed).shuffle(ordered)
    k = max(1, min(folds, len(ordered)))
    return [ordered[i::k] for i in range(k)]


@dataclass
class FoldResult:
    fold: int
    train: int
    validation: int
    before: float  # held-out utility of the current weights
    after: float  # held-out utility of the weights fitted on the other folds
    weights: dict

    @property
    def gain(self) -> float:
        return self.after - self.before


@dataclass
class CrossValidation:
    """What ``cross_validate`` found: the fit on all queries and the evidence from the folds."""

    start: RankingWeights
    weights: RankingWeights
    folds: list[FoldResult]
    train_before: float
    train_after: float
    features: dict

    @property
    def activate(self) -> bool:
        """Only a change that beats the current weights on every held-out fold."""
        return (
            self.weights != self.start
            and bool(self.folds)
            and all(f.gain > 1e-9 for f in self.folds)
        )

    @property
    def validation_before(self) -> float:
        return _mean([f.before for f in self.folds])

    @property
    def validation_after(self) -> float:
        return _mean([f.after for f in self.folds])

    def as_dict(self) -> dict:
        return {
            "start": self.start.as_dict(),
            "weights": self.weights.as_dict(),
            "activate": self.activate,
            "train": {"before": round(self.train_before, 4), "after": round(self.train_after, 4)},
            "validation": {
                "before": round(self.validation_before, 4),
                "after": round(self.validation_after, 4),
            },
            "folds": [
                {**asdict(f), "before": round(f.before, 4), "after": round(f.after, 4)}
                for f in self.folds
            ],
            "features": self.features,
        }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def cross_validate(
    queries: list[LabelledQuery],
    *,
    start: RankingWeights,
    folds: int | None = None,
    seed: int = 0,
    granularity: str = "chunk",
    regularisation: float | None = None,
    click_weight: float | None = None,
) -> CrossValidation:
    """k-fold cross-validation of ``fit_weights`` over distinct queries, then the fit on all.

    Each fold is fitted on the other folds (their labels also feed the judgment feature; the
    fold's own never do) and measured on itself, against ``start``.
    """
    folds = settings.KNOWHUB_FEEDBACK_FIT_FOLDS if folds is None else folds
    evaluable = [q for q in queries if q.evaluable]
    kw = {"granularity": granularity, "regularisation": regularisation, "click_weight": click_weight}
    results: list[FoldResult] = []
    fold_weights: list[RankingWeights] = []
    parts = fold_split(evaluable, folds=folds, seed=seed) if len(evaluable) >= 2 else []
    for i, held in enumerate(parts):
        held_groups = {q.group for q in held}
        train = [q for q in evaluable if q.group not in held_groups]
        source = [q for q in queries if q.group not in held_groups]
        fitted, _ = fit_weights(train, start=start, label_source=source, **kw)
        ev = {"label_source": source, "granularity": granularity, "click_weight": click_weight}
        results.append(
            FoldResult(
                fold=i,
                train=len(train),
                validation=len(held),
                before=evaluate_weights(held, start, **ev),
                after=evaluate_weights(held, fitted, **ev),
                weights=fitted.as_dict(),
            )
        )
        fold_weights.append(fitted)
    final, train_after = fit_weights(evaluable, start=start, label_source=queries, **kw)
    train_before = evaluate_weights(
        evaluable, start, label_source=queries, granularity=granularity, click_weight=click_weight
    )
    return CrossValidation(
        start=start,
        weights=final,
        folds=results,
        train_before=train_before,
        train_after=train_after,
        features=feature_confidence(final, start=start, folds=fold_weights),
    )


def feature_confidence(
    final: RankingWeights, *, start: RankingWeights, folds: list[RankingWeights]
) -> dict:
    """Per weight: its value, the defaults', the folds' mean and spread, and the share of folds
    that moved it the same way as the final fit (1.0: every fold agrees)."""
    default = RankingWeights.default()
    out = {}
    for f in fields(RankingWeights):
        name = f.name
        value = getattr(final, name)
        direction = _sign(value - getattr(start, name))
        values = [getattr(w, name) for w in folds]
        agree = sum(1 for v in values if _sign(v - getattr(start, name)) == direction)
        mean = _mean(values)
        sd = math.sqrt(_mean([(v - mean) ** 2 for v in values])) if values else 0.0
        out[name] = {
            "value": round(value, 4),
            "default": round(getattr(default, name), 4),
            "fold_mean": round(mean, 4),
            "fold_sd": round(sd, 4),
            "agreement": round(agree / len(values), 2) if values else None,
        }
    return out


def _sign(x: float) -> int:
    return 0 if abs(x) < 1e-9 else (1 if x > 0 else -1)
