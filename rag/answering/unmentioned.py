"""The note an offline answer opens with when the question asks about something no document the
person can see mentions: what follows is the closest the sources come, not an answer."""

from __future__ import annotations

import re

from rag.answering.listings import without_periods
from rag.answering.retrieval import AskRun, people_words
from rag.answering.spelling import is_code, slip_of_common_word, unknown_words
from rag.llm.counts import answers_count
from rag.llm.prose import asks_when, states_time
from rag.llm.sentences import split_sentences
from rag.words import (
    KIND_OF_ANSWER_TERMS,
    MONEY_TERMS,
    WORD_RE,
    asks_amount_of_money,
    content_terms,
    implied_terms,
    states_money,
    stem,
)

_UNMENTIONED_SHARE = 0.25

# A subject of two words opens with one of these ("the workers").
_DETERMINERS = frozenset(
    ["the", "a", "an", "this", "that", "these", "those", "our", "your", "my", "their", "its", "his", "her"]
)
# "does knowhub support google docs", "can it import confluence pages": a yes/no question whose
# verb is the word no document says. The documents may well name what it is asked of (Google Docs
# in a meeting), so the note names the claim, not the verb alone.
_CLAIM_RE = re.compile(r"^\s*(does|do|did|can|could|will|would)\s+(.+?)[\s?.!]*$", re.I)


def unmentioned_note(run: AskRun, answer: str) -> str:
    """The line an answer opens with when a word of the question is in no document the person
    can see ("is logseq sync encrypted" over pages that never speak of encryption): the quotes
    after it are the closest the sources come, not an answer to that word. Empty otherwise.

    A word the answer or its sources' titles and agenda items say is mentioned ("Summarize the
    discussion on detecting linguistic features" names an agenda item, not a sentence). A "how
    many…" answered by a line giving that number has no such word: "pilot with five analysts"
    answers "how many people joined the pilot" whether or not any document says "joined"."""
    if any(answers_count(run.query, line) for line in answer.splitlines()):
        return ""
    # A person's name, or a slip the search corrected, is held by the documents as they write it;
    # a period ("in september") is their dates, which the chip shows, not their words.
    # A figure's magnitude ("1 million") is the figure's, which ``unstated_figure_note`` reads.
    known = (
        people_words(run)
        | {w.lower() for typed in run.corrections for w in WORD_RE.findall(typed)}
        | {w.lower() for chip in run.chips if chip.field == "date" for w in WORD_RE.findall(chip.phrase)}
        | {w.lower() for typed in figures(run.query).values() for w in WORD_RE.findall(typed)}
    )
    # "p99" where the sources give p95: a name of letters and digits is no slip to correct, so the
    # search kept it as typed, and only here is it looked up.
    codes = {w for w in WORD_RE.findall(run.query) if is_code(w)}
    unknown = run.unknown | (unknown_words(codes, scope=run.scope, codes=True) if codes else set())
    said = " ".join([answer, *(f"{d.best.title} {d.agenda}" for d in run.docs)]).lower()
    said_closed = said.replace("-", "")  # "oncall" where the sources write "on-call"
    # The same word in another form ("complained" where the answer quotes "complaints"), or what a
    # quote states without the word ("by Friday" is a deadline), is mentioned too.
    said_terms = content_terms(said) | implied_terms(answer)
    words = [
        w
        for w in dict.fromkeys(WORD_RE.findall(run.query))
        if w.lower() in unknown
        and w.lower() not in known
        # "summarize", "discussion", "list", "made", "latest", "owns": the kind of answer, not its subject;
        # "goes", "stop": the question's grammar; "wat": "what" typed a letter off
        and not content_terms(w) <= KIND_OF_ANSWER_TERMS
        and not slip_of_common_word(w)
        and not any(re.search(rf"(?<!\w){re.escape(w.lower())}", text) for text in (said, said_closed))
        and not content_terms(w) <= said_terms
    ]
    # One such word in a long question is a detail the quotes may answer in other words; in a
    # short one ("is logseq sync encrypted") it is the point of the question.
    if not words or len(words) < _UNMENTIONED_SHARE * len(content_terms(run.query)):
        return ""
    if claim := _claim(run.query, words):
        return f"Nothing you can see says {claim}; the closest your sources come:"
    named = " or ".join(f"“{w}”" for w in words)
    return f"Nothing you can see mentions {named}; the closest your sources come:"


