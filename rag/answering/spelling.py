"""Words typed a little wrong: a person's name in lower case or misspelt ("mya", "maia" for Maya
Chen), and a content word the index never saw ("flashcrds").

People are matched against the names the index knows (participants, authors, mentions the scope
can see), so a slip of the keyboard still reaches the person. A query word that no visible
document holds is replaced by the nearest word of the documents the search did find: the
correction comes from the index's own words, never from a dictionary of this code's. Only a word
the documents hold in no spelling is corrected toward English itself ("responsibel"), whose words
come with the local model: its tokenizer's whole-word vocabulary.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata

from rag.words import COMMON_WORDS, WORD_RE, closed_compounds, stem


def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Optimal-string-alignment distance (an adjacent swap costs one); ``limit`` + 1 when beyond."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) > limit:
            return limit + 1
        prev2, prev = prev, row
    return prev[-1]


def allowed_edits(word: str) -> int:
    """How far a typed word may be from what it means: one edit for a short word, two for a long
    one, none under three letters (every two-letter word is one edit from many others)."""
    if len(word) < 3:
        return 0
    return 1 if len(word) < 8 else 2


def _close(typed: str, target: str) -> bool:
    typed, target = typed.lower(), target.lower()
    if typed == target:
        return True
    # The first letter is rarely the slip; requiring it keeps "sam" from matching "pam".
    if typed[:1] != target[:1] or len(target) < 3:
        return False
    if len(typed) <= 3 and len(typed) == len(target) and sorted(typed) != sorted(target):
        # In a three-letter word a changed letter makes another word ("say" is not Sam); only a
        # letter left out, one too many or two swapped ("mya", "loe") is a slip.
        return False
    return edit_distance(typed, target, limit=2) <= allowed_edits(typed)


class _Span:
    """A match-like span of ``text`` (``group(0)``, ``start()``, ``end()``)."""

    def __init__(self, text: str, start: int, end: int):
        self._text, self._start, self._end = text, start, end

    def group(self, _index: int = 0) -> str:
        return self._text[self._start : self._end]

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


def find_name(value: str, text: str, *, unknown: set[str] | None = None) -> re.Match | _Span | None:
    """Where ``text`` names the person ``value``: the whole name or its first name, in any case,
    its possessive typed without the apostrophe ("sams tasks"), or spelt one or two letters off
    ("mya", "maia chen") by a word in ``unknown`` (the words no document holds; any word when
    None)."""
    parts = value.split()
    for needle in [value, *(parts[:1] if len(parts) > 1 else [])]:
        m = re.search(rf"(?<![\w-]){re.escape(needle)}(?:s(?=\s))?(?![\w-])", text, re.I)
        if m:
            return m
    first = parts[0] if parts else ""
    for m in re.finditer(r"[A-Za-z][A-Za-z'-]*", text):
        word = m.group(0)
        if word.lower() in COMMON_WORDS or word.lower() == first.lower():
            continue
        if unknown is not None and word.lower() not in unknown:
            continue
        if _close(word, first):
            # "maia chen": the misspelt first name and the surname after it, taken together.
            rest = text[m.end() :]
            if len(parts) > 1 and (tail := re.match(rf"\s+{re.escape(parts[-1])}(?![\w-])", rest, re.I)):
                return _Span(text, m.start(), m.end() + tail.end())
            return m
    return None


def misspelt_people(text: str, known: list[str], *, taken: list[str], unknown: set[str]) -> list[str]:
    """Known people the question names by a misspelt first name ("mya" for Maya Chen), besides
    those already ``taken``. Only a word the index never saw (in ``unknown``) is read as a slip
    ("say" is not Sam); a word close to two different first names names neither; a word that is
    itself someone's first name is that person, not a slip for another."""
    firsts: dict[str, list[str]] = {}
    for value in known:
        if value.split():
            firsts.setdefault(value.split()[0].lower(), []).append(value)
    found: list[str] = []
    for word in WORD_RE.findall(text):
        low = word.lower()
        if low in COMMON_WORDS or low in firsts or low not in unknown or not low.isalpha():
            continue
        close = [name for name in firsts if _close(low, name)]
        if len(close) != 1 or len(firsts[close[0]]) != 1:
            continue
        value = firsts[close[0]][0]
        if value not in found and value not in taken:
            found.append(value)
    return found


