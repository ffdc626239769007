"""What the answerer checks on written documents (handbooks, articles, notes), not transcripts.

Prose states its facts: a question that asks "when" is answered by a sentence with a date, "how
many" by one with a number, and a question that names something the sources never mention
(a person, a place, a year) is not answered by them, however close its other words come. Speech
is looser ("the thing we said last week"), so transcripts are left to ``rag.llm.transcripts``;
only a frequency ("every fifteen minutes", "nightly") is said the same way in both, and a
source's own date (``dated_lead``) is its metadata's, whatever kind of source it is.
"""

from __future__ import annotations

import difflib
import re
import unicodedata

from rag.words import CARDINALS, STOPWORDS, content_terms

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# "whens the release" is "when is", its apostrophe left out; "what is the review date" asks when
# as "when is the review" does (not "what is the date format", which asks about a date's form).
_WHEN_RE = re.compile(
    r"^\s*(?:whens?\b|(?:in |by |during |since )?(?:what|which) (?:year|century|decade|date|month|day|period)\b"
    r"|what(?:'s|’s|s| is| was| will be)\s+(?:the |its |their |our )?(?:[\w-]+ ){0,3}?(?:date|deadline)\b"
    r"(?!\s+(?:format|field|filter|picker|column|range|type|stamp)))",
    re.I,
)
_HOW_MANY_RE = re.compile(
    r"^\s*(?:how (?:many|much|long|old|far|large|big|tall|high|often)\b|(?:what|which) (?:percentage|percent"
    r"|proportion|number|amount|size|population)\b)",
    re.I,
)
# A time of day or of the week answers "when" as well as a date does: a handbook says "the cellar is
# locked at nine in the evening", "the ferry leaves at 7:30", "backups run every Sunday".
_CLOCK = (
    r"\d{1,2}[:.h]\d{2}|\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)|o'clock|noon|midnight|midday|dawn|dusk|sunrise|sunset"
    r"|morning|afternoon|evening|night|nightly|tonight|today|tomorrow|yesterday|daily|weekly|monthly|yearly|annually"
    r"|hourly|weekend|weekday|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|spring|summer|autumn|winter"
)
_TIME_RE = re.compile(
    rf"\b(?:1\d{{3}}|20\d{{2}}|\d{{1,4}}s|{_MONTHS}|centur(?:y|ies)|\d+(?:st|nd|rd|th)|{_CLOCK})\b", re.I
)
# A rule says when by an event rather than a date: "Treaties apply as soon as they enter into force".
_WHEN_CLAUSE_RE = re.compile(
    r"\b(?:as soon as|upon|whenever|immediately (?:after|before)|at the time (?:of|when))\b", re.I
)
_NUMBER_RE = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred"
    r"|thousand|million|billion|dozen|half|several|few|many|most|all|none)\b",
    re.I,
)
# "How long did it last?" is answered by a span of time ("six years", "for 18 months"), not by
# any number: a year or a count in a sentence on the same subject is no length.
_HOW_LONG_RE = re.compile(r"^\s*how long\b", re.I)
_DURATION_RE = re.compile(
    rf"\b(?:\d[\d,.]*|a|an|several|few|many|{CARDINALS})[\s-]+(?:\w+[\s-]+)?"
    r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|decades?|centuries|century)\b",
    re.I,
)
_WHO_RE = re.compile(r"^\s*(?:who|whom|whose)\b", re.I)
# "Where…?" is answered by a place: a name after a word of place ("along the Ohio", "in Warsaw").
_WHERE_RE = re.compile(r"^\s*where\b", re.I)
_PLACE_RE = re.compile(
    r"\b(?:in|at|near|from|to|into|along|across|on|through|outside|inside|around|throughout|towards?)\s+"
    r"(?:the\s+)?[A-Z][\w'’-]+"
)
_HOW_OFTEN_RE = re.compile(r"\bhow often\b", re.I)  # "and how often does it run?" too
# How often something happens: "every fifteen minutes", "nightly", "twice a week", "three times per year".
_FREQUENCY_RE = re.compile(
    r"\b(?:every|each)\s+(?:\w+\s+)?(?:second|minute|hour|day|night|week|month|quarter|year|morning|evening"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|time)s?\b"
    r"|\b(?:hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually|biweekly|continuously)\b"
    r"|\b(?:once|twice|\w+ times)\s+(?:a|an|per|each|every)\b|\bper\s+(?:second|minute|hour|day|week|month|year)\b",
    re.I,
)
_NEGATION_RE = re.compile(r"\b(?:not|never|no|none|nor|without|neither)\b|n['’]t\b", re.I)
_CAPITALISED = r"[A-Z][\w'’.-]*[A-Za-z]"
_NAME_RE = re.compile(rf"\b(?:{_CAPITALISED}|\d{{3,4}})\b")
# What a question names that its answer must be about: a name, a year, a figure ("74 ha").
_NAMED_RE = re.compile(rf"\b(?:{_CAPITALISED}|\d{{2,4}})\b")


