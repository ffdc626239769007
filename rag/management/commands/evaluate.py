"""``manage.py evaluate --dataset DIR``: nDCG@10, recall@100 and MRR@10 per retrieval mode."""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from rag.evaluation import DatasetError, count_documents, evaluate, ingest_corpus, load_dataset
from rag.search import MODES


class Command(BaseCommand):
    help = (
        "Ingest a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as collection "
        "eval-<folder> through the normal upsert path, then score each retrieval mode."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="BEIR folder, e.g. ../shared/data/scifact")
        parser.add_argument("--split", default="test", help="qrels split (default: test)")
        parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, from {','.join(MODES)}")
        parser.add_argument("--weights", default="", help="override vector,text weights, e.g. 0.6,0.4")
        parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries")
        parser.add_argument("--json", action="store_true", help="print one JSON object, no progress bars")
        parser.add_argument(
            "--rerank", nargs="?", const="default", default="",
            help="also score each mode after the rerank stage (KNOWHUB_RERANK_PROVIDER, or the one named: http, llm)",
        )  # fmt: skip

    def handle(self, *args, dataset: str, split: str, modes: str, weights: str, limit: int, json: bool,
               rerank: str = "", **opts):  # fmt: skip
        from tqdm import tqdm

        from rag.embeddings import get_embedder

        path = Path(dataset)
        chosen = [m.strip() for m in modes.split(",") if m.strip()]
        unknown = [m for m in chosen if m not in MODES]
        if unknown or not chosen:
            raise CommandError(f"unknown mode(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(MODES)}")
        pair = None
        if weights:
            try:
                w_vec, w_txt = (float(x) for x in weights.split(","))
            except ValueError as exc:
                raise CommandError("--weights takes two numbers, e.g. 0.7,0.3") from exc
            pair = (w_vec, w_txt)
        reranker = None
        if rerank:
            from rag.rerank import RerankError, get_reranker

            try:
                reranker = get_reranker(None if rerank == "default" else rerank)
            except RerankError as exc:
                raise CommandError(f"--rerank: {exc}") from exc
            if reranker is None:
                raise CommandError(
                    "--rerank: the rerank provider is 'none'; set KNOWHUB_RERANK_PROVIDER or pass --rerank http|llm"
                )
        try:
            data = load_dataset(path, split)
            total_docs = count_documents(path)
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        if limit:
            data.queries = dict(list(data.queries.items())[:limit])

        embedder = get_embedder()
        started = time.perf_counter()
        with tqdm(total=total_docs, desc=f"ingest {data.collection}", unit="doc", disable=json) as bar:
            upsert = ingest_corpus(path, embedder=embedder, progress=bar.update)
        ingest_s = time.perf_counter() - started
        if upsert.errors:
            raise CommandError(f"{len(upsert.errors)} corpus documents failed: {upsert.errors[:3]}")

        started = time.perf_counter()
        with tqdm(total=len(data.queries), desc="queries", unit="q", disable=json) as bar:
            report = evaluate(
                data, modes=chosen, embedder=embedder, weights=pair, progress=bar.update, reranker=reranker
            )
        report["ingest"] = (
            {k: v for k, v in upsert.as_dict().items() if k != "errors"} | {"seconds": round(ingest_s, 1)}
        )
        report["eval_seconds"] = round(time.perf_counter() - started, 1)
        if json:
            self.stdout.write(_json_dump(report))
            return
        self.stdout.write(
            f"{report['dataset']} ({report['split']}, {report['queries']} queries) — collection "
            f"{report['collection']}; ingest: {report['ingest']['created']} created, "
            f"{report['ingest']['updated']} updated, {report['ingest']['unchanged']} unchanged, "
            f"{report['ingest']['embedded']} embedded"
        )
        self.stdout.write(f"{'mode':<16} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8} {'p50 ms':>8}")
        for mode, m in report["modes"].items():
            self.stdout.write(
                f"{mode:<16} {m['ndcg@10']:>8.4f} {m['recall@100']:>8.4f} {m['mrr@10']:>8.4f} {m['p50_ms']:>8.1f}"
            )

        if "rerank" in report:
            self.stdout.write(f"rerank: {report['rerank']['provider']}; fallbacks to the fused order: "
                              f"{report['rerank']['fallbacks']}")  # fmt: skip


def _json_dump(obj) -> str:
    return json.dumps(obj, indent=2)
