"""Plain markdown notes → ``SourceDocument``s (no Django, no DB), and what Logseq pages share.

A note's front matter and ``key:: value`` lines become metadata, and each heading section one
unit anchored on a short hash of its heading path, so editing one section re-embeds only it.
Logseq pages (``ingestion.sources.logseq``) are markdown too: they read their properties,
titles and journal dates with the helpers here.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from urllib.parse import unquote

from ingestion.sources import markup
from rag.units import SourceDocument, Unit
from rag.words import content_terms

JOURNAL_RE = re.compile(r"^(\d{4})[_-](\d{2})[_-](\d{2})$")
# Logseq bookkeeping properties that say nothing about the content.
HIDDEN_PROPS = {"id", "collapsed", "heading", "created-at", "updated-at", "background-color",
                "background-image", "logseq.order-list-type", "query-table", "query-properties",
                "query-sort-by", "query-sort-desc", "filters", "public", "exclude-from-graph-view"}  # fmt: skip
LIST_PROPS = {"tags", "alias", "aliases"}


def markdown_document(rel: str, text: str, *, collection: str, project: str | None,
                      visibility: str) -> SourceDocument:  # fmt: skip
    """A plain markdown note: front matter / ``key::`` lines as metadata, a unit per section."""
    front, body = markup.parse_front_matter(text)
    props = {k.lower(): v for k, v in front.items()}
    kept: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if markup.FENCE_RE.match(line):
            in_fence = not in_fence
        match = None if in_fence else markup.PROPERTY_RE.match(line.strip())
        if match:
            props.setdefault(match.group(1).lower(), (match.group(2) or "").strip())
        else:
            kept.append(line)
    sections = markup.split_sections("\n".join(kept))
    stem = Path(rel).stem
    first_h1 = next((s.heading for s in sections if s.level == 1), "")
    title = clean_value(props.get("title", "")) or first_h1 or title_from_name(stem)
    meta, page_concepts = note_metadata(props)
    searched_title = title_with_aliases(title, props)
    date = markup.parse_date(props.get("date", ""))
    if date is None and JOURNAL_RE.match(stem):
        date = dt.date(*(int(g) for g in JOURNAL_RE.match(stem).groups()))
    seen: dict[str, int] = {}
    units: list[Unit] = []
    for section in sections:
        heading = f"{'#' * section.level} {section.heading}\n" if section.level else ""
        rendered = markup.render_links(heading + section.body)
        if not rendered.text.strip():
            continue
        key = "s-" + markup.short_hash(*section.path)
        seen[key] = seen.get(key, 0) + 1
        anchor = key if seen[key] == 1 else f"{key}-{seen[key]}"
        path = [markup.render_links(h).text for h in section.path]
        if path and path[0] == title:
            path = path[1:]
        concepts = list(dict.fromkeys([*page_concepts, *rendered.concepts]))
        units.append(
            Unit(
                unit_anchor=anchor, content=rendered.text.strip(), title=searched_title,
                breadcrumb=" > ".join([title, *path]), domain=str(meta.get("domain", ""))[:100],
                concepts=concepts, code_languages=markup.code_languages(rendered.text),
                has_image=markup.has_image(rendered.text), date=date,
                metadata={**meta, "path": rel, "section": section.heading},
            )
        )  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="markdown", source_id=rel, units=units,
        visibility=visibility, project=project,
    )  # fmt: skip


def note_metadata(props: dict[str, str]) -> tuple[dict, list[str]]:
    """A note's page properties as metadata (tags/alias as lists) and the concepts they name."""
    meta: dict = {}
    concepts: list[str] = []
    for key, value in props.items():
        if key in HIDDEN_PROPS or not value:
            continue
        name = markup.normalise_key(key)
        if key in LIST_PROPS:
            meta[name] = markup.link_values(value)
        else:
            meta[name] = clean_value(value)
        links = markup.link_values(value) if key == "tags" else markup.render_links(value).concepts
        for concept in links:
            concept = markup.concept_key(concept)
            if concept and concept not in concepts:
                concepts.append(concept)
    return meta, concepts


def title_with_aliases(title: str, props: dict[str, str]) -> str:
    """``title`` with the other names the note answers to: ``Tasks (also: Todos)``.

    A chunk's title is the text search weighs most and the line its embedding starts with, so a
    note is found by its alias the way Logseq and Obsidian find it. An alias whose words the title
    already holds, in any form ("Whiteboards" on "Whiteboard"), adds nothing and is left out.
    """
    words = content_terms(title)
    extra = []
    for key in ("alias", "aliases"):
        for name in markup.link_values(props.get(key, "")):
            name = clean_value(name)
            if name and not content_terms(name) <= words and name not in extra:
                extra.append(name)
    return f"{title} (also: {', '.join(extra)})" if extra else title


def title_from_name(stem: str) -> str:
    """A note's title from its file name (Logseq writes ``a/b`` as ``a___b`` or ``a%2Fb``)."""
    return unquote(stem.replace("___", "/").replace("%2F", "/").replace("%2f", "/"))


def clean_value(value: str) -> str:
    """A property value as readable text: links rendered, no surrounding space."""
    return markup.render_links(value).text.strip()
