"""Hostile and large files, built in code (nothing binary in git): the DOCX decompression bombs
of issue 25, and ordinary files just above Django's in-memory upload threshold.

Each bomb is a valid DOCX (python-docx writes the package) whose ``word/document.xml`` is
replaced, streamed into the zip so building one never holds the unpacked XML in memory.
"""

from __future__ import annotations

import io
import os
import zipfile

_XML_HEAD = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
)
_XML_TAIL = b"</w:body></w:document>"
_PARAGRAPH = b"<w:p><w:r><w:t>bomb</w:t></w:r></w:p>"


def _docx_with_body(write_body) -> bytes:
    from docx import Document

    base = io.BytesIO()
    Document().save(base)
    out = io.BytesIO()
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for item in src.infolist():
            if item.filename == "word/document.xml":
                info = zipfile.ZipInfo("word/document.xml", date_time=item.date_time)
                info.compress_type = zipfile.ZIP_DEFLATED
                info._compresslevel = 9  # what ZipFile.writestr sets; no public name before 3.13
                with dst.open(info, "w", force_zip64=True) as fh:
                    fh.write(_XML_HEAD)
                    write_body(fh)
                    fh.write(_XML_TAIL)
            else:
                dst.writestr(item, src.read(item.filename))
    return out.getvalue()


def _repeat(fh, piece: bytes, total: int) -> None:
    block = piece * max(1, (1024 * 1024) // len(piece))
    written = 0
    while written < total:
        fh.write(block)
        written += len(block)


def docx_text_node_bomb(text_bytes: int = 200 * 1024 * 1024) -> bytes:
    """~205 KB holding one 200 MB text node (lxml: "Text node too long")."""

    def body(fh):
        fh.write(b"<w:p><w:r><w:t>")
        _repeat(fh, b"a", text_bytes)
        fh.write(b"</w:t></w:r></w:p>")

    return _docx_with_body(body)


def docx_paragraph_bomb(xml_bytes: int = 12 * 1024 * 1024) -> bytes:
    """~18 KB holding 12 MB of XML: a third of a million tiny paragraphs (held a thread ~225 s)."""
    return _docx_with_body(lambda fh: _repeat(fh, _PARAGRAPH, xml_bytes))


def docx_paragraph_bomb_large() -> bytes:
    """~88 KB variant (about 80 MB of XML): was still extracting after 300 s at 2.2 GB."""
    return docx_paragraph_bomb(80 * 1024 * 1024)


BOMBS = {
    "docx-text-node-200MB": docx_text_node_bomb,
    "docx-12MB-xml": docx_paragraph_bomb,
    "docx-80MB-xml": docx_paragraph_bomb_large,
}


AUDIT_FACT = "The quarterly audit found seven open issues."


def large_pdf_bytes(size: int = 3 * 1024 * 1024, *, fact: str = AUDIT_FACT) -> bytes:
    """An ordinary PDF of about ``size`` bytes: a page of text and a photo-like (incompressible)
    image, as a scanned appendix or a report with pictures is."""
    from PIL import Image
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    side = int((size / 3) ** 0.5) + 1
    noise = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setTitle("Audit report")
    c.setFont("Helvetica", 11)
    c.drawString(72, 800, fact)
    c.drawString(72, 784, "Every open issue has an owner and a due date in the tracker.")
    c.drawImage(ImageReader(noise), 72, 300, width=400, height=400)
    c.showPage()
    c.save()
    return buf.getvalue()


def large_html_bytes(size: int, *, fact: str = "The cafeteria serves lentil soup on Thursdays.") -> bytes:
    """An HTML page of exactly ``size`` bytes: a short article and an inlined script bundle (what
    makes real saved pages tens of megabytes)."""
    head = (f"<!doctype html><html><head><title>Cafeteria notes</title></head><body><main><h1>Cafeteria notes</h1>"
            f"<p>{fact}</p><p>Menus change every season.</p></main><script>var bundle = \"").encode()  # fmt: skip
    tail = b'";</script></body></html>'
    filler = size - len(head) - len(tail)
    return head + (b"x1y2z3" * (filler // 6 + 1))[:filler] + tail
