"""Logseq / markdown folders: only changed files re-done, deleted files removed, bad files reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from ingestion import services
from ingestion.models import SourceState
from rag.models import Chunk
from tests.conftest import shared_data
from tests.ingestion.conftest import live_chunks, search_ids

pytestmark = pytest.mark.django_db

PAGES = {
    "pages/Event Loop.md": (
        "tags:: javascript, async\n\n"
        "- The event loop takes one task from the task queue at a time.\n"
        "\t- After each task it drains the microtask queue: promise callbacks run here.\n"
        "\t\t- So `Promise.resolve().then(f)` runs before `setTimeout(f, 0)`.\n"
        "- Rendering happens between tasks, never in the middle of one.\n"
    ),
    "pages/Closures.md": (
        "- A closure keeps the variables of the scope it was created in.\n"
        "\t- [[Event Loop]] callbacks often rely on closures.\n"
        "\t\t- id:: 6650a1b2-0000-4000-8000-000000000001\n"
    ),
    "journals/2024_03_05.md": "- Studied #promises and [[Closures]] today.\n\t- status:: done\n",
    "pages/Old scan.pdf": "%PDF-1.4 a scan left among the pages\n",
}


def write_graph(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_logseq_sync_is_incremental(tmp_path, local_embedder):
    write_graph(tmp_path, PAGES)
    first = services.sync_markdown(path=tmp_path, collection="notes", embedder=local_embedder)
    assert first.sources == 4 and first.failed == 1
    assert first.errors[0]["source"] == "pages/Old scan.pdf" and "unsupported" in first.errors[0]["error"]
    assert first.created > 0 and first.embedded == first.created
    journal = Chunk.objects.filter(collection="notes", source_type="logseq_journal").first()
    assert journal.date.isoformat() == "2024-03-05"
    hits = search_ids("why do promise callbacks run before setTimeout", embedder=local_embedder)
    assert hits[0] == "pages/Event Loop.md"

    second = services.sync_markdown(path=tmp_path, collection="notes", embedder=local_embedder)
    assert (second.created, second.updated, second.deleted, second.embedded) == (0, 0, 0, 0)
    assert second.skipped == 3 and second.failed == 1

    # Edit one file: only it is re-done.
    before = dict(Chunk.objects.filter(source_id="pages/Closures.md").values_list("chunk_uid", "updated_at"))
    path = tmp_path / "pages/Event Loop.md"
    path.write_text(path.read_text() + "- Long tasks block input: split them with `await scheduler.yield()`.\n")
    third = services.sync_markdown(path=tmp_path, collection="notes", embedder=local_embedder)
    assert third.skipped == 2 and third.embedded >= 1 and third.deleted == 0
    assert dict(Chunk.objects.filter(source_id="pages/Closures.md").values_list("chunk_uid", "updated_at")) == before
    assert live_chunks(source_id="pages/Event Loop.md", content__contains="scheduler.yield").exists()

    # Delete a file: its chunks go, its state is forgotten.
    (tmp_path / "journals/2024_03_05.md").unlink()
    fourth = services.sync_markdown(path=tmp_path, collection="notes", embedder=local_embedder)
    assert fourth.removed == 1 and fourth.deleted >= 1
    assert not Chunk.objects.filter(source_id="journals/2024_03_05.md").exists()
    assert not SourceState.objects.filter(source_id="journals/2024_03_05.md").exists()


def test_dry_run_writes_nothing(tmp_path, hashing_embedder):
    # hashing embedder: the test is about writes, not retrieval.
    write_graph(tmp_path, PAGES)
    run = services.sync_markdown(path=tmp_path, collection="notes", dry_run=True, embedder=hashing_embedder)
    assert run.created > 0 and run.dry_run
    assert not Chunk.objects.exists() and not SourceState.objects.exists()
    assert hashing_embedder.calls == []
    # What the dry run counted is what the real run then does.
    real = services.sync_markdown(path=tmp_path, collection="notes", embedder=hashing_embedder)
    counts = ("sources", "created", "updated", "unchanged", "deleted", "embedded", "failed")
    assert [getattr(run, n) for n in counts] == [getattr(real, n) for n in counts]


def test_a_page_is_found_by_its_alias(tmp_path, local_embedder):
    # A page named only "Chores" but aliased "Todos" (Logseq) and a note aliased in front matter
    # (Obsidian's list): a search for the other name finds each first; a redundant alias is not repeated.
    write_graph(tmp_path, {
        "pages/Chores.md": "alias:: Todos, chores\n\n- Mark a block with LATER, then DONE when finished.\n",
        "pages/Weather.md": "- Rain is likely on Tuesday and Thursday afternoons.\n",
        "pages/Mountains.md": "---\naliases: [Peaks]\n---\n\n# Mountains\n\nAlpine routes open in June.\n",
    })  # fmt: skip
    run = services.sync_markdown(path=tmp_path, collection="notes", embedder=local_embedder)
    assert run.failed == 0
    chores = live_chunks(source_id="pages/Chores.md").get()
    assert chores.title == "Chores (also: Todos)" and chores.metadata["alias"] == ["Todos", "chores"]
    assert live_chunks(source_id="pages/Mountains.md").get().title == "Mountains (also: Peaks)"
    for query in ("todos", "how do i add a todo"):
        assert search_ids(query, embedder=local_embedder)[0] == "pages/Chores.md", query
    assert search_ids("peaks", embedder=local_embedder)[0] == "pages/Mountains.md"


def test_plain_markdown_folder_and_command_json(tmp_path, capsys):
    write_graph(tmp_path, {"guide.md": "# Scope\n\nLet and const are block scoped; var is function scoped.\n",
                           "sub/notes.md": "# Hoisting\n\nFunction declarations are hoisted "
                                           "with their body.\n"})  # fmt: skip
    call_command("sync_markdown", str(tmp_path), "--format", "markdown", "--collection", "md", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "done" and out["sources"] == 2 and out["created"] == 2 and out["failed"] == 0
    call_command("sync_markdown", str(tmp_path), "--format", "markdown", "--collection", "md", "--json")
    again = json.loads(capsys.readouterr().out)
    assert (again["created"], again["updated"], again["embedded"], again["skipped"]) == (0, 0, 0, 2)
    # reindex re-reads the remembered folder and finds nothing to change
    call_command("reindex", "--types", "markdown", "--json")
    reindexed = json.loads(capsys.readouterr().out)
    assert (reindexed["unchanged"], reindexed["embedded"], reindexed["created"]) == (2, 0, 0)


def test_unknown_folder_is_a_clear_error(tmp_path):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="is not a folder"):
        call_command("sync_markdown", str(tmp_path / "missing"), "--json")


def test_real_logseq_docs_parse_subset(tmp_path, hashing_embedder):
    # hashing embedder: this checks the real graph flows through the service, not retrieval.
    root = shared_data("logseq-docs")
    for rel in ("pages/Advanced Queries.md", "pages/Block Reference.md", "pages/Aliases and external links.md"):
        if (root / rel).exists():
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes((root / rel).read_bytes())
    run = services.sync_markdown(path=tmp_path, collection="logseq-docs", embedder=hashing_embedder)
    assert run.sources == 3 and run.status == "done" and run.failed == 0 and run.created > 0
