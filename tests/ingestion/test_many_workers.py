"""Many workers, one result: 2 and 4 real Celery worker processes on Redis ingest the same sources
at once (a markdown folder through reindex runs, Notion webhook deliveries of the same pages)
and end with exactly the rows one process makes: no duplicate, no lost update, no deadlock."""

from __future__ import annotations

import json

import pytest

from ingestion import services
from ingestion.models import IngestRun, NotionDelivery, SourceRoot, SourceState
from ingestion.sources.notion.pages import canonical_page_id
from ingestion.tasks import run_reindex
from rag.models import Chunk
from tests.conftest import wait_for

pytestmark = pytest.mark.worker

FILES = {
    f"notes/topic-{i}.md": (
        f"# Topic {i}\n\nParagraph one of topic {i}: workers share the queue and each takes one task.\n\n"
        f"## Details {i}\n\nParagraph two of topic {i}: a lock per folder keeps two syncs from interleaving.\n"
    )
    for i in range(8)
}
PAGES = [f"{i:032x}" for i in range(1, 4)]
VERSIONS = 3


def delivery(page_id: str, version: int) -> bytes:
    body = {
        "page_id": page_id,
        "properties": {"title": f"Page {page_id[-1]}", "category": "notes", "tags": ["scale"]},
        "content": f"Version {version} of page {page_id[-1]}: the newest delivery is the one search shows.",
        "url": f"https://notion.so/{page_id}",
    }
    return json.dumps(body).encode()


def live_rows(collection: str, source_type: str | None = None) -> list[tuple]:
    qs = Chunk.objects.filter(collection=collection, deleted_at__isnull=True)
    if source_type:
        qs = qs.filter(source_type=source_type)
    return sorted(qs.values_list("source_type", "source_id", "unit_anchor", "chunk_idx", "content_hash"))


@pytest.mark.parametrize("workers", [2, 4])
def test_workers_ingesting_the_same_sources_at_once_make_one_result(
    workers, celery_workers, tmp_path, local_embedder
):
    folder = tmp_path / "graph"
    for rel, text in list(FILES.items())[:2]:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    # The folder is known (one sync made its root); then it grows and one file changes.
    services.sync_markdown(path=folder, fmt="markdown", collection="md", embedder=local_embedder)
    for rel, text in FILES.items():
        (folder / rel).write_text(text)
    (folder / "notes/topic-0.md").write_text(FILES["notes/topic-0.md"] + "\nA line added later.\n")

    procs = celery_workers(workers)
    runs = []
    for _ in range(2 * workers):  # every worker busy with the same folder (and the pushed pages)
        run = services.run_create(source="reindex", types=["markdown", "notion"])
        runs.append(run)
        run_reindex.delay(run.pk)
    for version in range(1, VERSIONS + 1):  # each page's versions, in the order they were received
        for page_id in PAGES:
            services.notion_delivery_receive(body=delivery(page_id, version), page_id=page_id)

    def finished():
        done_runs = IngestRun.objects.filter(pk__in=[r.pk for r in runs], status__in=["done", "failed"]).count()
        open_deliveries = NotionDelivery.objects.exclude(status="done").count()
        return done_runs == len(runs) and open_deliveries == 0

    logs = "\n".join(p.log_path.read_text()[-1500:] for p in procs)
    assert wait_for(finished, timeout=600, interval=1.0), logs

    runs = list(IngestRun.objects.filter(pk__in=[r.pk for r in runs]))
    assert {r.status for r in runs} == {"done"}, [(r.pk, r.message, r.errors) for r in runs]
    assert all(not r.errors for r in runs)
    # Which worker did what: every run and delivery names its process; the work was shared.
    pids = {str(p.pid) for p in procs}
    assert {r.worker.rsplit(":", 1)[1] for r in runs} <= pids
    assert len({r.worker for r in runs}) >= 2
    deliveries = list(NotionDelivery.objects.all())
    assert {d.result["worker"].rsplit(":", 1)[1] for d in deliveries} <= pids

    # The folder: one root, one state per file, and the chunks one sync of the folder makes.
    assert SourceRoot.objects.filter(kind="markdown", collection="md").count() == 1
    assert SourceState.objects.filter(collection="md").count() == len(FILES)
    services.sync_markdown(path=folder, fmt="markdown", collection="reference", embedder=local_embedder)
    assert live_rows("md") == live_rows("reference")
    assert Chunk.objects.filter(collection="md", deleted_at__isnull=True).count() == len(live_rows("md"))

    # Each pushed page shows its newest version, once.
    for page_id in PAGES:
        stored_id = canonical_page_id(page_id)  # ids are kept as Notion's API writes them (dashed)
        chunks = list(Chunk.objects.filter(collection="notion", source_id=stored_id, deleted_at__isnull=True))
        assert chunks, page_id
        assert {c.content.split(":")[0] for c in chunks} == {f"Version {VERSIONS} of page {page_id[-1]}"}
    uids = list(Chunk.objects.values_list("chunk_uid", flat=True))
    assert len(uids) == len(set(uids))

    # Nothing left to do: one more reindex in this process changes nothing.
    again = services.reindex(types=["markdown", "notion"], embedder=local_embedder)
    assert (again.created, again.updated, again.deleted, again.failed) == (0, 0, 0, 0)
