"""Latency benchmark corpus and measurements for ``manage.py bench_search``.

The corpus is real text: SciFact abstracts split into sentences, recombined into chunks of 3–8
sentences (1–3 consecutive ones from a "home" abstract, whose title the chunk takes, plus at
least two sentences from other abstracts). Embedding 100k+ chunks with MiniLM on two shared
cores takes hours, so a chunk's vector is the normalised mean of its sentences' vectors, and a
sentence's vector is by default the real MiniLM vector of the evaluated SciFact chunk holding it
(``manage.py evaluate`` stored those); ``--embed-sentences`` embeds each sentence for real
instead (~40k sentences; cached). Either way the output says which. Chunks live in collection
``bench`` with realistic metadata (20 domains, a 1 % ``rare`` domain for the selective filter,
dates, images, 10 % restricted to project ``bench``), are bulk-loaded with COPY; for a large load
the HNSW, GIN and BM25 indexes are built after loading and the term-stat triggers are off while
it runs (statistics rebuilt once at the end). Reruns with the same N reuse everything.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import random
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from rag import db_ops, term_stats, text_query, text_search
from rag.acl import Scope, user_hash
from rag.models import Project

logger = logging.getLogger(__name__)

COLLECTION = "bench"
SOURCE_TYPE = "bench"
PROJECT_SLUG = "bench"
DOMAINS = [f"topic-{i:02d}" for i in range(20)]
SELECTIVE_DOMAIN = "rare"  # ~1 % of chunks: the selective filter
HNSW_REBUILD_ABOVE = 20_000
# The vector index a bench corpus is searched with: pgvector's HNSW (what migrations create) or
# pgvectorscale's StreamingDiskANN (the embedded server and the image ship the extension); each
# with its CREATE INDEX for the column's dimensions.
VECTOR_INDEXES = {
    "hnsw": ("chunk_embedding_hnsw", lambda dims: db_ops.hnsw_index_sql("chunk_embedding_hnsw", "embedding", dims)),
    "diskann": (
        "chunk_embedding_diskann",
        lambda dims: (
            "CREATE INDEX IF NOT EXISTS chunk_embedding_diskann ON rag_chunk "
            "USING diskann (embedding vector_cosine_ops)"
        ),
    ),
}
COPY_BATCH = 10_000  # rows a loader sends in one COPY (and one transaction)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def cache_dir() -> Path:
    path = Path(settings.BASE_DIR) / "var" / "bench"
    path.mkdir(parents=True, exist_ok=True)
    return path


def read_sentences(corpus: Path) -> tuple[list[str], list[str], list[list[int]]]:
    """Distinct sentences of the corpus, the abstracts' titles, and each abstract's sentence ids."""
    sentences: list[str] = []
    index: dict[str, int] = {}
    titles: list[str] = []
    docs: list[list[int]] = []
    with (corpus / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            doc = json.loads(line)
            ids = []
            for sent in _SENTENCE_RE.split(doc.get("text") or ""):
                sent = sent.strip()
                if len(sent.split()) < 4:
                    continue
                if sent not in index:
                    index[sent] = len(sentences)
                    sentences.append(sent)
                ids.append(index[sent])
            if ids:
                titles.append((doc.get("title") or "").strip()[:500])
                docs.append(ids)
    return sentences, titles, docs


def sentence_vectors(
    sentences: list[str], embedder, *, corpus: Path, embed: bool = False, progress: Callable[[int], None] | None = None
) -> tuple[np.ndarray, str]:
    """A vector per sentence, and how it was obtained.

    Default: reuse the real MiniLM vectors ``manage.py evaluate`` already stored for the corpus
    (collection ``eval-<folder>``): each sentence carries the vector of the stored chunk that
    contains it. ``embed=True`` (or no evaluated corpus) embeds every sentence for real — ~40k
    sentences, an hour on two busy cores — cached under var/bench.
    """
    digest = hashlib.sha256(("\n".join(sentences) + embedder.name).encode()).hexdigest()[:16]
    path = cache_dir() / f"sentences-{digest}.npy"
    if path.exists():
        return np.load(path), "real all-MiniLM-L6-v2 vector of each sentence (cached)"
    if not embed:
        inherited = _inherited_vectors(sentences, corpus, embedder)
        if inherited is not None:
            return (
                inherited,
                "each sentence inherits the real all-MiniLM-L6-v2 vector of the evaluated SciFact chunk holding it",
            )
    out = np.zeros((len(sentences), embedder.dims), dtype=np.float32)
    step = 512
    for start in range(0, len(sentences), step):
        batch = sentences[start : start + step]
        out[start : start + len(batch)] = np.asarray(embedder.embed_documents(batch), dtype=np.float32)
        if progress:
            progress(len(batch))
    np.save(path, out)
    return out, "real all-MiniLM-L6-v2 vector of each sentence"


def _inherited_vectors(sentences: list[str], corpus: Path, embedder) -> np.ndarray | None:
    from rag.evaluation import collection_name

    collection = collection_name(corpus)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT content, embedding::text FROM rag_chunk WHERE collection = %s AND deleted_at IS NULL "
            "AND embedding_model = %s",
            [collection, embedder.name],
        )
        stored = cursor.fetchall()
    if not stored:
        return None
    index = {sent: i for i, sent in enumerate(sentences)}
    out = np.zeros((len(sentences), embedder.dims), dtype=np.float32)
    found = np.zeros(len(sentences), dtype=bool)
    for content, vector in stored:
        vec = None
        for sent in _SENTENCE_RE.split(content):
            i = index.get(sent.strip())
            if i is not None and not found[i]:
                if vec is None:
                    vec = np.asarray(json.loads(vector), dtype=np.float32)
                out[i], found[i] = vec, True
    if found.mean() < 0.5:
        return None
    # Sentences cut by a chunk boundary: take the mean of all stored vectors as a neutral stand-in.
    out[~found] = out[found].mean(axis=0)
    return out


@dataclass
class BenchCorpus:
    chunks: int
    built: bool
    build_seconds: float
    sentences: int
    hnsw_seconds: float = 0.0
    text_index_seconds: float = 0.0
    load_seconds: float = 0.0
    vectors: str = ""
    vector_index: str = "hnsw"
    vacuum_seconds: float = 0.0
    vectors_seconds: float = 0.0  # making the corpus's sentence vectors, once per corpus (then cached)
    prepare_seconds: float = 0.0  # clearing the previous corpus and dropping its indexes (not in build_seconds)
    finish_seconds: float = 0.0  # after the index builds: statistics, the text backend's check, ANALYZE


def build_workers() -> int:
    """Parallel workers for index builds: the server's own setting (the embedded server sizes it
    from the cores it sees), at least one."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_parallel_maintenance_workers")
        return max(1, int(cursor.fetchone()[0]))