def expected_form_missing(question: str, sentences: list[str]) -> bool:
    """The question asks for a time or a quantity and no sentence of the answer holds one."""
    text = " ".join(sentences)
    if _HOW_OFTEN_RE.search(question):
        return not (_FREQUENCY_RE.search(text) or _TIME_RE.search(text) or _NUMBER_RE.search(text))
    if _WHEN_RE.search(question):
        return not (_TIME_RE.search(text) or _WHEN_CLAUSE_RE.search(text))
    if _HOW_MANY_RE.search(question):
        return not _NUMBER_RE.search(text)
    return False


def asks_how_often(question: str) -> bool:
    """The question asks how often something happens (a schedule, or a count of what happened)."""
    return bool(_HOW_OFTEN_RE.search(question))


def asks_how_long(question: str) -> bool:
    """The question asks how long something lasts or takes ("how long is the pilot")."""
    return bool(_HOW_LONG_RE.search(question))


# "When did we last meet Acme?" asks for the latest of the dated sources it names; "first" for the
# earliest.
_LAST_RE = re.compile(r"\b(?:last|latest|most recent(?:ly)?)\b", re.I)
_FIRST_RE = re.compile(r"\b(?:first|earliest)\b", re.I)
# Words for the occasion, which any meeting's title may say: they name no particular source.
_OCCASION_TERMS = frozenset(content_terms("meet meeting met session call last latest recent first earliest time"))


# "when is the next review", "when is the proposal due": a time still to come, which the text
# states ("by Friday") if anything does; the date a source was written is no answer to it.
_FUTURE_RE = re.compile(r"\b(?:next|upcoming|coming|following|due|deadline)\b", re.I)


def dated_sources(question: str, sources: list) -> list:
    """For "when…?" about dated sources themselves ("when did we meet acme?"): the dated sources
    whose titles name most of the question's subject, oldest first; only the latest for "last",
    the earliest for "first". Empty when the question asks no "when", asks about one to come
    ("when is the next review?"), or no title names its subject ("when is the next release?" is
    not answered by the date of the 1:1 that mentions it); the one dated source when the question
    names nothing ("when was that?")."""
    if not _WHEN_RE.search(question) or _FUTURE_RE.search(question):
        return []
    subject = content_terms(question) - _OCCASION_TERMS
    if not subject:
        # "when was that?" on the last answer's one dated source: that source is the subject.
        dated = [s for s in sources if s.date]
        return dated if len(dated) == 1 else []
    named = [(len(subject & content_terms(s.title)), s) for s in sources if s.date]
    best = max((k for k, _ in named), default=0)
    if not best:
        return []
    out = sorted((s for k, s in named if k == best), key=lambda s: s.date)
    if _LAST_RE.search(question):
        return out[-1:]
    if _FIRST_RE.search(question):
        return out[:1]
    return out[:5]


# "When did we decide to add recency?": a recorded act, dated by the meeting that records it; "when?"
# after "who decided to move the sync" is searched as "when (decided move sync)".
_WHEN_ACT_RE = re.compile(
    r"^\s*(?:and\s+)?when\s+(?:(?:did|was|were|had)\b|\()(?:.*\b)?(?:decid|agree|said|say|discuss|talk|mention|ask|rais|"
    r"complain|promis|propos|suggest|plan)\w*",
    re.I,
)


