"""``manage.py feedback_eval``: show on a BEIR dataset that judgments improve ranking.

The train qrels of a subset of queries become interactions with judgments (positives: the
chunks of the relevant documents; negatives: the top-ranked non-relevant results, as a reviewer
would flag them). The fusion is tuned on those (with its own train/validation split, exactly as
``tune_ranking`` does), then nDCG@10 is measured on the remaining queries — never labelled — with
the plain hybrid, the tuned weights, the direct label effect, and both. Everything it writes is
rolled back at the end (``--keep`` keeps it); the active ranking configuration is never changed.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = (
        "Turn the train qrels of a fraction of a BEIR dataset's queries into judgments, tune, and "
        "report nDCG@10 on the other queries before/after (tuned weights and direct label effect)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dataset", required=True, help="BEIR folder, e.g. ../shared/data/scifact"
        )
        parser.add_argument("--split", default="train")
        parser.add_argument("--judged-fraction", type=float, default=0.5)
        parser.add_argument(
            "--negatives",
            type=int,
            default=3,
            help="top non-relevant results labelled negative per query",
        )
        parser.add_argument("--validation-fraction", type=float, default=0.3)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--limit", type=int, default=0, help="use only the first N queries")
        parser.add_argument(
            "--keep", action="store_true", help="keep the interactions and judgments it creates"
        )
        parser.add_argument("--json", action="store_true")

    def handle(
        self,
        *args,
        dataset,
        split,
        judged_fraction,
        negatives,
        validation_fraction,
        seed,
        limit,
        keep,
        json: bool,
        **opts,
    ):
        from rag.embeddings import get_embedder
        from rag.evaluation import DatasetError, collection_name, ingest_corpus, load_dataset

        if not 0 < judged_fraction < 1:
            raise CommandError("--judged-fraction must be between 0 and 1")
        path = Path(dataset)
        try:
            dataset = load_dataset(path, split)
            queries, qrels = dataset.queries, dataset.qrels
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        ids = sorted(queries)
        if limit:
            ids = ids[:limit]
        random.Random(seed).shuffle(ids)
        n_judged = round(len(ids) * judged_fraction)
        judged, held_out = sorted(ids[:n_judged]), sorted(ids[n_judged:])
        embedder = get_embedder()
        collection = collection_name(path)

        log = (lambda msg: None) if json else (lambda msg: self.stderr.write(msg))
        started = time.perf_counter()
        log(f"indexing {path} as {collection} (unchanged documents are not re-embedded)…")
        upsert = ingest_corpus(path, embedder=embedder)
        if upsert.errors:
            raise CommandError(f"{len(upsert.errors)} corpus documents failed: {upsert.errors[:3]}")
        log(f"embedding {len(ids)} queries…")
        vectors = dict(zip(ids, embedder.embed_documents([queries[q] for q in ids]), strict=True))

        report: dict = {}
        try:
            with transaction.atomic():
                report = self._run(
                    embedder=embedder, collection=collection, queries=queries, qrels=qrels, vectors=vectors,
                    judged=judged, held_out=held_out, negatives=negatives,
                    validation_fraction=validation_fraction, seed=seed, log=log,
                )  # fmt: skip
                if not keep:
                    raise _Rollback
        except _Rollback:
            pass
        report.update(
            dataset=path.resolve().name,
            split=split,
            collection=collection,
            seed=seed,
            judged_fraction=judged_fraction,
            kept=keep,
            seconds=round(time.perf_counter() - started, 1),
        )
        if json:
            self.stdout.write(_dump(report))
            return
        self._print(report)

    def _run(
        self,
        *,
        embedder,
        collection,
        queries,
        qrels,
        vectors,
        judged,
        held_out,
        negatives,
        validation_fraction,
        seed,
        log,
    ):
        from feedback.models import Interaction
        from feedback.ranking import RankingWeights, ranking_override
        from feedback.selectors import labelled_queries
        from feedback.services import judgments_apply
        from feedback.tuning import tune_on
        from rag.acl import Scope
        from rag.models import Chunk
        from rag.search import SearchFilters, chunk_search

        scope = Scope.everything()
        filters = SearchFilters(collections=[collection])
        default = RankingWeights.default()

        def ranked(qid: str, *, top_k: int = 10) -> list:
            return chunk_search(
                query=queries[qid], scope=scope, filters=filters, top_k=top_k, mode="hybrid", dedupe=True,
                query_vector=vectors[qid], embedder=embedder,
            ).hits  # fmt: skip

        def mean_ndcg(qids: list[str], **override) -> float:
            from feedback.ranking import ndcg_at

            total = 0.0
            with ranking_override(**override):
                for qid in qids:
                    docs = [h.source_id for h in ranked(qid)]
                    total += ndcg_at(docs, set(qrels[qid]), 10)
            return round(total / len(qids), 4) if qids else 0.0

        # 1. interactions + judgments for the judged queries, from what the plain hybrid shows
        log(f"labelling {len(judged)} queries from the qrels…")
        doc_chunks: dict[str, list[str]] = {}
        for uid, source_id in Chunk.objects.filter(
            collection=collection, deleted_at__isnull=True
        ).values_list("chunk_uid", "source_id"):
            doc_chunks.setdefault(source_id, []).append(uid)
        created = []
        n_pos = n_neg = 0
        with ranking_override(weights=default, labels=False):
            for qid in judged:
                hits = ranked(qid)
                interaction = Interaction.objects.create(
                    kind=Interaction.Kind.QUERY,
                    query=queries[qid],
                    filters=filters.as_dict(),
                    retrieved=[
                        {
                            "chunk_uid": h.chunk_uid,
                            "rank": h.rank,
                            "score": h.score,
                            "vec_score": h.vec_score,
                            "txt_score": h.txt_score,
                            "collection": h.collection,
                        }
                        for h in hits
                    ],  # fmt: skip
                    strategy="feedback-eval",
                    query_embedding=vectors[qid],
                    query_embedding_model=embedder.name,
                )
                rels = set(qrels[qid])
                labels = [
                    {"chunk_uid": uid, "label": "positive"}
                    for doc in sorted(rels)
                    for uid in doc_chunks.get(doc, [])
                ]
                wrong = [h for h in hits if h.source_id not in rels][:negatives]
                labels += [{"chunk_uid": h.chunk_uid, "label": "negative"} for h in wrong]
                n_pos += sum(1 for j in labels if j["label"] == "positive")
                n_neg += len(wrong)
                judgments_apply(
                    interaction=interaction, judgments=labels, actor=None, source="command"
                )
                created.append(interaction.pk)

        # 2. tune exactly as tune_ranking does, on the judged queries only
        log("tuning on the judged queries…")
        labelled = labelled_queries(
            interactions=Interaction.objects.filter(pk__in=created),
            granularity="document",
            embedder=embedder,
        )
        fitted, tune = tune_on(
            labelled,
            start=default,
            validation_fraction=validation_fraction,
            seed=seed,
            granularity="document",
        )

        # 3. held-out queries: never labelled
        log(f"measuring {len(held_out)} held-out and {len(judged)} judged queries…")
        fusion_only = replace(fitted, w_judgment=0.0)
        paraphrased = _paraphrased(held_out, judged, vectors)
        unparaphrased = [q for q in held_out if q not in set(paraphrased)]
        settings_of = {
            "baseline": {"weights": default, "labels": False},
            "tuned_weights": {"weights": fitted, "labels": False},
            "tuned_fusion_only": {"weights": fusion_only, "labels": False},
            "label_effect": {"weights": default, "labels": True},
            "tuned_and_labels": {"weights": fitted, "labels": True},
        }
        held = {name: mean_ndcg(held_out, **kw) for name, kw in settings_of.items()}
        held_no_para = {name: mean_ndcg(unparaphrased, **kw) for name, kw in settings_of.items()}
        seen = {
            "baseline": mean_ndcg(judged, weights=default, labels=False),
            "label_effect": mean_ndcg(judged, weights=default, labels=True),
            "tuned_and_labels": mean_ndcg(judged, weights=fitted, labels=True),
        }
        return {
            "queries": {
                "judged": len(judged),
                "held_out": len(held_out),
                "held_out_with_paraphrase": len(paraphrased),
            },
            "held_out_without_paraphrase_ndcg@10": held_no_para,
            "judgments": {"positive": n_pos, "negative": n_neg},
            "tuning": tune.as_dict(),
            "would_activate": tune.status == "improved",
            "weights": {"baseline": default.as_dict(), "tuned": fitted.as_dict()},
            "held_out_ndcg@10": held,
            "judged_ndcg@10": seen,
        }

    def _print(self, r: dict) -> None:
        q = r["queries"]
        t = r["tuning"]
        self.stdout.write(
            f"{r['dataset']} ({r['split']} qrels): {q['judged']} queries judged "
            f"({r['judgments']['positive']} positive, {r['judgments']['negative']} negative labels), "
            f"{q['held_out']} held out ({q['held_out_with_paraphrase']} of them have a judged paraphrase)"
        )
        self.stdout.write(
            f"tuning on the judged queries: train {t['train']} / validation {t['validation']}: "
            f"validation nDCG@10 {t['validation_ndcg'].get('before')} → {t['validation_ndcg'].get('after')} "
            f"({t['status']}; tune_ranking would {'activate' if r['would_activate'] else 'NOT activate'} it)"
        )
        self.stdout.write(f"weights: {r['weights']['baseline']} → {r['weights']['tuned']}")
        self.stdout.write(f"{'nDCG@10':<22}{'held-out':>10}{'no-para':>10}{'judged':>10}")
        for name in (
            "baseline",
            "tuned_weights",
            "tuned_fusion_only",
            "label_effect",
            "tuned_and_labels",
        ):
            cells = [
                r[key].get(name)
                for key in (
                    "held_out_ndcg@10",
                    "held_out_without_paraphrase_ndcg@10",
                    "judged_ndcg@10",
                )
            ]
            self.stdout.write(
                f"{name:<22}" + "".join(f"{c if c is not None else '–':>10}" for c in cells)
            )
        self.stdout.write(
            "held-out: queries never labelled; no-para: those of them without a judged paraphrase "
            "(cosine < threshold); judged: the labelled queries themselves"
        )
        self.stdout.write(
            f"{r['seconds']} s; {'kept' if r['kept'] else 'rolled back'} the interactions it created"
        )


def _paraphrased(held_out: list[str], judged: list[str], vectors: dict) -> list[str]:
    """Held-out queries with a judged query at cosine ≥ the paraphrase threshold."""
    import numpy as np
    from django.conf import settings

    if not held_out or not judged:
        return []
    threshold = settings.KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY
    held = np.asarray([vectors[q] for q in held_out], dtype=np.float32)
    seen = np.asarray([vectors[q] for q in judged], dtype=np.float32)
    close = (held @ seen.T).max(axis=1) >= threshold
    return [q for q, c in zip(held_out, close, strict=True) if c]


def _dump(obj) -> str:
    return json.dumps(obj, indent=2)
