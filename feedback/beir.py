"""A minimal BEIR-folder reader for the SciFact feedback demonstration.

It follows the conventions of ``manage.py evaluate`` (branch ``retrieval``): collection
``eval-<folder>``, one public source per corpus entry with ``source_type="beir"``, the document id
as ``source_id`` and one unit anchored ``doc`` — so both commands share the same indexed chunks
and neither re-embeds what the other stored. Once ``rag.evaluation`` is on main this module can
delegate to it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from rag.embeddings import Embedder, get_embedder
from rag.services import UpsertResult, chunk_upsert
from rag.units import SourceDocument, Unit

SOURCE_TYPE = "beir"
UPSERT_BATCH = 256


class DatasetError(ValueError):
    """A folder that is not a usable BEIR dataset."""


def collection_name(path: Path) -> str:
    slug = re.sub(r"[^a-z0-9_-]+", "-", Path(path).resolve().name.lower()).strip("-") or "dataset"
    return f"eval-{slug}"[:100]


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path.name} line {lineno}: not JSON ({exc.msg})") from exc


def load_queries_qrels(path: Path, split: str) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Queries with at least one positive judgment in ``qrels/<split>.tsv``, and those judgments."""
    path = Path(path)
    qrels_path = path / "qrels" / f"{split}.tsv"
    if not (path / "queries.jsonl").is_file() or not qrels_path.is_file():
        raise DatasetError(f"{path} has no queries.jsonl or qrels/{split}.tsv: not a BEIR folder")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[0] == "query-id":
                continue
            if len(parts) < 3:
                continue
            try:
                grade = int(parts[2])
            except ValueError as exc:
                raise DatasetError(
                    f"qrels/{split}.tsv line {lineno}: score {parts[2]!r} is not an integer"
                ) from exc
            if grade > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = grade
    queries = {
        str(q["_id"]): q.get("text", "")
        for q in _jsonl(path / "queries.jsonl")
        if str(q["_id"]) in qrels
    }
    return queries, {qid: rels for qid, rels in qrels.items() if qid in queries}


def corpus_documents(path: Path, collection: str) -> Iterator[SourceDocument]:
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


def ingest_corpus(
    path: Path, *, embedder: Embedder | None = None, progress: Callable[[int], None] | None = None
) -> UpsertResult:
    """Upsert the corpus through ``chunk_upsert`` in batches; unchanged documents embed nothing."""
    if not (Path(path) / "corpus.jsonl").is_file():
        raise DatasetError(f"{path} has no corpus.jsonl: not a BEIR folder")
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