def dated_lead(question: str, sentences: list[str], sources: list, *, spoken: bool = False, quoted=()) -> str:
    """For "when…?" about dated sources, quoted in sentences that name no time ("when is the acme
    review?" answered by the lines of "Acme Capital pilot review"): the lines that say those
    sources' own dates, cited. A time in a meeting's lines ("the 2019 memos") is not the meeting's
    date, so ``spoken`` sentences never stand in for it; a written sentence naming a time does.

    "When did we decide to add recency?" names no meeting, but asks when something was decided
    (said, discussed…): the dates of the meetings whose lines are quoted (``quoted``) answer it. A
    question on the future ("when is the next release?") is not answered by the date of the
    meeting that mentions it."""
    if not spoken and any(_TIME_RE.search(s) for s in sentences):
        return ""
    dated = dated_sources(question, sources)
    if not dated and spoken and _WHEN_ACT_RE.search(question):
        dated = sorted({s.n: s for s in quoted if s.date}.values(), key=lambda s: s.date)
    return " ".join(f"“{s.title}” is dated {s.date} [{s.n}]." for s in dated)


def asks_when(question: str) -> bool:
    """The question asks for a time: "when…?", "in what year…?"."""
    return bool(_WHEN_RE.search(question))


def states_time(text: str, *, a_date: bool = False) -> bool:
    """The text says a time: a date, a year, a time of day or week, or the event a rule waits for.
    ``a_date``: a time that something still to come can fall on, so "the nightly sync" or "a
    monthly report" (how often, not when) is none."""
    if a_date:
        text = _RECURRING_RE.sub(" ", text)
    return bool(_TIME_RE.search(text) or _WHEN_CLAUSE_RE.search(text))


_RECURRING_RE = re.compile(r"\b(?:hourly|nightly|daily|weekly|monthly|yearly|annually)\b", re.I)


def has_expected_form(question: str, sentence: str) -> bool:
    """The sentence holds what the question's form asks for: a time for "when", a number for
    "how many", a frequency for "how often", a name for "who" (False when the question asks for no
    particular form)."""
    if _HOW_OFTEN_RE.search(question):
        return bool(_FREQUENCY_RE.search(sentence))
    if _WHEN_RE.search(question):
        return bool(_TIME_RE.search(sentence))
    if _HOW_LONG_RE.search(question):
        return bool(_DURATION_RE.search(sentence))
    if _HOW_MANY_RE.search(question):
        return bool(_NUMBER_RE.search(sentence))
    if _WHO_RE.search(question):
        return bool(_NAME_RE.search(sentence[1:]))
    if _WHERE_RE.search(question):
        return bool(_PLACE_RE.search(sentence))
    return False


def negation_unmet(question: str, sentences: list[str]) -> bool:
    """The question asks what did *not* happen ("who did not sign…", "what wasn't…") and no quoted
    sentence says anything in the negative: quoting what did happen would answer the opposite."""
    return bool(_NEGATION_RE.search(question)) and not any(_NEGATION_RE.search(s) for s in sentences)


def _named_words(question: str) -> list[str]:
    """The capitalised words after the question's first, and its numbers: what it names."""
    words = _NAMED_RE.findall(question)
    first = re.match(r"\s*([\w'’.-]+)", question)
    if first and words and words[0] == first.group(1):
        words = words[1:]  # a sentence's first word is capitalised anyway
    return words


