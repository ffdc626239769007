"""PDF, DOCX, HTML, PPTX and PNG/JPEG files → ``SourceDocument``s, with headings as the breadcrumb.

Nothing here touches the database. Services never call ``extract`` in the web process: they run
it in a bounded child process (``ingestion.extraction``), so a hostile file costs one file.
``file_to_document`` raises ``FileExtractError`` with a
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
from dataclasses import asdict, dataclass, field

from ingestion.sources import markup
from rag.units import SourceDocument, Unit

logger = logging.getLogger(__name__)

FILE_TYPES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".html": "text/html",
    ".htm": "text/html",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}
IMAGE_TYPES = {".png", ".jpg", ".jpeg"}
# A PDF whose pages yield fewer characters than this on average has no usable text layer.
MIN_CHARS_PER_PAGE = 20
# Office files are zips: what they unpack to is checked before any XML is parsed. A member above
# this size is only accepted with a plausible packing ratio (real document XML packs 3-20×).
ZIP_RATIO_MIN_MEMBER = 1024 * 1024


@dataclass(frozen=True)
class Bounds:
    """What one file may cost before it is parsed; the bounded runner passes the settings in."""

    max_unzipped_bytes: int = 200 * 1024 * 1024
    max_zip_ratio: float = 100.0
    max_zip_members: int = 5000
    ocr: bool = True
    ocr_max_pages: int = 200


class FileExtractError(ValueError):
    """The file cannot give text; the message says why and what to do."""


@dataclass
class Section:
    """A piece of a file's text with where it sits: heading path, page or slide number."""

    text: str
    path: list[str] = field(default_factory=list)
    page: int | None = None
    slide: int | None = None
    ocr: bool = False  # the text was read from the page's image by OCR, not from a text layer


@dataclass
class Extracted:
    title: str
    sections: list[Section]
    pages: int = 0  # PDF pages / PPTX slides in the file
    empty_pages: list[int] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Extracted:
        return cls(**{**data, "sections": [Section(**s) for s in data["sections"]]})


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _clean(text: str) -> str:
    text = text.replace("\x00", "").replace("\u00ad", "")
    text = re.sub(r"[ \t\u00a0]+", " ", text)
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)  # words hyphenated across PDF lines
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_JUNK_TITLES = {"untitled", "untitled document", "document", "document1", "presentation", "powerpoint presentation",
                "slide 1", "title", "no title", "microsoft word", "word document", "pdf", "unknown"}  # fmt: skip
_FILE_NAME_RE = re.compile(r"\.(pdf|docx?|pptx?|html?|tex|dvi|rtf|odt|txt|md|indd|qxd|png|jpe?g)$", re.I)


def good_title(title: str) -> bool:
    """Whether a title from a file's metadata names it, not the tool that wrote it
    ("untitled", "Microsoft Word - memo.docx", "Slide 1")."""
    t = (title or "").strip()
    low = t.lower()
    if len(t) < 2 or low in _JUNK_TITLES or low.startswith(("microsoft word - ", "microsoft powerpoint - ")):
        return False
    return not _FILE_NAME_RE.search(t)


def _heading_like(line: str) -> str:
    """A first line short enough to be a heading, else ""."""
    line = line.strip().lstrip("#").strip()
    short = 3 <= len(line) <= 100 and len(line.split()) <= 14
    return line if short and not line.endswith((".", ",", ";", ":")) and good_title(line) else ""


def check_zip(data: bytes, kind: str, bounds: Bounds) -> None:
    """Refuse a DOCX/PPTX whose members would unpack too large or too well before parsing any.

    The sizes are the ones the zip declares; reading a member past its declared size fails its
    CRC check in ``zipfile``, so a header that lies cannot get more bytes parsed than it declares.
    """
    import zipfile

    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise FileExtractError(f"corrupt or unreadable {kind} (or an encrypted one): {exc}") from exc
    if len(members) > bounds.max_zip_members:
        raise FileExtractError(f"the {kind} holds {len(members)} parts (at most {bounds.max_zip_members}): refused")
    total = 0
    for info in members:
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > ZIP_RATIO_MIN_MEMBER and ratio > bounds.max_zip_ratio:
            raise FileExtractError(
                f"the {kind}'s part {info.filename} unpacks to {info.file_size} bytes, {ratio:.0f}× its packed "
                f"size (at most {bounds.max_zip_ratio:.0f}×): refused as a likely decompression bomb"
            )
    if total > bounds.max_unzipped_bytes:
        raise FileExtractError(
            f"the {kind} unpacks to {total} bytes (at most {bounds.max_unzipped_bytes}): refused as too large to read"
        )


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