def vector_index_kind() -> str | None:
    """Which vector index rag_chunk has now ("hnsw", "diskann"), or None."""
    with connection.cursor() as cursor:
        for kind, (name, _) in VECTOR_INDEXES.items():
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            if cursor.fetchone()[0]:
                return kind
    return None


def use_vector_index(kind: str, *, memory: str = "2GB", workers: int | None = None) -> float:
    """Make ``kind`` the one vector index of rag_chunk (the other is dropped); the seconds its
    build took (0 when it was there already). Built with ``memory`` and ``workers`` parallel
    workers (default ``build_workers()``): a graph that fits in memory builds several times faster."""
    if kind not in VECTOR_INDEXES:
        raise ValueError(f"vector index must be one of {', '.join(VECTOR_INDEXES)}")
    name, create = VECTOR_INDEXES[kind]
    with connection.cursor() as cursor:
        for other, (other_name, _) in VECTOR_INDEXES.items():
            if other != kind:
                cursor.execute(f"DROP INDEX IF EXISTS {other_name}")
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        if cursor.fetchone()[0]:
            return 0.0
        if kind == "diskann":
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vectorscale")
        t0 = time.perf_counter()
        cursor.execute(f"SET maintenance_work_mem = '{memory}'")
        cursor.execute(f"SET max_parallel_maintenance_workers = {int(workers or build_workers())}")
        cursor.execute(create(db_ops.column_dims(cursor)))
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")
        return time.perf_counter() - t0


