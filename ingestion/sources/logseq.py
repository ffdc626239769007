"""Logseq graphs and folders of markdown notes → ``SourceDocument``s (no Django, no DB).

``parse_graph`` reads either; plain notes are shaped by ``ingestion.sources.markdown``.

A Logseq page is a tree of bullets. Each top-level bullet subtree becomes
one unit whose text keeps the tree as indented lines, so a child never loses the parent it
elaborates; small sibling subtrees are grouped, and a subtree too big for one chunk is cut at
its child bullets, each piece repeating the path of ancestor bullets above it.

Unit anchors are part of ``chunk_uid``, so they must survive unrelated edits: a block's
``id::`` when it has one, else a short hash of its ancestors' first lines and its own first
line (plus an occurrence counter for duplicates). Editing one bullet therefore only changes the
units that contain it.

Parsing happens in two passes over the whole graph: the first reads every file into block
trees and indexes block ids and page names; the second renders units, resolving ``((uuid))``
references and ``{{embed …}}`` macros. The text a file pulled in from elsewhere goes into its
fingerprint, so editing a referenced block re-does the files that reference it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from ingestion.sources import markdown, markup
from ingestion.sources.org import org_outline
from rag.units import SourceDocument, Unit

logger = logging.getLogger(__name__)

MIN_UNIT_CHARS = 300
MAX_UNIT_CHARS = 1000
EMBED_PAGE_CHARS = 600  # how much of a page {{embed [[page]]}} pulls in
MAX_REF_DEPTH = 2

_BULLET_RE = re.compile(r"^([ \t]*)-(?:[ \t]+(.*)|)$")
_ORG_MARKER_RE = re.compile(r"^\s*#\+(BEGIN|END)_\w+.*$", re.I)
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_EMBED_BLOCK_RE = re.compile(r"\{\{\s*embed\s+\(\((" + _UUID + r")\)\)\s*\}\}")
_EMBED_PAGE_RE = re.compile(r"\{\{\s*embed\s+\[\[([^\]\n]+)\]\]\s*\}\}")
_LABELLED_REF_RE = re.compile(r"\[([^\]\n]+)\]\(\(\((" + _UUID + r")\)\)\)")
_REF_RE = re.compile(r"\(\((" + _UUID + r")\)\)")
_CLOZE_RE = re.compile(r"\{\{\s*cloze\s+(.*?)\}\}")
_MARKDOWN_EXTS = {".md", ".markdown"}
_ORG_EXT = ".org"  # a Logseq graph's other page format (read as its markdown outline)
_ASSET_EXTS = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".ico", ".pdf", ".mp3",
               ".mp4", ".mov", ".webm", ".wav", ".ogg", ".css", ".js", ".edn", ".json", ".excalidraw",
               ".zip", ".DS_Store"}  # fmt: skip
_TAB_WIDTH = 4


@dataclass
class ParsedFile:
    """One file of a graph: its document, or why it could not be read (never fatal)."""

    path: str  # relative to the graph root, posix
    fingerprint: str  # sha256 of the bytes + of any referenced text the file pulled in
    document: SourceDocument | None
    error: str | None


@dataclass(eq=False)
class _Block:
    column: int
    content_column: int
    parent: _Block | None = None
    lines: list[str] = field(default_factory=list)
    props: dict[str, str] = field(default_factory=dict)
    children: list[_Block] = field(default_factory=list)
    in_fence: bool = False

    @property
    def uuid(self) -> str | None:
        value = self.props.get("id", "").strip()
        return value.lower() if re.fullmatch(_UUID, value) else None

    def add(self, line: str) -> None:
        stripped = line.strip()
        if markup.FENCE_RE.match(line):
            self.in_fence = not self.in_fence
        elif not self.in_fence:
            match = markup.PROPERTY_RE.match(stripped)
            if match:
                self.props.setdefault(match.group(1).lower(), (match.group(2) or "").strip())
                return
            if _ORG_MARKER_RE.match(stripped):
                return
        self.lines.append(line)

    def raw_text(self) -> str:
        lines = list(self.lines)
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines:
            heading = markup.HEADING_RE.match(lines[0])
            if heading:
                lines[0] = heading.group(2)
        return "\n".join(lines)


@dataclass(eq=False)
class _Page:
    path: str
    title: str
    kind: str  # "page" | "journal"
    date: dt.date | None
    props: dict[str, str]
    roots: list[_Block]
    digest: str


def _column(indent: str) -> int:
    col = 0
    for ch in indent:
        col = (col // _TAB_WIDTH + 1) * _TAB_WIDTH if ch == "\t" else col + 1
    return col


def _dedent(line: str, columns: int) -> str:
    """Drop up to ``columns`` columns of leading whitespace (tabs expanded)."""
    col = 0
    for i, ch in enumerate(line):
        if col >= columns or ch not in " \t":
            return line[i:]
        col = (col // _TAB_WIDTH + 1) * _TAB_WIDTH if ch == "\t" else col + 1
    return ""


def _parse_outline(text: str) -> tuple[dict[str, str], list[_Block]]:
    """Read Logseq markdown into page properties and a forest of blocks."""
    front, text = markup.parse_front_matter(text)
    page_props = {k.lower(): v for k, v in front.items()}
    roots: list[_Block] = []
    stack: list[_Block] = []
    current: _Block | None = None

    def open_block(column: int, content_column: int) -> _Block:
        while stack and stack[-1].column >= column:
            stack.pop()
        block = _Block(column=column, content_column=content_column)
        if stack:
            block.parent = stack[-1]
            stack[-1].children.append(block)
        else:
            roots.append(block)
        stack.append(block)
        return block

    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        bullet = None if current is not None and current.in_fence else _BULLET_RE.match(line)
        if bullet:
            col = _column(bullet.group(1))
            current = open_block(col, col + 2)
            current.add(bullet.group(2) or "")
            continue
        stripped = line.strip()
        if current is None:
            prop = markup.PROPERTY_RE.match(stripped)
            if prop:
                page_props.setdefault(prop.group(1).lower(), (prop.group(2) or "").strip())
                continue
            if not stripped:
                continue
            current = open_block(0, 0)  # text before any bullet is a block of its own
            current.add(line)
            continue
        if (
            not current.in_fence
            and stripped
            and line[:1] not in (" ", "\t")
            and markup.HEADING_RE.match(stripped)
        ):
            current = open_block(0, 0)  # an unindented heading starts a new top-level block
            current.add(line)
            continue
        current.add(_dedent(line, current.content_column))

    # Logseq writes page properties as a first block made only of properties ("pre-block").
    if roots and not roots[0].raw_text() and not roots[0].children and roots[0].props:
        for key, value in roots.pop(0).props.items():
            page_props.setdefault(key, value)
    return page_props, roots


class _Graph:
    """Every page of a graph, indexed for block references and page embeds."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pages: list[_Page] = []
        self.blocks: dict[str, _Block] = {}
        self.by_name: dict[str, _Page] = {}

    def add(self, page: _Page) -> None:
        self.pages.append(page)
        stem = markdown.title_from_name(Path(page.path).stem)
        names = [page.title, stem, *markup.link_values(page.props.get("alias", ""))]
        for name in names:
            self.by_name.setdefault(markup.concept_key(name), page)
        todo = list(page.roots)
        while todo:
            block = todo.pop()
            if block.uuid:
                self.blocks.setdefault(block.uuid, block)
            todo.extend(block.children)