def unstated_sum_note(run: AskRun, answer: str) -> str:
    """The line an answer opens with when the question asks what something costs and no quote
    gives a sum of money, nor any sentence of the sources on its subject: "how much did we spend on
    hosting" is not answered by "Hosting stays on the two existing servers". Empty otherwise."""
    if not asks_amount_of_money(run.query) or states_money(answer):
        return ""
    subject = [w for w in question_subject(run) if not content_terms(w) <= MONEY_TERMS]
    wanted = set().union(*(content_terms(w) for w in subject))
    if _written_in(run.docs, lambda s: states_money(s) and (not wanted or wanted & content_terms(s))):
        return ""  # the sum is written, though the quotes missed it: no claim that it is not
    what = f"“{' '.join(subject)}”" if subject else "this"
    return f"Nothing you can see gives a sum of money for {what}; the closest your sources come:"


def unstated_time_note(run: AskRun, answer: str) -> str:
    """The line an answer opens with when the question asks when ("when is the next platform
    weekly") and neither the quotes nor any sentence of its sources on that subject says a time:
    the lines after it are about the subject, not its date. Empty otherwise; a source's own date,
    which answers "when did we meet acme", is in the answer when it answers."""
    # "When is the next platform weekly" is not answered by "the nightly sync": how often is no date.
    to_come = next((w for w in WORD_RE.findall(run.query) if w.lower() in _TO_COME), "")
    # "Journals take their date from the file name" answers "which date do journals take": a quote
    # that speaks of the time itself says how it is set, with no time to give.
    if not asks_when(run.query) or states_time(answer, a_date=bool(to_come)) or _SPEAKS_OF_TIME_RE.search(answer):
        return ""
    subject = [w for w in question_subject(run) if w.lower() not in _TO_COME]
    wanted = set().union(*(content_terms(w) for w in subject))
    # A source whose title names the whole subject ("Platform weekly") is what the question is
    # about: a time in any of its sentences may answer. Elsewhere a sentence must say most of the
    # subject itself: the platform team's "budget for 2027" is no time of the platform weekly.
    titled = [d for d in run.docs if wanted and wanted <= content_terms(d.best.title)]

    def on_subject(sentence: str) -> bool:
        return bool(titled) or 2 * len(wanted & content_terms(sentence)) >= len(wanted)

    if _written_in(titled or run.docs, lambda s: states_time(s, a_date=bool(to_come)) and on_subject(s)):
        return ""  # the time is written, though the quotes missed it: no claim that it is not
    what = f"“{' '.join([to_come, *subject]).strip()}”" if subject else "this"
    return f"Nothing you can see gives a time for {what}; the closest your sources come:"


def _written_in(docs, holds) -> bool:
    """Whether a sentence of ``docs`` ``holds`` (a test of its text)."""
    return any(holds(sentence) for doc in docs for sentence in split_sentences(doc.text))


_TO_COME = frozenset({"next", "upcoming", "coming", "following"})
_SPEAKS_OF_TIME_RE = re.compile(r"\b(?:dates?|dated|times?|timing|timestamps?|schedule[sd]?|when)\b", re.I)


# A figure with its magnitude or unit: "1m chunks", "10 million", "50 ms", "3.5 GB", "20%". A bare
# number ("the top 3", "meeting 2") says too little of what it counts to be held against a text.
_FIGURE_RE = re.compile(
    r"(?<![\w.,])(\d+(?:[.,]\d+)*)\s?(k|m|bn|thousand|million|billion|ms|s|sec|seconds|minutes|min|h|hours"
    r"|gb|mb|kb|tb|%|percent)(?![\w])",
    re.I,
)
_MAGNITUDE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}
_UNIT = {"ms": "ms", "s": "s", "sec": "s", "seconds": "s", "min": "min", "minutes": "min", "h": "h",
         "hours": "h", "gb": "gb", "mb": "mb", "kb": "kb", "tb": "tb", "%": "%", "percent": "%"}  # fmt: skip


# "is search under 50 ms": a bound the answer's figure is held against, not a figure to find; "in
# the last 24 hours", "every 15 minutes": a period or a frequency, no figure a document states.
_THRESHOLD_RE = re.compile(
    r"(?:under|over|below|above|beyond|within|than|at (?:least|most)|up to|exceeds?|reach(?:es)?|[<>≤≥]"
    r"|last|past|next|previous|coming|every|each)\s*$",
    re.I,
)
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+")
_DIGITS_RE = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,])|(?<![\w.,])\d{4,}(?![\w.,])")


