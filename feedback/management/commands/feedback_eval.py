"""``manage.py feedback_eval``: does the learning loop help on queries nobody labelled?

k folds over a BEIR dataset's queries. In each fold the fold's queries are held out (never
labelled, never clicked); ``--judged-fraction`` of all queries, drawn from the other folds, get
their qrels turned into judgments (every chunk of a relevant document positive, the top
``--negatives`` non-relevant results of the plain hybrid negative), exactly as a reviewer labelling
the results page would. Separately, the same queries get simulated clicks from a position-bias
model (result at rank r looked at with probability (1/r)^eta, clicked when relevant with
``--click-relevant``, when not with ``--click-noise``) — no judgments at all — to measure what
clicks alone add.

Reported per fold and averaged, nDCG@10 of the held-out queries for:

* ``baseline``: the static hybrid;
* ``tuned_weights``: what ``tune_ranking`` would leave active after cross-validating a fit on the
  judged queries (the baseline weights when it would not activate anything);
* ``label_effect``: the baseline plus the direct label effect of the judgments;
* ``both``: tuned weights plus the label effect;
* ``clicks_only``: the simulated clicks alone, used as search uses them: the weights
  ``tune_ranking`` would activate from them, their weak share of the per-document judgment
  balance, and their weak votes in the label effect;
* ``label_reach``: the label effect for each ``--reach`` (cosine where a neighbour's label starts
  to count), to choose ``KNOWHUB_FEEDBACK_LABEL_REACH``.

The candidates of every query are fetched once from the real search (plain hybrid, the search's
candidate depth) and re-ranked in memory with the same code search runs (``feedback.ranking``'s
fusion and ``label_deltas``), so a run over hundreds of queries and several folds stays cheap.
``--live-check`` stores fold 0's judgments for real (rolled back afterwards) and measures baseline
and both through ``chunk_search`` too. The in-memory pool is the plain hybrid's top
``KNOWHUB_SEARCH_CANDIDATES`` rows of the vector ∪ text union, search re-scores the whole union, so
a re-weighted or labelled row from beyond that pool can only make search do slightly better (SciFact
fold 0: baseline 0.7812 both ways; both 0.7877 in memory, 0.7898 through chunk_search).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

ROWS = ("baseline", "tuned_weights", "label_effect", "both", "clicks_only")


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = (
        "k-fold evaluation of the learning loop on a BEIR dataset: judgments from the qrels of a "
        "fraction of the queries, simulated position-biased clicks, nDCG@10 on held-out queries."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dataset", required=True, help="BEIR folder, e.g. ../shared/data/scifact"
        )
        parser.add_argument("--split", default="train")
        parser.add_argument("--judged-fraction", type=float, default=0.5)
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument(
            "--negatives",
            type=int,
            default=3,
            help="top non-relevant results labelled negative per query",
        )
        parser.add_argument(
            "--reach",
            default="0.85,0.8,0.75,0.7,0.65,0.6",
            help="label-effect reaches to compare (cosine where a neighbour's label starts to count)",
        )
        parser.add_argument("--click-sessions", type=int, default=5, help="result pages per query")
        parser.add_argument("--click-eta", type=float, default=1.0)
        parser.add_argument("--click-relevant", type=float, default=0.9)
        parser.add_argument("--click-noise", type=float, default=0.1)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--limit", type=int, default=0, help="use only the first N queries")
        parser.add_argument(
            "--live-check",
            action="store_true",
            help="also measure fold 0 through the real search with stored judgments (rolled back)",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        from django.conf import settings

        from rag.embeddings import get_embedder
        from rag.evaluation import DatasetError, collection_name, ingest_corpus, load_dataset

        jf = opts["judged_fraction"]
        if not 0 < jf < 1:
            raise CommandError("--judged-fraction must be between 0 and 1")
        if opts["folds"] < 2:
            raise CommandError("--folds must be at least 2")
        try:
            reaches = sorted({float(x) for x in opts["reach"].split(",") if x.strip()}, reverse=True)
        except ValueError as exc:
            raise CommandError("--reach must be comma-separated numbers") from exc
        if not reaches or any(not 0 < r <= 1 for r in reaches):
            raise CommandError("--reach values must be in (0, 1]")
        path = Path(opts["dataset"])
        try:
            dataset = load_dataset(path, opts["split"])
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        queries, qrels = dataset.queries, dataset.qrels
        ids = sorted(q for q in queries if qrels.get(q))
        if opts["limit"]:
            ids = ids[: opts["limit"]]
        if len(ids) < 2 * opts["folds"]:
            raise CommandError(
                f"{len(ids)} queries with qrels: too few for {opts['folds']} folds"
            )
        embedder = get_embedder()
        collection = collection_name(path)
        log = (lambda msg: None) if opts["json"] else (lambda msg: self.stderr.write(msg))
        started = time.perf_counter()

        log(f"indexing {path} as {collection} (unchanged documents are not re-embedded)…")
        upsert = ingest_corpus(path, embedder=embedder)
        if upsert.errors:
            raise CommandError(f"{len(upsert.errors)} corpus documents failed: {upsert.errors[:3]}")
        log(f"embedding {len(ids)} queries…")
        vectors = dict(zip(ids, embedder.embed_documents([queries[q] for q in ids]), strict=True))
        log(f"fetching the candidates of {len(ids)} queries (plain hybrid)…")
        world = _World.build(
            ids=ids, queries=queries, qrels=qrels, vectors=vectors,
            collection=collection, embedder=embedder,
        )  # fmt: skip
        used_reach = min(settings.KNOWHUB_FEEDBACK_LABEL_REACH, settings.KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY)
        if used_reach not in reaches:
            reaches = sorted({*reaches, used_reach}, reverse=True)

        order = list(ids)
        random.Random(opts["seed"]).shuffle(order)
        k = opts["folds"]
        parts = [order[i::k] for i in range(k)]
        n_judged = round(len(ids) * jf)
        folds = []
        for i, held in enumerate(parts):
            rest = [q for q in order if q not in set(held)]
            judged = rest[: min(n_judged, len(rest))]
            log(f"fold {i}: {len(judged)} judged, {len(held)} held out…")
            folds.append(
                self._fold(i, world, judged=judged, held=held, reaches=reaches,
                           used_reach=used_reach, opts=opts)
            )  # fmt: skip
        live = None
        if opts["live_check"]:
            log("live check of fold 0 through chunk_search…")
            live = self._live_check(world, folds[0], parts[0], opts)
        for f in folds:
            f.pop("_tuned")
            f.pop("_judged")

        report = {
            "dataset": path.resolve().name,
            "split": opts["split"],
            "collection": collection,
            "seed": opts["seed"],
            "judged_fraction": jf,
            "queries": len(ids),
            "folds": folds,
            "mean": {
                name: round(float(np.mean([f["ndcg@10"][name] for f in folds])), 4)
                for name in ROWS
            },
            "label_reach": {
                str(r): round(float(np.mean([f["label_reach"][str(r)] for f in folds])), 4)
                for r in reaches
            },
            "label_reach_used": used_reach,
            "click_model": {
                "sessions_per_query": opts["click_sessions"],
                "eta": opts["click_eta"],
                "p_click_relevant": opts["click_relevant"],
                "p_click_other": opts["click_noise"],
            },
            "seconds": round(time.perf_counter() - started, 1),
        }
        base = [f["ndcg@10"]["baseline"] for f in folds]
        report["targets"] = {
            "tuned_weights_never_below_baseline": all(
                f["ndcg@10"]["tuned_weights"] >= b - 1e-9 for f, b in zip(folds, base, strict=True)
            ),
            "both_minus_baseline": round(report["mean"]["both"] - report["mean"]["baseline"], 4),
            "both_at_least_baseline_plus_0.03": report["mean"]["both"]
            >= report["mean"]["baseline"] + 0.03 - 1e-9,
        }
        if live is not None:
            report["live_check"] = live
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self._print(report)

    # -- one fold ------------------------------------------------------------------------------

    def _fold(self, i, world, *, judged, held, reaches, used_reach, opts) -> dict:
        from feedback.fitting import FitData, LabelledQuery, click_mass, click_weights, propensity
        from feedback.ranking import RankingWeights
        from feedback.tuning import tune_on

        default = RankingWeights.default()
        rng = random.Random(opts["seed"] * 1000 + i)
        labels = {q: world.labels(q, negatives=opts["negatives"]) for q in judged}
        judged_lq = []
        for q in judged:
            doc_labels: dict[str, list[int]] = {}
            for uid, sign in labels[q]:
                t = doc_labels.setdefault(world.doc_of[uid], [0, 0])
                t[0 if sign > 0 else 1] += 1
            judged_lq.append(
                LabelledQuery(
                    group=q, query=world.queries[q], candidates=world.candidates[q],
                    positives=world.relevant[q], doc_labels={k: tuple(v) for k, v in doc_labels.items()},
                )  # fmt: skip
            )
        inner_seed = opts["seed"] + i
        fitted, tune = tune_on(judged_lq, start=default, seed=inner_seed, granularity="document")
        tuned = fitted if tune.status == "improved" else default

        # clicks: the same queries, result pages of the plain hybrid, no judgments at all
        clicked_lq = []
        click_events: dict[str, list[tuple[str, int]]] = {}  # query -> [(chunk_uid, rank)]
        n_clicks = 0
        for q in judged:
            shown = world.baseline_top[q]
            events = []
            click_events[q] = []
            for _ in range(opts["click_sessions"]):
                for rank, (doc, uid) in enumerate(shown, 1):
                    if rng.random() >= propensity(rank, opts["click_eta"]):
                        continue
                    p = opts["click_relevant"] if doc in world.relevant[q] else opts["click_noise"]
                    if rng.random() < p:
                        events.append((doc, rank))
                        click_events[q].append((uid, rank))
            n_clicks += len(events)
            clicked_lq.append(
                LabelledQuery(
                    group=q, query=world.queries[q], candidates=world.candidates[q], positives=set(),
                    clicks=click_weights(events, impressions=opts["click_sessions"], eta=opts["click_eta"]),
                    doc_labels={k: (m, 0) for k, m in click_mass(events, eta=opts["click_eta"]).items()},
                )  # fmt: skip
            )
        c_fitted, c_tune = tune_on(clicked_lq, start=default, seed=inner_seed, granularity="document")
        c_weights = c_fitted if c_tune.status == "improved" else default

        held_lq = [
            LabelledQuery(group=q, query=world.queries[q], candidates=world.candidates[q],
                          positives=world.relevant[q])
            for q in held
        ]  # fmt: skip
        data = FitData(held_lq, label_source=judged_lq, granularity="document")
        sims = world.similarities(held, judged)
        reach_ndcg, offsets = {}, {}
        for r in reaches:
            offsets[r] = data.offsets(
                [world.label_deltas(q, sims[n], judged, labels, reach=r) for n, q in enumerate(held)]
            )
            reach_ndcg[str(r)] = round(data.utility(default, offsets[r]), 4)
        # clicks-only: the judgment balance of the held-out candidates comes from clicks alone,
        # and clicks are the only votes of the label effect
        from_clicks = FitData(held_lq, label_source=clicked_lq, granularity="document")
        click_offsets = from_clicks.offsets(
            [world.click_deltas(q, sims[n], judged, click_events, reach=used_reach, eta=opts["click_eta"])
             for n, q in enumerate(held)]
        )  # fmt: skip
        ndcg = {
            "baseline": round(data.utility(default), 4),
            "tuned_weights": round(data.utility(tuned), 4),
            "label_effect": reach_ndcg[str(used_reach)],
            "both": round(data.utility(tuned, offsets[used_reach]), 4),
            "clicks_only": round(from_clicks.utility(c_weights, click_offsets), 4),
        }
        return {
            "fold": i,
            "judged": len(judged),
            "held_out": len(held),
            "judgments": {
                "positive": sum(1 for q in judged for _, s in labels[q] if s > 0),
                "negative": sum(1 for q in judged for _, s in labels[q] if s < 0),
            },
            "clicks": n_clicks,
            "ndcg@10": ndcg,
            "label_reach": reach_ndcg,
            "tuning": {
                "status": tune.status,
                "weights": tune.after or tune.before,
                "fold_gains": [round(f["after"] - f["before"], 4) for f in tune.fold_results],
                "features": tune.features,
            },
            "click_tuning": {
                "status": c_tune.status,
                "weights": c_tune.after or c_tune.before,
                "fold_gains": [round(f["after"] - f["before"], 4) for f in c_tune.fold_results],
            },
            "_tuned": tuned,  # for the live check; dropped from the report
            "_judged": judged,
        }

    # -- the same fold through the real search -------------------------------------------------

    def _live_check(self, world, fold, held, opts) -> dict:
        from feedback.fitting import ndcg_at
        from feedback.models import Interaction
        from feedback.ranking import RankingWeights, ranking_override
        from feedback.services import judgments_apply
        from rag.acl import Scope
        from rag.search import SearchFilters, chunk_search

        tuned = fold["_tuned"]
        judged = fold["_judged"]
        out = {}
        try:
            with transaction.atomic():
                for q in judged:
                    labels = world.labels(q, negatives=opts["negatives"])
                    interaction = Interaction.objects.create(
                        kind=Interaction.Kind.QUERY, query=world.queries[q], strategy="feedback-eval",
                        retrieved=[{"chunk_uid": c.chunk_uid} for c in world.candidates[q]],
                        query_embedding=world.vectors[q], query_embedding_model=world.embedder.name,
                    )  # fmt: skip
                    judgments_apply(
                        interaction=interaction,
                        judgments=[
                            {"chunk_uid": uid, "label": "positive" if s > 0 else "negative"}
                            for uid, s in labels
                        ],
                        actor=None,
                        source="command",
                    )
                scope = Scope.everything()
                filters = SearchFilters(collections=[world.collection])

                def mean(**override) -> float:
                    total = 0.0
                    with ranking_override(**override):
                        for q in held:
                            hits = chunk_search(
                                query=world.queries[q], scope=scope, filters=filters, top_k=10,
                                mode="hybrid", dedupe=True, query_vector=world.vectors[q],
                                embedder=world.embedder,
                            ).hits  # fmt: skip
                            docs = [world.doc_of[h.chunk_uid] for h in hits]
                            total += ndcg_at(docs, world.relevant[q], 10)
                    return round(total / len(held), 4)

                out = {
                    "baseline": mean(weights=RankingWeights.default(), labels=False),
                    "both": mean(weights=tuned, labels=True),
                    "in_memory": {k: fold["ndcg@10"][k] for k in ("baseline", "both")},
                }
                raise _Rollback
        except _Rollback:
            pass
        return out

    def _print(self, r: dict) -> None:
        self.stdout.write(
            f"{r['dataset']} ({r['split']} qrels): {r['queries']} queries, {len(r['folds'])} folds, "
            f"judged fraction {r['judged_fraction']}"
        )
        self.stdout.write(f"{'held-out nDCG@10':<18}" + "".join(f"{n:>14}" for n in ROWS))
        for f in r["folds"]:
            self.stdout.write(
                f"{'fold ' + str(f['fold']):<18}" + "".join(f"{f['ndcg@10'][n]:>14}" for n in ROWS)
            )
        self.stdout.write(f"{'mean':<18}" + "".join(f"{r['mean'][n]:>14}" for n in ROWS))
        for f in r["folds"]:
            t, c = f["tuning"], f["click_tuning"]
            self.stdout.write(
                f"fold {f['fold']}: judgments {t['status']} {t['weights']} (inner gains {t['fold_gains']}); "
                f"clicks ({f['clicks']}) {c['status']} (inner gains {c['fold_gains']})"
            )
        self.stdout.write(
            "label effect by reach (mean held-out nDCG@10): "
            + ", ".join(f"{k}: {v}" for k, v in r["label_reach"].items())
            + f"; in use: {r['label_reach_used']}"
        )
        self.stdout.write(f"targets: {r['targets']}")
        if "live_check" in r:
            self.stdout.write(f"live check (fold 0 through chunk_search): {r['live_check']}")
        self.stdout.write(f"{r['seconds']} s")


class _World:
    """Every query's candidates (fetched once), relevance, and what labelling it would store."""

    @classmethod
    def build(cls, *, ids, queries, qrels, vectors, collection, embedder):
        from django.conf import settings

        from feedback.fitting import Candidate
        from feedback.ranking import (
            RankingWeights,
            document_key,
            feedback_disabled,
            query_terms,
            recency,
            title_match,
        )
        from rag.acl import Scope
        from rag.models import Chunk
        from rag.search import SearchFilters, chunk_search

        w = cls()
        w.queries, w.vectors, w.collection, w.embedder = queries, vectors, collection, embedder
        w.doc_of, w.doc_chunks = {}, {}
        key_of_source = {}
        for uid, source_type, source_id in Chunk.objects.filter(
            collection=collection, deleted_at__isnull=True
        ).values_list("chunk_uid", "source_type", "source_id"):
            key = document_key(collection, source_type, source_id)
            w.doc_of[uid] = key
            w.doc_chunks.setdefault(key, []).append(uid)
            key_of_source[source_id] = key
        w.candidates, w.relevant, w.baseline_top = {}, {}, {}
        default = RankingWeights.default()
        depth = settings.KNOWHUB_SEARCH_CANDIDATES
        scope, filters = Scope.everything(), SearchFilters(collections=[collection])
        import datetime as dt

        today = dt.date.today()
        for q in ids:
            with feedback_disabled():
                hits = chunk_search(
                    query=queries[q], scope=scope, filters=filters, top_k=depth, mode="hybrid",
                    query_vector=vectors[q], embedder=embedder, candidates=depth,
                ).hits  # fmt: skip
            terms = query_terms(queries[q])
            cands = [
                Candidate(
                    chunk_uid=h.chunk_uid,
                    doc_key=w.doc_of.get(h.chunk_uid)
                    or document_key(h.collection, h.source_type, h.source_id),
                    features=(h.vec_score, h.txt_score, title_match(terms, h.title),
                              recency(h.date, today), 0.0),
                )  # fmt: skip
                for h in hits
            ]
            w.candidates[q] = cands
            w.relevant[q] = {key_of_source[d] for d in qrels[q] if d in key_of_source}
            # the page the plain hybrid shows: best chunk per document, top 10 documents
            ranked = sorted(
                cands,
                key=lambda c: (-sum(a * b for a, b in zip(c.features, default.vector(), strict=True)), c.chunk_uid),
            )  # fmt: skip
            seen, top = set(), []
            for c in ranked:
                if c.doc_key in seen:
                    continue
                seen.add(c.doc_key)
                top.append((c.doc_key, c.chunk_uid))
                if len(top) == 10:
                    break
            w.baseline_top[q] = top
        vecs = np.asarray([vectors[q] for q in ids], dtype=np.float64)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        w.unit = dict(zip(ids, vecs, strict=True))
        return w

    def labels(self, q: str, *, negatives: int) -> list[tuple[str, int]]:
        """(chunk_uid, ±1): every chunk of a relevant document, then the shown non-relevant ones."""
        out = [(uid, 1) for key in sorted(self.relevant[q]) for uid in self.doc_chunks.get(key, [])]
        wrong = [uid for key, uid in self.baseline_top[q] if key not in self.relevant[q]]
        return out + [(uid, -1) for uid in wrong[:negatives]]

    def similarities(self, held: list[str], judged: list[str]) -> np.ndarray:
        a = np.asarray([self.unit[q] for q in held])
        b = np.asarray([self.unit[q] for q in judged])
        return a @ b.T

    def label_deltas(self, q, sims, judged, labels, *, reach) -> dict[str, float]:
        from feedback.ranking import LabelVote, label_deltas, label_settings

        knobs = label_settings()
        knobs["reach"] = reach = min(reach, knobs["full"])
        near = np.nonzero(sims >= reach)[0]
        if not len(near):
            return {}
        votes = [
            LabelVote(chunk_uid=uid, sign=float(sign), similarity=float(sims[j]))
            for j in near
            for uid, sign in labels[judged[j]]
        ]
        return label_deltas(votes, [c.chunk_uid for c in self.candidates[q]], **knobs)

    def click_deltas(self, q, sims, judged, click_events, *, reach, eta) -> dict[str, float]:
        from feedback.fitting import click_vote_weight
        from feedback.ranking import LabelVote, label_deltas, label_settings

        knobs = label_settings()
        knobs["reach"] = reach = min(reach, knobs["full"])
        near = np.nonzero(sims >= reach)[0]
        votes = [
            LabelVote(chunk_uid=uid, sign=1.0, similarity=float(sims[j]),
                      weight=click_vote_weight(rank, eta=eta))
            for j in near
            for uid, rank in click_events[judged[j]]
        ]  # fmt: skip
        return label_deltas(votes, [c.chunk_uid for c in self.candidates[q]], **knobs)