def _pdf_open(data: bytes):
    """A pypdf reader and its pages, or ``FileExtractError`` (encrypted, corrupt, no pages)."""
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
    return reader, pages


def _pdf_ocr(data: bytes, texts: list[str], empty: list[int], bounds: Bounds) -> tuple[list[int], str]:
    """OCR the pages without a text layer, in place in ``texts``: (pages OCR'd, why OCR could not run)."""
    if not empty or not bounds.ocr:
        return [], ""
    from ingestion.sources import ocr

    missing = ocr.unavailable()
    if missing:
        return [], missing
    done: list[int] = []
    for number, text in ocr.pdf_pages(data, empty[: bounds.ocr_max_pages]).items():
        text = _clean(text)
        if len(text) > len(texts[number - 1]):
            texts[number - 1] = text
            done.append(number)
    return done, ""


def extract_pdf(data: bytes, bounds: Bounds | None = None) -> Extracted:
    bounds = bounds or Bounds()
    reader, pages = _pdf_open(data)
    meta_title = ""
    try:
        meta_title = str((reader.metadata or {}).get("/Title") or "").strip()
    except Exception:
        meta_title = ""
    outline = _pdf_outline(reader)
    texts: list[str] = []
    for i, page in enumerate(pages):
        try:
            texts.append(_clean(page.extract_text() or ""))
        except Exception as exc:  # one broken content stream: the other pages still count
            logger.info("PDF page %d unreadable: %s", i + 1, exc)
            texts.append("")
    empty = [i + 1 for i, text in enumerate(texts) if len(text) < MIN_CHARS_PER_PAGE]
    ocr_done, ocr_missing = _pdf_ocr(data, texts, empty, bounds)
    sections: list[Section] = []
    for i, text in enumerate(texts):
        if not text:
            continue
        path = next((p for pg, p in reversed(outline) if pg <= i), [])
        sections.append(Section(text=text, path=list(path), page=i + 1, ocr=(i + 1) in ocr_done))
    if sum(len(t) for t in texts) < MIN_CHARS_PER_PAGE * len(pages) and len(empty) == len(pages) and not ocr_done:
        if ocr_missing:
            why = f"OCR is not available on this server ({ocr_missing})"
        else:
            why = "OCR found no text in them either" if bounds.ocr else "OCR is switched off (KNOWHUB_OCR_ENABLED)"
        raise FileExtractError(f"no text layer in any of the {len(pages)} page(s) (a scanned PDF?), and {why}")
    # The metadata title unless a tool wrote it ("untitled"), else the first bookmark, else a
    # first line short enough to be a heading.
    title = next((t for t in (meta_title, *(p[-1] for _, p in outline[:1])) if good_title(t)), "")
    if not title and texts[0] and 1 not in ocr_done:
        title = _heading_like(texts[0].split("\n", 1)[0])
    return Extracted(title=title, sections=sections, pages=len(pages), empty_pages=empty, ocr_pages=ocr_done)


# -- images (OCR) --------------------------------------------------------------------------------
def extract_image(data: bytes, bounds: Bounds | None = None) -> Extracted:
    """A PNG/JPEG (a photographed or scanned page): its text read by OCR, one section."""
    bounds = bounds or Bounds()
    if not bounds.ocr:
        raise FileExtractError("images are read by OCR, which is switched off (KNOWHUB_OCR_ENABLED)")
    from ingestion.sources import ocr

    missing = ocr.unavailable()
    if missing:
        raise FileExtractError(f"images are read by OCR, which is not available on this server ({missing})")
    text = _clean(ocr.image_text(data))
    if not text:
        raise FileExtractError("OCR found no text in the image")
    return Extracted(title=_heading_like(text.split("\n", 1)[0]), sections=[Section(text=text, ocr=True)],
                     ocr_pages=[1])  # fmt: skip


# -- DOCX ----------------------------------------------------------------------------------------
def _heading_level(style_name: str) -> int | None:
    name = (style_name or "").lower()
    if name == "title":
        return 0
    match = re.match(r"heading\s*(\d)", name)
    return int(match.group(1)) if match else None