class _Renderer:
    """Renders one page's blocks, resolving refs and embeds against the graph."""

    def __init__(self, graph: _Graph, page: _Page) -> None:
        self.graph = graph
        self.page = page
        self.pulled: list[tuple[str, str]] = []  # (what was resolved, the text it became)
        self._cache: dict[int, markup.Rendered] = {}

    # -- resolving ------------------------------------------------------------------------------
    def _subtree_raw(self, block: _Block, depth: int, level: int = 0) -> str:
        text = self._resolve(block.raw_text(), depth)
        lines = [text] if level == 0 else [_indent(text, level)]
        for child in block.children:
            lines.append(self._subtree_raw(child, depth, level + 1))
        return "\n".join(line for line in lines if line.strip())

    def _resolve(self, text: str, depth: int) -> str:
        if depth >= MAX_REF_DEPTH or ("((" not in text and "{{" not in text):
            return text

        def embed_block(m: re.Match) -> str:
            block = self.graph.blocks.get(m.group(1).lower())
            if block is None:
                return m.group(0)
            resolved = self._subtree_raw(block, depth + 1)
            self.pulled.append((m.group(0), resolved))
            return resolved

        def embed_page(m: re.Match) -> str:
            page = self.graph.by_name.get(markup.concept_key(m.group(1)))
            if page is None or page is self.page:
                return m.group(0)
            parts: list[str] = []
            for root in page.roots:
                if sum(len(p) for p in parts) >= EMBED_PAGE_CHARS:
                    break
                parts.append(self._subtree_raw(root, depth + 1))
            resolved = "\n".join(p for p in parts if p)
            self.pulled.append((m.group(0), resolved))
            return resolved or m.group(0)

        def ref(m: re.Match, label: bool = False) -> str:
            uuid = m.group(2 if label else 1).lower()
            block = self.graph.blocks.get(uuid)
            if block is None:
                return m.group(0)
            resolved = self._resolve(block.raw_text(), depth + 1)
            self.pulled.append((m.group(0), resolved))
            return m.group(1) if label else resolved

        text = _EMBED_BLOCK_RE.sub(embed_block, text)
        text = _EMBED_PAGE_RE.sub(embed_page, text)
        text = _LABELLED_REF_RE.sub(lambda m: ref(m, label=True), text)
        return _REF_RE.sub(ref, text)

    # -- rendering ------------------------------------------------------------------------------
    def own(self, block: _Block) -> markup.Rendered:
        """The block's own text, refs resolved and links made readable."""
        key = id(block)
        if key not in self._cache:
            text = block.raw_text()
            if not text and block.props:
                # A block made only of properties ("type:: [[Command]]") still says something.
                text = "\n".join(
                    f"{k}: {v}" for k, v in block.props.items() if k not in markdown.HIDDEN_PROPS and v
                )
            self._cache[key] = markup.render_links(
                text, transform=lambda s: _CLOZE_RE.sub(r"\1", self._resolve(s, 0))
            )
        return self._cache[key]

    def first_line(self, block: _Block) -> str:
        for line in self.own(block).text.split("\n"):
            line = line.strip()
            if line and not markup.FENCE_RE.match(line):
                return line[:120]
        return ""

    def subtree(self, block: _Block, level: int, acc: list[_Block]) -> str:
        acc.append(block)
        lines = [_indent(self.own(block).text, level)] if self.own(block).text.strip() else []
        for child in block.children:
            text = self.subtree(child, level + 1, acc)
            if text:
                lines.append(text)
        return "\n".join(lines)