GRAPH_BYTES_PER_ROW = 2560  # an HNSW element in memory while building: the vector, its neighbours, bookkeeping


def build_memory_for(rows: int) -> str:
    """maintenance_work_mem for building the indexes over ``rows``: enough for the HNSW graph to
    stay in memory (past it, pgvector inserts the rest one by one on disk, several times slower),
    at least 1 GB, at most a third of the machine's RAM."""
    from knowhub.embedded_db import machine_ram_bytes

    wanted = rows * GRAPH_BYTES_PER_ROW
    mb = max(1024, min(wanted, machine_ram_bytes() // 3) // 2**20)
    return f"{mb}MB"


def vector_index_size() -> str:
    """The current vector index's size on disk, e.g. "152 MB" ("" without one)."""
    kind = vector_index_kind()
    if kind is None:
        return ""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_relation_size(%s::regclass))", [VECTOR_INDEXES[kind][0]])
        return cursor.fetchone()[0]


def existing_chunks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM rag_chunk WHERE collection = %s AND deleted_at IS NULL", [COLLECTION])
        return cursor.fetchone()[0]


def build_corpus(
    n: int,
    *,
    corpus: Path,
    embedder,
    rebuild: bool = False,
    embed_sentences: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    vector_index: str = "hnsw",
    build_memory: str = "auto",
) -> BenchCorpus:
    """Make collection ``bench`` hold exactly ``n`` recombined chunks (reused when it does),
    searched through ``vector_index`` (built, or switched to, when missing)."""
    started = time.perf_counter()
    if build_memory == "auto":
        build_memory = build_memory_for(n)
    have = existing_chunks()
    sentences, titles, docs = read_sentences(corpus)
    if have == n and not rebuild:
        with connection.cursor() as cursor:
            cursor.execute("SELECT metadata->>'vectors' FROM rag_chunk WHERE collection = %s LIMIT 1", [COLLECTION])
            how = cursor.fetchone()[0] or ""
        index_s = use_vector_index(vector_index, memory=build_memory)
        return BenchCorpus(
            chunks=n, built=bool(index_s), build_seconds=index_s, sentences=len(sentences), vectors=how,
            hnsw_seconds=index_s, vector_index=vector_index,
        )  # fmt: skip
    project, _ = Project.objects.get_or_create(slug=PROJECT_SLUG, defaults={"name": "Benchmark"})
    t0 = time.perf_counter()
    vectors, how = sentence_vectors(
        sentences, embedder, corpus=corpus, embed=embed_sentences,
        progress=(lambda k: progress("embed sentences", k, len(sentences))) if progress else None,
    )  # fmt: skip
    # Making the synthetic corpus's vectors is the benchmark's own preparation, not part of
    # building an index over a million chunks: timed apart.
    vectors_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    big = n >= HNSW_REBUILD_ABOVE
    with connection.cursor() as cursor:
        cursor.execute(_AUTOVACUUM_ON)  # in case an earlier large load was killed before it did
        if not big:
            _clear_corpus(cursor, truncate=False)
    stat_triggers = False
    if big:
        # Building an index once over all rows is far cheaper than maintaining it row by row.
        with connection.cursor() as cursor:
            # Autovacuum would scan the growing table again and again while it loads, on the
            # cores the load needs; it runs once the load and the index builds are done.
            cursor.execute("ALTER TABLE rag_chunk SET (autovacuum_enabled = off, toast.autovacuum_enabled = off)")
            for index_name, _ in VECTOR_INDEXES.values():
                cursor.execute(f"DROP INDEX IF EXISTS {index_name}")
            cursor.execute("DROP INDEX IF EXISTS chunk_tsv_gin")
            cursor.execute(f"DROP INDEX IF EXISTS {text_search.BM25_INDEX}")
            # Every row has the same model: parallel loaders would all insert into its last page.
            cursor.execute("DROP INDEX IF EXISTS chunk_live_model_idx")
            stat_triggers = text_query.triggers_present(cursor)
            if stat_triggers:  # SQL backend: one statistics rebuild at the end instead
                cursor.execute("ALTER TABLE rag_chunk DISABLE TRIGGER rag_chunk_term_stat_insert")
            _clear_corpus(cursor, truncate=True)  # its indexes gone first: nothing to update row by row
    plan = _LoadPlan(
        sentences=sentences, titles=titles, docs=docs, vectors=vectors, how=how, model=embedder.name,
        project_id=project.pk, now=dt.datetime.now(dt.UTC),
    )  # fmt: skip
    prepare_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        _load_rows(n, plan, progress=progress)
        load_s = time.perf_counter() - t0
        hnsw_s = text_s = 0.0
        if big:
            # Loaded first, indexed after.
            hnsw_s, text_s = _build_indexes(vector_index, build_memory)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(_AUTOVACUUM_ON)
    t0 = time.perf_counter()
    if big:
        if stat_triggers:
            with connection.cursor() as cursor:
                cursor.execute("ALTER TABLE rag_chunk ENABLE TRIGGER rag_chunk_term_stat_insert")
            term_stats.rebuild()
        text_search.reset()
        text_search.ensure_backend()
    else:
        hnsw_s = use_vector_index(vector_index, memory=build_memory)
        if text_query.triggers_present_now():
            term_stats.compact()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE rag_chunk")
        cursor.execute("ANALYZE rag_term_stat")
    finish_s = time.perf_counter() - t0
    # Clearing a previous corpus is not building this one: a rebuild and a first build compare.
    build_s = time.perf_counter() - started - vectors_s - prepare_s
    vacuum_s = vacuum_after_load() if big else 0.0
    return BenchCorpus(
        chunks=n, built=True, build_seconds=build_s, sentences=len(sentences), hnsw_seconds=hnsw_s,
        text_index_seconds=text_s, load_seconds=load_s, vectors=how, vector_index=vector_index,
        vacuum_seconds=vacuum_s, vectors_seconds=vectors_s, prepare_seconds=prepare_s, finish_seconds=finish_s,
    )  # fmt: skip


def _clear_corpus(cursor, *, truncate: bool) -> None:
    """Remove the previous bench corpus. With ``truncate``, when the table holds nothing else, it
    is emptied whole: a million deleted rows would stay in the heap as dead space, which the load
    writes around and every index build and search reads past afterwards."""
    if truncate:
        # Two index probes, not a scan of the rows about to go.
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM rag_chunk WHERE collection < %(c)s) "
            "OR EXISTS (SELECT 1 FROM rag_chunk WHERE collection > %(c)s)",
            {"c": COLLECTION},
        )
        if not cursor.fetchone()[0]:
            cursor.execute("TRUNCATE rag_chunk")
            return
    cursor.execute("DELETE FROM rag_chunk WHERE collection = %s", [COLLECTION])


