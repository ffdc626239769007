"""``manage.py bench_ingest``: embedding throughput of the upsert path against the raw model.

Prints chunks/s for (1) the raw embedding model on the very texts the upsert will embed,
(2) upserting that content new, and (3) re-syncing it unchanged. The corpus is real text:
SciFact abstracts when ../shared/data/scifact is beside the checkout, else the demo corpus.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from rag.chunking import split_text
from rag.embeddings import get_embedder
from rag.models import Chunk, ChunkHistory
from rag.services import chunk_upsert, embedding_text
from rag.units import SourceDocument, Unit

COLLECTION = "bench-ingest"


def _texts(limit: int) -> list[tuple[str, str]]:
    scifact = Path(settings.BASE_DIR).parent / "shared" / "data" / "scifact" / "corpus.jsonl"
    out: list[tuple[str, str]] = []
    if scifact.exists():
        with scifact.open() as fh:
            for line in fh:
                row = json.loads(line)
                out.append((row.get("title", ""), row.get("text", "")))
                if len(out) >= limit:
                    break
        return out
    from rag.demo import DEMO_DOCUMENTS

    while len(out) < limit:
        for doc in DEMO_DOCUMENTS:
            out.append((f"{doc['title']} #{len(out)}", doc["text"]))
    return out[:limit]


class Command(BaseCommand):
    help = "Measure ingest throughput: raw model vs. upsert of new content vs. unchanged re-sync."

    def add_arguments(self, parser):
        parser.add_argument("--docs", type=int, default=600, help="source documents to ingest")
        parser.add_argument("--batch-docs", type=int, default=200, help="documents per upsert call")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--keep", action="store_true", help="keep the bench collection afterwards")

    def _say(self, options, message):
        if not options["json"]:
            self.stdout.write(message)

    def handle(self, *args, **o):
        embedder = get_embedder()
        docs = [
            SourceDocument(
                collection=COLLECTION, source_type="abstract", source_id=str(i),
                units=[Unit(unit_anchor="body", content=text, title=title)],
            )  # fmt: skip
            for i, (title, text) in enumerate(_texts(o["docs"]))
        ]
        texts = [
            embedding_text(d.units[0].title, piece)
            for d in docs
            for piece in split_text(
                d.units[0].content, size=settings.KNOWHUB_CHUNK_SIZE, overlap=settings.KNOWHUB_CHUNK_OVERLAP
            )
        ]
        self._cleanup()
        embedder.embed_documents(texts[:16])  # load the model outside every timing

        batch = settings.KNOWHUB_EMBEDDING_BATCH
        t0 = time.perf_counter()
        for start in range(0, len(texts), batch):
            embedder.embed_documents(texts[start : start + batch])
        raw_s = time.perf_counter() - t0
        raw_rate = len(texts) / raw_s
        self._say(o, f"raw model:        {len(texts)} chunks in {raw_s:.1f}s = {raw_rate:.0f} chunks/s")

        def run_all():
            created = unchanged = embedded = 0
            t = time.perf_counter()
            for start in range(0, len(docs), o["batch_docs"]):
                r = chunk_upsert(documents=docs[start : start + o["batch_docs"]], embedder=embedder)
                created, unchanged, embedded = created + r.created, unchanged + r.unchanged, embedded + r.embedded
            return time.perf_counter() - t, created, unchanged, embedded

        new_s, created, _, embedded = run_all()
        new_rate = created / new_s
        self._say(o, f"upsert new:       {created} chunks in {new_s:.1f}s = {new_rate:.0f} chunks/s "
                     f"({new_rate / raw_rate:.0%} of raw)")  # fmt: skip
        resync_s, _, unchanged, re_embedded = run_all()
        resync_rate = unchanged / resync_s
        self._say(o, f"re-sync unchanged: {unchanged} chunks in {resync_s:.2f}s = {resync_rate:.0f} chunks/s "
                     f"({re_embedded} re-embedded)")  # fmt: skip
        result = {
            "documents": len(docs),
            "chunks": len(texts),
            "model": embedder.name,
            "raw_chunks_per_s": round(raw_rate, 1),
            "new_chunks_per_s": round(new_rate, 1),
            "new_vs_raw": round(new_rate / raw_rate, 3),
            "resync_chunks_per_s": round(resync_rate, 1),
            "resync_reembedded": re_embedded,
            "targets": {"new_vs_raw": ">= 0.8", "resync_chunks_per_s": ">= 5000"},
        }
        if not o["keep"]:
            self._cleanup()
        if o["json"]:
            self.stdout.write(json.dumps(result))

    @staticmethod
    def _cleanup():
        uids = Chunk.objects.filter(collection=COLLECTION).values("chunk_uid")
        ChunkHistory.objects.filter(chunk_uid__in=uids).delete()
        Chunk.objects.filter(collection=COLLECTION).delete()
