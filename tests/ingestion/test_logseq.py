"""Logseq / markdown folder parsing: what a user of the index sees from their graph."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

from ingestion.sources.logseq import MAX_UNIT_CHARS, ParsedFile, parse_graph
from rag.chunking import split_text
from tests.conftest import shared_data

CAELUM = """\
title:: Caelum Fenovar
tags:: npc, [[Seekers]]
alias:: Captain Caelum
domain:: campaign

- ## Background
\t- Born in [[Port Varn]] to a family of #sailors
\t\t- Lost his ship to the #[[Storm Court]]
\t\t  id:: 6480a1b2-0000-4000-8000-000000000001
\t\t  He still dreams of the wreck.
\t\t  The storm took thirty sailors, the cargo of salt and the figurehead his mother carved; he
\t\t  blames the Court's envoy, who promised a calm crossing and then sold the route to pirates.
\t- Served under [[Admiral Reyes]]
- ## Beliefs
\t- Believes the sea is alive
\t  mood:: wary
- Unrelated note about rations
"""

JOURNAL = """\
- Session 12: the party met [[Caelum Fenovar]]
\t- He told us: ((6480a1b2-0000-4000-8000-000000000001))
\t- Dangling ref stays: ((6480a1b2-0000-4000-8000-00000000ffff))
- {{embed ((6480a1b2-0000-4000-8000-000000000001))}}
- {{embed [[Port Varn]]}}
"""

PORT_VARN = "- A harbour town on the northern coast\n\t- Known for salt and smuggling\n"


# An org page of the same graph: Logseq writes older pages in org mode.
OLD_NOTES_ORG = """\
#+TITLE: Old notes
#+ALIAS: Ship log