def vacuum_after_load() -> float:
    """VACUUM the freshly loaded table; the seconds it took. The corpus is searchable before it
    runs, but a large insert makes autovacuum visit every page soon after, on the cores the
    measured searches use: done here, apart from the build's time, no measurement overlaps it."""
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM rag_chunk")
    return time.perf_counter() - t0


_AUTOVACUUM_ON = "ALTER TABLE rag_chunk RESET (autovacuum_enabled, toast.autovacuum_enabled)"
TEXT_BUILD_MEMORY = "1GB"  # the GIN and bm25 builds: what their posting lists need at 1M rows


def _build_indexes(vector_index: str, memory: str) -> tuple[float, float]:
    """Build the vector index and the two text indexes (the ``tsv`` GIN, pg_textsearch's bm25 when
    that backend is wanted) at once, each on its own connection; the seconds the vector index took
    and the seconds the text indexes took. Built one after another, the bm25 build (one process)
    left the second core idle; CREATE INDEX statements on one table do not block each other."""
    from concurrent.futures import ThreadPoolExecutor

    def gin(cursor) -> None:
        cursor.execute(f"SET max_parallel_maintenance_workers = {build_workers()}")
        cursor.execute("CREATE INDEX IF NOT EXISTS chunk_tsv_gin ON rag_chunk USING gin (tsv)")

    def bm25(cursor) -> None:
        if text_search.wanted_backend(cursor) == text_search.PgTextsearch.name:
            text_search.create_bm25_index(cursor)

    def models(cursor) -> None:
        cursor.execute(db_ops.live_model_index_sql())

    def text_index(build) -> Callable[[], float]:
        def run() -> float:
            t0 = time.perf_counter()
            try:
                with connection.cursor() as cursor:
                    cursor.execute(f"SET maintenance_work_mem = '{TEXT_BUILD_MEMORY}'")
                    build(cursor)
            finally:
                connection.close()  # this thread's own connection
            return time.perf_counter() - t0

        return run

    def vector() -> float:
        try:
            return use_vector_index(vector_index, memory=memory)
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        vector_job = pool.submit(vector)
        text_jobs = [pool.submit(text_index(build)) for build in (gin, bm25, models)]
        return vector_job.result(), max(job.result() for job in text_jobs)


