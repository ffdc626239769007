"""``manage.py bench_search --chunks N``: server-side search latency per mode, and HNSW recall."""

from __future__ import annotations

import json as jsonlib
import re
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test import override_settings

from rag import bench, text_search
from rag.search import MODES, SearchFilters, chunk_search, filter_sql


class Command(BaseCommand):
    help = (
        "Build (or reuse) a corpus of N recombined SciFact-sentence chunks in collection 'bench', "
        "then report p50/p95 latency per retrieval mode with and without a selective filter, "
        "and HNSW recall@10 against exact search."
    )

    def add_arguments(self, parser):
        parser.add_argument("--chunks", type=int, default=100_000)
        parser.add_argument("--queries", type=int, default=200, help="SciFact claims used as queries")
        parser.add_argument(
            "--warmup-queries", type=int, default=300,
            help="further claims searched, unmeasured, before measuring: the caches hold what a server that has "
            "been answering holds, and the measured claims are not among them",
        )  # fmt: skip
        parser.add_argument("--top-k", type=int, default=8)
        parser.add_argument(
            "--recall-queries", type=int, default=0,
            help="measure recall@10 on the first N queries only (default: all); each unfiltered one is an exact "
            "scan of the whole corpus the first time (cached per built corpus)",
        )
        parser.add_argument("--modes", default=",".join(MODES))
        parser.add_argument("--corpus", default=str(Path(settings.BASE_DIR).parent / "shared" / "data" / "scifact"))
        parser.add_argument("--rebuild", action="store_true", help="rebuild the bench corpus even if N matches")
        parser.add_argument(
            "--embed-sentences", action="store_true",
            help="embed every corpus sentence for real (slow) instead of reusing the evaluated corpus' chunk vectors",
        )
        parser.add_argument(
            "--explain", action="store_true", help="print EXPLAIN (ANALYZE, BUFFERS) of the slowest hybrid query"
        )
        parser.add_argument(
            "--backends", default="",
            help="keyword backends to measure side by side, e.g. pg_textsearch,sql (default: the active one). "
            "Switching rebuilds the other backend's index or statistics; the configured one is restored at the end.",
        )
        parser.add_argument(
            "--vector-index", default="hnsw", choices=sorted(bench.VECTOR_INDEXES),
            help="the vector index to search with: pgvector's hnsw or pgvectorscale's StreamingDiskANN (diskann); "
            "switching drops the other (run again with hnsw to restore it)",
        )
        parser.add_argument(
            "--build-memory", default="auto",
            help="maintenance_work_mem for the index builds (default: enough for the HNSW graph to fit, "
            "up to a third of the RAM)",
        )
        parser.add_argument("--json", action="store_true")

    def handle(
        self, *args, chunks, queries, top_k, modes, corpus, rebuild, embed_sentences, explain, json, backends,
        vector_index="hnsw", build_memory="auto", **opts,
    ):  # fmt: skip
        from rag.embeddings import get_embedder

        corpus_path = Path(corpus)
        if not (corpus_path / "corpus.jsonl").is_file() or not (corpus_path / "queries.jsonl").is_file():
            raise CommandError(f"{corpus_path} is not a BEIR folder with corpus.jsonl and queries.jsonl")
        if chunks < 100:
            raise CommandError("--chunks must be at least 100")
        if "rag_chunk" not in connection.introspection.table_names():
            raise CommandError("This database has no knowhub tables yet: run `manage.py migrate` first.")
        chosen = [m for m in modes.split(",") if m]
        if any(m not in MODES for m in chosen):
            raise CommandError(f"modes come from {', '.join(MODES)}")
        embedder = get_embedder()
        built = _build_corpus(
            chunks, corpus_path, embedder, rebuild=rebuild, embed_sentences=embed_sentences, quiet=json,
            vector_index=vector_index, build_memory=build_memory,
        )
        every = _read_queries(corpus_path, queries + max(0, opts["warmup_queries"]))
        texts = every[:queries]
        vectors, embed_ms = _embed_queries(embedder, texts)
        warmup = [(text, embedder.embed_query(text)) for text in every[queries:]]

        scope = bench.bench_scope()
        configured = text_search.active_backend().name
        wanted = [b for b in backends.split(",") if b] or [configured]
        if any(b not in text_search.BACKENDS for b in wanted):
            raise CommandError(f"backends come from {', '.join(text_search.BACKENDS)}")
        runs: dict[str, dict] = {}
        # The searches walk the vector index this run built.
        with override_settings(KNOWHUB_VECTOR_INDEX=vector_index):
            try:
                for name in wanted:
                    switch_s = _use_backend(name)
                    runs[name] = self._measure(
                        texts, vectors, embed_ms, scope, chosen, top_k, explain, json, embedder,
                        recall_n=opts.get("recall_queries") or len(texts), warmup=warmup,
                    )  # fmt: skip
                    runs[name]["switch_seconds"] = round(switch_s, 1)
            finally:
                _use_backend(None)
        report = _report(
            chunks=chunks, built=built, texts=texts, top_k=top_k, embed_ms=embed_ms, wanted=wanted, runs=runs
        )
        report["warmup_queries"] = len(warmup)
        if json:
            self.stdout.write(jsonlib.dumps(report, indent=2))
            return
        self._print(report)

    def _measure(
        self, texts, vectors, embed_ms, scope, chosen, top_k, explain, json, embedder, recall_n, warmup
    ) -> dict:
        """Latency per case and mode, HNSW recall, for the keyword backend in use now."""
        cases = {
            "no_filter": SearchFilters(collections=[bench.COLLECTION]),
            "selective_filter": SearchFilters(collections=[bench.COLLECTION], domain=bench.SELECTIVE_DOMAIN),
        }
        # Warm the caches with claims that are not measured: otherwise the first mode measured (hybrid,
        # unfiltered) reads the index from the operating system's cache and the others find it in
        # shared buffers, which made its p95 swing between runs.
        for filters in cases.values():
            for text, vec in warmup:
                chunk_search(query=text, scope=scope, filters=filters, top_k=top_k, mode="hybrid", query_vector=vec)
        latency, slowest = _latency(texts, vectors, embed_ms, scope, cases, chosen, top_k, quiet=json)
        out = {
            "text_backend": text_search.active_backend().name,
            "latency": latency,
            "hnsw_recall@10": _recall(texts[:recall_n], vectors[:recall_n], scope, cases),
            "bm25_top_n_overlap_with_exact": _text_overlap(texts, scope, cases["no_filter"]),
        }
        backend = text_search.active_backend()
        if isinstance(backend, text_search.PgTextsearch):
            out["text_plans"] = _plan_latency(backend, texts, scope, cases)
        if explain and slowest[1]:
            out["explain"] = {"took_ms": round(slowest[0], 1), "query": slowest[1],
                              "plan": _explain(slowest[1], scope, slowest[2], embedder, top_k)}
        return out

    def _print(self, r: dict) -> None:
        self.stdout.write(f"keyword backend: {r['text_backend']}")
        self.stdout.write(
            f"N = {r['chunks']:,} chunks ({r['corpus']['vectors']}); {r['queries']} queries, top_k {r['top_k']}, "
            f"{r['candidates_per_side']} candidates per side; {r['scope']}"
        )
        c = r["corpus"]
        if c["built_now"]:
            self.stdout.write(
                f"built in {c['build_seconds']} s: load {c['load_seconds']} s, {c['vector_index']} index "
                f"{c['hnsw_build_seconds']} s ({c['vector_index_size']}), "
                f"text indexes {c['text_index_build_seconds']} s, statistics {c['finish_seconds']} s; "
                f"then VACUUM {c['vacuum_seconds_after_build']} s (before it: the corpus's sentence vectors "
                f"{c['sentence_vectors_seconds']} s, clearing the previous corpus {c['prepare_seconds']} s)"
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
        for name, run in r["by_backend"].items():
            if name == r["text_backend"]:
                continue
            self.stdout.write(f"\nkeyword backend {name} (switched in {run['switch_seconds']} s):")
            for case, modes in run["latency"].items():
                for mode, m in modes.items():
                    s, f = m["search_ms"], m["with_embedding_ms"]
                    self.stdout.write(f"{case:<18} {mode:<9} {s['p50']:>7} {s['p95']:>7} {f['p50']:>8} {f['p95']:>8}")
        for name, run in r["by_backend"].items():
            if run.get("text_plans"):
                self.stdout.write(f"{name} keyword plans (fulltext candidates only): {run['text_plans']}")
        for name, x in r.get("explain_slowest_hybrid", {}).items():
            self.stdout.write(f"\n[{name}] slowest hybrid query ({x['took_ms']} ms): {x['query']!r}")
            self.stdout.write(x["plan"])


def _build_corpus(
    chunks: int, corpus_path: Path, embedder, *, rebuild: bool, embed_sentences: bool, quiet: bool,
    vector_index: str = "hnsw", build_memory: str = "auto",
):  # fmt: skip
    """Build (or reuse) the bench corpus, with a progress bar per stage unless ``quiet``."""
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def progress(stage: str, k: int, total: int) -> None:
        if quiet:
            return
        if stage not in bars:
            bars[stage] = tqdm(total=total, desc=stage)
        bars[stage].update(k)

    built = bench.build_corpus(
        chunks,
        corpus=corpus_path,
        embedder=embedder,
        rebuild=rebuild,
        embed_sentences=embed_sentences,
        progress=progress,
        vector_index=vector_index,
        build_memory=build_memory,
    )
    for bar in bars.values():
        bar.close()
    return built


def _read_queries(corpus_path: Path, queries: int) -> list[str]:
    """The first ``queries`` SciFact claims."""
    texts = []
    with (corpus_path / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                texts.append(jsonlib.loads(line)["text"])
            if len(texts) >= queries:
                break
    return texts


def _embed_queries(embedder, texts: list[str]) -> tuple[list, list[float]]:
    """Warm up the model and the caches, then time query embedding on its own."""
    embedder.embed_query("warm up")
    vectors, embed_ms = [], []
    for text in texts:
        t0 = time.perf_counter()
        vectors.append(embedder.embed_query(text))
        embed_ms.append((time.perf_counter() - t0) * 1000)
    return vectors, embed_ms


def _report(
    *, chunks: int, built, texts: list[str], top_k: int, embed_ms: list[float], wanted: list[str], runs: dict
) -> dict:
    """The command's figures; the first backend asked for is the headline."""
    first = runs[wanted[0]]
    report = {
        "chunks": chunks,
        "corpus": {
            "built_now": built.built,
            "build_seconds": round(built.build_seconds, 1),
            "vector_index": built.vector_index,
            "vector_index_size": bench.vector_index_size(),
            "load_seconds": round(built.load_seconds, 1),
            "hnsw_build_seconds": round(built.hnsw_seconds, 1),  # the vector index's, hnsw or diskann
            "text_index_build_seconds": round(built.text_index_seconds, 1),
            "prepare_seconds": round(built.prepare_seconds, 1),  # not in build_seconds
            "finish_seconds": round(built.finish_seconds, 1),
            "vacuum_seconds_after_build": round(built.vacuum_seconds, 1),
            "sentence_vectors_seconds": round(built.vectors_seconds, 1),  # not in build_seconds
            "distinct_sentences": built.sentences,
            "vectors": f"normalised mean of its 3-8 sentences' vectors; {built.vectors}",
        },
        "queries": len(texts),
        "top_k": top_k,
        "candidates_per_side": settings.KNOWHUB_SEARCH_CANDIDATES,
        "selective_filter": f"domain = '{bench.SELECTIVE_DOMAIN}' (~1% of chunks)",
        "scope": "non-staff member of project 'bench' (ACL clause in every query)",
        "query_embedding_ms": bench.summarise(embed_ms),
        "latency": first["latency"],
        "hnsw_recall@10": first["hnsw_recall@10"],
        "text_max_matches": settings.KNOWHUB_TEXT_MAX_MATCHES,
        "bm25_top_n_overlap_with_exact": first["bm25_top_n_overlap_with_exact"],
        "text_backend": wanted[0],
        "by_backend": {name: {k: v for k, v in run.items() if k != "explain"} for name, run in runs.items()},
    }
    for name, run in runs.items():
        if run.get("explain"):
            report.setdefault("explain_slowest_hybrid", {})[name] = run["explain"]
    return report


def _latency(texts, vectors, embed_ms, scope, cases, chosen, top_k, *, quiet: bool) -> tuple[dict, tuple]:
    """p50/p95 per case and mode (search alone, and with the query's embedding time), and the
    slowest hybrid query as (ms, query, filters)."""
    from tqdm import tqdm

    latency: dict = {}
    slowest: tuple[float, str, SearchFilters] = (0.0, "", cases["no_filter"])
    total = len(chosen) * len(cases) * len(texts)
    with tqdm(total=total, desc="search", disable=quiet) as bar:
        for case, filters in cases.items():
            for mode in chosen:
                took, full = [], []
                for text, vec, e_ms in zip(texts, vectors, embed_ms, strict=True):
                    result = chunk_search(
                        query=text, scope=scope, filters=filters, top_k=top_k, mode=mode, query_vector=vec
                    )
                    took.append(result.took_ms)
                    full.append(result.took_ms + (e_ms if mode != "fulltext" else 0.0))
                    if mode == "hybrid" and result.took_ms > slowest[0]:
                        slowest = (result.took_ms, text, filters)
                    bar.update(1)
                latency.setdefault(case, {})[mode] = {
                    "search_ms": bench.summarise(took),
                    "with_embedding_ms": bench.summarise(full),
                }
    return latency, slowest


def _recall(texts, vectors, scope, cases) -> dict:
    """HNSW recall@10 per case against exact (sequential) vector search."""
    cached, save = bench.exact_tops_cache()
    recall = {}
    for case, filters in cases.items():
        where, params = "", []
        if filters.domain:
            where, params = "AND c.domain = %s", [filters.domain]
        hits = []
        for text, vec in zip(texts, vectors, strict=True):
            approx = chunk_search(query=text, scope=scope, filters=filters, top_k=10, mode="vector", query_vector=vec)
            key = bench.exact_key(vec, 10, where, params)
            if key not in cached:
                cached[key] = bench.exact_top(vec, 10, where, params)
            exact = cached[key]
            if exact:
                hits.append(len({h.chunk_uid for h in approx.hits} & set(exact)) / len(exact))
        recall[case] = round(sum(hits) / len(hits), 4) if hits else None
    save()
    return recall


def _text_overlap(texts, scope, filters) -> float | None:
    """Keyword side: the capped MaxScore top-n against the exact BM25 top-n (cap lifted)."""
    if not settings.KNOWHUB_TEXT_MAX_MATCHES:
        return None
    overlaps = []
    for text in texts:
        kw = dict(query=text, scope=scope, filters=filters, top_k=settings.KNOWHUB_SEARCH_CANDIDATES, mode="fulltext")
        approx = {h.chunk_uid for h in chunk_search(**kw).hits}
        with override_settings(KNOWHUB_TEXT_MAX_MATCHES=0):
            exact = {h.chunk_uid for h in chunk_search(**kw).hits}
        if exact:
            overlaps.append(len(approx & exact) / len(exact))
    return round(sum(overlaps) / len(overlaps), 4) if overlaps else None


PLAN_SAMPLE = 20


def _plan_latency(backend, texts, scope, cases) -> dict:
    """pg_textsearch's two plans forced on each case (keyword candidates only), and which one the
    selectivity rule picks: the evidence for ``KNOWHUB_TEXT_FILTER_FIRST_*``."""
    n = settings.KNOWHUB_SEARCH_CANDIDATES
    out: dict = {}
    for case, filters in cases.items():
        where, named = filter_sql(filters, scope)
        row: dict = {}
        with transaction.atomic(), connection.cursor() as cursor:
            prepared = [backend.prepare(cursor, query=text, filters=filters, scope=scope) for text in texts]
            # Forcing filter-first on a broad case scores every matching row (seconds a query at
            # 100k): a sample is enough to show which plan wins.
            prepared = [tq for tq in prepared if tq.has_text][:PLAN_SAMPLE]
            row["filter_first_chosen_for"] = sum(
                backend.filter_first(cursor, where=where, params={**named, **tq.params}) for tq in prepared
            )
            row["queries"] = len(prepared)
            for plan in ("filter_first", "index_order"):
                took = []
                for tq in prepared:
                    t0 = time.perf_counter()
                    backend.candidates(cursor, tq, where=where, params={**named, **tq.params}, n=n, plan=plan)
                    took.append((time.perf_counter() - t0) * 1000)
                row[plan] = bench.summarise(took)
        out[case] = row
    return out


def _use_backend(name: str | None) -> float:
    """Switch the schema to keyword backend ``name`` (None: the configured one); seconds taken."""
    t0 = time.perf_counter()
    text_search.reset()
    if name is None:
        text_search.active_backend()
    else:
        with override_settings(KNOWHUB_TEXT_BACKEND=name):
            text_search.active_backend()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE rag_chunk")
    return time.perf_counter() - t0


def _executed_ms(cursor, sql: str, params: dict) -> tuple[float, list[str]]:
    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
    # The query vector's literal and long id lists would fill the screen: name them instead.
    lines = [
        re.sub(r"'\{[^}]{200,}\}'", "'{…}'", re.sub(r"'\[[^\]]{80,}\]'", "'[query vector]'", row[0]))
        for row in cursor.fetchall()
    ]
    ms = next((float(line.split(":")[1].split()[0]) for line in lines if line.startswith("Execution Time")), 0.0)
    return ms, lines


def _explain(query: str, scope, filters: SearchFilters, embedder, top_k: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the statements one live hybrid search runs, with their shares.

    The search goes through ``chunk_search`` itself while every statement it sends is recorded,
    then each is replayed under EXPLAIN in one transaction (its ``SET LOCAL``s first), so the
    plans are those of the live query — the keyword backend's candidate passes and the candidate
    union with the vector side — not of a hand-written copy that could drift from it. The search
    runs on one connection here (``KNOWHUB_SEARCH_PARALLEL`` off), so the vector half's statement
    is recorded and explained too; live, it runs beside the keyword half.
    """
    backend = text_search.active_backend()
    vec = embedder.embed_query(query)
    statements: list[tuple[str, object]] = []

    def record(execute, sql, params, many, context):
        statements.append((sql, dict(params) if isinstance(params, dict) else params))
        return execute(sql, params, many, context)

    with override_settings(KNOWHUB_SEARCH_PARALLEL=False), connection.execute_wrapper(record):
        chunk_search(query=query, scope=scope, filters=filters, top_k=top_k, mode="hybrid", query_vector=vec)
    out = [f"keyword backend: {backend.name}"]
    terms = next((p["_terms"] for _, p in statements if isinstance(p, dict) and "_terms" in p), None)
    if terms is not None:
        out.append(
            "lexemes (rarest first) and df: "
            + ", ".join(f"{lex}:{df}" for lex, df in zip(terms.lexemes, terms.dfs, strict=True))
        )
    steps: list[tuple[str, float, list[str]]] = []
    with transaction.atomic(), connection.cursor() as cursor:
        for sql, params in statements:
            verb = sql.lstrip().split(None, 1)[0].upper()
            if verb == "SET":
                cursor.execute(sql, params)
            elif verb in ("SELECT", "WITH"):
                ms, plan = _executed_ms(cursor, sql, params)
                steps.append((_statement_label(sql, len(steps)), ms, plan))
    total = sum(ms for _, ms, _ in steps) or 1.0
    out.append(", ".join(f"{label} {ms:.1f} ms ({ms / total:.0%})" for label, ms, _ in steps))
    for label, _, plan in steps:
        out.append(f"-- {label}")
        out.extend(plan)
    return "\n".join(out)


def _statement_label(sql: str, index: int) -> str:
    """What a statement of ``chunk_search`` is for, from the SQL the search modules write."""
    if "rag_term_stat" in sql:
        return "term statistics (IDF)"
    if "txt_ids" in sql:
        return "candidate union (vector candidates from HNSW + scoring)"
    if "to_tsvector" in sql and "rag_chunk" not in sql:
        return "query lexemes"
    if "rag_chunk" in sql and ("@@" in sql or "<@>" in sql):
        return f"text candidates (statement {index + 1})"
    if "feedback_" in sql:
        return f"learned ranking (statement {index + 1})"
    return f"statement {index + 1}"
