"""What a chosen quote needs beside it to be read on its own: a procedure's first step ("Open the
config.edn file." ranks low, but the steps after it make no sense without it), the sentence
before one that names its subject only as "it" or "he" (or the question's thing only as "these
weights"), the reason after a fact a "why" asks about, the "To do this, …" after what a "how do
I" is told to do, the reply after a question a page asks, and the items a sentence announces
("There are two ways …")."""

from __future__ import annotations

import re

from rag.llm.candidates import Sentence, leans_on_before
from rag.words import asks_how_to, stem


def from_first_step(
    question: str, chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int
) -> list[Sentence]:
    """The steps a "how do I…" answer quotes from a section of notes ("Creating a macro") start at
    its first one: the opening "Open the config.edn file." says little on its own and ranks low,
    but the steps after it make no sense without it. It takes the place of the weakest other
    sentence when the answer is full. (Only notes have sections: transcripts are left alone.)"""
    if not chosen or not chosen[0].section or not asks_how_to(question):
        return chosen
    lead = chosen[0]
    steps = [c for c in candidates if c.source.n == lead.source.n and c.section == lead.section]
    first = min(steps, key=lambda c: c.position)
    if any(c is first for c in chosen):
        return chosen
    rest = list(chosen)
    if len(rest) >= max_sentences:
        rest.remove(min(rest[1:], key=lambda c: c.score))
    # Reading order: the first step's source keeps its place, the step goes before the others.
    out = [*rest, first]
    order = {c.source.n: i for i, c in reversed(list(enumerate(rest)))}
    out.sort(key=lambda c: (order[c.source.n], c.position))
    return out


# "these weights", "those limits": the sentence names what the question asks about only as what
# the sentences before it said.
_REFERS_BACK_RE = re.compile(r"\b(?:these|those|such)\s+([a-z][\w-]*)", re.I)


def refers_back(text: str, q_terms: set[str]) -> bool:
    """The sentence names one of the question's words only by pointing back ("…can retune these
    weights" for "what are the default weights"): the sentence before it says what they are."""
    return any(stem(noun) in q_terms for noun in _REFERS_BACK_RE.findall(text))


def with_antecedents(
    chosen: list[Sentence], candidates: list[Sentence], q_terms: set[str] = frozenset()
) -> list[Sentence]:
    """Each chosen sentence that names its subject only as "it" or "he" ("It appoints the
    Commissioners…"), or the question's thing only as "these weights", preceded by the sentence
    before it, which names it: quoted alone, it says who or what only to someone who has read the
    page. A sentence before that leans on its own sentence before ("…is available as an
    alternative.") brings that one too, one step further at most."""
    at = {(c.source.n, c.position): c for c in candidates}
    picked = {id(c) for c in chosen}
    out: list[Sentence] = []
    for c in chosen:
        leads: list[Sentence] = []
        # Written sources only (``before`` is empty in transcripts).
        leaning = c.before and (leans_on_before(c.text) or refers_back(c.text, q_terms))
        lead = at.get((c.source.n, c.position - 1)) if leaning else None
        while lead is not None and id(lead) not in picked and len(leads) < 2:
            leads.insert(0, lead)
            picked.add(id(lead))
            lead = at.get((lead.source.n, lead.position - 1)) if lead.before and leans_on_before(lead.text) else None
        out.extend(leads)
        out.append(c)
    return out


_WHY_RE = re.compile(r"^\s*(?:(?:and|so|but)\s+)?(?:why|how come)\b", re.I)
# Words a sentence gives a reason or a purpose in.
_REASON_RE = re.compile(
    r"\b(?:because|since|due to|owing to|so that|in order to|as a result|therefore|thus|hence|reasons?|"
    r"pays? for|paid for|caused?|causes|leads? to|led to|thanks to)\b",
    re.I,
)


def with_reason(
    question: str, chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int
) -> list[Sentence]:
    """A "why…?" answered by a written sentence that states the fact but gives no reason ("The
    budget for 2027 is 412,000 euros, up from 365,000.") is followed by the sentence after it,
    where a page gives the reason ("Most of the increase pays for a second on-call engineer."):
    the sentence closest to the question repeats its words, the reason uses others. Unchanged
    when a chosen sentence gives a reason, for transcripts, and when the page says nothing after."""
    if not chosen or not _WHY_RE.match(question) or chosen[0].speaker:
        return chosen
    if any(_REASON_RE.search(c.text) for c in chosen):
        return chosen
    lead = chosen[0]
    after = next(
        (
            c
            for c in candidates
            if c.source.n == lead.source.n and c.position == lead.position + 1 and c.section == lead.section
        ),
        None,
    )
    if after is None or any(c is after for c in chosen):
        return chosen
    out = list(chosen)
    if len(out) >= max_sentences:
        out.remove(min(out[1:], key=lambda c: c.score))
    out.insert(out.index(lead) + 1, after)
    return out


def _inserted(chosen: list[Sentence], lead: Sentence, after: list[Sentence], *, max_sentences: int) -> list[Sentence]:
    """``chosen`` with ``after`` (those not in it yet) after ``lead`` in reading order, the weakest
    other sentences making room when the answer is full."""
    adding = [c for c in after if not any(c is x for x in chosen)]
    keep = {id(lead), *(id(c) for c in after)}
    out = list(chosen)
    while len(out) + len(adding) > max_sentences and (spare := [c for c in out if id(c) not in keep]):
        out.remove(min(spare, key=lambda c: c.score))
    for sentence in sorted(adding, key=lambda c: c.position):
        at = out.index(lead) + 1
        while at < len(out) and out[at].source.n == lead.source.n and out[at].position < sentence.position:
            at += 1
        out.insert(at, sentence)
    return out


