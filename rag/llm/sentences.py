"""Sources as sentences: a note's lines as prose (no bullets, heading marks, block refs or link
brackets), split into sentences; a transcript's lines split into (speaker, sentence) turns; and a
quoted sentence with its citation mark."""

from __future__ import annotations

import re

from rag.chunking import ABBREVIATION_END_RE
from rag.llm.transcripts import speaker_turn, tidy_speech
from rag.words import WORD_RE

_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_PROPERTY_RE = re.compile(r"^\s*[\w-]+::\s*")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_HEADING_RE = re.compile(r"^\s*#{1,6}\s+")
_BLOCK_REF_RE = re.compile(r"\(\([0-9a-f-]{8,}\)\)")
_LINK_RE = re.compile(r"\[\[([^\]]+)\]\]")
_MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ORG_DIRECTIVE_RE = re.compile(r"#\+\w+(?::\S*)?")


_CODE_SPAN_RE = re.compile(r"(`[^`\n]*`)")


def outside_code(text: str, change) -> str:
    """``change`` applied to ``text`` except inside its `code spans`: what a page writes as code
    (`[]()`, `[[PKM]]`) is what to type, and is quoted as written."""
    parts = _CODE_SPAN_RE.split(text)
    return "".join(part if i % 2 else change(part) for i, part in enumerate(parts))


def unlinked(text: str) -> str:
    """``text`` without block refs and org directives, each link read as its text."""
    text = _BLOCK_REF_RE.sub("", text)
    text = _ORG_DIRECTIVE_RE.sub("", text)
    text = _LINK_RE.sub(r"\1", text)
    return _MD_LINK_RE.sub(r"\1", text)


def clean_line(line: str) -> str:
    """A source line as prose: no bullets, heading marks, block refs or link brackets (code spans
    keep theirs)."""
    line = outside_code(line, unlinked)
    line = _HEADING_RE.sub("", line)
    line = _BULLET_RE.sub("", line)
    return re.sub(r"\s+", " ", line).strip()


def split_sentences(text: str, *, max_chars: int = 400) -> list[str]:
    """Sentences of a source, one line of notes at a time (bullets rarely end with a period)."""
    return [sentence for _, sentence in split_sections(text, max_chars=max_chars)]


# An outline's section title: a short bullet, or line, that ends without punctuation.
_SECTION_MAX_WORDS = 6


def _indent(raw: str) -> int:
    return len(raw) - len(raw.lstrip())


def _is_section_title(raw: str, line: str, next_raw: str) -> bool:
    """A "- Using a Macro" bullet over indented ones, or a bare "Usage" line over a list: the title
    of the lines under it, not a sentence of them."""
    if not line or len(line.split()) > _SECTION_MAX_WORDS or line[-1] in ".!?:;,)" or _PROPERTY_RE.match(raw):
        return False
    if _BULLET_RE.match(raw):
        return bool(next_raw.strip()) and _indent(next_raw) > _indent(raw)
    return bool(_BULLET_RE.match(next_raw))


def split_sections(text: str, *, max_chars: int = 400) -> list[tuple[str, str]]:
    """(section, sentence) pairs: each sentence with the headings it sits under ("Usage Using a
    Macro"), which say what it is about though it does not repeat them ("type the name wrapped in
    curly braces")."""
    out: list[tuple[str, str]] = []
    in_code = False
    lead = ""  # "To create a card:" introduces the bullet under it: quote them together
    titles: list[tuple[int, str]] = []  # (indent, title); -1 for a heading over everything after it
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        # A fence may open a list item ("- ```edn"), as outlines write code under a bullet.
        if _BULLET_RE.sub("", raw).strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        indent = -1 if _HEADING_RE.match(raw) or not _BULLET_RE.match(raw) else _indent(raw)
        titles = [t for t in titles if t[0] == -1 or t[0] < indent]
        section = " ".join(t for _, t in titles)
        if _HEADING_RE.match(raw):
            titles = [(-1, clean_line(raw))]
            continue  # a heading is a fragment, not an answer: its words are in the title/path
        next_raw = next((n for n in lines[i + 1 :] if n.strip()), "")
        if _is_section_title(raw, clean_line(raw), next_raw):
            titles = [*titles, (indent, clean_line(raw))] if indent >= 0 else [(-1, clean_line(raw))]
        # "description:: Cards are blocks that…" keeps its value; short ones ("type:: [[Feature]]")
        # fall below the word minimum.
        is_property = bool(_PROPERTY_RE.match(raw))
        line = clean_line(_PROPERTY_RE.sub("", raw, count=1))
        if not line:
            continue
        if lead and is_property:  # a list intro followed by properties: quote the intro alone
            out.extend((section, s) for s in _sentences(lead, max_chars))
            lead = ""
        if lead:
            line, lead = f"{lead} {line}", ""
        if line.endswith(":") and len(line) < 120:
            lead = line
            continue
        out.extend((section, s) for s in _sentences(line, max_chars))
    if lead:
        out.extend((" ".join(t for _, t in titles), s) for s in _sentences(lead, max_chars))
    return out


def sentence_pieces(line: str) -> list[str]:
    """``line`` split at its sentence ends, an abbreviation's period not being one."""
    pieces: list[str] = []
    for piece in _SENT_SPLIT_RE.split(line):
        if pieces and ABBREVIATION_END_RE.search(pieces[-1].rstrip()):
            pieces[-1] = f"{pieces[-1].rstrip()} {piece.lstrip()}"
        else:
            pieces.append(piece)
    return pieces


def _sentences(line: str, max_chars: int) -> list[str]:
    out = []
    for sentence in sentence_pieces(line):
        sentence = sentence.strip()
        if len(WORD_RE.findall(sentence)) < 4:
            continue
        if len(sentence) > max_chars:
            cut = sentence[:max_chars].rsplit(" ", 1)[0]
            sentence = cut.rstrip(",;:") + "…"
        out.append(sentence)
    return out


def split_turns(text: str, *, max_chars: int = 400) -> list[tuple[str, str]]:
    """(speaker, sentence) pairs: a transcript's lines lose their "Name: " prefix to ``speaker``.

    A text is a transcript when at least two of its lines start with a short capitalised name
    and a colon; anything else has no speakers (a lone "Note: …" line is not a turn).
    """
    lines = text.splitlines()
    turns = [speaker_turn(line) for line in lines]
    if sum(1 for m in turns if m) < 2:
        return [("", s) for s in split_sentences(text, max_chars=max_chars)]
    out: list[tuple[str, str]] = []
    for line, m in zip(lines, turns, strict=True):
        if m:
            out.extend((m[1], s) for s in split_sentences(tidy_speech(m[2]), max_chars=max_chars))
        else:
            out.extend(("", s) for s in split_sentences(line, max_chars=max_chars))
    return out


# A page's bold marks: a quote reads as text, and a sentence cut out of a bold line keeps one half
# of the pair ("How can I donate money?**").
_BOLD_MARK_RE = re.compile(r"\*\*")


def cite(sentence: str, n: int) -> str:
    """``sentence`` with ``[n]`` before its final punctuation (or at its end), without bold marks
    (code spans keep what they show)."""
    sentence = outside_code(sentence, lambda part: _BOLD_MARK_RE.sub("", part)).rstrip()
    if sentence and sentence[-1] in ".!?" and not sentence.endswith("..."):
        return f"{sentence[:-1]} [{n}]{sentence[-1]}"
    return f"{sentence} [{n}]"