# -- content words the index never saw ------------------------------------------------------------


# The words a question is built with, which a hurried typist slips on most.
_GRAMMAR_WORDS = frozenset(
    (
        "what", "who", "whom", "whose", "where", "when", "why", "how", "which", "the", "there", "their", "they",
        "this", "that", "these", "those", "is", "are", "was", "were", "did", "does", "have", "has", "had", "can",
        "could", "would", "should", "will", "about", "with", "from", "because",
    )
)  # fmt: skip


def slip_of_common_word(word: str) -> bool:
    """Whether ``word``, one no document holds, is one of the words a question is built with
    typed a letter off ("wat", "waht", "teh", "becuase"): a slip of the question's grammar, not
    a subject the sources lack. As for names (``_close``), a letter changed in a word of three
    makes another word ("cat" is not "can")."""
    low = word.lower()
    return low not in _GRAMMAR_WORDS and any(_slip_of(low, common) for common in _GRAMMAR_WORDS)


def _slip_of(low: str, common: str) -> bool:
    return (
        common[:1] == low[:1]
        and abs(len(common) - len(low)) <= 1
        and not (len(low) <= 3 and len(low) == len(common) and sorted(low) != sorted(common))
        and edit_distance(low, common, limit=1) <= 1
    )


def grammar_word(word: str) -> str | None:
    """The one word a question is built with that ``word`` is a slip of ("waht", "whta" → "what"),
    in the case it was typed; None when it is none, or a slip of two ("hwo": who or how)."""
    low = word.lower()
    near = [] if low in _GRAMMAR_WORDS else [c for c in _GRAMMAR_WORDS if _slip_of(low, c)]
    if len(near) != 1:
        return None
    return near[0].capitalize() if word[:1].isupper() else near[0]


def _opening_slip(word: str, query: str) -> str | None:
    """``grammar_word`` of the word a question opens with ("waht is hnsw"): elsewhere a word a
    letter from "could" or "what" is as likely a subject the sources lack ("cold", "wheat")."""
    if not re.match(rf"\s*(?:(?:and|so|but|ok|okay)[\s,]+)?{re.escape(word)}\b", query, re.I):
        return None
    return grammar_word(word)


_ACRONYM_LETTERS = (3, 5)  # shorter, too many runs of words spell it; longer is rarely one


def acronyms_of(texts: list[str], wanted: set[str]) -> dict[str, set[str]]:
    """For each of ``wanted`` (lower case), the runs of words ``texts`` write side by side whose
    initials spell it ("rrf" → "Reciprocal rank fusion"). Only words of three letters or more,
    none a stop word, within one clause: a short word or a clause's end rarely sits inside a name."""
    from rag.words import STOPWORDS

    wanted = {w for w in wanted if _ACRONYM_LETTERS[0] <= len(w) <= _ACRONYM_LETTERS[1] and w.isalpha()}
    found: dict[str, set[str]] = {}
    if not wanted:
        return found
    sizes = {len(w) for w in wanted}
    for text in texts:
        for clause in re.split(r"[.,;:!?()\[\]\n]", text or ""):
            words = re.findall(_LETTERS, clause)
            for i in range(len(words)):
                for k in sizes:
                    run = words[i : i + k]
                    if len(run) < k or any(len(w) < 3 or w.lower() in STOPWORDS for w in run):
                        continue
                    initials = "".join(w[0] for w in run).lower()
                    if initials in wanted:
                        found.setdefault(initials, set()).add(" ".join(run).lower())
    return found


def _acronym(word: str, acronyms: dict[str, set[str]], *, lower_question: bool) -> str | None:
    """The one expansion of ``word`` (of ``acronyms_of``) when it reads as an acronym: in capitals,
    or in a question typed all in lower case."""
    if not (word.isupper() or lower_question):
        return None
    spelt = acronyms.get(word.lower(), set())
    return next(iter(spelt)) if len(spelt) == 1 else None