# "To do this, add the following in the first block…" after "…it's best to add a page alias": how
# to do what the sentence before it recommends.
_HOW_FOLLOWS_RE = re.compile(r"^\W*(?:to do (?:this|so|that|it)\b|here(?:'s| is) how\b)", re.I)
# "To point to a URL, either use the trigger menu…" right after "It's also possible to link to
# websites.": a purpose, then what to do for it.
_TO_DO_X_RE = re.compile(r"^\W*to [a-z]+\b[^,.;:!?]{0,60},\s+\S", re.I)


def with_how_it_is_done(
    question: str, chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int
) -> list[Sentence]:
    """A "how do I…?" answered by a written sentence that says what to do, followed within two
    sentences by one that says how ("To do this, …"), or right after it by one that says what to
    do for a purpose ("To point to a URL, use …"), quotes that one too: it holds the steps but
    few of the question's words."""
    if not chosen or not asks_how_to(question):
        return chosen
    for lead in chosen:
        if lead.speaker:
            continue
        how = next(
            (
                c
                for c in candidates
                if c.source.n == lead.source.n
                and lead.position < c.position <= lead.position + 2
                and c.section == lead.section
                and (
                    _HOW_FOLLOWS_RE.match(c.text) or (c.position == lead.position + 1 and _TO_DO_X_RE.match(c.text))
                )
            ),
            None,
        )
        if how is not None:
            return _inserted(chosen, lead, [how], max_sentences=max_sentences)
    return chosen


# "There are two ways to bring Notion pages in." announces its items, which follow, each under its
# label ("Pushed: …", "Pulled: …").
_ANNOUNCES_RE = re.compile(
    r"\b(?:there are|comes? in|has|have|offers?)\s+(two|three|four|[234])\s+(?:main\s+|different\s+)?"
    r"(?:ways|kinds|types|options|modes|methods|forms|parts)\b",
    re.I,
)
_LABELLED_RE = re.compile(r"^\W*[A-Z][\w /-]{0,40}?\**:\s+\S")
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4}


def with_announced_items(chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int) -> list[Sentence]:
    """A chosen written sentence that announces its items ("There are two ways to …") is followed
    by all of them when the page gives them as labelled sentences right after it: one way of two
    is half an answer. Unchanged when the page does not list them so."""
    for lead in chosen:
        found = None if lead.speaker else _ANNOUNCES_RE.search(lead.text)
        if found is None:
            continue
        count = _COUNT_WORDS.get(found.group(1).lower()) or int(found.group(1))
        following = sorted(
            (c for c in candidates if c.source.n == lead.source.n and 0 < c.position - lead.position <= 2 * count + 2),
            key=lambda c: c.position,
        )
        items = [c for c in following if _LABELLED_RE.match(c.text)][:count]
        if len(items) == count and not all(any(c is x for x in chosen) for c in items):
            return _inserted(chosen, lead, items, max_sentences=max_sentences)
    return chosen


def with_replies(chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int) -> list[Sentence]:
    """The first chosen written sentence that asks ("Can I backup my files to Dropbox?", a FAQ's
    entry) is followed by the sentence after it, its reply ("Yes, you can use the desktop app…"): the
    question repeats the asker's words, the reply says what they want to know. (A meeting's
    replies are lent the question's relevance instead.)"""
    asked = next((c for c in chosen if c.asks and not c.speaker), None)
    if asked is None:
        return chosen
    reply = next((c for c in candidates if c.source.n == asked.source.n and c.position == asked.position + 1), None)
    if reply is None or reply.asks or any(c is reply for c in chosen):
        return chosen
    return _inserted(chosen, asked, [reply], max_sentences=max_sentences)


def completed(
    question: str, chosen: list[Sentence], candidates: list[Sentence], *, max_sentences: int
) -> list[Sentence]:
    """``chosen`` with what each kind of question needs beside its quotes: a procedure's first
    step, the reason a "why" asks for, how to do what a "how do I" is told to do, the reply to a
    question a page asks, every item a sentence announces. Each is taken from what the conversation
    has not quoted yet, except the reason: "why is it going up" after the answer that said why is
    answered by that reason again."""
    unsaid = [c for c in candidates if not c.said]
    chosen = from_first_step(question, chosen, unsaid, max_sentences=max_sentences)
    chosen = with_reason(question, chosen, candidates, max_sentences=max_sentences)
    chosen = with_how_it_is_done(question, chosen, unsaid, max_sentences=max_sentences)
    chosen = with_replies(chosen, unsaid, max_sentences=max_sentences)
    return with_announced_items(chosen, unsaid, max_sentences=max_sentences)


_BARE_WHY_RE = re.compile(r"^\s*(?:(?:and|but|so)\s+)?(?:why|how come)\s*[?.!]*\s*$", re.I)


def no_reason_given(question: str, chosen: list[Sentence]) -> bool:
    """A bare "why?" after an answer, and nothing quoted gives a reason: the sources say what was
    decided, not why, and the answer must not pass the rest of the meeting off as the reason."""
    return bool(_BARE_WHY_RE.match(question)) and not any(_REASON_RE.search(c.text) for c in chosen)
