"""``manage.py bench_files DIR``: ingest a folder of PDF/DOCX/HTML/PPTX files and report files/s,
chunks/s and how many PDF pages gave text compared with ``pdftotext`` (poppler-utils).

``--make-sample DIR`` first fills DIR with real documents found on a Debian machine (the PDFs and
HTML manuals under /usr/share/doc) plus DOCX files written from those HTML pages' headings and
paragraphs, so the figures come from real files without downloading anything.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ingestion.sources.files import FILE_TYPES, MIN_CHARS_PER_PAGE, FileExtractError, extract


def build_sample(dest: Path, *, html_limit: int = 120, docx_limit: int = 40) -> dict:
    from docx import Document

    dest.mkdir(parents=True, exist_ok=True)
    docs = Path("/usr/share/doc")
    pdfs = sorted(p for p in docs.rglob("*.pdf") if p.is_file())
    htmls = sorted(p for p in docs.rglob("*.html") if p.is_file() and p.stat().st_size > 2000)[:html_limit]
    for p in pdfs:
        shutil.copy(p, dest / f"{p.parent.name}-{p.name}")
    for p in htmls:
        shutil.copy(p, dest / f"{p.parent.name}-{p.name}")
    made = 0
    for p in htmls[:docx_limit]:
        try:
            extracted = extract(p.read_bytes(), name=p.name)
        except FileExtractError:
            continue
        doc = Document()
        doc.add_heading(extracted.title or p.stem, level=0)
        for section in extracted.sections:
            for level, heading in enumerate(section.path[:3], start=1):
                doc.add_heading(heading, level=level)
            for para in section.text.split("\n\n"):
                doc.add_paragraph(para)
        doc.save(dest / f"{p.parent.name}-{p.stem}.docx")
        made += 1
    return {"pdf": len(pdfs), "html": len(htmls), "docx": made}


def pdftotext_pages(path: Path) -> list[str] | None:
    """Per-page text from poppler's pdftotext (pages are separated by form feeds)."""
    if shutil.which("pdftotext") is None:
        return None
    out = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, timeout=120)
    if out.returncode != 0:
        return None
    pages = out.stdout.decode("utf-8", "replace").split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("folder")
        parser.add_argument("--make-sample", action="store_true", help="Fill FOLDER from /usr/share/doc first.")
        parser.add_argument("--collection", default="bench-files")
        parser.add_argument("--keep", action="store_true", help="Keep the chunks (default: delete them after).")
        parser.add_argument("--no-ingest", action="store_true", help="Only extract and compare pages; no index writes.")

    def handle(self, *args, folder: str, make_sample: bool, collection: str, keep: bool, no_ingest: bool, **opts):
        from ingestion import services
        from rag.embeddings import get_embedder
        from rag.models import Chunk
        from rag.services import source_delete

        root = Path(folder).expanduser().resolve()
        report: dict = {}
        if make_sample:
            report["sample"] = build_sample(root)
        if not root.is_dir():
            raise CommandError(f"{root} is not a folder")
        files = sorted(p for p in root.rglob("*") if p.suffix.lower() in FILE_TYPES)
        if not files:
            raise CommandError(f"no {', '.join(sorted(FILE_TYPES))} files in {root}")

        # 1. Extraction alone, and PDF pages compared with pdftotext.
        t0 = time.perf_counter()
        errors: dict[str, str] = {}
        pages = {"pdf_pages": 0, "pdftotext_text_pages": 0, "our_text_pages": 0, "both": 0, "word_recall": []}
        for path in files:
            try:
                extracted = extract(path.read_bytes(), name=path.name)
            except FileExtractError as exc:
                errors[path.name] = str(exc)
                continue
            if path.suffix.lower() != ".pdf":
                continue
            ours = {s.page: s.text for s in extracted.sections if s.page}
            theirs = pdftotext_pages(path) or []
            pages["pdf_pages"] += extracted.pages
            for n in range(1, extracted.pages + 1):
                ref = theirs[n - 1] if n - 1 < len(theirs) else ""
                ref_ok = len(ref.strip()) >= MIN_CHARS_PER_PAGE
                our_ok = len(ours.get(n, "")) >= MIN_CHARS_PER_PAGE
                pages["pdftotext_text_pages"] += ref_ok
                pages["our_text_pages"] += our_ok
                pages["both"] += ref_ok and our_ok
                if ref_ok:
                    ref_words = set(ref.lower().split())
                    got = set(ours.get(n, "").lower().split())
                    pages["word_recall"].append(len(ref_words & got) / len(ref_words))
        extract_s = time.perf_counter() - t0
        recall = pages.pop("word_recall")
        pages["share_of_pdftotext_pages_with_text"] = (
            round(pages["both"] / pages["pdftotext_text_pages"], 4) if pages["pdftotext_text_pages"] else None
        )
        pages["mean_word_recall_vs_pdftotext"] = round(sum(recall) / len(recall), 4) if recall else None
        by_type: dict[str, int] = {}
        for path in files:
            by_type[path.suffix.lower()] = by_type.get(path.suffix.lower(), 0) + 1
        report.update({
            "folder": str(root), "files": len(files), "by_type": by_type, "unreadable": errors,
            "extract_seconds": round(extract_s, 2), "extract_files_per_s": round(len(files) / extract_s, 2),
            "pdf": pages,
        })  # fmt: skip

        # 2. The whole path: extract, chunk, embed (the configured provider), write.
        if not no_ingest:
            embedder = get_embedder()
            embedder.embed_query("warm up")  # model load is not ingestion time
            t0 = time.perf_counter()
            run = services.ingest_document_paths(paths=[root], collection=collection, force=True, embedder=embedder)
            ingest_s = time.perf_counter() - t0
            chunks = Chunk.objects.filter(collection=collection, deleted_at__isnull=True).count()
            report["ingest"] = {
                "seconds": round(ingest_s, 2), "files_per_s": round(len(files) / ingest_s, 2),
                "chunks": chunks, "chunks_per_s": round(chunks / ingest_s, 2), "failed": run.failed,
                "embedded": run.embedded, "embedding_model": embedder.name,
            }  # fmt: skip
            if not keep:
                ids = {}
                for st, sid in Chunk.objects.filter(collection=collection).values_list("source_type", "source_id"):
                    ids.setdefault(st, set()).add(sid)
                for st, sids in ids.items():
                    source_delete(collection=collection, source_type=st, source_ids=sorted(sids))
                from ingestion.models import SourceRoot

                SourceRoot.objects.filter(path=str(root), collection=collection).delete()
        self.stdout.write(json.dumps(report, indent=2))
