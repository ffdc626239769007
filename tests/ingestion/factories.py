"""Small builders for ingestion tests: a course tree with typed blocks, an imagimodel, and real
PDF, DOCX, HTML and PPTX files built in the test (reportlab, python-docx, python-pptx), so file
ingestion is tested on the formats themselves, not on mocks of the parsers."""

from __future__ import annotations

import datetime as dt
import io

from django.utils import timezone

from ingestion.models import (
    Chapter,
    ContentBlock,
    Course,
    Imagimodel,
    Layer,
    Page,
    Subchapter,
    Zone,
)


def course_tree(*, slug: str = "js-foundations", canon: bool = False, subchapter_title: str = "JavaScript"):
    course, _ = Course.objects.get_or_create(slug=slug, defaults={"title": f"Course {slug}", "is_canon": canon})
    chapter, _ = Chapter.objects.get_or_create(course=course, slug="functions", defaults={"title": "Functions"})
    sub, _ = Subchapter.objects.get_or_create(
        chapter=chapter, slug=subchapter_title.lower().replace(" ", "-"), defaults={"title": subchapter_title}
    )
    return course, chapter, sub


def page(sub: Subchapter, *, slug: str = "closures", title: str = "Closures", published: bool = True,
         concepts=("closures", "scope"), blocks: list[dict] | None = None) -> Page:  # fmt: skip
    p = Page.objects.create(
        subchapter=sub, slug=slug, title=title, concepts=list(concepts),
        published_at=timezone.now() - dt.timedelta(days=1) if published else None,
    )  # fmt: skip
    for i, spec in enumerate(blocks if blocks is not None else default_blocks()):
        ContentBlock.objects.create(page=p, order=i, **spec)
    return p


def default_blocks() -> list[dict]:
    return [
        {
            "kind": ContentBlock.Kind.TEXT, "heading": "What a closure is",
            "text": "A closure is a function bundled with references to the variables of the scope it was "
            "created in. The inner function keeps those variables alive after the outer function returns.",
        },
        {
            "kind": ContentBlock.Kind.TEXT_IMAGE_CODE, "text": "A counter keeps its count in a closure.",
            "image_url": "https://example.org/counter.png", "image_alt": "Diagram of a counter closure holding count",
            "image_caption": "The returned function still sees count", "image_classification": "diagram",
            "code": "function makeCounter() {\n  let count = 0;\n  return () => ++count;\n}", "language": "js",
        },
        {
            "kind": ContentBlock.Kind.CODE_EDITOR, "text": "Try it: two counters do not share state.",
            "files": [
                {"name": "counter.js", "code": "export const makeCounter = () => { let n = 0; return () => ++n; };"},
                {"name": "index.html", "language": "html", "code": "<script type=module src=counter.js></script>"},
            ],
        },
    ]  # fmt: skip


def imagimodel(*, course: Course | None = None) -> Imagimodel:
    model = Imagimodel.objects.create(
        slug="closure-castle", title="The Closure Castle", course=course,
        description="A castle whose rooms remember who built them.", image_url="https://example.org/castle.png",
        published_at=timezone.now() - dt.timedelta(days=1),
    )  # fmt: skip
    Layer.objects.create(imagimodel=model, order=0, name="Backpack of Variables",
                         description="Each function carries a backpack with the variables it closed over.")  # fmt: skip
    Layer.objects.create(
        imagimodel=model, order=1, name="Gatekeeper", description="The outer function guards the gate."
    )
    Zone.objects.create(imagimodel=model, order=0, name="Throne room", description="Where the returned function sits.",
                        x=0.3, y=0.6, zoom=2.0)  # fmt: skip
    return model


# --- files ---------------------------------------------------------------------------------------


def pdf_bytes(pages: list[tuple[str | None, str]], *, title: str = "Staff handbook", password: str = "") -> bytes:
    """One page per ``(heading or None, body)``; headings become outline entries (bookmarks)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, encrypt=password or None)
    c.setTitle(title)
    for i, (heading, body) in enumerate(pages):
        y = 800
        if heading:
            key = f"h{i}"
            c.bookmarkPage(key)
            c.addOutlineEntry(heading, key, level=0)
            c.setFont("Helvetica-Bold", 16)
            c.drawString(72, y, heading)
            y -= 30
        c.setFont("Helvetica", 11)
        for line in body.split("\n"):
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def scanned_pdf_bytes(pages: int = 2) -> bytes:
    """Pages that only carry drawings (what a scan without OCR looks like to a text extractor)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    for _ in range(pages):
        c.rect(72, 400, 300, 300, fill=1)
        c.showPage()
    c.save()
    return buf.getvalue()


def docx_bytes(parts: list[tuple[str, str]], *, title: str = "") -> bytes:
    """``parts``: ("h1"/"h2"/"p"/"li", text) in order."""
    from docx import Document

    doc = Document()
    if title:
        doc.core_properties.title = title
    for kind, text in parts:
        if kind.startswith("h"):
            doc.add_heading(text, level=int(kind[1]))
        elif kind == "li":
            doc.add_paragraph(text, style="List Bullet")
        else:
            doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def pptx_bytes(slides: list[tuple[str, str]]) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for heading, body in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = heading
        slide.placeholders[1].text = body
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


HTML = b"""<!doctype html><html><head><title>Onboarding guide</title><script>var x = 1;</script></head>
<body><nav>Home | About</nav><main>
<h1>Onboarding guide</h1><p>Welcome to the team.</p>
<h2>Laptop setup</h2><p>Install the VPN client before your first day.</p><ul><li>Request a badge</li></ul>
<h2>Expenses</h2><p>Submit receipts within thirty days through the finance portal.</p>
</main><footer>(c) ACME</footer></body></html>"""


# --- scans (OCR) ----------------------------------------------------------------------------------


def text_image(lines: list[str], *, fmt: str = "PNG", width: int = 2480) -> bytes:
    """A page photographed or scanned at ~300 dpi: black text on white, no text layer anywhere.
    Drawn with the DejaVu-like Vera font that reportlab ships, so no system font is needed."""
    from pathlib import Path

    import reportlab
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"), 42)
    img = Image.new("L", (width, 180 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((150, 120 + 70 * i), line, font=font, fill=0)
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def scanned_text_pdf_bytes(pages: list[list[str] | str]) -> bytes:
    """A PDF whose pages are either a text layer (a str) or a scanned image of lines (a list)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    for page in pages:
        if isinstance(page, str):
            c.setFont("Helvetica", 11)
            for k, line in enumerate(page.split("\n")):
                c.drawString(72, 800 - 16 * k, line)
        else:
            png = text_image(page)
            c.drawImage(ImageReader(io.BytesIO(png)), 0, A4[1] - 842 * (180 + 70 * len(page)) / 3508,
                        width=A4[0], height=842 * (180 + 70 * len(page)) / 3508)  # fmt: skip
        c.showPage()
    c.save()
    return buf.getvalue()
