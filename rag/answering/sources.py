"""Sources as a person reads them: one row per document, its retrieved chunks grouped under it.

Search returns chunks; an answer that lists "the same page four times" reads like noise. The
pipeline numbers documents instead: the model sees one numbered source per document (its chunks
in document order), and the response has one row per document with the chunks inside it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rag.llm.context import ContextSource
from rag.llm.sentences import outside_code, unlinked
from rag.search import Hit
from rag.words import GENERIC_TERMS, content_terms

SNIPPET_CHARS = 300

# Emphasis marks only where they open and close a word: "hnsw.ef_search" and "NOTION_TOKEN"
# keep their underscores.
_EMPHASIS_RE = re.compile(r"(?<![\w*_~`])(\*\*|__|\*|_|~~|`)(?=\S)(.+?)(?<=\S)\1(?![\w*_~`])")
_LINE_MARK_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s?|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)", re.M)
_PROPERTY_RE = re.compile(r"^\s*[\w-]+::\s*", re.M)
_FENCE_RE = re.compile(r"^```.*$", re.M)


def collection_label(name: str) -> str:
    """A collection's name as a person reads it: "course_content" → "Course content"."""
    words = re.sub(r"[_\s]+", " ", name or "").strip()
    return words[:1].upper() + words[1:] if words else name


