"""PDF, DOCX, HTML and PPTX files → ``SourceDocument``s, with headings as the breadcrumb.

Nothing here touches the database. ``file_to_document`` raises ``FileExtractError`` with a
sentence a person can act on (encrypted, corrupt, empty, no text layer) so a batch records it
against the file and goes on. PDF pages and PPTX slides are one unit each and carry their
number in ``metadata.page`` / ``metadata.slide`` (so a citation can say "p. 4"); DOCX and HTML
are cut at their headings.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingestion.sources import markup
from rag.units import SourceDocument, Unit

logger = logging.getLogger(__name__)

FILE_TYPES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".html": "text/html",
    ".htm": "text/html",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}
# A PDF whose pages yield fewer characters than this on average has no usable text layer.
MIN_CHARS_PER_PAGE = 20


class FileExtractError(ValueError):
    """The file cannot give text; the message says why and what to do."""


@dataclass
class Section:
    """A piece of a file's text with where it sits: heading path, page or slide number."""

    text: str
    path: list[str] = field(default_factory=list)
    page: int | None = None
    slide: int | None = None


@dataclass
class Extracted:
    title: str
    sections: list[Section]
    pages: int = 0  # PDF pages / PPTX slides in the file
    empty_pages: list[int] = field(default_factory=list)


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _clean(text: str) -> str:
    text = text.replace("\x00", "").replace("\u00ad", "")
    text = re.sub(r"[ \t\u00a0]+", " ", text)
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)  # words hyphenated across PDF lines
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# -- PDF -----------------------------------------------------------------------------------------
def _pdf_outline(reader) -> list[tuple[int, list[str]]]:
    """(0-based page, heading path) of every outline entry, in document order."""
    out: list[tuple[int, list[str]]] = []

    def walk(items, path: list[str]) -> None:
        last: str | None = None
        for item in items:
            if isinstance(item, list):
                if last is not None:
                    walk(item, [*path, last])
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # a dangling bookmark is not worth failing the file for
                continue
            title = str(getattr(item, "title", "") or "").strip()
            if title and page is not None:
                out.append((page, [*path, title]))
                last = title

    try:
        walk(reader.outline, [])
    except Exception as exc:
        logger.info("PDF outline unreadable: %s", exc)
        return []
    return sorted(out, key=lambda x: x[0])


def extract_pdf(data: bytes) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" with an empty user password (copy/print restrictions only).
            try:
                ok = reader.decrypt("")
            except Exception as exc:
                raise FileExtractError(
                    f"encrypted PDF that cannot be opened ({exc}); upload an unprotected copy"
                ) from exc
            if not ok:
                raise FileExtractError("encrypted PDF (password protected): upload an unprotected copy")
        pages = list(reader.pages)
    except FileExtractError:
        raise
    except FileNotDecryptedError as exc:
        raise FileExtractError("encrypted PDF (password protected): upload an unprotected copy") from exc
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise FileExtractError(f"corrupt or unreadable PDF: {exc}") from exc
    if not pages:
        raise FileExtractError("the PDF has no pages")
    meta_title = ""
    try:
        meta_title = str((reader.metadata or {}).get("/Title") or "").strip()
    except Exception:
        meta_title = ""
    outline = _pdf_outline(reader)
    sections: list[Section] = []
    empty: list[int] = []
    total_chars = 0
    for i, page in enumerate(pages):
        try:
            text = _clean(page.extract_text() or "")
        except Exception as exc:  # one broken content stream: the other pages still count
            logger.info("PDF page %d unreadable: %s", i + 1, exc)
            text = ""
        if len(text) < MIN_CHARS_PER_PAGE:
            empty.append(i + 1)
        if not text:
            continue
        total_chars += len(text)
        path = next((p for pg, p in reversed(outline) if pg <= i), [])
        sections.append(Section(text=text, path=list(path), page=i + 1))
    if total_chars < MIN_CHARS_PER_PAGE * len(pages) and len(empty) == len(pages):
        raise FileExtractError(
            f"no text layer in any of the {len(pages)} page(s) (a scanned PDF?): run OCR (e.g. ocrmypdf) first"
        )
    return Extracted(title=meta_title, sections=sections, pages=len(pages), empty_pages=empty)


