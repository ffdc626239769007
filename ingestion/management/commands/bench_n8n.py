"""``manage.py bench_n8n``: a real n8n posting Notion pages to a running knowhub.

The shipped sync workflow (examples/n8n/notion-to-knowhub.json) is run with ``--pages`` recorded
pages in place of its Notion nodes, so its HTTP Request node sends them the way n8n sends a poll's
items: all at once. Prints how many were accepted, deliveries per second (the HTTP node's own
time), whether each page was stored exactly once, and the time from the first post until every
page is searchable (its chunks live, and a search for one of them finds it).

Needs n8n (scripts/install_n8n.sh) and a knowhub at ``--url`` using this database, with a worker
and the same ``KNOWHUB_NOTION_WEBHOOK_SECRET``. The pages are removed afterwards unless ``--keep``.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ingestion.models import NotionDelivery
from ingestion.n8n_runner import N8n, credential_refs, header_credential, n8n_missing, shipped, substituted
from ingestion.services.core import NOTION_COLLECTION
from rag.acl import Scope
from rag.models import Chunk, ChunkHistory
from rag.search import chunk_search


def _texts(count: int) -> list[tuple[str, str]]:
    """Real text for the pages: SciFact abstracts beside the checkout, else the demo corpus."""
    scifact = Path(settings.BASE_DIR).parent / "shared" / "data" / "scifact" / "corpus.jsonl"
    out: list[tuple[str, str]] = []
    if scifact.exists():
        with scifact.open() as fh:
            for line in fh:
                row = json.loads(line)
                out.append((row.get("title", "")[:200], row.get("text", "")[:3000]))
                if len(out) >= count:
                    return out
    from rag.demo import DEMO_DOCUMENTS

    while len(out) < count:
        out.extend((d["title"], d["text"]) for d in DEMO_DOCUMENTS)
    return out[:count]


def _recorded(count: int, run: str) -> tuple[list[dict], list[dict]]:
    """Pages and blocks shaped as n8n's Notion Trigger (raw) and Get blocks (simplified) give them."""
    pages, blocks = [], []
    for i, (title, text) in enumerate(_texts(count)):
        page_id = str(uuid.uuid4())
        pages.append({
            "object": "page", "id": page_id, "last_edited_time": "2025-03-01T10:00:00.000Z", "archived": False,
            "parent": {"type": "database_id", "database_id": "b" * 32}, "url": f"https://www.notion.so/{run}-{i}",
            "properties": {"Name": {"type": "title", "title": [{"plain_text": f"{title} ({run} {i})"}]},
                           "Tags": {"type": "multi_select", "multi_select": [{"name": "bench"}]}},
        })  # fmt: skip
        blocks.append({
            "object": "block", "parent_id": page_id, "root_id": page_id, "id": str(uuid.uuid4()), "type": "paragraph",
            "has_children": False, "content": f"{text}\n\nbench{run}page{i}",
        })  # fmt: skip
    return pages, blocks


class Command(BaseCommand):
    help = "Throughput of the shipped n8n workflow posting Notion pages to a running knowhub."

    def add_arguments(self, parser):
        parser.add_argument("--pages", type=int, default=500)
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the running knowhub")
        parser.add_argument("--timeout", type=float, default=900, help="seconds to wait until all are searchable")
        parser.add_argument("--keep", action="store_true", help="keep the bench pages")

    def handle(self, *args, pages: int, url: str, timeout: float, keep: bool, **options):
        missing = n8n_missing()
        secret = settings.KNOWHUB_NOTION_WEBHOOK_SECRET
        if missing or not secret:
            raise CommandError(missing or "set KNOWHUB_NOTION_WEBHOOK_SECRET (the server at --url must use it too)")
        run = uuid.uuid4().hex[:8]
        recorded_pages, recorded_blocks = _recorded(pages, run)
        ids = [p["id"] for p in recorded_pages]
        with tempfile.TemporaryDirectory(prefix="bench-n8n-") as home:
            n8n = N8n(Path(home), env={"KNOWHUB_URL": url})
            workflow = shipped("notion-to-knowhub.json")
            ((_, cred_id, cred_name),) = {r for r in credential_refs(workflow) if r[0] == "httpHeaderAuth"}
            n8n.import_credentials([header_credential(cred_id, cred_name, f"Bearer {secret}")])
            wf = substituted(workflow, trigger="Notion Trigger", workflow_id=f"bench{run}",
                             recorded={"Notion Trigger": recorded_pages, "Get blocks": recorded_blocks})  # fmt: skip
            n8n.import_workflows([wf])
            self.stdout.write(f"n8n posts {pages} pages to {url} (run {run}) …")
            execution = n8n.execute(wf["id"])
        try:
            self._report(execution, ids, run, timeout)
        finally:
            if not keep:
                uids = list(Chunk.objects.filter(source_id__in=ids).values_list("chunk_uid", flat=True))
                ChunkHistory.objects.filter(chunk_uid__in=uids).delete()
                Chunk.objects.filter(chunk_uid__in=uids).delete()
                NotionDelivery.objects.filter(page_id__in=ids).delete()

    def _report(self, execution, ids: list[str], run: str, timeout: float) -> None:
        if not execution.ok:
            raise CommandError(f"the n8n execution failed:\n{execution.output[-3000:]}")
        data = json.loads(execution.output[execution.output.index("{") :])
        (node_run,) = data["data"]["resultData"]["runData"]["Send to knowhub"]
        answers = execution.node_items("Send to knowhub")
        started = node_run["startTime"] / 1000
        seconds = node_run["executionTime"] / 1000
        accepted = sum(1 for a in answers if a.get("delivery_id"))
        replays = sum(bool(a.get("replay")) for a in answers)
        self.stdout.write(f"accepted (202): {accepted}/{len(ids)}; replays: {replays}")
        rate = len(ids) / seconds
        self.stdout.write(f"posting: {seconds:.1f} s in n8n's HTTP Request node → {rate:.1f} deliveries/s")
        live: set[str] = set()
        while time.time() - started < timeout:
            live = set(
                Chunk.objects.filter(collection=NOTION_COLLECTION, source_id__in=ids, deleted_at__isnull=True)
                .values_list("source_id", flat=True).distinct()
            )  # fmt: skip
            if len(live) == len(ids):
                break
            time.sleep(0.5)
        searchable = time.time() - started
        probe = len(ids) - 1  # the last page posted
        hits = chunk_search(query=f"bench{run}page{probe}", scope=Scope.everything(), top_k=5).hits
        found = bool(hits) and hits[0].source_id == ids[probe]
        counts = NotionDelivery.objects.filter(page_id__in=ids)
        per_page = {row for row in counts.values_list("page_id", flat=True)}
        done = counts.filter(status=NotionDelivery.Status.DONE).count()
        self.stdout.write(
            f"stored: {counts.count()} deliveries for {len(per_page)} pages ({done} done); "
            f"pages with live chunks: {len(live)}/{len(ids)}"
        )
        self.stdout.write(
            f"all searchable after {searchable:.1f} s from the first post "
            f"({len(ids) / searchable:.1f} pages/s end to end); search finds the last page: {found}"
        )
