"""Text read by OCR: Tesseract (Debian's ``tesseract-ocr`` + ``tesseract-ocr-eng``) through pytesseract.

pytesseract rather than ocrmypdf: knowhub needs the words of a page, not a new PDF with a text
layer. ocrmypdf would pull in ghostscript, pikepdf and a PDF/A rewrite to then read the text
back out; pytesseract is a thin wrapper over the same ``tesseract`` binary, and poppler's
``pdftoppm`` (already used to check extraction) renders the pages without a text layer.

Runs inside the bounded extraction child (``ingestion.extraction``), so a page that makes
Tesseract slow or hungry costs that file, not the web process.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DPI = 300
LANG = os.environ.get("KNOWHUB_OCR_LANG", "eng")
# A bigger image is refused rather than decoded: a 50-megapixel page is ~A3 at 600 dpi.
MAX_IMAGE_PIXELS = 50_000_000


def unavailable() -> str | None:
    """Why OCR cannot run here (a sentence), or None when it can."""
    if shutil.which("tesseract") is None:
        return "the tesseract program is missing: install tesseract-ocr and tesseract-ocr-eng (scripts/install_ocr.sh)"
    if shutil.which("pdftoppm") is None:
        return "pdftoppm is missing: install poppler-utils (scripts/install_ocr.sh)"
    try:
        import pytesseract
    except ImportError:
        return "the pytesseract package is missing: pip install pytesseract"
    try:
        langs = pytesseract.get_languages(config="")
    except Exception as exc:  # a broken install is reported, not raised
        return f"tesseract does not run: {exc}"
    if LANG not in langs:
        return f"tesseract has no '{LANG}' language data: install tesseract-ocr-{LANG}"
    return None


def read_image_file(image_path: str) -> str:
    """The words Tesseract reads in an image file (PNG, JPEG…)."""
    import pytesseract

    # One thread: the extraction child is one of several on a small machine.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    return pytesseract.image_to_string(image_path, lang=LANG, config="--psm 3")


def image_text(data: bytes) -> str:
    """The words of a PNG/JPEG image; a corrupt or oversized image is a ``FileExtractError``."""
    from PIL import Image, UnidentifiedImageError

    from ingestion.sources.files import FileExtractError

    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    try:
        with Image.open(io.BytesIO(data)) as img:
            if img.width * img.height > MAX_IMAGE_PIXELS:
                raise FileExtractError(
                    f"the image is {img.width}×{img.height} pixels (at most {MAX_IMAGE_PIXELS} pixels): refused"
                )
            img.load()
            page = img.convert("L")
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise FileExtractError(f"corrupt or unreadable image: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="knowhub-ocr-") as tmp:
        path = str(Path(tmp) / "page.png")
        page.save(path)
        return read_image_file(path)


def pdf_pages(data: bytes, pages: list[int], *, dpi: int = DPI) -> dict[int, str]:
    """OCR text of the given 1-based pages of a PDF, each rendered by ``pdftoppm`` at ``dpi``."""
    out: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="knowhub-ocr-") as tmp:
        pdf = Path(tmp) / "in.pdf"
        pdf.write_bytes(data)
        for number in pages:
            stem = Path(tmp) / f"p{number}"
            done = subprocess.run(
                ["pdftoppm", "-r", str(dpi), "-gray", "-png", "-singlefile", "-f", str(number), "-l", str(number),
                 str(pdf), str(stem)],
                capture_output=True, timeout=120, check=False,
            )  # fmt: skip
            png = stem.with_suffix(".png")
            if done.returncode != 0 or not png.exists():
                continue  # a page poppler cannot draw has no words to give
            out[number] = read_image_file(str(png))
            png.unlink()
    return out