def unmentioned_names(question: str, sources_text: str) -> list[str]:
    """Names and years of the question (capitalised words after its first, numbers) that the
    sources never mention: a question about something they do not hold."""
    words = _named_words(question)
    said = _fold(sources_text)
    # A name spelt a little differently ("Kucukdeveci", "Gebhard v Consiglio…") is still the same
    # name: its first five letters beginning a word of the sources will do.
    starts = {w[:5] for w in re.findall(r"[a-z0-9]+", said)}
    acronyms: set[str] | None = None
    missing = []
    for i, word in enumerate(words):
        low = _fold(word).strip(".'’")
        if low in STOPWORDS or len(low) < 2 or not re.fullmatch(r"[a-z0-9'’.-]+", low):
            continue
        stem = low[:-2] if low.endswith(("'s", "’s")) else low
        if re.search(rf"(?<![\w]){re.escape(stem)}", said) or (len(stem) >= 5 and stem[:5] in starts):
            continue
        if "-" in stem and any(re.search(rf"(?<![\w]){re.escape(stem.replace('-', sep))}", said) for sep in (" ", "")):
            continue  # "Al-Banna" where the sources write "Al Banna"
        if len(low) == 2 and low.isdigit() and re.search(r"\b\d{4}\b", question):
            continue  # "in 1755, 56, 57": years, the century left out
        if word.isupper():
            acronyms = _acronyms(sources_text) if acronyms is None else acronyms
            if stem in acronyms:
                continue  # "WWII" where the sources spell out "World War II"
        if _one_word_with_neighbour(words, i, question, said):
            continue  # "Apple Talk" where the sources write "AppleTalk"
        if len(stem) >= 5 and difflib.get_close_matches(stem, words_said(said), n=1, cutoff=0.8):
            continue  # misspelt: "Celeron" for "Céloron", "Groner" for "Groener"
        if (
            len(stem) >= 4
            and stem.isalpha()
            and any(w[0] == stem[0] and sorted(w) == sorted(stem) for w in words_said(said))
        ):
            continue  # two letters swapped: "TEFU" for "TFEU" (a figure's digits in another order are another figure)
        missing.append(word)
    return missing


def naming_sources(question: str, sources: list) -> set[int] | None:
    """The numbers of the ``sources`` (title and text) that mention every name and figure of the
    question, when some do and others do not: "what are Sam's tasks" is answered where Sam is,
    however well a page on task queues matches "tasks". None when all of them do or none. A name
    is mentioned as a whole word here ("Sam" is not in "same"), in its plural or possessive too."""
    names = {
        low.removesuffix("'s").removesuffix("’s")
        for w in _named_words(question)
        if (low := _fold(w).strip(".'’")) not in STOPWORDS and len(low) >= 2
    }
    if not names:
        return None  # the question names nothing
    patterns = [re.compile(rf"(?<![\w]){re.escape(name)}(?:['’]?s|es)?(?![\w])") for name in names]
    naming = {src.n for src in sources if all(p.search(_fold(f"{src.title} {src.text}")) for p in patterns)}
    return naming if naming and len(naming) < len(sources) else None


def _one_word_with_neighbour(words: list[str], i: int, question: str, said: str) -> bool:
    """The name ``words[i]`` and the name next to it in the question are one word of the sources."""
    for a, b in ((i - 1, i), (i, i + 1)):
        if a < 0 or b >= len(words) or not re.search(rf"{re.escape(words[a])}[ -]{re.escape(words[b])}", question):
            continue
        if re.search(rf"(?<![\w]){re.escape(_fold(words[a] + words[b]))}(?![\w])", said):
            return True
    return False


# Words a name's initials skip ("European Coal and Steel Community" is the ECSC).
_ACRONYM_SKIP = frozenset({"of", "and", "the", "for", "on", "in", "de", "du", "des", "la", "le", "del", "di", "&"})
_ROMAN_RE = re.compile(r"[IVX]+")


def _acronyms(text: str) -> set[str]:
    """The initials (lower case) of each stretch of capitalised words of ``text``, a Roman numeral
    kept whole: "World War II" → "wwii", "European Coal and Steel Community" → "ecsc"."""
    out: set[str] = set()
    for line in re.split(r"[.;:!?()\[\]\n\"“”]", text):
        run: list[str] = []
        for word in [*line.split(), ""]:
            word = word.strip(",'’")
            if word[:1].isupper() or (run and word.lower() in _ACRONYM_SKIP):
                run.append(word)
                continue
            while run and run[-1].lower() in _ACRONYM_SKIP:
                run.pop()
            units = [w if _ROMAN_RE.fullmatch(w) else w[0] for w in run if w.lower() not in _ACRONYM_SKIP]
            # Any stretch of the run: "After World War II" also holds "World War II".
            out.update("".join(units[a:b]) for a in range(len(units)) for b in range(a + 2, len(units) + 1))
            run = []
    return {_fold(a) for a in out if len(a) >= 2}


