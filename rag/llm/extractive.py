"""The offline answerer: quotes the retrieved sentences that best answer the question.

It reads the same messages an LLM gets (``rag.llm.context``), splits each numbered source into
sentences, scores them by embedding similarity to the question (the local model, one batch) plus
keyword overlap, picks a few non-redundant ones (MMR), and writes them grouped by source in
document order, each followed by its ``[n]``. When nothing scores high enough it says so instead
of quoting noise. It never invents text: ``generative`` is False.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from rag.llm.base import Completion, LLMError
from rag.llm.context import ContextSource, parse_user_prompt

logger = logging.getLogger(__name__)

_STOP_TEXT = """a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves tell please show give explain
describe does much many way ways use using used get make know want need also"""
STOPWORDS = frozenset(_STOP_TEXT.split())

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+#.-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_PROPERTY_RE = re.compile(r"^\s*[\w-]+::\s*")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_HEADING_RE = re.compile(r"^\s*#{1,6}\s+")
_BLOCK_REF_RE = re.compile(r"\(\([0-9a-f-]{8,}\)\)")
_LINK_RE = re.compile(r"\[\[([^\]]+)\]\]")
_MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ORG_DIRECTIVE_RE = re.compile(r"#\+\w+(?::\S*)?")


def stem(word: str) -> str:
    """A deliberately crude stemmer: enough to match "meetings" with "meeting"."""
    word = word.lower().strip("'.-")
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "edly", "ed", "er"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=256)
def _cached_query_vector(embedder, text: str) -> tuple[float, ...]:
    return tuple(embedder.embed_query(text))


def query_vector(embedder, text: str) -> list[float]:
    """The embedding of a question, cached: the search and the answerer both need it."""
    return list(_cached_query_vector(embedder, text))


_SENTENCE_CACHE: dict[tuple[int, str], list[float]] = {}
_SENTENCE_CACHE_MAX = 20_000


def sentence_vectors(embedder, texts: list[str]) -> list[list[float]]:
    """Sentence embeddings in one batch, cached by text: popular chunks are quoted again and again."""
    key = id(embedder)
    missing = list(dict.fromkeys(t for t in texts if (key, t) not in _SENTENCE_CACHE))
    if missing:
        if len(_SENTENCE_CACHE) + len(missing) > _SENTENCE_CACHE_MAX:
            _SENTENCE_CACHE.clear()
        for text, vec in zip(missing, embedder.embed_documents(missing), strict=True):
            _SENTENCE_CACHE[(key, text)] = vec
    return [_SENTENCE_CACHE[(key, t)] for t in texts]


def clear_caches() -> None:
    """Forget cached query and sentence embeddings (benchmarks measure cold asks)."""
    _cached_query_vector.cache_clear()
    _SENTENCE_CACHE.clear()


def content_terms(text: str) -> set[str]:
    return {stem(w) for w in _WORD_RE.findall(text) if w.lower() not in STOPWORDS and len(w) > 1}


@dataclass
class Sentence:
    source: ContextSource
    position: int
    text: str
    score: float = 0.0
    similarity: float = 0.0
    overlap: float = 0.0
    matched: int = 0


def clean_line(line: str) -> str:
    """A source line as prose: no bullets, heading marks, block refs or link brackets."""
    line = _BLOCK_REF_RE.sub("", line)
    line = _ORG_DIRECTIVE_RE.sub("", line)
    line = _LINK_RE.sub(r"\1", line)
    line = _MD_LINK_RE.sub(r"\1", line)
    line = _HEADING_RE.sub("", line)
    line = _BULLET_RE.sub("", line)
    return re.sub(r"\s+", " ", line).strip()


def split_sentences(text: str, *, max_chars: int = 400) -> list[str]:
    """Sentences of a source, one line of notes at a time (bullets rarely end with a period)."""
    out: list[str] = []
    in_code = False
    lead = ""  # "To create a card:" introduces the bullet under it: quote them together
    for raw in text.splitlines():
        if raw.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        # "description:: Cards are blocks that…" keeps its value; short ones ("type:: [[Feature]]")
        # fall below the word minimum.
        is_property = bool(_PROPERTY_RE.match(raw))
        line = clean_line(_PROPERTY_RE.sub("", raw, count=1))
        if not line:
            continue
        if lead and is_property:  # a list intro followed by properties: quote the intro alone
            out.extend(_sentences(lead, max_chars))
            lead = ""
        if lead:
            line, lead = f"{lead} {line}", ""
        if line.endswith(":") and len(line) < 120:
            lead = line
            continue
        out.extend(_sentences(line, max_chars))
    if lead:
        out.extend(_sentences(lead, max_chars))
    return out


def _sentences(line: str, max_chars: int) -> list[str]:
    out = []
    for sentence in _SENT_SPLIT_RE.split(line):
        sentence = sentence.strip()
        if len(_WORD_RE.findall(sentence)) < 4:
            continue
        if len(sentence) > max_chars:
            cut = sentence[:max_chars].rsplit(" ", 1)[0]
            sentence = cut.rstrip(",;:") + "…"
        out.append(sentence)
    return out


def cite(sentence: str, n: int) -> str:
    """``sentence`` with ``[n]`` before its final punctuation (or at its end)."""
    sentence = sentence.rstrip()
    if sentence and sentence[-1] in ".!?" and not sentence.endswith("..."):
        return f"{sentence[:-1]} [{n}]{sentence[-1]}"
    return f"{sentence} [{n}]"


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


class ExtractiveLLM:
    """Quotes, never writes: the offline default behind the LLM protocol.

    ``min_similarity`` is the cosine (all-MiniLM-L6-v2) the best sentence must reach, unless
    it shares at least ``min_overlap`` of the question's content words.
    """

    name = "extractive"
    generative = False

    def __init__(
        self,
        *,
        embedder=None,
        max_sentences: int = 5,
        max_chars: int = 1100,
        max_candidates: int = 96,
        min_similarity: float = 0.32,
        min_overlap: float = 0.5,
        overlap_similarity: float = 0.25,
        mmr_lambda: float = 0.7,
        floor_ratio: float = 0.7,
    ):
        self._embedder = embedder
        self.max_sentences = max_sentences
        self.max_chars = max_chars
        self.max_candidates = max_candidates
        self.min_similarity = min_similarity
        self.min_overlap = min_overlap
        self.overlap_similarity = overlap_similarity
        self.mmr_lambda = mmr_lambda
        self.floor_ratio = floor_ratio

    @property
    def embedder(self):
        if self._embedder is None:
            from rag.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    def complete(self, *, messages, max_tokens=800, temperature=0.2, json_schema=None, timeout=None) -> Completion:
        if json_schema is not None:
            raise LLMError("The extractive answerer cannot produce structured output.")
        final = None
        for part in self.stream(messages=messages, max_tokens=max_tokens, temperature=temperature, timeout=timeout):
            if isinstance(part, Completion):
                final = part
        assert final is not None
        return final

    def stream(self, *, messages, max_tokens=800, temperature=0.2, timeout=None) -> Iterator[str | Completion]:
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        question, sources, topic = parse_user_prompt(user)
        said = " ".join(m["content"] for m in messages if m.get("role") == "assistant")
        parts = list(self.answer_parts(question=question, sources=sources, topic=topic, already_said=said))
        yield from parts
        yield Completion(text="".join(parts), model=self.name)

    # -- the answerer ---------------------------------------------------------------------------

    def select(self, *, question: str, sources: list[ContextSource], topic: str = "", already_said: str = "") -> tuple[list[Sentence], float]:
        """The chosen sentences (in reading order) and the best raw similarity seen."""
        said = {_norm(s) for s in split_sentences(already_said, max_chars=10_000)} if already_said else set()
        said_text = _norm(already_said)
        candidates: list[Sentence] = []
        seen: set[str] = set()
        for src in sources:
            for pos, text in enumerate(split_sentences(src.text)):
                key = _norm(text)
                if key in seen:
                    continue  # overlapping chunks repeat sentences
                seen.add(key)
                if key in said or (len(key) > 30 and key in said_text):
                    continue
                candidates.append(Sentence(source=src, position=pos, text=text))
        if not candidates:
            return [], 0.0
        query = f"{topic} {question}".strip() if topic else question
        q_terms = content_terms(query)
        n_sources = max(len(sources), 1)
        rank = {src.n: i for i, src in enumerate(sources)}
        # Keyword overlap weighted by rarity among the candidates: "logseq" in every sentence of
        # the Logseq docs says nothing, "flashcard" says a lot.
        own_terms = [content_terms(c.text) for c in candidates]
        title_terms = [content_terms(c.source.title) for c in candidates]
        df: dict[str, int] = {}
        for own, title in zip(own_terms, title_terms, strict=True):
            for term in (own | title) & q_terms:
                df[term] = df.get(term, 0) + 1
        weight = {t: math.log(1 + (len(candidates) + 1) / (1 + df.get(t, 0))) for t in q_terms}
        total_weight = sum(weight.values()) or 1.0
        for cand, own, title in zip(candidates, own_terms, title_terms, strict=True):
            # A word of the sentence counts fully, one only in its page title counts half.
            credit = {t: 1.0 for t in own & q_terms}
            credit.update({t: 0.5 for t in (title & q_terms) - own})
            cand.matched = len(credit)
            plain = sum(credit.values()) / len(q_terms) if q_terms else 0.0
            # Half plain, half rarity-weighted: with few candidates rarity alone overreacts.
            cand.overlap = 0.5 * plain + 0.5 * sum(weight[t] * c for t, c in credit.items()) / total_weight
        if len(candidates) > self.max_candidates:
            # Embedding is the cost: keep the sentences of the best-ranked sources, and any that
            # share words with the question.
            keep = sorted(candidates, key=lambda c: -(c.overlap + 0.5 * (1 - rank[c.source.n] / n_sources)))
            kept = {id(c) for c in keep[: self.max_candidates]}
            candidates = [c for c in candidates if id(c) in kept]
        q_vec = query_vector(self.embedder, query)
        # The title gives a note's sentence its subject ("To create one, add #card" under "Flashcards").
        vecs = sentence_vectors(self.embedder, [f"{c.source.title}: {c.text}" if c.source.title else c.text for c in candidates])
        for cand, vec in zip(candidates, vecs, strict=True):
            cand.similarity = _dot(q_vec, vec)
            prior = 1.0 - rank.get(cand.source.n, 0) / n_sources
            cand.score = 0.65 * cand.similarity + 0.25 * cand.overlap + 0.1 * prior
        best = max(candidates, key=lambda c: c.score)
        # Relevant when the meaning is close, or when most of the question's words (two at least,
        # so "capital" alone does not tie Peru to Borealis Capital) appear with some closeness.
        relevant = any(
            c.similarity >= self.min_similarity
            or (
                c.overlap >= self.min_overlap
                and c.similarity >= self.overlap_similarity
                and (c.matched >= 2 or len(q_terms) == 1)
            )
            for c in candidates
        )
        best_similarity = max(c.similarity for c in candidates)
        if not relevant:
            return [], best_similarity

        vec_of = {id(c): v for c, v in zip(candidates, vecs, strict=True)}
        pool = sorted(candidates, key=lambda c: -c.score)[:60]
        chosen: list[Sentence] = []
        chars = 0
        floor = max(best.score * self.floor_ratio, 0.15)
        while pool and len(chosen) < self.max_sentences:
            def mmr(c: Sentence) -> float:
                redundancy = max((_dot(vec_of[id(c)], vec_of[id(s)]) for s in chosen), default=0.0)
                return self.mmr_lambda * c.score - (1 - self.mmr_lambda) * redundancy

            pick = max(pool, key=mmr)
            pool.remove(pick)
            # Below the floor only to make a second sentence that is relevant on its own.
            if pick.score < floor and (len(chosen) >= 2 or pick.similarity < self.min_similarity + 0.1):
                break
            if any(_dot(vec_of[id(pick)], vec_of[id(s)]) > 0.9 for s in chosen):
                continue
            if chosen and chars + len(pick.text) > self.max_chars:
                continue
            chosen.append(pick)
            chars += len(pick.text)
        # Reading order: sources by their best chosen sentence, then document order inside each.
        order: dict[int, float] = {}
        for s in chosen:
            order[s.source.n] = max(order.get(s.source.n, -math.inf), s.score)
        chosen.sort(key=lambda s: (-order[s.source.n], s.source.n, s.position))
        return chosen, best_similarity

    def answer_parts(self, *, question: str, sources: list[ContextSource], topic: str = "", already_said: str = "") -> Iterator[str]:
        """The answer, one sentence per delta."""
        if not sources:
            yield f"I found nothing relevant to “{question}” in the sources you can see."
            return
        chosen, _ = self.select(question=question, sources=sources, topic=topic, already_said=already_said)
        if not chosen:
            if already_said:
                yield "These sources hold nothing more on this than what I already quoted."
            else:
                yield f"I found nothing relevant to “{question}” in the sources you can see."
            return
        previous = None
        for s in chosen:
            if previous is not None:
                yield "\n\n" if s.source.n != previous else " "
            yield cite(s.text, s.source.n)
            previous = s.source.n


def _norm(text: str) -> str:
    """Words only: "state [1]." and "state." compare equal."""
    return " ".join(re.findall(r"[a-z0-9]+", re.sub(r"\[\d+\]", " ", text.lower())))
