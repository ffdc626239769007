"""Split text into overlapping chunks at paragraph, then sentence, then word boundaries.

The seeds use ~1000 characters with ~180 overlap. A chunk never ends mid-word; the overlap is
made of whole sentences (or whole words when a sentence is longer than the overlap) so that a
fact cut by a boundary is still whole in one of the two chunks.
"""

from __future__ import annotations

import re

_PARA_SPLIT = re.compile(r"\n\s*\n")
_SENT_SPLIT = re.compile(r"(?<=[.!?…])\s+(?=[\"'(\[]?[A-Z0-9À-ÖØ-Þ#*\-])|(?<=\n)")
# A period that ends an abbreviation, not a sentence: initials ("U.S.", "John F. Kennedy"), titles
# before a name ("Dr. Ng", "Fort St. Frédéric") and "e.g." before an example. Cut there, "the
# defunct U.S." and "Information Agency, which…" are two pieces, neither saying what the sentence
# says, and a chunk may end between them. "a.k.a." introduces another name and "c." (circa) a
# figure: neither ends a sentence.
ABBREVIATION_END_RE = re.compile(
    r"(?:\b[A-Z]\.|\b(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|Ft|Gen|Col|Capt|Lt|Sgt|Gov|Sen|Rep|Rev|vs|e\.g|i\.e|cf|a\.k\.a|c|ca)\.)$"
)


def sentences_of(para: str) -> list[str]:
    """``para`` split at its sentence ends and line breaks, an abbreviation's period not being one
    (but a line break always is)."""
    out: list[str] = []
    start, joins = 0, False
    for m in [*_SENT_SPLIT.finditer(para), None]:
        piece = para[start : m.start() if m else len(para)]
        if joins:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
        if m is None:
            break
        start = m.end()
        joins = "\n" not in m.group(0) and bool(ABBREVIATION_END_RE.search(out[-1]))
    return out


def _pieces(text: str, size: int) -> list[str]:
    """Break text into pieces no longer than ``size``: paragraphs, sentences, then words."""
    pieces: list[str] = []
    for para in _PARA_SPLIT.split(text):
        para = para.strip()
        if not para:
            continue
        if len(para) <= size:
            pieces.append(para)
            continue
        for sent in sentences_of(para):
            sent = sent.strip()
            if not sent:
                continue
            if len(sent) <= size:
                pieces.append(sent)
                continue
            # A sentence longer than a chunk: fall back to words (a word longer than a chunk
            # is kept whole rather than cut).
            buf = ""
            for word in sent.split():
                if buf and len(buf) + 1 + len(word) > size:
                    pieces.append(buf)
                    buf = word
                else:
                    buf = f"{buf} {word}" if buf else word
            if buf:
                pieces.append(buf)
    return pieces


def _tail_overlap(pieces: list[str], overlap: int) -> list[str]:
    """The last whole pieces of a chunk whose joined length stays within ``overlap``."""
    tail: list[str] = []
    total = 0
    for piece in reversed(pieces):
        if total + len(piece) + 1 > overlap:
            break
        tail.insert(0, piece)
        total += len(piece) + 1
    if not tail and pieces and overlap > 0:
        # Last piece is longer than the overlap: carry its last words instead.
        words = pieces[-1].split()
        carried: list[str] = []
        for word in reversed(words[1:]):
            if total + len(word) + 1 > overlap:
                break
            carried.insert(0, word)
            total += len(word) + 1
        if carried:
            tail = [" ".join(carried)]
    return tail


def split_text(text: str, *, size: int = 1000, overlap: int = 180) -> list[str]:
    """Split ``text`` into chunks of at most ~``size`` characters overlapping by ~``overlap``."""
    if size <= 0:
        raise ValueError("chunk size must be positive")
    if overlap < 0 or overlap >= size:
        raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")
    text = (text or "").strip()
    if not text:
        return []
    if len(text) <= size:
        return [text]

    chunks: list[str] = []
    current: list[str] = []
    length = 0
    fresh = 0  # pieces in ``current`` that are not overlap carried from the previous chunk
    for piece in _pieces(text, size):
        joined = length + (2 if current else 0) + len(piece)
        if current and joined > size and fresh:
            chunks.append("\n\n".join(current))
            current = _tail_overlap(current, overlap)
            length = sum(len(p) for p in current) + 2 * max(len(current) - 1, 0)
            fresh = 0
            if current and length + 2 + len(piece) > size:
                current, length = [], 0
        current.append(piece)
        length = length + (2 if len(current) > 1 else 0) + len(piece)
        fresh += 1
    if current and fresh:
        chunks.append("\n\n".join(current))
    return chunks
