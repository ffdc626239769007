"""Figures for answering: streaming latency and citation accuracy (used by ``bench_ask``)."""

from __future__ import annotations

import datetime as dt
import re
import statistics
import time
from pathlib import Path

from rag.acl import Scope
from rag.units import SourceDocument, Unit

_WORDS_RE = re.compile(r"[a-z0-9]+")
_CITED_RE = re.compile(r"((?:\[\d+\])+)")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: list[float]) -> dict:
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.5), 1),
        "p95": round(percentile(values, 0.95), 1),
        "mean": round(statistics.fmean(values), 1) if values else 0.0,
    }


def read_questions(path: Path) -> list[str]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def measure_stream(*, question: str, user=None, scope: Scope | None = None, model: str | None = None) -> dict:
    """Server-side timings of one streamed ask: first SSE byte, first answer text, last byte."""
    from knowhub.sse import encode_events
    from rag.answering.services import ask

    started = time.perf_counter()
    first_byte = first_text = None
    events = ask(user=user, scope=scope or Scope.everything(), query=question, model=model, log=False)
    for chunk in encode_events(events, failure_detail="", name="ask"):
        now = time.perf_counter()
        if first_byte is None:
            first_byte = now
        if first_text is None and chunk.startswith(b"event: delta"):
            first_text = now
    total = time.perf_counter() - started
    return {
        "ttfb_ms": (first_byte - started) * 1000,
        "first_text_ms": ((first_text or time.perf_counter()) - started) * 1000,
        "total_ms": total * 1000,
    }


def _plain(text: str) -> str:
    """A chunk without link/ref markup (the answerer quotes ``[label](url)`` as ``label``)."""
    from rag.llm.sentences import clean_line

    return "\n".join(clean_line(line) for line in text.splitlines())


def words(text: str) -> list[str]:
    return _WORDS_RE.findall(text.lower())


def _contains(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return False
    n = len(needle)
    first = needle[0]
    return any(haystack[i] == first and haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def cited_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """(sentence, cited numbers) for every citation group in ``answer``.

    The cited text is what precedes the marker back to the previous marker, sentence end or
    line break — the sentence the citation vouches for.
    """
    out = []
    last = 0
    for m in _CITED_RE.finditer(answer):
        before = answer[last : m.start()]
        last = m.end()
        piece = re.split(r"(?<=[.!?])\s+|\n", before.strip())[-1] if before.strip() else ""
        numbers = [int(n) for n in re.findall(r"\d+", m.group(1))]
        # "text [1]." puts the period after the marker; the sentence is still the text before it.
        out.append((piece.strip(" .!?…"), numbers))
    return out


def citation_accuracy(*, questions: list[str], scope: Scope | None = None, model: str | None = None) -> dict:
    """Share of ``[n]`` whose sentence occurs (word for word) in source ``n``'s chunk."""
    from rag.answering.services import ask_collect

    total = correct = answered = 0
    failures: list[dict] = []
    for question in questions:
        result = ask_collect(user=None, scope=scope or Scope.everything(), query=question, model=model, log=False)
        by_n = {s["n"]: s for s in result["sources"]}
        pairs = cited_sentences(result["answer"] or "")
        if pairs:
            answered += 1
        for sentence, numbers in pairs:
            needle = words(sentence.rstrip("…"))
            for n in numbers:
                total += 1
                source = by_n.get(n)
                haystack = words(_plain(f"{source['title']}\n{source['content']}")) if source else []
                if source and _contains(haystack, needle):
                    correct += 1
                else:
                    failures.append({"question": question, "n": n, "sentence": sentence[:200]})
    return {
        "questions": len(questions),
        "answered_with_citations": answered,
        "citations": total,
        "correct": correct,
        "accuracy": round(correct / total, 4) if total else None,
        "failures": failures[:20],
    }


_JOURNAL_RE = re.compile(r"(\d{4})_(\d{2})_(\d{2})")


def markdown_folder_documents(root: Path, *, collection: str = "logseq-docs") -> list[SourceDocument]:
    """One plain SourceDocument per .md/.org file of a notes folder (for measuring only).

    The ingestion app owns real Logseq parsing; this keeps the measurement independent of it.
    """
    docs = []
    for path in sorted(Path(root).rglob("*")):
        if path.suffix not in (".md", ".org") or not path.is_file() or "logseq" in path.relative_to(root).parts[:1]:
            continue
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        if not text:
            continue
        rel = path.relative_to(root).as_posix()
        m = _JOURNAL_RE.fullmatch(path.stem)
        date = dt.date(int(m[1]), int(m[2]), int(m[3])) if m else None
        title = date.isoformat() if date else path.stem.replace("___", "/").replace("%2F", "/")
        docs.append(
            SourceDocument(
                collection=collection,
                source_type="journal" if date else "page",
                source_id=rel,
                units=[Unit(unit_anchor="file", content=text, title=title, date=date, url=f"logseq://{rel}")],
            )
        )
    return docs
