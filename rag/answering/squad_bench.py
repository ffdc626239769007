"""Answer quality on articles (``manage.py bench_answers --dataset …/squad-dev``).

The second answer benchmark beside the QMSum meetings: encyclopedia articles (markdown files in
``docs/``) and SQuAD 2.0 questions about them (``questions.jsonl``: ``question``, ``article``,
``answers`` — empty when the article does not answer). Every question is asked through the same
``ask`` pipeline as the page, restricted to the collection the articles were indexed into.

Figures: ``answer_found`` (answerable questions whose answer text appears in the answer),
``right_article_cited`` (answered answerable questions that cite their article),
``answerable_refused`` and ``unanswerable_refused``, and a peer asked in the same run:
``peer_answer_found``, plain BM25 over the articles' sentences, the top sentences up to the
same length as the pipeline's answer to that question.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rag.acl import Scope
from rag.answering.answer_bench import answer_text, is_refusal
from rag.search import SearchFilters

_WORD_RE = re.compile(r"[a-z0-9]+")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass
class ArticleQuestion:
    question: str
    article: str
    answers: list[str]

    @property
    def answerable(self) -> bool:
        return bool(self.answers)


def is_squad_folder(root: Path) -> bool:
    return (Path(root) / "questions.jsonl").is_file() and (Path(root) / "docs").is_dir()


def squad_questions(root: Path) -> list[ArticleQuestion]:
    out = []
    for line in (Path(root) / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        answers = [a for a in item.get("answers") or [] if isinstance(a, str) and a.strip()]
        question = str(item["question"]).strip()
        out.append(ArticleQuestion(question=question, article=str(item["article"]), answers=answers))
    return out


def sample(questions: list, every: int, offset: int = 0) -> list:
    """Every ``every``-th question from ``offset`` (deterministic), for a quicker run; offsets
    apart give disjoint samples (one to tune on, another held out)."""
    every = max(1, every)
    return questions[offset % every :: every]


def normalise(text: str) -> str:
    """Lower case words only, as SQuAD compares answers ("The 1973" ~ "1973")."""
    return " ".join(_WORD_RE.findall((text or "").lower()))


def found(answers: list[str], text: str) -> bool:
    said = f" {normalise(text)} "
    return any(f" {normalise(a)} " in said for a in answers if normalise(a))


def article_of(source: dict) -> str:
    """A cited source's article: its file name, as the bench names articles ("1973 oil crisis")."""
    sid = Path(str(source.get("source_id") or "")).name
    return re.sub(r"\.md$", "", sid).replace("_", " ").lower()


class SentenceBM25:
    """Plain BM25 (k1 1.2, b 0.75) over the articles' sentences: the peer the answerer must beat."""

    def __init__(self, sentences: list[str]):
        self.sentences = sentences
        self.terms = [Counter(_WORD_RE.findall(s.lower())) for s in sentences]
        self.lengths = [sum(t.values()) for t in self.terms]
        self.avg = statistics.fmean(self.lengths) if self.lengths else 1.0
        df: Counter = Counter()
        for t in self.terms:
            df.update(t.keys())
        n = len(sentences)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def top(self, query: str, *, chars: int) -> str:
        q = set(_WORD_RE.findall(query.lower()))
        scores = []
        for i, (t, length) in enumerate(zip(self.terms, self.lengths, strict=True)):
            s = sum(
                self.idf[w] * t[w] * 2.2 / (t[w] + 1.2 * (0.25 + 0.75 * length / self.avg)) for w in q if w in t
            )
            if s > 0:
                scores.append((s, i))
        out, used = [], 0
        for _, i in sorted(scores, reverse=True):
            if used >= chars:
                break
            out.append(self.sentences[i])
            used += len(self.sentences[i]) + 1
        return " ".join(out)


def article_sentences(root: Path) -> list[str]:
    out = []
    for path in sorted((Path(root) / "docs").glob("*.md")):
        for para in path.read_text(encoding="utf-8").split("\n"):
            para = para.strip().lstrip("#").strip()
            out.extend(s.strip() for s in _SENTENCE_RE.split(para) if len(s.split()) >= 4)
    return out


def run_squad_bench(
    *, root: Path, questions: list[ArticleQuestion], collection: str, model: str | None = None,
    scope: Scope | None = None, progress=None,
) -> dict:  # fmt: skip
    from rag.answering.services import ask_collect

    scope = scope or Scope.everything()
    filters = SearchFilters(collections=[collection])
    peer = SentenceBM25(article_sentences(root))
    rows: list[dict] = []
    seconds: list[float] = []
    for i, q in enumerate(questions):
        started = time.perf_counter()
        result = ask_collect(user=None, scope=scope, query=q.question, filters=filters, model=model, log=False)
        seconds.append(time.perf_counter() - started)
        text = answer_text(result.get("answer") or "")
        refused = is_refusal(result)
        by_uid = {s["chunk_uid"]: s for s in result.get("sources") or []}
        cited = {article_of(by_uid[c["chunk_uid"]]) for c in result.get("citations") or [] if c["chunk_uid"] in by_uid}
        # The peer quotes as much as the answer did (at least one sentence's worth when it refused).
        peer_text = peer.top(q.question, chars=max(len(text), 150)) if q.answerable else ""
        rows.append({
            "answerable": q.answerable, "refused": refused,
            "found": found(q.answers, text) if q.answerable and not refused else False,
            "peer_found": found(q.answers, peer_text) if q.answerable else False,
            "right_article": (q.article.lower() in cited) if q.answerable and not refused else None,
        })  # fmt: skip
        if progress:
            progress(i + 1)
    return {"collection": collection, "model": model or "default", **squad_figures(rows),
            "seconds": round(sum(seconds), 2),
            "seconds_per_question": round(statistics.fmean(seconds), 3) if seconds else None}  # fmt: skip


def _mean(values) -> float | None:
    values = list(values)
    return round(statistics.fmean(values), 4) if values else None


def squad_figures(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answered = [r for r in answerable if r["right_article"] is not None]
    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        "answer_found": _mean(1.0 if r["found"] else 0.0 for r in answerable),
        "peer_answer_found": _mean(1.0 if r["peer_found"] else 0.0 for r in answerable),
        "right_article_cited": _mean(1.0 if r["right_article"] else 0.0 for r in answered),
        "answerable_refused": _mean(1.0 if r["refused"] else 0.0 for r in answerable),
        "unanswerable_refused": _mean(1.0 if r["refused"] else 0.0 for r in unanswerable),
    }