def _indent(text: str, level: int) -> str:
    """Render a block's text at a tree level: ``- `` bullets below the top, continuation aligned."""
    if level == 0:
        return text
    pad = "  " * (level - 1)
    lines = text.split("\n")
    out = [f"{pad}- {lines[0]}"]
    out.extend(f"{pad}  {line}" if line.strip() else "" for line in lines[1:])
    return "\n".join(out)


@dataclass
class _Piece:
    anchor_block: _Block
    ancestors: list[_Block]
    blocks: list[_Block]  # every block whose text is in the piece (header included)
    text: str
    single: bool  # one subtree (its first line belongs in the breadcrumb)


def _pieces(r: _Renderer, siblings: list[_Block], ancestors: list[_Block]) -> list[_Piece]:
    """Group sibling subtrees into pieces of ~MIN..MAX chars; split the ones that are too big."""
    level = len(ancestors)
    header = "\n".join(_indent(r.first_line(a), i) for i, a in enumerate(ancestors))
    out: list[_Piece] = []
    group: list[tuple[_Block, str, list[_Block]]] = []

    def size(parts: list[str]) -> int:
        return len(header) + sum(len(p) + 1 for p in parts)

    def flush() -> None:
        if not group:
            return
        body = "\n".join(t for _, t, _ in group)
        blocks = [*ancestors, *(b for _, _, bs in group for b in bs)]
        text = f"{header}\n{body}" if header else body
        out.append(_Piece(group[0][0], ancestors, blocks, text, single=len(group) == 1))
        group.clear()

    for block in siblings:
        acc: list[_Block] = []
        body = r.subtree(block, level, acc)
        if not body.strip():
            continue
        if size([body]) > MAX_UNIT_CHARS and block.children:
            flush()
            own = _indent(r.own(block).text, level)
            if not block.children or own.strip() != _indent(r.first_line(block), level).strip():
                text = f"{header}\n{own}" if header else own
                out.append(_Piece(block, ancestors, [*ancestors, block], text, single=True))
            out.extend(_pieces(r, block.children, [*ancestors, block]))
            continue
        # Only small subtrees are grouped: a substantial one always stands alone, so adding or
        # editing a neighbour never moves it into another unit (and under another anchor).
        if (
            group
            and size([body]) < MIN_UNIT_CHARS
            and size([t for _, t, _ in group]) < MIN_UNIT_CHARS
            and size([*(t for _, t, _ in group), body]) <= MAX_UNIT_CHARS
        ):
            group.append((block, body, acc))
        else:
            flush()
            group.append((block, body, acc))
    flush()
    return out