def figures(text: str, *, in_digits: bool = False) -> dict[tuple[float, str], str]:
    """The figures ``text`` states, as (value, unit) → the figure as written: "1m" and "1 million"
    are (1e6, ""), "100k" is (1e5, ""), "24 ms" is (24, "ms"). With ``in_digits``, large numbers
    written out too ("1,000,000 chunks" is the "1m" of a question)."""
    out: dict[tuple[float, str], str] = {}
    for m in _FIGURE_RE.finditer(text):
        digits, suffix = m.group(1), m.group(2).lower()
        number = digits.replace(",", "") if _THOUSANDS_RE.fullmatch(digits) else digits.replace(",", ".")
        try:
            value = float(number)
        except ValueError:  # "1.2.3"
            continue
        if suffix in _MAGNITUDE:
            out.setdefault((value * _MAGNITUDE[suffix], ""), m.group(0))
        else:
            out.setdefault((value, _UNIT[suffix]), m.group(0))
    if in_digits:
        for m in _DIGITS_RE.finditer(text):
            out.setdefault((float(m.group(0).replace(",", "")), ""), m.group(0))
    return out


def unstated_figure_note(run: AskRun, answer: str) -> str:
    """The line an answer opens with when the question gives a figure ("what is the latency at 1m
    chunks") that neither the answer nor any of its sources states: the quotes after it are about
    other figures ("24 ms at 100k chunks"), not an answer for that one. Empty otherwise; a figure
    of the question's period ("in the last 24 hours", "2 hours ago") is none."""
    dated = " ".join(chip.phrase for chip in run.chips if chip.field == "date")
    found = figures(run.query)
    asked = {key: typed for key, typed in found.items() if typed not in dated and _sought(run.query, typed)}
    if not asked:
        return ""
    said = figures(" ".join([answer, *(d.text for d in run.docs)]), in_digits=True)
    missing = [typed for key, typed in asked.items() if key not in said]
    if not missing:
        return ""
    named = " or ".join(f"“{w}”" for w in missing)
    return f"Nothing you can see gives a figure for {named}; the closest your sources come:"


def _sought(question: str, figure: str) -> bool:
    """The question looks for ``figure``: it is no bound ("under 50 ms"), period ("the last 24
    hours", "2 hours ago") or frequency ("every 15 minutes")."""
    before, _, after = question.partition(figure)
    return not _THRESHOLD_RE.search(before) and not re.match(r"\s*ago\b", after, re.I)


def _claim(question: str, unmentioned: list[str]) -> str:
    """The claim a yes/no question asks about ("knowhub supports google docs" for "does knowhub
    support google docs") when its verb is the only word no document says; "" otherwise (when
    what it is asked of is missing too, the missing words are the news: "does it support pdf"
    names “support” or “pdf”)."""
    m = _CLAIM_RE.match(question)
    if not m or len(unmentioned) != 1:
        return ""
    aux, words = m.group(1).lower(), m.group(2).split()
    at = next((i for i, w in enumerate(words) if w.lower() == unmentioned[0].lower()), 0)
    if not 0 < at < len(words) - 1:  # a subject before the verb, something after it
        return ""
    # The subject is one word ("knowhub", "it") or a determiner and a noun ("the workers"): in
    # "can knowhub import confluence pages" the missing "confluence" is no verb.
    if at > 2 or (at == 2 and words[0].lower() not in _DETERMINERS):
        return ""
    subject, verb, rest = " ".join(words[:at]), words[at], " ".join(words[at + 1 :])
    if aux == "does":
        verb = "has" if verb.lower() == "have" else _third_person(verb)
    elif aux != "do":  # "can it import…", "did it support…": the auxiliary stays
        verb = f"{aux} {verb}"
    return f"{subject} {verb} {rest}"


def _third_person(verb: str) -> str:
    """The verb after "does": "support" → "supports", "fetch" → "fetches", "copy" → "copies"."""
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def question_subject(run: AskRun) -> list[str]:
    """The question's subject words as typed: what is left of it without its periods, its people
    and the kind of answer it asks for ("pgvector" in "what did we discuss last week about
    pgvector"; none in "what did leo say last month")."""
    names = {stem(w) for w in people_words(run)}
    words = [w for w in dict.fromkeys(WORD_RE.findall(without_periods(run))) if content_terms(w)]
    return [w for w in words if not content_terms(w) & (KIND_OF_ANSWER_TERMS | names)]


def subject_held(run: AskRun, answer: str, subject: list[str]) -> int:
    """How many of the ``subject`` words the answer holds: in its quotes, its cited sources'
    titles, or stated in other words (a hyphen typed or not)."""
    said = " ".join([answer, *(d.best.title for d in run.docs if d.n in run.cited)])
    # "oncall" typed is the "On-call" the sources write.
    terms = {t.replace("-", "") for t in content_terms(said) | implied_terms(answer)}
    return sum(1 for w in subject if {t.replace("-", "") for t in content_terms(w)} <= terms)
