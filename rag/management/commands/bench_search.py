"""``manage.py bench_search --chunks N``: server-side search latency per mode, and HNSW recall."""

from __future__ import annotations

import json as jsonlib
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from rag import bench
from rag.search import MODES, SearchFilters, _filter_sql, chunk_search


class Command(BaseCommand):
    help = (
        "Build (or reuse) a corpus of N recombined SciFact-sentence chunks in collection 'bench', "
        "then report p50/p95 latency per retrieval mode with and without a selective filter, "
        "and HNSW recall@10 against exact search."
    )

    def add_arguments(self, parser):
        parser.add_argument("--chunks", type=int, default=100_000)
        parser.add_argument("--queries", type=int, default=200, help="SciFact claims used as queries")
        parser.add_argument("--top-k", type=int, default=8)
        parser.add_argument("--modes", default=",".join(MODES))
        parser.add_argument("--corpus", default=str(Path(settings.BASE_DIR).parent / "shared" / "data" / "scifact"))
        parser.add_argument("--rebuild", action="store_true", help="rebuild the bench corpus even if N matches")
        parser.add_argument(
            "--embed-sentences", action="store_true",
            help="embed every corpus sentence for real (slow) instead of reusing the evaluated corpus' chunk vectors",
        )
        parser.add_argument("--explain", action="store_true", help="print EXPLAIN (ANALYZE, BUFFERS) of the slowest hybrid query")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, chunks, queries, top_k, modes, corpus, rebuild, embed_sentences, explain, json, **opts):
        from tqdm import tqdm

        from rag.embeddings import get_embedder

        corpus_path = Path(corpus)
        if not (corpus_path / "corpus.jsonl").is_file() or not (corpus_path / "queries.jsonl").is_file():
            raise CommandError(f"{corpus_path} is not a BEIR folder with corpus.jsonl and queries.jsonl")
        if chunks < 100:
            raise CommandError("--chunks must be at least 100")
        chosen = [m for m in modes.split(",") if m]
        if any(m not in MODES for m in chosen):
            raise CommandError(f"modes come from {', '.join(MODES)}")
        embedder = get_embedder()
        bars: dict[str, tqdm] = {}

        def progress(stage: str, k: int, total: int) -> None:
            if json:
                return
            if stage not in bars:
                bars[stage] = tqdm(total=total, desc=stage)
            bars[stage].update(k)

        built = bench.build_corpus(
            chunks, corpus=corpus_path, embedder=embedder, rebuild=rebuild, embed_sentences=embed_sentences, progress=progress
        )
        for bar in bars.values():
            bar.close()

        texts = []
        with (corpus_path / "queries.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    texts.append(jsonlib.loads(line)["text"])
                if len(texts) >= queries:
                    break
        # Warm up the model and the caches, then time query embedding on its own.
        embedder.embed_query("warm up")
        vectors, embed_ms = [], []
        for text in texts:
            t0 = time.perf_counter()
            vectors.append(embedder.embed_query(text))
            embed_ms.append((time.perf_counter() - t0) * 1000)

        scope = bench.bench_scope()
        cases = {
            "no_filter": SearchFilters(collections=[bench.COLLECTION]),
            "selective_filter": SearchFilters(collections=[bench.COLLECTION], domain=bench.SELECTIVE_DOMAIN),
        }
        for filters in cases.values():  # warm the buffer cache once per case
            for text, vec in list(zip(texts, vectors, strict=True))[:10]:
                chunk_search(query=text, scope=scope, filters=filters, top_k=top_k, mode="hybrid", query_vector=vec)
        latency: dict = {}
        slowest: tuple[float, str, SearchFilters] = (0.0, "", cases["no_filter"])
        total = len(chosen) * len(cases) * len(texts)
        with tqdm(total=total, desc="search", disable=json) as bar:
            for case, filters in cases.items():
                for mode in chosen:
                    took, full = [], []
                    for text, vec, e_ms in zip(texts, vectors, embed_ms, strict=True):
                        result = chunk_search(query=text, scope=scope, filters=filters, top_k=top_k, mode=mode, query_vector=vec)
                        took.append(result.took_ms)
                        full.append(result.took_ms + (e_ms if mode != "fulltext" else 0.0))
                        if mode == "hybrid" and result.took_ms > slowest[0]:
                            slowest = (result.took_ms, text, filters)
                        bar.update(1)
                    latency.setdefault(case, {})[mode] = {
                        "search_ms": bench.summarise(took),
                        "with_embedding_ms": bench.summarise(full),
                    }

        recall = {}
        for case, filters in cases.items():
            where, params = "", []
            if filters.domain:
                where, params = "AND c.domain = %s", [filters.domain]
            hits = []
            for text, vec in zip(texts, vectors, strict=True):
                approx = chunk_search(query=text, scope=scope, filters=filters, top_k=10, mode="vector", query_vector=vec)
                exact = bench.exact_top(vec, 10, where, params)
                if exact:
                    hits.append(len({h.chunk_uid for h in approx.hits} & set(exact)) / len(exact))
            recall[case] = round(sum(hits) / len(hits), 4) if hits else None

        # Keyword side: the capped MaxScore top-n against the exact BM25 top-n (cap lifted).
        text_overlap = None
        if settings.KNOWHUB_TEXT_MAX_MATCHES:
            from django.test import override_settings

            overlaps = []
            filters = cases["no_filter"]
            for text in texts:
                kw = dict(query=text, scope=scope, filters=filters, top_k=settings.KNOWHUB_SEARCH_CANDIDATES, mode="fulltext")
                approx = {h.chunk_uid for h in chunk_search(**kw).hits}
                with override_settings(KNOWHUB_TEXT_MAX_MATCHES=0):
                    exact = {h.chunk_uid for h in chunk_search(**kw).hits}
                if exact:
                    overlaps.append(len(approx & exact) / len(exact))
            text_overlap = round(sum(overlaps) / len(overlaps), 4) if overlaps else None

        report = {
            "chunks": chunks,
            "corpus": {
                "built_now": built.built,
                "build_seconds": round(built.build_seconds, 1),
                "hnsw_build_seconds": round(built.hnsw_seconds, 1),
                "distinct_sentences": built.sentences,
                "vectors": f"normalised mean of its 3-8 sentences' vectors; {built.vectors}",
            },
            "queries": len(texts),
            "top_k": top_k,
            "candidates_per_side": settings.KNOWHUB_SEARCH_CANDIDATES,
            "selective_filter": f"domain = '{bench.SELECTIVE_DOMAIN}' (~1% of chunks)",
            "scope": "non-staff member of project 'bench' (ACL clause in every query)",
            "query_embedding_ms": bench.summarise(embed_ms),
            "latency": latency,
            "hnsw_recall@10": recall,
            "text_max_matches": settings.KNOWHUB_TEXT_MAX_MATCHES,
            "bm25_top_n_overlap_with_exact": text_overlap,
        }
        if explain and slowest[1]:
            report["explain_slowest_hybrid"] = {"took_ms": round(slowest[0], 1), "query": slowest[1], "plan": _explain(slowest[1], scope, slowest[2], embedder, top_k)}
        if json:
            self.stdout.write(jsonlib.dumps(report, indent=2))
            return
        self._print(report)

    def _print(self, r: dict) -> None:
        self.stdout.write(
            f"N = {r['chunks']:,} chunks ({r['corpus']['vectors']}); {r['queries']} queries, top_k {r['top_k']}, "
            f"{r['candidates_per_side']} candidates per side; {r['scope']}"
        )
        e = r["query_embedding_ms"]
        self.stdout.write(f"query embedding: p50 {e['p50']} ms, p95 {e['p95']} ms")
        self.stdout.write(f"{'case':<18} {'mode':<9} {'p50':>7} {'p95':>7} {'p50+emb':>8} {'p95+emb':>8}  (ms)")
        for case, modes in r["latency"].items():
            for mode, m in modes.items():
                s, f = m["search_ms"], m["with_embedding_ms"]
                self.stdout.write(f"{case:<18} {mode:<9} {s['p50']:>7} {s['p95']:>7} {f['p50']:>8} {f['p95']:>8}")
        self.stdout.write(f"HNSW recall@10 vs exact: {r['hnsw_recall@10']}")
        if r["text_max_matches"]:
            self.stdout.write(
                f"keyword side capped at {r['text_max_matches']} matched rows: top-{r['candidates_per_side']} "
                f"overlap with exact BM25 {r['bm25_top_n_overlap_with_exact']}"
            )
        if "explain_slowest_hybrid" in r:
            x = r["explain_slowest_hybrid"]
            self.stdout.write(f"\nslowest hybrid query ({x['took_ms']} ms): {x['query']!r}")
            self.stdout.write(x["plan"])


def _explain(query: str, scope, filters: SearchFilters, embedder, top_k: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the statements chunk_search runs for one query."""
    from rag.search import _stats_sql, _text_candidates, term_weights

    vec = embedder.embed_query(query)
    where, named = _filter_sql(filters, scope)
    stats_where, stats_params = _stats_sql(filters, scope)
    out = []
    with transaction.atomic(), connection.cursor() as cursor:
        terms = term_weights(cursor, query, stats_where, stats_params)
        n = max(top_k, settings.KNOWHUB_SEARCH_CANDIDATES)
        named.update(
            qvec=str(list(vec)), n=n, tsq=terms.tsquery(), lexemes=terms.lexemes, idfs=terms.idfs,
            avgdl=terms.avgdl, k1=settings.KNOWHUB_BM25_K1, b=settings.KNOWHUB_BM25_B,
        )
        out.append("lexemes (rarest first) and df: " + ", ".join(f"{lex}:{df}" for lex, df in zip(terms.lexemes, terms.dfs, strict=True)))
        t0 = time.perf_counter()
        _text_candidates(cursor, terms, where, named, n)
        out.append(f"text candidates (MaxScore passes): {(time.perf_counter() - t0) * 1000:.1f} ms")
        cursor.execute(f"SET LOCAL hnsw.ef_search = {int(min(max(n, 40), 1000))}")
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS) SELECT c.id FROM rag_chunk c WHERE {where} "
            "ORDER BY c.embedding <=> %(qvec)s::vector LIMIT %(n)s",
            named,
        )
        out.append("-- vector candidates")
        out.extend(row[0] for row in cursor.fetchall())
        cursor.execute(
            f"EXPLAIN (ANALYZE, BUFFERS) SELECT c.id, rag_bm25(c.tsv, %(lexemes)s::text[], %(idfs)s::float8[], %(avgdl)s, %(k1)s, %(b)s) AS s "
            f"FROM rag_chunk c WHERE c.tsv @@ %(tsq)s::tsquery AND {where} ORDER BY s DESC LIMIT %(n)s",
            named,
        )
        out.append("-- text candidates, all lexemes matched (no MaxScore pruning)")
        out.extend(row[0] for row in cursor.fetchall())
    return "\n".join(out)