def _page_document(graph: _Graph, page: _Page, *, collection: str, project: str | None,
                   visibility: str) -> tuple[SourceDocument, str]:  # fmt: skip
    r = _Renderer(graph, page)
    page_meta, page_concepts = markdown.note_metadata(page.props)
    date = page.date or markup.parse_date(page.props.get("date", ""))
    url = f"logseq://graph/{quote(graph.name)}?page={quote(page.title)}"
    searched_title = markdown.title_with_aliases(page.title, page.props)
    seen: dict[str, int] = {}
    units: list[Unit] = []
    for piece in _pieces(r, page.roots, []):
        block = piece.anchor_block
        if block.uuid:
            key = f"id-{block.uuid}"
        else:
            path = [r.first_line(a) for a in piece.ancestors]
            key = "h-" + markup.short_hash(*path, r.first_line(block))
        seen[key] = seen.get(key, 0) + 1
        anchor = key if seen[key] == 1 else f"{key}-{seen[key]}"
        crumbs = [page.title, *(r.first_line(a)[:80] for a in piece.ancestors)]
        if piece.single and r.first_line(block):
            crumbs.append(r.first_line(block)[:80])
        concepts = list(page_concepts)
        meta = dict(page_meta)
        block_ids = []
        for b in piece.blocks:
            for concept in r.own(b).concepts:
                if concept not in concepts:
                    concepts.append(concept)
            if b.uuid:
                block_ids.append(b.uuid)
            for k, v in b.props.items():
                if k not in markdown.HIDDEN_PROPS and v:
                    value = markup.link_values(v) if k in markdown.LIST_PROPS else markdown.clean_value(v)
                    meta.setdefault(markup.normalise_key(k), value)
        meta.update({"page": page.title, "kind": page.kind, "path": page.path})
        if block_ids:
            meta["block_ids"] = block_ids
        units.append(
            Unit(
                unit_anchor=anchor, content=piece.text, title=searched_title,
                breadcrumb=" > ".join(c for c in crumbs if c), url=url,
                domain=str(page_meta.get("domain", ""))[:100], concepts=concepts,
                code_languages=markup.code_languages(piece.text),
                has_image=markup.has_image(piece.text), date=date, metadata=meta,
            )
        )  # fmt: skip
    digest = hashlib.sha256(page.digest.encode())
    for what, text in r.pulled:
        digest.update(b"\x1f" + what.encode() + b"\x1e" + text.encode())
    doc = SourceDocument(
        collection=collection, source_type=f"logseq_{page.kind}", source_id=page.path,
        units=units, visibility=visibility, project=project, chunk_size=MAX_UNIT_CHARS,
    )  # fmt: skip
    return doc, digest.hexdigest()