def correction(word: str, vocabulary: set[str]) -> str | None:
    """The one word of ``vocabulary`` nearest to ``word`` within its allowed edits (None when
    none is, or when two are equally near: a guess between two words is no correction). A word
    under six letters is not corrected: one letter off, it is as likely a word of a subject the
    sources do not hold ("moons", "bones") as a slip (but see ``letter_left_out``); two edits need
    nine letters, or the word's own letters in another order ("ableine" for "abilene")."""
    limit = _slips_allowed(word)
    if not limit:
        return None
    low = word.lower()
    best: dict[int, set[str]] = {}
    for candidate in vocabulary:
        if candidate == low or candidate[:1] != low[:1] or abs(len(candidate) - len(low)) > 2:
            continue
        d = edit_distance(low, candidate, limit=2)
        if d <= limit or (d == 2 and _same_letters(low, candidate)):
            best.setdefault(d, set()).add(candidate)
    if not best:
        return None
    nearest = best[min(best)]
    return next(iter(nearest)) if len(nearest) == 1 else None


def _slips_allowed(word: str) -> int:
    """The edits a typed word may be from the one it means (see ``correction``): none under six
    letters, two from nine."""
    return 0 if len(word) < 6 else 1 if len(word) < 9 else 2


def letter_left_out(word: str, vocabulary: set[str], english: frozenset[str]) -> str | None:
    """The one word of ``vocabulary`` that ``word`` is with a letter left out ("budgt" for
    "budget", "pilt" for "pilot"), when ``word`` is four or five letters that spell no word of
    ``english``. A short English word is as likely a subject the sources lack ("moons"), and a
    letter changed rather than left out is as likely an acronym ("saml" is not "same")."""
    low = word.lower()
    if not english or not 4 <= len(low) <= 5 or not low.isalpha() or low in english:
        return None
    near = {
        v for v in vocabulary
        if len(v) == len(low) + 1 and v[:1] == low[:1] and any(v[:i] + v[i + 1 :] == low for i in range(1, len(v)))
    }  # fmt: skip
    return next(iter(near)) if len(near) == 1 else None