* Voyages of [[Caelum Fenovar]] :sailing:npc:
:PROPERTIES:
:id: 6480a1b2-0000-4000-8000-0000000000aa
:END:
  He crossed the *Narrow Sea* twice; see [[https://example.com/map][the map]].
** The wreck
   ((6480a1b2-0000-4000-8000-000000000001))
   #+BEGIN_SRC python
   def tide(hour):
       return hour % 12
   #+END_SRC
* Supplies: ~salt~ and =rope=
"""


def _graph(tmp_path: Path) -> Path:
    (tmp_path / "pages").mkdir()
    (tmp_path / "journals").mkdir()
    (tmp_path / "logseq").mkdir()
    (tmp_path / ".trash").mkdir()
    (tmp_path / "pages" / "Caelum Fenovar.md").write_text(CAELUM)
    (tmp_path / "pages" / "Port Varn.md").write_text(PORT_VARN)
    (tmp_path / "pages" / "Places___Port Varn___Docks.md").write_text("- Wet planks\n")
    (tmp_path / "pages" / "Old notes.org").write_text(OLD_NOTES_ORG)
    (tmp_path / "pages" / "scan.pdf").write_bytes(b"%PDF-1.4 not a page")
    (tmp_path / "pages" / "broken.md").write_bytes(b"- caf\xe9 au lait\n")
    (tmp_path / "journals" / "2024_12_27.md").write_text(JOURNAL)
    (tmp_path / "logseq" / "config.edn").write_text("{:meta/version 1}")
    (tmp_path / ".trash" / "gone.md").write_text("- deleted page\n")
    return tmp_path


def _by_path(results: list[ParsedFile]) -> dict[str, ParsedFile]:
    return {r.path: r for r in results}


def test_graph_files_errors_and_skipped_folders(tmp_path):
    results = _by_path(parse_graph(_graph(tmp_path)))
    assert set(results) == {
        "pages/Caelum Fenovar.md", "pages/Port Varn.md", "pages/Places___Port Varn___Docks.md",
        "pages/Old notes.org", "pages/scan.pdf", "pages/broken.md", "journals/2024_12_27.md",
    }  # fmt: skip
    assert results["pages/scan.pdf"].error == "unsupported format .pdf"
    assert results["pages/scan.pdf"].document is None
    assert "UTF-8" in results["pages/broken.md"].error
    caelum = results["pages/Caelum Fenovar.md"]
    assert caelum.error is None and len(caelum.fingerprint) == 64
    doc = caelum.document
    assert doc.source_type == "logseq_page" and doc.source_id == "pages/Caelum Fenovar.md"
    assert doc.collection == "logseq"


def test_an_org_page_is_read_as_the_same_tree_of_blocks(tmp_path):
    results = _by_path(parse_graph(_graph(tmp_path)))
    org = results["pages/Old notes.org"]
    assert org.error is None and len(org.fingerprint) == 64
    doc = org.document
    assert doc.source_type == "logseq_page"
    voyage, supplies = doc.units
    assert voyage.title == "Old notes (also: Ship log)"
    assert voyage.unit_anchor == "id-6480a1b2-0000-4000-8000-0000000000aa"  # the drawer's id
    # The headline's children stay under it; the block reference into a markdown page resolves;
    # links read as their text, the tags and the linked page are concepts; code stays code.
    assert voyage.content.split("\n")[:4] == [
        "Voyages of Caelum Fenovar sailing npc",
        "He crossed the **Narrow Sea** twice; see [the map](https://example.com/map).",
        "- The wreck",
        "  Lost his ship to the Storm Court",
    ]
    assert "```python\n  def tide(hour):\n      return hour % 12\n  ```" in voyage.content
    assert voyage.concepts == ["caelum fenovar", "sailing", "npc", "storm court"]
    assert "`salt` and `rope`" in supplies.content
    # And the other way: a markdown page can embed the org page's block by its id.
    (tmp_path / "pages" / "Port Varn.md").write_text("- {{embed ((6480a1b2-0000-4000-8000-0000000000aa))}}\n")
    port = _by_path(parse_graph(tmp_path))["pages/Port Varn.md"].document
    assert "He crossed the **Narrow Sea** twice" in port.units[0].content


def test_org_outline_rewrites_org_markup_as_the_markdown_outline():
    from ingestion.sources.org import org_outline

    assert org_outline(OLD_NOTES_ORG).split("\n")[:8] == [
        "title:: Old notes",
        "alias:: Ship log",
        "",
        "- Voyages of [[Caelum Fenovar]] #sailing #npc",
        "  id:: 6480a1b2-0000-4000-8000-0000000000aa",
        "  He crossed the **Narrow Sea** twice; see [the map](https://example.com/map).",
        "  - The wreck",
        "    ((6480a1b2-0000-4000-8000-000000000001))",
    ]
    # A page of the graph under another name; code is shown as typed, links inside it too.
    assert org_outline("* see [[Port Varn][the harbour]]") == "- see [the harbour]([[Port Varn]])"
    assert org_outline("* ~[[a][b]]~ and 2*3*4 = x=y") == "- `[[a][b]]` and 2*3*4 = x=y"


def test_page_title_namespaces_and_properties(tmp_path):
    results = _by_path(parse_graph(_graph(tmp_path), collection="dnd", project="p1"))
    docks = results["pages/Places___Port Varn___Docks.md"].document
    assert docks.units[0].title == "Places/Port Varn/Docks"
    doc = results["pages/Caelum Fenovar.md"].document
    assert doc.collection == "dnd" and doc.project == "p1"
    for unit in doc.units:
        assert unit.title == "Caelum Fenovar (also: Captain Caelum)"
        assert unit.metadata["tags"] == ["Seekers", "npc"] or unit.metadata["tags"] == ["npc", "Seekers"]
        assert unit.metadata["alias"] == ["Captain Caelum"]
        assert unit.domain == "campaign"
        assert {"npc", "seekers"} <= set(unit.concepts)
        assert unit.url == "logseq://graph/" + tmp_path.name + "?page=Caelum%20Fenovar"


def test_hierarchical_units_keep_parent_path(tmp_path):
    doc = _by_path(parse_graph(_graph(tmp_path)))["pages/Caelum Fenovar.md"].document
    background = next(u for u in doc.units if "Port Varn" in u.content)
    # The nested block is still under its parents, links readable, tags as words.
    assert background.content.startswith("Background\n- Born in Port Varn to a family of sailors")
    assert "  - Lost his ship to the Storm Court\n    He still dreams of the wreck." in background.content
    assert "[[" not in background.content and "id::" not in background.content
    assert background.breadcrumb == "Caelum Fenovar > Background"
    assert {"port varn", "sailors", "storm court", "admiral reyes"} <= set(background.concepts)
    assert background.metadata["block_ids"] == ["6480a1b2-0000-4000-8000-000000000001"]
    # Small siblings are grouped into one unit rather than three tiny ones.
    beliefs = next(u for u in doc.units if "sea is alive" in u.content)
    assert "Unrelated note about rations" in beliefs.content
    assert beliefs.metadata["mood"] == "wary"
    assert len({u.unit_anchor for u in doc.units}) == len(doc.units)


def test_journal_date_refs_and_embeds(tmp_path):
    results = _by_path(parse_graph(_graph(tmp_path)))
    doc = results["journals/2024_12_27.md"].document
    assert doc.source_type == "logseq_journal"
    text = "\n".join(u.content for u in doc.units)
    assert all(u.date == dt.date(2024, 12, 27) for u in doc.units)
    assert "He told us: Lost his ship to the Storm Court" in text
    assert "((6480a1b2-0000-4000-8000-00000000ffff))" in text  # unknown ref left as written
    assert "{{embed" not in text
    assert "A harbour town on the northern coast" in text and "Known for salt and smuggling" in text
    assert "caelum fenovar" in doc.units[0].concepts


def test_dash_dated_journal(tmp_path):
    (tmp_path / "journals").mkdir()
    (tmp_path / "journals" / "2023-01-15.md").write_text("- Wrote the parser\n")
    (doc,) = [r.document for r in parse_graph(tmp_path)]
    assert doc.units[0].date == dt.date(2023, 1, 15)


def test_editing_a_referenced_block_changes_the_referencing_fingerprint(tmp_path):
    root = _graph(tmp_path)
    before = _by_path(parse_graph(root))
    page = root / "pages" / "Caelum Fenovar.md"
    page.write_text(CAELUM.replace("Lost his ship", "Sank his ship"))
    after = _by_path(parse_graph(root))
    assert after["journals/2024_12_27.md"].fingerprint != before["journals/2024_12_27.md"].fingerprint
    assert after["pages/Port Varn.md"].fingerprint == before["pages/Port Varn.md"].fingerprint
    assert "Sank his ship" in after["journals/2024_12_27.md"].document.units[0].content


def test_anchors_stable_when_unrelated_block_changes(tmp_path):
    root = _graph(tmp_path)
    page = root / "pages" / "Caelum Fenovar.md"
    before = {u.content.split("\n")[0]: u.unit_anchor
              for u in _by_path(parse_graph(root))["pages/Caelum Fenovar.md"].document.units}  # fmt: skip
    page.write_text(CAELUM.replace("Believes the sea is alive", "Believes the sea is a god"))
    after = {u.content.split("\n")[0]: u.unit_anchor
             for u in _by_path(parse_graph(root))["pages/Caelum Fenovar.md"].document.units}  # fmt: skip
    assert after["Background"] == before["Background"]
    # A block inserted before it does not move it either.
    page.write_text(CAELUM.replace("- ## Background", "- A new first thought\n- ## Background"))
    inserted = {u.content.split("\n")[0]: u.unit_anchor
                for u in _by_path(parse_graph(root))["pages/Caelum Fenovar.md"].document.units}  # fmt: skip
    assert inserted["Background"] == before["Background"]


def test_huge_subtree_is_split_at_child_bullets_keeping_parents(tmp_path):
    (tmp_path / "pages").mkdir()
    children = "".join(
        f"\t\t- Fact {i}: " + ("the lighthouse keeper remembers everything " * 6) + "\n"
        for i in range(12)
    )
    text = "- Lore\n\t- Lighthouse\n" + children + "- Short sibling\n"
    (tmp_path / "pages" / "Lore.md").write_text(text)
    (doc,) = [r.document for r in parse_graph(tmp_path)]
    lore = [u for u in doc.units if "Fact" in u.content]
    assert len(lore) > 1
    facts = set()
    for unit in lore:
        assert unit.content.startswith("Lore\n- Lighthouse\n  - Fact")
        assert unit.breadcrumb == "Lore > Lore > Lighthouse"
        assert len(unit.content) <= MAX_UNIT_CHARS
        overlap = doc.chunk_overlap if doc.chunk_overlap is not None else 180
        assert split_text(unit.content, size=doc.chunk_size, overlap=overlap) == [unit.content]
        facts |= {line for line in unit.content.split("\n") if "Fact" in line}
    assert len(facts) == 12  # every child kept exactly once across the pieces
    assert len({u.unit_anchor for u in doc.units}) == len(doc.units)


def test_duplicate_blocks_get_distinct_anchors(tmp_path):
    (tmp_path / "pages").mkdir()
    body = "x" * 400
    (tmp_path / "pages" / "Dup.md").write_text(f"- Same\n\t- {body}\n- Same\n\t- {body}\n")
    (doc,) = [r.document for r in parse_graph(tmp_path)]
    anchors = [u.unit_anchor for u in doc.units]
    assert len(anchors) == 2 and anchors[0] != anchors[1]


def test_markdown_folder(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "x.md").write_text("# hidden\n")
    (tmp_path / "notes" / "image.png").write_bytes(b"\x89PNG\x00")
    (tmp_path / "notes" / "todo.org").write_text("* x\n")
    (tmp_path / "notes" / "rag.md").write_text(
        "---\ntitle: Retrieval notes\ndate: 2024-03-02\ntags: [rag, search]\n---\n"
        "owner:: [[Keith]]\n\nIntro text about #retrieval.\n\n# Hybrid\nVector plus keywords.\n"
        "## Weights\n0.7 vector, 0.3 text.\n```python\n# not a heading\nx = 1\n```\n"
    )
    results = _by_path(parse_graph(tmp_path, fmt="markdown", collection="notes"))
    assert set(results) == {"notes/rag.md", "notes/todo.org"}
    assert results["notes/todo.org"].error == "unsupported format .org"
    doc = results["notes/rag.md"].document
    assert doc.source_type == "markdown"
    crumbs = [u.breadcrumb for u in doc.units]
    assert crumbs == ["Retrieval notes", "Retrieval notes > Hybrid", "Retrieval notes > Hybrid > Weights"]
    weights = doc.units[2]
    assert "# not a heading" in weights.content and weights.code_languages == ["python"]
    for unit in doc.units:
        assert unit.metadata["tags"] == ["rag", "search"]
        assert unit.metadata["owner"] == "Keith"
        assert unit.date == dt.date(2024, 3, 2)
    assert "retrieval" in doc.units[0].concepts and "owner::" not in doc.units[0].content


def test_real_logseq_docs_graph():
    root = shared_data("logseq-docs")
    started = time.perf_counter()
    results = parse_graph(root)
    elapsed = time.perf_counter() - started
    docs = [r.document for r in results if r.document]
    errors = [r for r in results if r.error]
    units = [u for d in docs for u in d.units]
    print(f"logseq-docs: {len(results)} files, {len(units)} units, {len(errors)} errors, {elapsed:.2f}s")
    assert len(docs) > 250 and len(units) > 800
    assert not errors, [(r.path, r.error) for r in errors]  # its org pages and journals too
    assert not any(r.path.startswith("logseq/") for r in results)
    from rag.services import plan_rows

    rows = 0
    for doc in docs:
        assert len({u.unit_anchor for u in doc.units}) == len(doc.units), doc.source_id
        rows += len(plan_rows(doc, {}))  # what chunk_upsert will do with it: no SourceError
        json.dumps([u.metadata for u in doc.units])  # metadata is stored as jsonb
    assert rows >= len(units)
    by_path = {r.path: r for r in results}
    faq = by_path["pages/faq.org"].document
    assert any("TLDR: Logseq is free" in u.content for u in faq.units)
    assert by_path["journals/2020_05_14.org"].document.units[0].date == dt.date(2020, 5, 14)
    embed = by_path["pages/page_embed.md"].document
    assert embed.units[0].title == "Page embed (also: term/embedded page)"
    assert "embed" in embed.units[0].metadata["tags"]
    # Re-parsing gives the same anchors and fingerprints (a sync with no edits changes nothing).
    again = {r.path: r for r in parse_graph(root)}
    for path, parsed in by_path.items():
        assert again[path].fingerprint == parsed.fingerprint
        if parsed.document:
            assert [u.unit_anchor for u in again[path].document.units] == [
                u.unit_anchor for u in parsed.document.units
            ]