def names_the_title(word: str, title: str) -> bool:
    """``word`` is the title's subject spelt another way ("Warszowa", "Warszawa" for Warsaw): it
    begins as a word of the title of five letters or more does and is mostly that word's letters.
    A page is about its title's subject, though its quoted sentences do not repeat the name."""
    low = _fold(word)
    return len(low) >= 5 and any(
        len(t) >= 5 and t[:4] == low[:4] and difflib.SequenceMatcher(None, low, t).ratio() >= 0.7
        for t in re.findall(r"[a-z0-9]+", _fold(title))
    )


def words_said(folded: str) -> list[str]:
    return list({w for w in re.findall(r"[a-z0-9]+", folded) if len(w) >= 4})


# Letters that carry their mark in the letter itself, which Unicode does not decompose: without
# them "Skłodowska" folds to "skodowska" and a question typing "Sklodowska" misses it.
_UNDECOMPOSED = str.maketrans({"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ß": "ss", "æ": "ae",
                               "Æ": "Ae", "œ": "oe", "Œ": "Oe", "ı": "i", "ħ": "h", "þ": "th",
                               # Dashes, which ASCII drops: "1994–1999" would read "19941999".
                               "–": "-", "—": "-", "‐": "-", "‑": "-", "−": "-"})  # fmt: skip


def _fold(text: str) -> str:
    """Lower case without accents: "Küçükdeveci" is "kucukdeveci", "Skłodowska" "sklodowska"."""
    return unicodedata.normalize("NFKD", text.translate(_UNDECOMPOSED)).encode("ascii", "ignore").decode().lower()


# "See Logseq Sync Encryption.", "Check out this forum post.": a pointer to another page, which
# says nothing itself however close its words come to the question.
_POINTER_RE = re.compile(r"^\s*(?:see|check(?: out)?|refer to|read)\b", re.I)
_POINTER_MAX_WORDS = 10


def only_points_elsewhere(sentence: str) -> bool:
    """A short sentence that only sends the reader to another page or link."""
    return bool(_POINTER_RE.match(sentence)) and len(sentence.split()) <= _POINTER_MAX_WORDS


def answers_otherwise(question: str, chosen: list) -> bool:
    """The chosen sentences are about the question's subject but answer another question:
    "when…?" answered by no date, "how many…?" by no number, "what did not…?" by sentences
    that negate nothing, or a name of the question that the documents quoted never mention
    (the sources hold it elsewhere, about something else: "sanctions Canada directed at Iran"
    answered from a page on the US's)."""
    texts = [c.text for c in chosen]
    if expected_form_missing(question, texts) or negation_unmet(question, texts):
        return True
    # A name or figure of the question that no quoted sentence, nor its page's title, says: the
    # sentences are about something else, of another page (a name the quoted pages never say) or
    # of the same page ("began operation in 1982" answered by the sentence on 1981).
    titles = " ".join({c.source.title for c in chosen})
    said = " ".join([titles, *texts])
    return bool(_names_unsaid(question, said, titles))


# "Which American car company…", "what French general…": the names right after "which" or "what"
# say what kind of thing the answer is, and the sentence that answers names the thing itself
# ("…with Ford, Chrysler, and GM").
_KIND_NAMES_RE = re.compile(rf"\b(?:[Ww]hich|[Ww]hat)\s+((?:{_CAPITALISED}\s+)+)(?=[a-z])")


def _names_unsaid(question: str, text: str, titles: str) -> list[str]:
    """The question's names that ``text`` never says, but for the quoted pages' own subject
    spelt another way ("Warszowa" on the page "Warsaw") and the names that only say what kind of
    thing is asked for."""
    kinds = {w for m in _KIND_NAMES_RE.finditer(question) for w in m.group(1).split()}
    return [w for w in unmentioned_names(question, text) if not names_the_title(w, titles) and w not in kinds]