# -- DOCX ----------------------------------------------------------------------------------------
def _heading_level(style_name: str) -> int | None:
    name = (style_name or "").lower()
    if name == "title":
        return 0
    match = re.match(r"heading\s*(\d)", name)
    return int(match.group(1)) if match else None


def extract_docx(data: bytes) -> Extracted:
    import zipfile

    from docx import Document
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FileExtractError(f"corrupt or unreadable DOCX (or an encrypted one): {exc}") from exc
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    title = (document.core_properties.title or "").strip()
    sections: list[Section] = [Section(text="")]
    path: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        text = _clean("\n".join(body))
        if text:
            sections.append(Section(text=text, path=[h for _, h in path]))
        body.clear()

    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            text = item.text.strip()
            level = _heading_level(item.style.name if item.style is not None else "")
            if level is not None and text:
                if level == 0:
                    title = title or text
                    continue
                flush()
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, text))
                continue
            if text:
                style = (item.style.name if item.style is not None else "").lower()
                body.append(f"- {text}" if "list" in style else text)
        elif isinstance(item, Table):
            for row in item.rows:
                cells = list(dict.fromkeys(c.text.strip() for c in row.cells if c.text.strip()))
                if cells:
                    body.append(" | ".join(cells))
    flush()
    sections = [s for s in sections if s.text]
    if not sections:
        raise FileExtractError("the DOCX has no text")
    return Extracted(title=title, sections=sections)


# -- HTML ----------------------------------------------------------------------------------------
_DROP = ("script", "style", "noscript", "template", "svg", "nav", "footer", "header", "aside", "form", "iframe")
_BLOCKS = ("p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption")


def extract_html(data: bytes) -> Extracted:
    import warnings

    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    try:
        with warnings.catch_warnings():  # XHTML manuals parse fine as HTML; the warning is noise
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            soup = BeautifulSoup(data, "lxml")
    except Exception as exc:
        raise FileExtractError(f"unreadable HTML: {exc}") from exc
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_DROP):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        text = _clean("\n\n".join(body))
        if text:
            sections.append(Section(text=text, path=[h for _, h in path]))
        body.clear()

    for el in root.find_all(["h1", "h2", "h3", "h4", "h5", "h6", *_BLOCKS]):
        if el.name in _BLOCKS and el.find_parent(_BLOCKS):
            continue  # its text is already in the enclosing block
        if el.name[0] == "h" and el.name[1:].isdigit():
            heading = el.get_text(" ", strip=True)
            if not heading:
                continue
            level = int(el.name[1])
            flush()
            if level == 1 and not title:
                title = heading
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, heading))
            continue
        text = el.get_text("\n" if el.name == "pre" else " ", strip=el.name != "pre")
        if text.strip():
            body.append(f"- {text}" if el.name == "li" else text)
    flush()
    if not sections:  # no block structure (a bare text page): take what text there is
        text = _clean(root.get_text("\n", strip=True))
        if text:
            sections.append(Section(text=text))
    if not sections:
        raise FileExtractError("the HTML page has no text")
    return Extracted(title=title, sections=sections)


