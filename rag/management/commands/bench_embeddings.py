"""``manage.py bench_embeddings``: the local model's backends side by side, in one run.

For each backend (torch, onnx, onnx-int8): raw model chunks/s on the same real chunk texts, the
query embedding's p50/p95 (one query at a time, as search embeds), and hybrid and vector nDCG@10
on a BEIR dataset (default SciFact train) through ``chunk_search``.

The corpus is stored once, as collection ``bench-embeddings``, through the normal upsert; for
each backend its vectors are replaced in place by that backend's (same texts, same keyword
index: only the vectors differ between the rows of the table). Queries pass their own vector, so
the collection may hold another model than the rest of the index meanwhile; the app's own
searches refuse a mixed index, so run this on a bench or development database. The collection
is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from rag import text_search
from rag.embeddings import BACKENDS, EmbeddingError, build_embedder
from rag.evaluation import Dataset, DatasetError, corpus_documents, evaluate, load_dataset
from rag.models import Chunk, ChunkHistory
from rag.services import chunk_upsert, embedding_text

COLLECTION = "bench-embeddings"
UPDATE_BATCH = 256


def _shared_scifact() -> Path:
    """../shared/data/scifact beside the checkout (or beside the worktrees' parent)."""
    for parent in Path(settings.BASE_DIR).parents:
        if (parent / "shared" / "data" / "scifact").exists():
            return parent / "shared" / "data" / "scifact"
    return Path(settings.BASE_DIR).parent / "shared" / "data" / "scifact"


class _BenchDataset(Dataset):
    @property
    def collection(self) -> str:
        return COLLECTION


class Command(BaseCommand):
    help = (
        "Compare the local model's backends (torch, onnx, onnx-int8): raw chunks/s, query embedding "
        "p50, and hybrid nDCG@10 on a BEIR dataset, side by side in one run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", default=str(_shared_scifact()), help="a BEIR folder (default: SciFact)")
        parser.add_argument("--split", default="train")
        parser.add_argument("--backends", default=",".join(BACKENDS))
        parser.add_argument("--raw-chunks", type=int, default=1000, help="chunk texts timed for raw chunks/s")
        parser.add_argument("--query-samples", type=int, default=200, help="queries timed one at a time")
        parser.add_argument("--limit", type=int, default=0, help="score only the first N judged queries")
        parser.add_argument(
            "--docs", type=int, default=0,
            help="store only the first N corpus documents, and score only the queries judged on one of them",
        )
        parser.add_argument("--keep", action="store_true", help="keep the bench collection (on the last backend)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        backends = [b for b in o["backends"].split(",") if b]
        if not backends or any(b not in BACKENDS for b in backends):
            raise CommandError(f"--backends come from {', '.join(BACKENDS)}")
        try:
            dataset = load_dataset(Path(o["dataset"]), o["split"])
        except DatasetError as exc:
            raise CommandError(str(exc)) from exc
        dataset = _BenchDataset(**{f: getattr(dataset, f) for f in ("name", "path", "split", "queries", "qrels")})
        if o["limit"]:
            dataset.queries = dict(list(dataset.queries.items())[: o["limit"]])
        try:
            embedders = {b: build_embedder("local", model="all-MiniLM-L6-v2", dims=384, backend=b) for b in backends}
        except EmbeddingError as exc:
            raise CommandError(str(exc)) from exc
        say = (lambda msg: None) if o["json"] else self.stdout.write
        say(f"storing {dataset.name} as collection {COLLECTION} …")
        stored = self._store(dataset.path, embedders[backends[0]], o["docs"])
        if o["docs"]:  # a part of the corpus: score the queries it can answer
            dataset.queries = {q: t for q, t in dataset.queries.items() if set(dataset.qrels[q]) & stored}
        texts = self._chunk_texts(o["raw_chunks"])
        queries = list(dataset.queries.values())[: o["query_samples"]]
        results: dict[str, dict] = {}
        try:
            for name, embedder in embedders.items():
                say(f"{name}: loading, then timing {len(texts)} chunks and {len(queries)} queries …")
                results[name] = self._measure(embedder, texts, queries)
                reembedded = self._use_vectors(embedder)
                if reembedded and text_search.active_backend().name == "pg_textsearch":
                    # Rewritten rows stay in the bm25 statistics until a rebuild: every backend's
                    # keyword half must see the same index.
                    text_search.check_bm25_index(force=True)
                say(f"{name}: {reembedded} chunks re-embedded; scoring {len(dataset.queries)} queries …")
                scores = evaluate(dataset, modes=["hybrid", "vector"], embedder=embedder)["modes"]
                results[name].update(
                    model=embedder.name,
                    hybrid_ndcg10=scores["hybrid"]["ndcg@10"],
                    vector_ndcg10=scores["vector"]["ndcg@10"],
                )
        finally:
            if not o["keep"]:
                self._cleanup()
        report = {
            "dataset": f"{dataset.name}/{dataset.split}", "queries_scored": len(dataset.queries),
            "chunks": Chunk.objects.filter(collection=COLLECTION).count() if o["keep"] else None,
            "batch": settings.KNOWHUB_EMBEDDING_BATCH,
            "threads": settings.KNOWHUB_EMBEDDING_TORCH_THREADS or "all cores",
            "backends": results,
        }  # fmt: skip
        base = results.get("torch")
        if base:
            for row in results.values():
                row["speedup_vs_torch"] = round(row["raw_chunks_per_s"] / base["raw_chunks_per_s"], 2)
                row["hybrid_ndcg10_vs_torch"] = round(row["hybrid_ndcg10"] - base["hybrid_ndcg10"], 4)
        if o["json"]:
            self.stdout.write(json.dumps(report))
            return
        threads = settings.KNOWHUB_EMBEDDING_TORCH_THREADS or "all cores"
        self.stdout.write(f"{report['dataset']}, {len(dataset.queries)} queries scored, threads: {threads}")
        self.stdout.write(self._table(results))

    def _store(self, path: Path, embedder, limit: int) -> set[str]:
        docs = list(corpus_documents(path, COLLECTION))
        if limit:
            docs = docs[:limit]
        for start in range(0, len(docs), 256):
            chunk_upsert(documents=docs[start : start + 256], embedder=embedder)
        return {d.source_id for d in docs}

    @staticmethod
    def _chunk_texts(limit: int) -> list[str]:
        rows = Chunk.objects.filter(collection=COLLECTION).order_by("id").values_list("title", "content")[:limit]
        return [embedding_text(title, content) for title, content in rows]

    @staticmethod
    def _measure(embedder, texts: list[str], queries: list[str]) -> dict:
        embedder.embed_documents(texts[:8])  # load (and export, once) outside the timings
        batch = settings.KNOWHUB_EMBEDDING_BATCH
        t0 = time.perf_counter()
        for start in range(0, len(texts), batch):
            embedder.embed_documents(texts[start : start + batch])
        seconds = time.perf_counter() - t0
        took = []
        for query in queries:
            t = time.perf_counter()
            embedder.embed_query(query)
            took.append((time.perf_counter() - t) * 1000)
        took.sort()
        return {
            "raw_chunks_per_s": round(len(texts) / seconds, 1),
            "query_p50_ms": round(statistics.median(took), 2) if took else None,
            "query_p95_ms": round(took[int(0.95 * (len(took) - 1))], 2) if took else None,
        }

    @staticmethod
    def _use_vectors(embedder) -> int:
        """Replace the collection's vectors by ``embedder``'s where they are another model's."""
        rows = list(
            Chunk.objects.filter(collection=COLLECTION)
            .exclude(embedding_model=embedder.name)
            .values_list("id", "title", "content")
        )
        for start in range(0, len(rows), UPDATE_BATCH):
            part = rows[start : start + UPDATE_BATCH]
            vectors = embedder.embed_documents([embedding_text(title, content) for _, title, content in part])
            with connection.cursor() as cursor:
                cursor.executemany(
                    "UPDATE rag_chunk SET embedding = %s::vector, embedding_model = %s WHERE id = %s",
                    [(str(vec), embedder.name, pk) for (pk, _, _), vec in zip(part, vectors, strict=True)],
                )
        return len(rows)

    @staticmethod
    def _cleanup() -> None:
        uids = Chunk.objects.filter(collection=COLLECTION).values("chunk_uid")
        ChunkHistory.objects.filter(chunk_uid__in=uids).delete()
        deleted, _ = Chunk.objects.filter(collection=COLLECTION).delete()
        if deleted and text_search.active_backend().name == "pg_textsearch":
            text_search.check_bm25_index(force=True)  # deleted rows stay in its statistics until a rebuild

    @staticmethod
    def _table(results: dict[str, dict]) -> str:
        head = (
            f"{'backend':<10} {'chunks/s':>9} {'× torch':>8} {'query p50':>10} {'p95':>7} "
            f"{'hybrid nDCG@10':>15} {'vector':>7}"
        )
        lines = [head, "-" * len(head)]
        for name, r in results.items():
            lines.append(
                f"{name:<10} {r['raw_chunks_per_s']:>9.1f} {r.get('speedup_vs_torch', 1.0):>8.2f} "
                f"{r['query_p50_ms']:>8.2f}ms {r['query_p95_ms']:>5.1f}ms {r['hybrid_ndcg10']:>15.4f} "
                f"{r['vector_ndcg10']:>7.4f}"
            )
        return "\n".join(lines)
