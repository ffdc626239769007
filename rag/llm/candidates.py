"""The sentences an extractive answer may quote: every distinct sentence (or speaker turn) of the
sources not already said, each with the headings it sits under, embedded with its subject and
scored by the question's words; and the embedding caches the search and the answerer share."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from rag.llm.context import ContextSource
from rag.llm.sentences import split_sections, split_sentences, split_turns
from rag.words import GENERIC_TERMS, content_terms, implied_terms, stem


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


@dataclass
class Sentence:
    source: ContextSource
    position: int
    text: str
    score: float = 0.0  # relevance, plus the source's rank among the sources
    relevance: float = 0.0
    similarity: float = 0.0
    overlap: float = 0.0
    matched: int = 0
    speaker: str = ""
    specific: float = 0.0
    section: str = ""  # the headings a note's sentence sits under ("Usage Using a Macro")
    before: str = ""  # the sentence before it in its source ("" for the first)
    said: bool = False  # the conversation already quoted it

    @property
    def asks(self) -> bool:
        # "**Which shortcuts can be customized?**": a bold question is still a question.
        return self.text.rstrip().rstrip("*_").rstrip().endswith("?")


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def centrality(vecs: list[list[float]]) -> list[float]:
    """Each vector's mean cosine to the others (unit vectors): one pass over their sum, not a
    pass over every pair."""
    if len(vecs) < 2:
        return [0.0] * len(vecs)
    total = [sum(col) for col in zip(*vecs, strict=True)]
    return [(dot(v, total) - dot(v, v)) / (len(vecs) - 1) for v in vecs]


def embedded_text(c: Sentence) -> str:
    """The sentence as embedded: its page title and the headings over it give it its subject ("To
    create one, add #card" under "Flashcards", "type the name in curly braces" under "Using a Macro")."""
    # An article's one heading is usually its title again: said twice, it would only weigh more.
    section = "" if c.section.lower() in c.source.title.lower() else c.section
    subject = " ".join(part for part in (c.source.title, section) if part)
    return f"{subject}: {c.text}" if subject else c.text


# Nothing but labels, each closed by its colon ("File main.js:", "Example:").
_LABELS_ONLY_RE = re.compile(r"(?:[^\s:!?][^:!?]{0,58}:\s*)+")
# Nothing but a web address (a page's screenshot or animation on a line of its own): it says
# nothing to quote.
_ADDRESS_ONLY_RE = re.compile(r"\s*<?https?://\S+?>?\s*")


def unsaid_sentences(sources: list[ContextSource], already_said: str, *, keep_said: bool = False) -> list[Sentence]:
    """Every distinct sentence (or speaker turn) of the sources that the conversation has not
    already said; with ``keep_said``, those it said too, marked ``said``."""
    said = {norm(s) for s in split_sentences(already_said, max_chars=10_000)} if already_said else set()
    said_text = norm(already_said)
    candidates: list[Sentence] = []
    seen: set[str] = set()
    for src in sources:
        turns = split_turns(src.text)
        # In a conversation "it" and "this" point anywhere in what was said, not to the line before;
        # in a written source beside it, to the sentence before.
        spoken = any(sp for sp, _ in turns)
        sections = [s for s, _ in split_sections(src.text)] if not spoken else []
        for pos, (speaker, text) in enumerate(turns):
            before = turns[pos - 1][1] if pos and not spoken else ""
            key = norm(text)
            if key in seen or _LABELS_ONLY_RE.fullmatch(text) or _ADDRESS_ONLY_RE.fullmatch(text):
                # Overlapping chunks repeat sentences; "File counter.js: File main.js:" only
                # introduced code blocks that are not quoted, and says nothing without them.
                continue
            seen.add(key)
            was_said = key in said or (len(key) > 30 and key in said_text)
            if was_said and not keep_said:
                continue
            section = sections[pos] if len(sections) == len(turns) else ""
            candidates.append(
                Sentence(
                    source=src, position=pos, text=text, speaker=speaker, section=section, before=before, said=was_said
                )
            )
    return without_fragments(candidates)


def without_fragments(candidates: list[Sentence]) -> list[Sentence]:
    """The candidates but those that are part of another one: a chunk that begins or ends in
    the middle of a sentence ("beds, 10 operating theatres…") holds a piece of what the chunk
    beside it holds whole ("…a 10-floor building with 700 beds, 10 operating theatres…"), and
    the piece, near the quote's other sentences, would be quoted instead of the whole."""
    keys = [norm(c.text) for c in candidates]
    return [
        c
        for c, key in zip(candidates, keys, strict=True)
        if len(key) < 30 or not any(len(other) > len(key) and key in other for other in keys)
    ]


def score_overlap(candidates: list[Sentence], q_terms: set[str], *, how_to: bool = False) -> None:
    """Set each candidate's ``matched``, ``overlap`` and ``specific`` from the question's words.

    Keyword overlap weighted by rarity among the candidates: "logseq" in every sentence of the
    Logseq docs says nothing, "flashcard" says a lot. ``how_to``: the question asks how to do
    something ("how do i get started"), which a guide titled with the whole of it answers.
    """
    # A dotted name holds its parts: "hnsw.ef_search" says "ef" and "search", as the question
    # "what is ef_search" splits them.
    own_terms = [
        (terms := content_terms(c.text)) | implied_terms(c.text) | {p for t in terms if "." in t for p in t.split(".")}
        for c in candidates
    ]
    if compounds := {t for t in q_terms if "-" in t}:
        # A compound the question took as one word ("rate-limit", as one source writes it) is held
        # by a sentence writing its two words apart too ("hit rate limits twice").
        own_terms = [own | (spaced_compounds(c.text) & compounds) for own, c in zip(own_terms, candidates, strict=True)]
    # The headings over a note's sentence say what it is about, as its page title does; so does
    # the sentence before one that names its subject only as "it" or "his" ("It was re-established
    # in April 1991." after "Warsaw's first stock exchange was established in 1817.").
    title_terms = [
        content_terms(f"{c.source.title} {c.section} {c.before if leans_on_before(c.text) else ''}") for c in candidates
    ]
    # A heading's own words, those its page title lacks, set its sentences apart from the rest of
    # the page ("Using a Macro" on "Macros"): they count as the sentence's own.
    own_terms = [
        own | (content_terms(c.section) - content_terms(c.source.title))
        for own, c in zip(own_terms, candidates, strict=True)
    ]
    df: dict[str, int] = {}
    for own, title in zip(own_terms, title_terms, strict=True):
        for term in (own | title) & q_terms:
            df[term] = df.get(term, 0) + 1
    weight = {t: math.log(1 + (len(candidates) + 1) / (1 + df.get(t, 0))) for t in q_terms}
    total_weight = sum(weight.values()) or 1.0
    # The words that say what the question is about ("p95", "latency"), not what kind of
    # answer it wants ("decide", "summarize"): weighted by rarity, as above.
    specific_terms = q_terms - GENERIC_TERMS
    specific_weight = sum(weight[t] for t in specific_terms) or 1.0
    guides: set[int] = set()
    if how_to and q_terms:
        repeated = {c.source.n for c, own in zip(candidates, own_terms, strict=True) if own & q_terms}
        guides = {
            c.source.n for c in candidates
            if c.source.n not in repeated and q_terms <= content_terms(c.source.title)
        }  # fmt: skip
    for cand, own, title in zip(candidates, own_terms, title_terms, strict=True):
        # A word of the sentence counts fully, one only in its page title counts half: fully for a
        # how-to question whose whole subject the title names and no sentence of the page repeats
        # ("Getting started with knowhub" for "how do i get started"): every sentence of that
        # guide is on it, where a page saying "the next task starts" only uses the word.
        credit = {t: 1.0 for t in own & q_terms}
        title_credit = 1.0 if cand.source.n in guides else 0.5
        credit.update({t: title_credit for t in (title & q_terms) - own})
        cand.matched = len(credit)
        plain = sum(credit.values()) / len(q_terms) if q_terms else 0.0
        # Half plain, half rarity-weighted: with few candidates rarity alone overreacts.
        cand.overlap = 0.5 * plain + 0.5 * sum(weight[t] * c for t, c in credit.items()) / total_weight
        cand.specific = (
            sum(weight[t] * c for t, c in credit.items() if t in specific_terms) / specific_weight
            if specific_terms
            else 1.0
        )


def spaced_compounds(text: str) -> set[str]:
    """Each two words ``text`` writes side by side, as the one hyphenated term they would be
    ("rate limits" → "rate-limit")."""
    words = list(re.finditer(r"[^\W\d_]+", text))
    return {
        stem(f"{a.group(0)}-{b.group(0)}")
        for a, b in zip(words, words[1:], strict=False)
        if text[a.end() : b.start()] == " "
    }


# A sentence whose subject is a pronoun, or that goes on from the one before it ("At the same
# time…", "However,…"): what it is about is named in the sentence before it.
_LEANS_RE = re.compile(
    r"^[\"'(]?(?:It|Its|He|His|She|Her|They|Their|This|These|The latter|All (?:of )?this"
    r"|At the same time|Meanwhile|In addition|Also,|However,|Instead,|Otherwise,|Likewise|Similarly)\b"
    # The same after a phrase of when or where: "From 2000 to 2007 it killed 542 people", or of
    # what the subject was doing: "Traveling to Fort Le Boeuf, he threatened the French".
    r"|^(?:In|From|By|During|After|Before|Since|Until|Between|Over|Within|Throughout|Later|Then)\b"
    r"[^.;:!?\"]{0,60}?(?:,\s*|\s)(?:it|he|she|they|its|his|her|their)\s+[a-z]"
    r"|^(?!(?:Nothing|Something|Anything|Everything|King|Spring|String|Morning|Evening)\b)[A-Z][a-z]{2,}ing\b"
    r"[^.;:!?\"]{0,60}?,\s*(?:he|she|they|it)\s+[a-z]"
)
# An alternative that does not say to what ("X is available as an alternative.", "Y can be used
# instead."): the sentence before it names what it replaces.
_ALTERNATIVE_TO_BEFORE_RE = re.compile(
    r"\b(?:an?\s+alternative|instead|alternatively)\b(?!\s+(?:to|of|for)\b)", re.I
)


def leans_on_before(text: str) -> bool:
    """The sentence names its subject only by a pronoun ("It appoints the Commissioners…"), or
    offers an alternative without naming what to ("…is available as an alternative.")."""
    return bool(_LEANS_RE.match(text) or _ALTERNATIVE_TO_BEFORE_RE.search(text))


def norm(text: str) -> str:
    """Words only: "state [1]." and "state." compare equal."""
    return " ".join(re.findall(r"[a-z0-9]+", re.sub(r"\[\d+\]", " ", text.lower())))


def of_the_names(question: str, candidates: list[Sentence], *, sources: list[Sentence] | None = None) -> list[Sentence]:
    """The candidates but the spoken lines that say the question's thing of another name: "The
    nightly Notion sync hit rate limits" for "how often does the logseq sync run", where "Logseq"
    is a name too (the sources write it with a capital). A line that also says the question's name
    stays, and so does every written sentence: an article names its subject in many ways ("Union
    law" for "EU law"). Names are read in all of ``sources``' lines (default: the candidates): when
    the candidates are a few lines picked from them ("who owns the notion sync" keeping the one
    decision on a sync, the Logseq one), the question's name is still a name they write."""
    if not any(c.speaker for c in candidates):  # written sources only: nothing to drop
        return candidates
    words = [w.lower() for w in re.findall(r"[\w-]+", question)]
    written = " ".join(c.text for c in (sources or candidates))
    names = {m.lower() for m in re.findall(r"(?<=\w )([A-Z][\w-]+)", written)}  # capitalised mid-sentence
    pairs = [(a, b) for a, b in zip(words, words[1:], strict=False) if a in names and len(b) > 2 and b not in names]
    out = []
    for c in candidates:
        lower = c.text.lower()
        for name, head in pairs if c.speaker else ():
            if re.search(rf"\b{re.escape(name)}\b", lower):
                continue
            before = re.findall(rf"(?<=\w )([A-Z][\w-]+) {re.escape(head)}s?\b", c.text, re.I)
            if any(b[0].isupper() and b.lower() in names and b.lower() != name for b in before):
                break
        else:
            out.append(c)
    return out
