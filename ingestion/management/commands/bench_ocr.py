"""``manage.py bench_ocr [PDF or DIR …]``: how well and how fast OCR reads real pages.

Takes pages of real PDFs that have a text layer (by default the PDFs a Debian machine ships under
/usr/share/doc), renders each to an image with ``pdftoppm`` (what a scan of it would be), reads
the image with Tesseract, and compares with the page's own text layer (``pdftotext``): word
recall (the share of the text layer's words, with repeats, that OCR found) and pages per second
(render + OCR). The text layer is the reference; nothing here is tuned on these pages.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ingestion.management.commands.bench_files import pdftotext_pages
from ingestion.sources import ocr

WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> Counter:
    return Counter(w for w in WORD.findall(text.lower()) if len(w) > 1 or w.isdigit())


def recall(reference: Counter, found: Counter) -> tuple[int, int]:
    return sum(min(n, found[w]) for w, n in reference.items()), sum(reference.values())


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*", help="PDFs or folders of PDFs (default: /usr/share/doc)")
        parser.add_argument("--pages", type=int, default=30, help="pages to read in all (spread over the PDFs)")
        parser.add_argument("--dpi", type=int, default=ocr.DPI)
        parser.add_argument("--min-chars", type=int, default=300, help="skip pages with less text than this")

    def handle(self, *args, **opts):
        missing = ocr.unavailable()
        if missing:
            raise CommandError(f"OCR not available: {missing}")
        roots = [Path(p) for p in opts["paths"]] or [Path("/usr/share/doc")]
        pdfs = sorted({p for r in roots for p in ([r] if r.is_file() else r.rglob("*.pdf")) if p.is_file()})
        if not pdfs:
            raise CommandError("no PDFs found")
        chosen: list[tuple[Path, int, str]] = []
        per_pdf = max(1, opts["pages"] // len(pdfs))
        for pdf in pdfs:
            pages = pdftotext_pages(pdf) or []
            good = [(i + 1, t) for i, t in enumerate(pages) if len(t.strip()) >= opts["min_chars"]]
            step = max(1, len(good) // per_pdf)
            chosen += [(pdf, n, t) for n, t in good[::step][:per_pdf]]
        chosen = chosen[: opts["pages"]]
        hit = total = 0
        seconds = 0.0
        by_pdf: dict[str, list[int]] = {}
        with tempfile.TemporaryDirectory(prefix="knowhub-bench-ocr-") as tmp:
            for pdf, number, reference in chosen:
                stem = Path(tmp) / f"p{number}"
                start = time.perf_counter()
                subprocess.run(["pdftoppm", "-r", str(opts["dpi"]), "-gray", "-png", "-singlefile", "-f", str(number),
                                "-l", str(number), str(pdf), str(stem)], check=True, capture_output=True)  # fmt: skip
                text = ocr.read_image_file(str(stem.with_suffix(".png")))
                seconds += time.perf_counter() - start
                h, t = recall(words(reference), words(text))
                hit, total = hit + h, total + t
                acc = by_pdf.setdefault(pdf.name, [0, 0, 0])
                acc[0], acc[1], acc[2] = acc[0] + h, acc[1] + t, acc[2] + 1
        for name, (h, t, n) in by_pdf.items():
            self.stdout.write(f"{name:40} {n:3} pages  word recall {h / max(t, 1):.3f} ({h}/{t})")
        self.stdout.write(
            f"overall: {len(chosen)} pages at {opts['dpi']} dpi, word recall {hit / max(total, 1):.3f} "
            f"({hit}/{total} words), {len(chosen) / max(seconds, 1e-9):.2f} pages/s (render + OCR, one thread)"
        )