# Each column with the type its binary COPY sends: vectors go as float4 arrays, never formatted as
# text and parsed back.
LOAD_COLUMNS = (
    ("chunk_uid", "varchar"), ("collection", "varchar"), ("source_type", "varchar"), ("source_id", "varchar"),
    ("unit_anchor", "varchar"), ("chunk_idx", "int4"), ("title", "varchar"), ("breadcrumb", "varchar"),
    ("url", "varchar"), ("content", "text"), ("content_hash", "varchar"), ("embedding", "vector"),
    ("embedding_model", "varchar"), ("domain", "varchar"), ("concepts", "varchar[]"),
    ("mnemonic_tags", "varchar[]"), ("code_languages", "varchar[]"), ("has_image", "bool"), ("pii_level", "int2"),
    ("author_hash", "varchar"), ("date", "date"), ("metadata", "jsonb"), ("visibility", "varchar"),
    ("project_id", "int8"), ("owner_hash", "varchar"), ("created_at", "timestamptz"), ("updated_at", "timestamptz"),
)  # fmt: skip
SEED = 20240607


@dataclass
class _LoadPlan:
    """What every loader process needs to make its rows (inherited when the loaders fork)."""

    sentences: list[str]
    titles: list[str]
    docs: list[list[int]]
    vectors: np.ndarray
    how: str
    model: str
    project_id: int
    now: dt.datetime


def _batch_rows(plan: _LoadPlan, batch: int, start: int, count: int):
    """The rows ``start … start + count - 1``; seeded by the batch, so any process makes the same
    rows for it and a build is the same whichever loader took which batch."""
    from psycopg.types.json import Jsonb

    rng = random.Random(f"{SEED}:{batch}")
    docs, sentences = plan.docs, plan.sentences
    base_date = dt.date(2020, 1, 1)
    for i in range(start, start + count):
        home = rng.randrange(len(docs))
        own = docs[home]
        k_own = rng.randint(1, min(3, len(own)))
        first = rng.randrange(len(own) - k_own + 1)
        ids = own[first : first + k_own]
        for _ in range(max(2, rng.randint(3, 6) - k_own)):  # never one source's vector alone
            other = docs[rng.randrange(len(docs))]
            ids.append(other[rng.randrange(len(other))])
        text = " ".join(sentences[j] for j in ids)
        vec = plan.vectors[ids].mean(axis=0)
        vec /= np.linalg.norm(vec) or 1.0
        domain = SELECTIVE_DOMAIN if rng.random() < 0.01 else DOMAINS[home % len(DOMAINS)]
        restricted = rng.random() < 0.1
        title = plan.titles[home]
        yield (
            f"{COLLECTION}:{SOURCE_TYPE}:{i}:s:0", COLLECTION, SOURCE_TYPE, str(i), "s", 0,
            title, f"Bench › {domain}", "", text,
            hashlib.sha256(f"{title}\n{text}".encode()).hexdigest(), vec.astype(np.float32),
            plan.model, domain, [], [], ["python"] if rng.random() < 0.05 else [],
            rng.random() < 0.1, 0, "", base_date + dt.timedelta(days=rng.randrange(5 * 365)),
            Jsonb({"bench": True, "home": home, "vectors": plan.how}),
            "restricted" if restricted else "public",
            plan.project_id if restricted else None, "", plan.now, plan.now,
        )  # fmt: skip