@functools.cache
def english_words() -> frozenset[str]:
    """English words in lower case, three letters or more: the whole-word entries of the local
    model's tokenizer, which ships with it (about twenty thousand; names of the sources' own
    things, "pgvector", "hnsw", are not among them). Empty when the model's package is missing."""
    try:
        from rag.embeddings.onnx_export import package_dir

        vocab = json.loads((package_dir() / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    except (ImportError, OSError, KeyError, ValueError):
        return frozenset()
    return frozenset(w for w in vocab if len(w) >= 3 and w.isascii() and w.isalpha() and w.islower())


@functools.lru_cache(maxsize=64)
def _starting_with(words: frozenset[str], initial: str) -> frozenset[str]:
    """The ``words`` that begin with ``initial``: a correction keeps a word's first letter, so the
    twenty thousand English words need not all be compared on every ask."""
    return frozenset(w for w in words if w[:1] == initial)


def _family_slip(word: str, by_family: dict[str, list[str]]) -> str | None:
    """A slip of a word the documents write only in longer forms ("conect" where they say
    "Connecting"): the shortest word of the one family (``by_family``: stem -> the documents'
    words) whose stem is as near as ``correction`` allows."""
    limit, low = _slips_allowed(word), word.lower()
    if not limit:
        return None
    near = [
        words for root, words in by_family.items()
        if root[:1] == low[:1] and abs(len(root) - len(low)) <= 2 and edit_distance(low, root, limit=2) <= limit
    ]  # fmt: skip
    if len(near) != 1:
        return None
    return _plain_form(low, min(near[0], key=lambda w: (len(w), w)))


_ENDINGS = ("ing", "ed", "es", "s")


def _plain_form(typed: str, word: str) -> str:
    """``word`` without its ending when that is nearer to what was typed: "conect" is a slip of
    "connect", which the documents write only as "Connecting". The search stems both alike; the
    question shown as searched reads as typed ("how do i connect notion")."""
    for ending in _ENDINGS:
        plain = word[: -len(ending)]
        if (
            word.endswith(ending)
            and len(plain) >= 4
            and edit_distance(typed, plain, limit=3) < edit_distance(typed, word, limit=3)
        ):
            return plain
    return word


def abbreviation(word: str, vocabulary: set[str]) -> str | None:
    """The word of ``vocabulary`` that ``word`` shortens ("intro" where the documents say
    "introduction"): the shortest of the words it begins, when they are one family and at least
    three letters longer (the family matches the rest: "config" is searched as "configured").
    None when it begins words of two families ("photo": photograph or photosynthesis), or is under
    four letters."""
    low = word.lower()
    if not 4 <= len(low) <= 6 or not low.isalpha():
        return None
    longer = [v for v in vocabulary if v.startswith(low) and len(v) >= len(low) + 3]
    if not longer or len({stem(v) for v in longer}) != 1:
        return None
    return min(longer, key=lambda w: (len(w), w))


# Letters that carry their mark in the letter itself, so Unicode decomposes them into no base
# letter and accent: what a keyboard without them types instead.
_UNMARKED = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ı": "i", "ß": "ss", "æ": "ae", "œ": "oe"})


def unmarked(word: str) -> str:
    """``word`` in lower case without its accents and marks ("Kraków", "Śródmieście", "Łódź" →
    "krakow", "srodmiescie", "lodz")."""
    letters = unicodedata.normalize("NFKD", word.lower().translate(_UNMARKED))
    return "".join(ch for ch in letters if not unicodedata.combining(ch))


def accented(word: str, vocabulary: set[str]) -> str | None:
    """The one word of ``vocabulary`` that is ``word`` with its accents as the documents write it
    ("Beausejour" → "Beauséjour", "krakow" → "kraków"), in the case ``word`` was typed; None when
    no word is, or two are, or the documents also write it as typed. Not a guess: the same
    letters, only the marks a keyboard leaves out."""
    low = word.lower()
    if low in vocabulary:
        return None
    key = unmarked(low)
    same = {v for v in vocabulary if unmarked(v) == key}
    if len(same) != 1:
        return None
    found = next(iter(same))
    if word.isupper() and len(word) > 1:
        return found.upper()
    return found[:1].upper() + found[1:] if word[:1].isupper() else found


def dehyphenated(word: str, vocabulary: set[str]) -> str | None:
    """The one hyphenated word of ``vocabulary`` that is ``word`` typed without its hyphen
    ("oncall" for "on-call", "realtime" for "real-time"), in the case ``word`` was typed; None
    when the documents write none, or two. Not a guess: the same letters, only the hyphen left
    out. (``unglued`` needs halves of three letters; "on" is a half here.)"""
    found = closed_compounds(vocabulary).get(word.lower())
    if found is None:
        return None
    return found[:1].upper() + found[1:] if word[:1].isupper() else found


def unglued(word: str, vocabulary: set[str], *, camel_only: bool = False, pairs: set[str] | None = None) -> str | None:
    """Two words of ``vocabulary`` typed without the space between them ("UserDatagram",
    "packetswitching"), split where exactly one cut makes both halves words of three letters or
    more (None otherwise). ``camel_only``: only where a capital inside the word marks the cut, as
    a name typed on purpose is otherwise one word the sources do not hold. ``pairs`` (the
    documents' adjacent words, ``pairs_of``): the documents must write the two words side by
    side, as English writes many words whole that two shorter ones spell ("outcome", "deadline")."""
    cuts = [
        i
        for i in range(3, len(word) - 2)
        if word[:i].lower() in vocabulary
        and word[i:].lower() in vocabulary
        and (not camel_only or (word[i].isupper() and word[i - 1].islower()))
        and (pairs is None or f"{word[:i]} {word[i:]}".lower() in pairs)
    ]
    if len(cuts) != 1:
        return None
    return f"{word[: cuts[0]]} {word[cuts[0] :]}"


_LETTERS = r"[^\W\d_]+"  # a run of letters, of any alphabet


def glued(query: str, unknown: set[str], vocabulary: set[str]) -> dict[str, str]:
    """Two words of ``query`` that the documents write as one ("gun powder" for "gunpowder",
    "data base"), where one of the two is a word no document holds: the pair → the one word. The
    reverse of ``unglued``; the glued word must be one the documents found do write."""
    words = list(re.finditer(_LETTERS, query))
    fixes: dict[str, str] = {}
    for a, b in zip(words, words[1:], strict=False):
        first, second = a.group(0), b.group(0)
        if not re.fullmatch(r"[ -]", query[a.end() : b.start()]) or min(len(first), len(second)) < 3:
            continue
        joined = (first + second).lower()
        if joined in vocabulary and (first.lower() in unknown or second.lower() in unknown):
            fixes[query[a.start() : b.end()]] = first + second.lower()
    return fixes


def _same_letters(typed: str, word: str) -> bool:
    """The same letters in another order ("ableine" for "abilene"): fingers that outran each
    other, two edits apart but no other word's letters."""
    return sorted(typed) == sorted(word)


def correct_query(
    query: str, *, unknown: set[str], vocabulary: set[str], pairs: set[str] | None = None,
    acronyms: dict[str, set[str]] | None = None, english: frozenset[str] = frozenset(),
) -> tuple[str, dict[str, str]]:  # fmt: skip
    """``query`` with each of its ``unknown`` words replaced by its correction from ``vocabulary``;
    the replacements made (typed → corrected). A capitalised word of a question not written all
    in lower case is a name typed on purpose: one the index never saw is something it does not
    hold, and correcting it to a near word would answer a question about something else; the
    same name with the documents' accents ("Krakow" for "Kraków") is that name, not a near one.
    A word the documents hold in another form ("complained" where they say "complaints") is
    spelt right: the answer matches word families, and a near word of another form is no slip.
    ``pairs``: see ``unglued``. A slip of a question word ("waht") is that word; an acronym the
    documents never write ("rrf") is the words they write it for (``acronyms``: ``acronyms_of``).
    ``english`` (``english_words``): a short word that is no English word may be a letter left
    out of the documents' word (``letter_left_out``); one with no near word in the documents is
    the one English word it is a slip of ("responsibel" where they say "owner")."""
    fixes: dict[str, str] = glued(query, unknown, vocabulary)
    joined = {w.lower() for pair in fixes for w in re.findall(_LETTERS, pair)}
    lower_question = query == query.lower()
    by_family: dict[str, list[str]] = {}
    for v in vocabulary:
        by_family.setdefault(stem(v), []).append(v)
    for word in set(WORD_RE.findall(query)):
        if word.lower() in joined or stem(word) in by_family:
            continue
        name = not lower_question and word[:1].isupper() and query.lstrip().find(word) != 0
        if word.lower() in unknown and (parts := unglued(word, vocabulary, camel_only=name, pairs=pairs)):
            fixes[word] = parts  # the same letters, a space left out: no guess at a name
            continue
        if word.lower() in unknown and (joined_up := dehyphenated(word, vocabulary)):
            fixes[word] = joined_up  # the same letters, the hyphen left out
            continue
        if word.lower() in unknown and (marked := accented(word, vocabulary)):
            fixes[word] = marked  # the same letters, the accents left out: no guess either
            continue
        if word.lower() in unknown and (spelt := _acronym(word, acronyms or {}, lower_question=lower_question)):
            fixes[word] = spelt
            continue
        if name:
            continue
        if word.lower() not in unknown:
            continue
        if fixed := (
            _opening_slip(word, query)
            or correction(word, vocabulary)
            or letter_left_out(word, vocabulary, english)
            or _family_slip(word, by_family)
            or abbreviation(word, vocabulary)
            or (word.lower() not in english and correction(word, _starting_with(english, word[:1].lower())))
        ):
            fixes[word] = fixed
    if not fixes:
        return query, {}
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(re.escape(w) for w in sorted(fixes, key=len, reverse=True)) + r")(?![\w-])"
    )
    return pattern.sub(lambda m: fixes[m.group(1)], query), fixes


def vocabulary_of(texts: list[str]) -> set[str]:
    """The lower-case words (three letters or more, no digits) of ``texts``, hyphenated ones
    ("on-call") whole."""
    return {
        w.lower() for text in texts for w in WORD_RE.findall(text or "")
        if len(w) >= 3 and w.replace("-", "").isalpha()
    }  # fmt: skip


def pairs_of(texts: list[str]) -> set[str]:
    """Each two words ``texts`` write side by side ("packet switching"), in lower case; words a
    sentence's end or a comma parts are not side by side."""
    pairs: set[str] = set()
    for text in texts:
        words = list(re.finditer(_LETTERS, text or ""))
        pairs.update(
            f"{a.group(0)} {b.group(0)}".lower()
            for a, b in zip(words, words[1:], strict=False)
            if re.fullmatch(r"[ \t-]+", text[a.end() : b.start()])
        )
    return pairs


def hyphenated_pairs(query: str, *, scope) -> dict[str, str]:
    """Two words of ``query`` typed apart that the documents visible in ``scope`` write as one
    hyphenated word ("on call" for "on-call", "follow up" for "follow-up"), and never apart: the
    pair → that word. Both halves are words the index knows, so no correction of a typo finds them;
    searched apart, "who is on call" is a question about "call" (the call stack), which is not what
    was asked. The hyphenated word is the documents' own, not a guess; a pair some document writes
    as typed ("rate limits" in a meeting, "rate-limits" in a runbook) is left as typed, or the
    question would lose the document that says it the person's way."""
    from django.db import connection

    from rag.search import SearchFilters, filter_sql

    words = list(re.finditer(_LETTERS, query))
    typed = {
        query[a.start() : b.end()]: f"{a.group(0)}-{b.group(0)}".lower()
        for a, b in zip(words, words[1:], strict=False)
        if re.fullmatch(r"[ \t]+", query[a.end() : b.start()])
    }
    if not typed:
        return {}
    where, params = filter_sql(SearchFilters(), scope)
    with connection.cursor() as cursor:
        # The keyword index keeps a hyphenated word whole beside its halves ("on-cal", "call").
        cursor.execute(
            f"""SELECT w FROM unnest(%(words)s::text[]) AS w
                WHERE EXISTS (SELECT 1 FROM rag_chunk c
                              WHERE c.tsv @@ plainto_tsquery('english', w) AND {where})""",
            {**params, "words": sorted(set(typed.values()))},
        )
        held = {row[0] for row in cursor.fetchall()}
        joined_pairs = {pair: joined for pair, joined in typed.items() if joined in held}
        if not joined_pairs:
            return {}
        # The keyword index reads "rate-limits" as its halves too, so a phrase query finds both
        # writings: the text itself tells them apart, on the few rows the phrase finds.
        pairs = sorted({pair.lower() for pair in joined_pairs})
        cursor.execute(
            f"""SELECT p FROM unnest(%(pairs)s::text[], %(written)s::text[]) AS t(p, written)
                WHERE EXISTS (SELECT 1 FROM rag_chunk c
                              WHERE c.tsv @@ phraseto_tsquery('english', p) AND c.content ~* written
                                AND {where})""",
            {**params, "pairs": pairs, "written": [r"\m" + r"\s+".join(p.split()) + r"\M" for p in pairs]},
        )
        apart = {row[0] for row in cursor.fetchall()}
    return {pair: joined for pair, joined in joined_pairs.items() if pair.lower() not in apart}


def unknown_words(words: set[str], *, scope, codes: bool = False) -> set[str]:
    """Those of ``words`` (lower case) that no document visible in ``scope`` holds, as the keyword
    index reads them (stop words, which it drops, count as known). ``codes``: the words of letters
    and digits ("p99", "s3") instead of those of letters, which are the ones a slip is corrected in."""
    from django.db import connection

    from rag.search import SearchFilters, filter_sql

    if codes:
        words = {w.lower() for w in words if is_code(w)}
    else:
        words = {w.lower() for w in words if w.isalpha() and len(w) >= 3 and w.lower() not in COMMON_WORDS}
    if not words:
        return set()
    where, params = filter_sql(SearchFilters(), scope)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT w FROM unnest(%(words)s::text[]) AS w
                WHERE numnode(plainto_tsquery('english', w)) > 0
                  AND NOT EXISTS (SELECT 1 FROM rag_chunk c
                                  WHERE c.tsv @@ plainto_tsquery('english', w) AND {where})""",
            {**params, "words": sorted(words)},
        )
        return {row[0] for row in cursor.fetchall()}


def is_code(word: str) -> bool:
    """A name of letters and digits ("p99", "gpt4", "s3"), not a number with its unit ("24h", "10k")."""
    return bool(re.fullmatch(r"[^\W\d_]+\d[^\W_]*", word))