# -- PPTX ----------------------------------------------------------------------------------------
def extract_pptx(data: bytes) -> Extracted:
    import zipfile

    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    try:
        deck = Presentation(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FileExtractError(f"corrupt or unreadable PPTX (or an encrypted one): {exc}") from exc
    sections: list[Section] = []
    title = (deck.core_properties.title or "").strip()
    slides = list(deck.slides)
    for n, slide in enumerate(slides, start=1):
        heading = ""
        if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
            heading = slide.shapes.title.text_frame.text.strip()
        lines = []
        for shape in slide.shapes:
            if shape == slide.shapes.title or not getattr(shape, "has_text_frame", False):
                continue
            lines.extend(p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip())
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                lines.append(f"Notes: {notes}")
        text = _clean("\n".join(lines))
        if heading or text:
            sections.append(Section(text=text or heading, path=[heading] if heading else [], slide=n))
    if not sections:
        raise FileExtractError("the presentation has no text")
    return Extracted(title=title or (sections[0].path[0] if sections[0].path else ""), sections=sections,
                     pages=len(slides))  # fmt: skip


_EXTRACTORS = {".pdf": extract_pdf, ".docx": extract_docx, ".html": extract_html, ".htm": extract_html,
               ".pptx": extract_pptx}  # fmt: skip


def suffix_of(name: str) -> str:
    return ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""


def extract(data: bytes, *, name: str) -> Extracted:
    """Dispatch on the file name's extension; empty and unknown files are ``FileExtractError``."""
    suffix = suffix_of(name)
    if suffix not in _EXTRACTORS:
        raise FileExtractError(f"unsupported file type {suffix or '(none)'}: expected {', '.join(sorted(FILE_TYPES))}")
    if not data:
        raise FileExtractError("the file is empty")
    return _EXTRACTORS[suffix](data)


def file_to_document(
    *, data: bytes, name: str, source_id: str, collection: str = "documents", download_url: str = "",
    date: dt.date | str | None = None, entity: str = "", people: Iterable[str] = (), tags: Iterable[str] = (),
    project: str | None = None, visibility: str = "public", owner_hash: str = "",
) -> SourceDocument:  # fmt: skip
    """A file's bytes → a document: a unit per PDF page / slide, per heading section otherwise.

    Every unit says where the original is (``metadata.file``: name, sha256, size, content type,
    download URL) and, for PDFs and decks, its page or slide, which also ends the breadcrumb.
    """
    extracted = extract(data, name=name)
    sha = file_sha256(data)
    suffix = suffix_of(name)
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    title = extracted.title or stem.replace("_", " ").replace("-", " ").strip() or name
    file_meta = {"name": name.rsplit("/", 1)[-1], "sha256": sha, "size": len(data),
                 "content_type": FILE_TYPES[suffix], "url": download_url}  # fmt: skip
    tag_list, people_list = markup.unique_names(tags), markup.unique_names(people)
    concepts = list(dict.fromkeys(markup.concept_key(t) for t in tag_list))
    day = markup.iso_date(date)
    units: list[Unit] = []
    seen: dict[str, int] = {}
    for section in extracted.sections:
        if section.page is not None:
            anchor, where, extra = f"p-{section.page}", f"p. {section.page}", {"page": section.page}
        elif section.slide is not None:
            anchor, where, extra = f"s-{section.slide}", f"slide {section.slide}", {"slide": section.slide}
        else:
            anchor = "h-" + markup.short_hash(*section.path) if section.path else "u_0"
            where, extra = "", {}
        seen[anchor] = seen.get(anchor, 0) + 1
        if seen[anchor] > 1:
            anchor = f"{anchor}-{seen[anchor]}"
        crumbs = [title, *(p for p in section.path if p != title), where]
        if extracted.pages:
            extra["pages"] = extracted.pages
        if section.path:
            extra["section"] = section.path[-1]
        units.append(Unit(
            unit_anchor=anchor, content=section.text, title=title, breadcrumb=" > ".join(c for c in crumbs if c),
            url=download_url, concepts=concepts, date=day,
            code_languages=markup.code_languages(section.text),
            metadata={"entity": entity, "people": people_list, "tags": tag_list, "file": file_meta, **extra},
        ))  # fmt: skip
    return SourceDocument(
        collection=collection, source_type="file", source_id=source_id, units=units, visibility=visibility,
        project=project, owner_hash=owner_hash,
    )  # fmt: skip