def _read(path: Path) -> tuple[bytes, str]:
    """File bytes and text; raises ValueError with a reportable reason."""
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ValueError("binary file")
    try:
        return data, data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from exc


def _walk(root: Path, fmt: str) -> list[Path]:
    tops = [root / "journals", root / "pages"] if fmt == "logseq" else [root]
    files: list[Path] = []
    for top in tops:
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(root).parts
            if any(part.startswith(".") for part in rel) or not path.is_file():
                continue
            if fmt == "logseq" and rel[0] == "logseq":
                continue
            if fmt == "markdown" and path.suffix.lower() in _ASSET_EXTS:
                continue
            files.append(path)
    return files


def parse_graph(
    root: Path, *, fmt: str = "logseq", collection: str = "logseq", project: str | None = None,
    visibility: str = "public",
) -> list[ParsedFile]:  # fmt: skip
    """Parse every note under ``root`` into one ``ParsedFile`` per file, in path order.

    ``fmt="logseq"`` reads ``journals/`` and ``pages/`` of a Logseq graph (``.md`` and ``.org``
    pages); ``fmt="markdown"`` reads any folder of ``.md`` files (hidden folders skipped). Files
    that cannot be parsed come back with ``error`` set and no document, so one bad file never
    stops a sync.
    """
    if fmt not in ("logseq", "markdown"):
        raise ValueError(f"unknown format {fmt!r}: expected 'logseq' or 'markdown'")
    root = Path(root)
    graph = _Graph(root.name)
    results: dict[str, ParsedFile] = {}
    texts: dict[str, str] = {}
    pages: dict[str, _Page] = {}
    for path in _walk(root, fmt):
        rel = path.relative_to(root).as_posix()
        org = fmt == "logseq" and path.suffix.lower() == _ORG_EXT
        if path.suffix.lower() not in _MARKDOWN_EXTS and not org:
            results[rel] = ParsedFile(rel, "", None, f"unsupported format {path.suffix or '(none)'}")
            continue
        try:
            data, text = _read(path)
        except (OSError, ValueError) as exc:
            results[rel] = ParsedFile(rel, "", None, str(exc))
            continue
        digest = hashlib.sha256(data).hexdigest()
        results[rel] = ParsedFile(rel, digest, None, None)
        texts[rel] = text
        if fmt != "logseq":
            continue
        try:
            props, roots = _parse_outline(org_outline(text) if org else text)
        except Exception as exc:  # a parser bug on one file must not stop the graph
            logger.exception("could not parse %s", rel)
            results[rel] = ParsedFile(rel, digest, None, f"parse error: {exc}")
            continue
        stem = path.stem
        journal = markdown.JOURNAL_RE.match(stem) if rel.startswith("journals/") else None
        date = dt.date(*(int(g) for g in journal.groups())) if journal else None
        title = markdown.clean_value(props.get("title", "")) or (
            date.isoformat() if date else markdown.title_from_name(stem)
        )
        page = _Page(rel, title, "journal" if date else "page", date, props, roots, digest)
        pages[rel] = page
        graph.add(page)

    for rel, parsed in results.items():
        if parsed.error:
            continue
        try:
            if fmt == "logseq":
                doc, fingerprint = _page_document(
                    graph, pages[rel], collection=collection, project=project, visibility=visibility
                )
                parsed.fingerprint = fingerprint
            else:
                doc = markdown.markdown_document(
                    rel, texts[rel], collection=collection, project=project, visibility=visibility
                )
            parsed.document = doc
        except Exception as exc:
            logger.exception("could not render %s", rel)
            parsed.error = f"parse error: {exc}"
    return [results[rel] for rel in sorted(results)]
