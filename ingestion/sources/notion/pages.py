"""A Notion page (properties + block tree, as the API returns them) → one ``SourceDocument``."""

from __future__ import annotations

import datetime as dt
import re

from ingestion.sources import markup
from ingestion.sources.notion.blocks import HEADINGS, blocks_to_markdown, plain_text
from ingestion.sources.notion.properties import properties_to_metadata, property_value
from rag.units import SourceDocument, Unit


def notion_key(notion_id: str) -> str:
    """A Notion id as settings store it: lower-case hex without dashes (n8n and the API differ)."""
    return str(notion_id or "").replace("-", "").strip().lower()


_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


def canonical_page_id(raw: str) -> str:
    """One Notion page, one id: the API's form (lower-case, dashed) for a page id given with or
    without dashes, in any case, or as a notion.so URL (whose path ends in the 32 hex digits).
    Anything that is not a Notion id is returned stripped, unchanged otherwise."""
    text = str(raw or "").strip()
    if "notion.so/" in text.lower() or "notion.site/" in text.lower():
        last = text.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1].replace("-", "")
        bare = last[-32:] if _HEX32.fullmatch(last[-32:]) else ""
    else:
        bare = text.replace("-", "") if _HEX32.fullmatch(text.replace("-", "")) else ""
    if not bare:
        return text
    bare = bare.lower()
    return f"{bare[:8]}-{bare[8:12]}-{bare[12:16]}-{bare[16:20]}-{bare[20:]}"


def _find(properties: dict, *names: str, types: tuple[str, ...] = ()) -> tuple[str, dict] | None:
    lowered = {n.lower(): n for n in properties}
    for name in names:
        if name in lowered and (not types or properties[lowered[name]].get("type") in types):
            return lowered[name], properties[lowered[name]]
    return None


def page_title(page: dict) -> str:
    """The text of a page's title property ("" when it has none)."""
    for prop in (page.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "title":
            return plain_text(prop.get("title")).strip()
    return ""


def _page_metadata(page: dict, properties: dict) -> dict:
    meta = properties_to_metadata(properties)
    meta.update({"notion_id": canonical_page_id(page["id"]), "last_edited_time": page.get("last_edited_time")})
    # Which database / data source the page lives in: per-source settings (ACL, mapping) key on it.
    parent = page.get("parent") or {}
    if parent.get("database_id"):
        meta["notion_database"] = notion_key(parent["database_id"])
    if parent.get("data_source_id"):
        meta["notion_data_source"] = notion_key(parent["data_source_id"])
    return meta


def _page_date(page: dict, properties: dict) -> dt.date | None:
    """The page's date property ("Date", "Entry date", "Day", else the first date), else its creation."""
    date = None
    found = _find(properties, "date", "entry date", "day", types=("date",))
    if found is None:
        found = next(((n, p) for n, p in properties.items() if p.get("type") == "date"), None)
    if found is not None:
        date = markup.parse_date((found[1].get("date") or {}).get("start"))
    return date or markup.parse_date(page.get("created_time"))


def _page_domain(properties: dict) -> str:
    """The first non-empty "Domain" or "Category" property (a select, a multi-select, text)."""
    domain = ""
    for name in ("domain", "category"):
        hit = _find(properties, name)
        if hit:
            value = property_value(hit[1])
            domain = value[0] if isinstance(value, list) and value else value if isinstance(value, str) else ""
            if domain:
                break
    return domain


def _page_concepts(properties: dict) -> list[str]:
    """The "Tags" multi-select, else every multi-select, as concepts."""
    tags = _find(properties, "tags", "tag", types=("multi_select",))
    tag_props = [tags[1]] if tags else [p for p in properties.values() if p.get("type") == "multi_select"]
    return list(dict.fromkeys(markup.concept_key(t) for p in tag_props for t in property_value(p)))


def _page_people(properties: dict) -> list[str]:
    people: list[str] = []
    for prop in properties.values():
        if prop.get("type") == "people":
            people.extend(n for n in property_value(prop) if n not in people)
    return people


def _sections(blocks: list[dict]) -> list[tuple[str, list[str], list[dict]]]:
    """Top-level blocks cut at headings: ``(anchor, heading path, blocks)``, ``u_0`` first."""
    sections: list[tuple[str, list[str], list[dict]]] = [("u_0", [], [])]
    path: list[tuple[int, str]] = []
    for block in blocks:
        level = HEADINGS.get(block.get("type", ""))
        if level:
            heading = plain_text(block[block["type"]].get("rich_text")).strip()
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, heading))
            sections.append((f"h-{block.get('id', len(sections))}", [h for _, h in path], [block]))
        else:
            sections[-1][2].append(block)
    return sections


def _section_texts(sections: list[tuple[str, list[str], list[dict]]]) -> list[tuple[str, list[str], str]]:
    """Each section's markdown; headings with nothing under them are carried into the next section."""
    out: list[tuple[str, list[str], str]] = []
    pending = ""
    for i, (anchor, heading_path, section_blocks) in enumerate(sections):
        text = blocks_to_markdown(section_blocks)
        if not text.strip():
            continue
        only_heading = (
            len(section_blocks) == 1
            and section_blocks[0].get("type") in HEADINGS
            and not section_blocks[0].get("children")
        )
        if only_heading and i < len(sections) - 1:
            pending = f"{pending}\n\n{text}" if pending else text
            continue
        if pending:
            text, pending = f"{pending}\n\n{text}", ""
        out.append((anchor, heading_path, text))
    return out


def page_to_document(
    page: dict, blocks: list[dict], *, collection: str = "notion", project: str | None = None,
    visibility: str = "public",
) -> SourceDocument:  # fmt: skip
    """A Notion page and its block tree → one document, a unit per heading section.

    Anchors are heading block ids (Notion keeps them across edits) and ``u_0`` for the text
    before the first heading, so editing one section re-embeds only that section.
    """
    page_id = canonical_page_id(page.get("id") or "")
    if not page_id:
        raise ValueError("page has no id")
    properties = page.get("properties") or {}
    title = page_title(page)
    meta = _page_metadata(page, properties)
    date = _page_date(page, properties)
    domain = _page_domain(properties)
    concepts = _page_concepts(properties)
    meta["people"] = _page_people(properties)
    units = [
        Unit(
            unit_anchor=anchor, content=text, title=title,
            breadcrumb=" > ".join([title, *heading_path]) if title else " > ".join(heading_path),
            url=page.get("url", ""), domain=domain[:100], concepts=concepts,
            code_languages=markup.code_languages(text), has_image=markup.has_image(text),
            date=date, metadata=dict(meta),
        )
        for anchor, heading_path, text in _section_texts(_sections(blocks))
    ]  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="notion_page", source_id=page_id, units=units,
        visibility=visibility, project=project,
    )  # fmt: skip