def extract_docx(data: bytes, bounds: Bounds | None = None) -> Extracted:
    import zipfile

    from docx import Document
    from docx.opc.exceptions import PackageNotFoundError

    check_zip(data, "DOCX", bounds or Bounds())
    try:
        document = Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FileExtractError(f"corrupt or unreadable DOCX (or an encrypted one): {exc}") from exc
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    title = (document.core_properties.title or "").strip()
    title = title if good_title(title) else ""
    first_heading = ""
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
                first_heading = first_heading or text
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
    return Extracted(title=title or first_heading or _heading_like(sections[0].text.split("\n", 1)[0]),
                     sections=sections)  # fmt: skip


# -- HTML ----------------------------------------------------------------------------------------
_DROP = ("script", "style", "noscript", "template", "svg", "nav", "footer", "header", "aside", "form", "iframe")
_BLOCKS = ("p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption")


def extract_html(data: bytes, bounds: Bounds | None = None) -> Extracted:
    import warnings

    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    try:
        with warnings.catch_warnings():  # XHTML manuals parse fine as HTML; the warning is noise
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            soup = BeautifulSoup(data, "lxml")
    except Exception as exc:
        raise FileExtractError(f"unreadable HTML: {exc}") from exc
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    title = title if good_title(title) else ""
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
def extract_pptx(data: bytes, bounds: Bounds | None = None) -> Extracted:
    import zipfile

    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    check_zip(data, "PPTX", bounds or Bounds())
    try:
        deck = Presentation(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FileExtractError(f"corrupt or unreadable PPTX (or an encrypted one): {exc}") from exc
    sections: list[Section] = []
    title = (deck.core_properties.title or "").strip()
    title = title if good_title(title) else ""
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
               ".pptx": extract_pptx, ".png": extract_image, ".jpg": extract_image, ".jpeg": extract_image}  # fmt: skip


def suffix_of(name: str) -> str:
    return ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""


def extract(data: bytes, *, name: str, bounds: Bounds | None = None) -> Extracted:
    """Dispatch on the file name's extension; empty and unknown files are ``FileExtractError``.

    In-process and unbounded in time and memory: services use ``ingestion.extraction`` instead.
    """
    suffix = suffix_of(name)
    if suffix not in _EXTRACTORS:
        raise FileExtractError(f"unsupported file type {suffix or '(none)'}: expected {', '.join(sorted(FILE_TYPES))}")
    if not data:
        raise FileExtractError("the file is empty")
    return _EXTRACTORS[suffix](data, bounds)


def file_to_document(
    *, data: bytes, name: str, source_id: str, collection: str = "documents", download_url: str = "",
    date: dt.date | str | None = None, entity: str = "", people: Iterable[str] = (), tags: Iterable[str] = (),
    project: str | None = None, visibility: str = "public", owner_hash: str = "",
) -> SourceDocument:  # fmt: skip
    """A file's bytes → a document, extracted in this process (tests, benchmarks)."""
    return document_from_extracted(
        extract(data, name=name), name=name, sha256=file_sha256(data), size=len(data), source_id=source_id,
        collection=collection, download_url=download_url, date=date, entity=entity, people=people, tags=tags,
        project=project, visibility=visibility, owner_hash=owner_hash,
    )  # fmt: skip


def document_from_extracted(
    extracted: Extracted, *, name: str, sha256: str, size: int, source_id: str, collection: str = "documents",
    download_url: str = "", date: dt.date | str | None = None, entity: str = "", people: Iterable[str] = (),
    tags: Iterable[str] = (), project: str | None = None, visibility: str = "public", owner_hash: str = "",
) -> SourceDocument:  # fmt: skip
    """A file's extracted text → a document: a unit per PDF page / slide, per heading section otherwise.

    Every unit says where the original is (``metadata.file``: name, sha256, size, content type,
    download URL) and, for PDFs and decks, its page or slide, which also ends the breadcrumb. Text
    read by OCR carries ``metadata.ocr = true`` so its source can say so.
    """
    sha = sha256
    suffix = suffix_of(name)
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    title = extracted.title or stem.replace("_", " ").replace("-", " ").strip() or name
    file_meta = {"name": name.rsplit("/", 1)[-1], "sha256": sha, "size": size,
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
        if section.ocr:
            extra["ocr"] = True
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