def plain_text(text: str) -> str:
    """Markdown / Logseq markup → the words a person reads (titles and snippets are plain text)."""
    text = _FENCE_RE.sub("", text or "")
    text = outside_code(text, unlinked)
    text = _LINE_MARK_RE.sub("", text)
    text = _PROPERTY_RE.sub("", text)
    for _ in range(2):  # nested emphasis: **_x_**
        text = _EMPHASIS_RE.sub(r"\2", text)
    return re.sub(r"\s+", " ", text).strip()


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    plain = plain_text(text)
    if len(plain) <= limit:
        return plain
    return plain[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"


DocKey = tuple[str, str, str]  # (collection, source_type, source_id): one document


def doc_key(hit: Hit) -> DocKey:
    return (hit.collection, hit.source_type, hit.source_id)


def _position(hit: Hit) -> tuple[int, int]:
    """Where a chunk sits in its document: transcripts know their first turn, others their rank."""
    start = (hit.metadata or {}).get("turn_start")
    return (int(start), hit.rank) if isinstance(start, int) else (0, hit.rank)


@dataclass
class SourceDoc:
    """One document of an answer's sources: its retrieved chunks, best first."""

    hits: list[Hit]
    n: int = 0
    cited: bool = False
    agenda: str = ""  # its agenda item the question is about (``ContextSource.agenda``)
    chunks_in_order: list[Hit] = field(default_factory=list)

    def __post_init__(self):
        self.chunks_in_order = sorted(self.hits, key=_position)

    @property
    def best(self) -> Hit:
        return self.hits[0]

    @property
    def text(self) -> str:
        return "\n\n".join(h.content for h in self.chunks_in_order)

    def context(self) -> ContextSource:
        best = self.best
        return ContextSource(
            n=self.n, title=plain_text(best.title), text=self.text,
            date=best.date.isoformat() if best.date else "", breadcrumb=best.breadcrumb, agenda=self.agenda,
        )  # fmt: skip

    def as_dict(self) -> dict:
        best = self.best
        return {
            "n": self.n,
            "chunk_uid": best.chunk_uid,
            "chunk_uids": [h.chunk_uid for h in self.chunks_in_order],
            "title": plain_text(best.title) or best.source_id,
            "url": best.url,
            "ocr": any((h.metadata or {}).get("ocr") for h in self.chunks_in_order),
            "date": best.date.isoformat() if best.date else None,
            "collection": best.collection,
            "collection_label": collection_label(best.collection),
            "source_type": best.source_type,
            "source_id": best.source_id,
            "breadcrumb": plain_text(best.breadcrumb),
            "agenda": self.agenda,
            "score": best.score,
            "vec_score": best.vec_score,
            "txt_score": best.txt_score,
            "cited": self.cited,
            "snippet": snippet(best.content),
            "content": self.text,
            "chunks": [
                {
                    "chunk_uid": h.chunk_uid, "breadcrumb": plain_text(h.breadcrumb), "score": h.score,
                    "snippet": snippet(h.content), "content": h.content,
                }  # fmt: skip
                for h in self.chunks_in_order
            ],
        }


def group_hits(hits: list[Hit], *, max_docs: int | None = None) -> list[SourceDoc]:
    """Hits (best first) → documents in the order of their best chunk, numbered from 1."""
    groups: dict[DocKey, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(doc_key(hit), []).append(hit)
    docs = [SourceDoc(hits=group) for group in groups.values()]
    if max_docs:
        docs = docs[:max_docs]
    for i, doc in enumerate(docs, start=1):
        doc.n = i
    return docs


@dataclass(frozen=True)
class DocumentEvidence:
    """How documents are weighed before they become sources (``KNOWHUB_ASK_*`` settings).

    ``chunk_weights``: a document's score is its best chunk's score plus its next-best chunks'
    scores times these weights (a meeting that discusses the question in several places beats
    one that mentions it once). ``topic_weight``: the share of the question's words that the
    document's own headings name (its title and, for transcripts, its agenda topics) adds this
    much. ``extra_floor``: a document after the first is a source only when its best chunk scores
    at least this share of the leading document's best chunk (an unrelated page of a small corpus
    is not listed). ``lead_chunks``: how many chunks the leading document may give (``per_doc``
    for the others). ``topic_similarity_weight``: the closest meaning (cosine) between the
    question and one of the document's topics (a meeting's agenda items) adds this much times it,
    where word overlap misses the paraphrase ("the functions of the remote" under "Functional
    requirements"); it needs ``closeness``, the cosine of each topic.
    """

    chunk_weights: tuple[float, ...] = ()
    topic_weight: float = 0.0
    extra_floor: float = 0.0
    lead_chunks: int = 0
    topic_similarity_weight: float = 0.0


def topics_of(hits: list[Hit], agenda: Mapping[DocKey, list[str]]) -> list[str]:
    """The topics a document is filed under: its retrieved chunks' and its whole agenda's."""
    own = (t for h in hits for t in (h.metadata or {}).get("topics") or [] if isinstance(t, str) and t)
    return list(dict.fromkeys([*own, *(agenda.get(doc_key(hits[0]), []) if hits else [])]))


def rank_documents(
    hits: list[Hit], *, question: str = "", evidence: DocumentEvidence | None = None,
    closeness: Mapping[str, float] | None = None, agenda: Mapping[DocKey, list[str]] | None = None,
) -> list[list[Hit]]:  # fmt: skip
    """Documents (each its hits, best first) in order of their evidence for ``question``.

    ``agenda``: every topic of a document (``selectors.document_topics``), beside the topics of
    its retrieved chunks; both the topic words and the topic ``closeness`` (the question's cosine
    to each topic) read them."""
    evidence = evidence or DocumentEvidence()
    groups: dict[DocKey, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(doc_key(hit), []).append(hit)
    docs = list(groups.values())
    if not evidence.chunk_weights and not evidence.topic_weight and not evidence.topic_similarity_weight:
        return docs  # in order of their best chunk
    asked = content_terms(question) - GENERIC_TERMS if evidence.topic_weight and question else set()
    topics = {id(group): topics_of(group, agenda or {}) for group in docs}
    closeness = closeness if evidence.topic_similarity_weight else None

    def score(group: list[Hit]) -> float:
        total = group[0].score + sum(w * h.score for w, h in zip(evidence.chunk_weights, group[1:], strict=False))
        if asked:
            named = content_terms(" ".join([group[0].title or "", *topics[id(group)]]))
            total += evidence.topic_weight * len(asked & named) / len(asked)
        if closeness:
            total += evidence.topic_similarity_weight * max(
                (closeness.get(t, 0.0) for t in topics[id(group)]), default=0.0
            )
        return total

    scores = {id(group): score(group) for group in docs}
    return sorted(docs, key=lambda group: -scores[id(group)])  # stable: ties keep the search's order


def select_hits(
    hits: list[Hit],
    *,
    budget: int,
    max_docs: int,
    per_doc: int,
    question: str = "",
    evidence: DocumentEvidence | None = None,
    closeness: Mapping[str, float] | None = None,
    agenda: Mapping[DocKey, list[str]] | None = None,
) -> list[Hit]:
    """The chunks to answer from when the search returned more than ``budget`` (best first).

    Several documents first: every document's best chunk (up to ``max_docs`` documents, in order
    of ``rank_documents``; after the first only those above ``evidence.extra_floor``), then the
    budget left goes to each kept document's next-best chunks (at most ``per_doc`` each, the
    leading one ``evidence.lead_chunks``), the leading document's first. A long document (a
    meeting transcript, a manual) otherwise fills every slot with its own chunks and a question
    about another one never sees it among the sources. The hits come back grouped by document,
    in that order, each document's best first.
    """
    evidence = evidence or DocumentEvidence()
    docs = rank_documents(hits, question=question, evidence=evidence, closeness=closeness, agenda=agenda)
    if not docs:
        return []
    lead_best = docs[0][0].score
    kept_docs = [docs[0]] + [g for g in docs[1:] if g[0].score >= evidence.extra_floor * lead_best]
    kept_docs = kept_docs[: min(max_docs, budget)]
    limits = [max(per_doc, evidence.lead_chunks)] + [per_doc] * (len(kept_docs) - 1)
    taken = [1] * len(kept_docs)
    left = budget - len(kept_docs)
    if evidence.lead_chunks:  # the leading document first; the others share what it leaves
        extra = min(limits[0] - 1, len(kept_docs[0]) - 1, left)
        taken[0] += extra
        left -= extra
    if left > 0:
        # What is left goes to the next-best chunks of the kept documents, in score order.
        start = 1 if evidence.lead_chunks else 0
        rest = sorted(
            (
                (h.score, i, k)
                for i, group in enumerate(kept_docs)
                if i >= start
                for k, h in enumerate(group)
                if k >= taken[i]
            ),
            key=lambda t: -t[0],
        )
        for _, i, k in rest:
            if left <= 0:
                break
            if k == taken[i] and taken[i] < limits[i]:
                taken[i] += 1
                left -= 1
    return [h for i, group in enumerate(kept_docs) for h in group[: taken[i]]]


def renumber(docs: list[SourceDoc], cited_order: list[int]) -> dict[int, int]:
    """Number documents in order of first citation (then the uncited ones); old → new numbers."""
    by_n = {d.n: d for d in docs}
    ordered = [by_n[n] for n in cited_order if n in by_n]
    ordered += [d for d in docs if d.n not in cited_order]
    mapping = {}
    for i, doc in enumerate(ordered, start=1):
        mapping[doc.n] = i
        doc.cited = doc.n in cited_order
    for doc in ordered:
        doc.n = mapping[doc.n]
    docs[:] = ordered
    return mapping


_CITE_RE = re.compile(r"\[(\d+)\]")


def apply_numbers(text: str, mapping: dict[int, int]) -> str:
    return _CITE_RE.sub(lambda m: f"[{mapping.get(int(m[1]), int(m[1]))}]", text)
