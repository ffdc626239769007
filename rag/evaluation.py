"""Retrieval evaluation on BEIR-layout folders: ingest through the normal path, score every mode.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``). The
corpus goes in as collection ``eval-<folder name>``, one source per document, through
``rag.services.chunk_upsert`` — so a second run embeds nothing — and every query is answered by
``rag.search.chunk_search``, the selector the API uses, with ``dedupe=True`` so a document
counts once (its best chunk) however many chunks it was split into.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rag.acl import Scope
from rag.embeddings import Embedder, get_embedder
from rag.metrics import ndcg_at  # noqa: F401  (one nDCG for every app; importable from here)
from rag.search import MODES, SearchFilters, chunk_search
from rag.services import UpsertResult, chunk_upsert
from rag.units import SourceDocument, Unit

logger = logging.getLogger(__name__)

SOURCE_TYPE = "beir"
UPSERT_BATCH = 256


class DatasetError(ValueError):
    """A folder that is not a usable BEIR dataset."""


@dataclass
class Dataset:
    name: str
    path: Path
    split: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def collection(self) -> str:
        return collection_name(self.path)


@dataclass
class ModeScores:
    ndcg10: list[float] = field(default_factory=list)
    recall100: list[float] = field(default_factory=list)
    mrr10: list[float] = field(default_factory=list)
    took_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        n = len(self.ndcg10) or 1
        took = sorted(self.took_ms) or [0.0]
        return {
            "ndcg@10": round(sum(self.ndcg10) / n, 4),
            "recall@100": round(sum(self.recall100) / n, 4),
            "mrr@10": round(sum(self.mrr10) / n, 4),
            "p50_ms": round(took[len(took) // 2], 1),
        }


def collection_name(path: Path) -> str:
    slug = re.sub(r"[^a-z0-9_-]+", "-", Path(path).resolve().name.lower()).strip("-") or "dataset"
    return f"eval-{slug}"[:100]


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path.name} line {lineno}: not JSON ({exc.msg})") from exc


def load_dataset(path: Path, split: str) -> Dataset:
    """Queries and relevance judgments of one split; only queries that have judgments are kept."""
    path = Path(path)
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (path / name).is_file():
            raise DatasetError(f"{path} has no {name}: not a BEIR folder")
    qrels_path = path / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        have = sorted(p.stem for p in (path / "qrels").glob("*.tsv")) if (path / "qrels").is_dir() else []
        raise DatasetError(f"{path} has no qrels/{split}.tsv (splits here: {', '.join(have) or 'none'})")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[0] == "query-id":
                continue
            if len(parts) < 3:
                if line.strip():
                    raise DatasetError(f"qrels/{split}.tsv line {lineno}: expected 3 tab-separated columns")
                continue
            try:
                grade = int(parts[2])
            except ValueError as exc:
                raise DatasetError(f"qrels/{split}.tsv line {lineno}: score {parts[2]!r} is not an integer") from exc
            if grade > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = grade
    queries = {str(q["_id"]): q.get("text", "") for q in _jsonl(path / "queries.jsonl") if str(q["_id"]) in qrels}
    return Dataset(name=path.resolve().name, path=path, split=split, queries=queries, qrels=qrels)


def corpus_documents(path: Path, collection: str) -> Iterator[SourceDocument]:
    """One public source document per corpus entry, title and text as one unit."""
    for doc in _jsonl(Path(path) / "corpus.jsonl"):
        text = (doc.get("text") or "").strip()
        title = (doc.get("title") or "").strip()
        if not text and not title:
            continue
        yield SourceDocument(
            collection=collection,
            source_type=SOURCE_TYPE,
            source_id=str(doc["_id"]),
            units=[Unit(unit_anchor="doc", title=title[:500], content=text or title)],
        )


def count_documents(path: Path) -> int:
    with (Path(path) / "corpus.jsonl").open(encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def ingest_corpus(
    path: Path, *, embedder: Embedder | None = None, progress: Callable[[int], None] | None = None
) -> UpsertResult:
    """Upsert the corpus in batches through ``chunk_upsert``; unchanged documents embed nothing."""
    embedder = embedder or get_embedder()
    collection = collection_name(path)
    result = UpsertResult()
    batch: list[SourceDocument] = []
    for doc in corpus_documents(path, collection):
        batch.append(doc)
        if len(batch) >= UPSERT_BATCH:
            result.add(chunk_upsert(documents=batch, embedder=embedder))
            if progress:
                progress(len(batch))
            batch = []
    if batch:
        result.add(chunk_upsert(documents=batch, embedder=embedder))
        if progress:
            progress(len(batch))
    return result


def recall_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


def mrr_at(ranked: list[str], rels: dict[str, int], k: int) -> float:
    for i, d in enumerate(ranked[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(
    dataset: Dataset,
    *,
    modes: list[str],
    embedder: Embedder | None = None,
    weights: tuple[float, float] | None = None,
    progress: Callable[[int], None] | None = None,
    depth: int = 100,
    reranker=None,
) -> dict:
    """Run every judged query through ``chunk_search`` in each mode; mean metrics per mode.

    The query is embedded once and reused across modes, so modes differ only in ranking. With a
    ``reranker`` each mode also gets a ``<mode>+rerank`` row: the same hits with the top
    ``KNOWHUB_RERANK_TOP_N`` reordered by it (fallbacks to the fused order are counted).
    """
    from rag.rerank import rerank_hits

    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    embedder = embedder or get_embedder()
    scope = Scope.everything()
    filters = SearchFilters(collections=[dataset.collection])
    scores = {mode: ModeScores() for mode in modes}
    if reranker is not None:
        scores.update({f"{mode}+rerank": ModeScores() for mode in modes})
    fallbacks = dict.fromkeys(modes, 0)
    for qid, text in dataset.queries.items():
        vector = embedder.embed_query(text)
        rels = dataset.qrels[qid]
        for mode in modes:
            result = chunk_search(
                query=text, scope=scope, filters=filters, top_k=depth, mode=mode, dedupe=True,
                query_vector=vector, weights=weights, embedder=embedder,
            )
            ranked = [h.source_id for h in result.hits]
            s = scores[mode]
            s.ndcg10.append(ndcg_at(ranked, rels, 10))
            s.recall100.append(recall_at(ranked, rels, 100))
            s.mrr10.append(mrr_at(ranked, rels, 10))
            s.took_ms.append(result.took_ms)
            if reranker is not None:
                hits, info = rerank_hits(query=text, hits=result.hits, reranker=reranker)
                fallbacks[mode] += info.served != "reranked"
                ranked = [h.source_id for h in hits]
                s = scores[f"{mode}+rerank"]
                s.ndcg10.append(ndcg_at(ranked, rels, 10))
                s.recall100.append(recall_at(ranked, rels, 100))
                s.mrr10.append(mrr_at(ranked, rels, 10))
                s.took_ms.append(result.took_ms + info.ms)
        if progress:
            progress(1)
    return {
        "dataset": dataset.name,
        "split": dataset.split,
        "collection": dataset.collection,
        "queries": len(dataset.queries),
        "modes": {mode: s.summary() for mode, s in scores.items()},
        **({"rerank": {"provider": reranker.name, "fallbacks": fallbacks}} if reranker is not None else {}),
    }