_loader: dict = {}  # per loader process: its connection and the plan


def _loader_start(params: dict, plan: _LoadPlan) -> None:
    import psycopg
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(**params)
    register_vector(conn)
    _loader.update(conn=conn, plan=plan)


def _load_batch(batch: int, start: int, count: int) -> int:
    conn, plan = _loader["conn"], _loader["plan"]
    sql = f"COPY rag_chunk ({', '.join(name for name, _ in LOAD_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
    with conn.transaction(), conn.cursor() as cursor, cursor.copy(sql) as copy:
        copy.set_types([kind for _, kind in LOAD_COLUMNS])
        for row in _batch_rows(plan, batch, start, count):
            copy.write_row(row)
    return count


def load_processes() -> int:
    """Loader processes for a bulk load: one per core, each feeding its own server backend, which
    does most of the work (parsing, the generated columns' text analysis, the heap writes)."""
    import os

    return max(1, os.cpu_count() or 1)


def _load_rows(n: int, plan: _LoadPlan, *, progress=None, processes: int | None = None) -> None:
    """COPY ``n`` rows in batches, from ``processes`` loader processes at once."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    wanted = ("dbname", "user", "password", "host", "port")
    params = {k: v for k, v in connection.get_connection_params().items() if k in wanted}
    batches = [(b, start, min(COPY_BATCH, n - start)) for b, start in enumerate(range(0, n, COPY_BATCH))]
    processes = processes or load_processes()
    if processes == 1 or len(batches) == 1:
        _loader_start(params, plan)
        try:
            for batch in batches:
                done = _load_batch(*batch)
                if progress:
                    progress("load chunks", done, n)
        finally:
            _loader.pop("conn").close()
        return
    connection.close()  # a forked loader must not share the parent's socket
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(processes, mp_context=context, initializer=_loader_start, initargs=(params, plan)) as pool:
        for future in as_completed([pool.submit(_load_batch, *batch) for batch in batches]):
            done = future.result()
            if progress:
                progress("load chunks", done, n)


def bench_scope() -> Scope:
    """A regular (non-staff) member of project ``bench``: the ACL clause is part of every query."""
    project = Project.objects.get(slug=PROJECT_SLUG)
    return Scope(staff=False, project_ids=(project.pk,), owner_hash=user_hash("bench-user"))


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def summarise(values: list[float]) -> dict:
    return {
        "p50": round(percentile(values, 50), 2),
        "p95": round(percentile(values, 95), 2),
        "mean": round(statistics.fmean(values), 2) if values else 0.0,
    }


def exact_top(query_vector: list[float], k: int, where: str = "", params: list | None = None) -> list[str]:
    """Exact nearest neighbours (sequential scan; the HNSW index is switched off)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(
            f"SELECT chunk_uid FROM rag_chunk c WHERE c.collection = %s AND c.deleted_at IS NULL {where} "
            "ORDER BY c.embedding <=> %s::vector LIMIT %s",
            [COLLECTION, *(params or []), str(list(query_vector)), k],
        )
        return [r[0] for r in cursor.fetchall()]


def exact_tops_cache() -> tuple[dict, Callable[[], None]]:
    """Exact neighbours already computed for the corpus in place (a sequential scan each: at a
    million chunks most of a run's time), and a function saving what was added. A build stamps
    all its rows with one time, which names the corpus: a rebuild starts a new cache."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM rag_chunk WHERE collection = %s", [COLLECTION])
        rows = cursor.fetchone()[0]
        cursor.execute("SELECT min(created_at) FROM rag_chunk WHERE collection = %s", [COLLECTION])
        stamp = cursor.fetchone()[0]
    path = cache_dir() / f"exact-{rows}-{stamp.timestamp() if stamp else 0:.0f}.json"
    cached = json.loads(path.read_text()) if path.exists() else {}

    def save() -> None:
        path.write_text(json.dumps(cached))

    return cached, save


def exact_key(query_vector, k: int, where: str, params: list | None) -> str:
    return hashlib.sha256(f"{list(query_vector)}|{k}|{where}|{params}".encode()).hexdigest()[:24]
