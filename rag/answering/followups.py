"""Follow-up questions made searchable: "who raised them?" → what was actually searched.

A follow-up leans on the conversation: its pronouns point at the previous question's subject,
and "tell me more about Northwind" names a *new* subject. Offline, the previous question's
subject terms (its names and content words) are carried into the searched query when the
follow-up points back; a "more about X" question searches X. With a generative model a rewrite
step turns the follow-up into a standalone question (and falls back to the offline rule when the
model fails or answers with something unusable).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

from rag.llm.base import LLMError

logger = logging.getLogger(__name__)

_MORE_ABOUT_RE = re.compile(
    r"\b(?:tell me (?:more |something |everything )?about|more (?:about|on)|what about|how about|and about|"
    r"(?:what|anything) (?:else )?(?:do (?:you|we) know )?about|expand on|elaborate on)\s+(?P<what>.+?)\s*[?.!]*\s*$",
    re.I,
)
_POINTER_RE = re.compile(
    r"\b(?:that|this|it|its|those|these|them|they|their|he|she|him|his|her|there|the same|the other|one)\b", re.I
)
_PRONOUN_ONLY_RE = re.compile(r"^(?:it|that|this|them|those|these|they|him|her|there)$", re.I)
# "this year", "that day", "the other week": a pointer word that names a time, not the conversation.
_TIME_POINTER_RE = re.compile(
    r"\b(?:this|that|last|next|the other|the same)\s+(?:morning|afternoon|evening|day|week|month|quarter|year|time)\b",
    re.I,
)
# "and last month?", "what about in july", "and for 2025?": the previous question again, for
# another period.
_PERIOD_ONLY_RE = re.compile(r"^\s*(?:(?:and|but|so)\s+)?(?:(?:what|how)\s+about\s+)?(?P<rest>.+?)\s*[?.!]*\s*$", re.I)
# A follow-up that points back says little of its own: at most this many content words besides
# its pronouns ("who raised it?" one, "what did they decide about the budget?" two).
MAX_OWN_TERMS = 2
_QUESTION_WORDS = {"who", "what", "when", "where", "why", "how", "which", "whose", "whom"}
MAX_CARRIED_TERMS = 8


@dataclass
class Rewrite:
    searched_query: str
    kind: str  # standalone | carried | bare | recount | new_subject | period | other_one | person | llm
    subject: str = ""


def _content_words(text: str) -> list[str]:
    from rag.words import STOPWORDS, WORD_RE

    out: list[str] = []
    for word in WORD_RE.findall(text):
        low = word.lower()
        if low in STOPWORDS or low in _QUESTION_WORDS or len(word) < 3 or low in {w.lower() for w in out}:
            continue
        out.append(word)
    return out


def more_about(question: str) -> str:
    """The subject of "tell me more about X" (empty when X is only a pronoun or absent)."""
    m = _MORE_ABOUT_RE.search(question)
    if not m:
        return ""
    what = re.sub(r"^(?:the|a|an)\s+", "", m["what"].strip(), flags=re.I)
    return "" if not what or _PRONOUN_ONLY_RE.match(what) else what


# "is there an api", "there are two ways": "there" that says something exists, pointing nowhere.
# "who was there" asks about a place.
_EXISTENTIAL_THERE_RE = re.compile(
    r"^\s*(?:(?:and|so|but)\s+)?(?:is|are|was|were|isn['’]?t|aren['’]?t|will)\s+there\b"
    r"|\bthere\s+(?:is|are|was|were|isn|aren)\b",
    re.I,
)


# "how often?", "when exactly", "how much": a question word and what kind of answer it wants,
# nothing it is about.
_LEAD = r"^\s*(?:(?:and|so|but|ok(?:ay)?)[\s,]+)?"  # "and how often?", "ok, which port"
_BARE_QUESTION_RE = re.compile(
    rf"{_LEAD}(?:who|what|when|where|which|how(?:\s+(?:often|much|many|long|far|soon))?)"
    r"(?:\s+(?:exactly|then|now|again))?\s*[?.!]*\s*$",
    re.I,
)


# "what should i do then?", "how do i fix it then": "then" closing a question is "in that case",
# the case the conversation was about.
_IN_THAT_CASE_RE = re.compile(r"\bthen\s*[?.!]*\s*$", re.I)


# "what formats?", "which port": a question word and one noun, the kind of thing wanted of the
# earlier subject ("what formats" after "how do i export my graph").
_ONE_THING_RE = re.compile(rf"{_LEAD}(?:what|which)\s+(?P<noun>[^\W\d_]{{3,}})\s*[?.!]*\s*$", re.I)


def _asks_bare(question: str) -> bool:
    """A question word alone ("how often?") or with one noun ("what formats?"): nothing it is about."""
    from rag.words import STOPWORDS

    if _BARE_QUESTION_RE.match(question):
        return True
    m = _ONE_THING_RE.match(question)
    return bool(m) and m["noun"].lower() not in STOPWORDS | {"else", "now", "then", "exactly", "again", "ones"}


def points_back(question: str) -> bool:
    """Whether ``question`` leans on the conversation: a pronoun that is not part of a time
    ("this year") or of "is there", or a closing "then", and little of its own to search for."""
    from rag.words import GENERIC_TERMS, content_terms

    bare = _EXISTENTIAL_THERE_RE.sub(" ", _TIME_POINTER_RE.sub(" ", question))
    if not (_POINTER_RE.search(bare) or _IN_THAT_CASE_RE.search(bare)):
        return False
    own = content_terms(_POINTER_RE.sub(" ", bare)) - GENERIC_TERMS - {"tell", "know", "more"}
    return len(own) <= MAX_OWN_TERMS


# "which ones?", "what were they", "list them": the entries a counting question counted.
_WHICH_ONES_RE = re.compile(
    r"^\s*(?:(?:and|so|ok(?:ay)?)[\s,]+)?(?:which(?:\s+ones?)?|(?:which|what)\s+(?:are|were)\s+(?:they|those|these)"
    r"|(?:list|name|show)(?:\s+me)?\s+(?:them|those|these)(?:\s+all)?)\s*[?.!]*\s*$",
    re.I,
)


def asks_which_were_counted(question: str, previous: str) -> bool:
    """"which ones?" after "how many meetings did we have with acme": the counting question again,
    whose answer names every entry it counted (an answer from the last one's sources would quote
    one of them)."""
    from rag.answering.analysis import asks_to_count

    return bool(previous and _WHICH_ONES_RE.match(question) and asks_to_count(previous))


def period_follow_up(question: str, previous: str, *, today) -> str:
    """"and last month?" after "what did we decide in september?": the earlier question asked
    again for the new period ("what did we decide last month?"); empty when ``question`` says
    more than a period."""
    from rag.answering.dates import parse_dates
    from rag.words import content_terms

    m = _PERIOD_ONLY_RE.match(question)
    if not m or not previous:
        return ""
    start, end, phrase = parse_dates(m["rest"], today)
    if not phrase or content_terms(m["rest"].lower().replace(phrase, " ")) - {"in", "for", "during"}:
        return ""
    _, _, old = parse_dates(previous, today)
    base = previous.rstrip(" ?.!")
    if old:
        base = re.sub(re.escape(old), phrase, base, count=1, flags=re.I)
    else:
        base = f"{base} {phrase}"
    return base + "?"


# "and the notion one?", "what about acme?", "and for Sam": the previous question again, for another
# thing of the same kind. One or two words besides the connective.
_OTHER_ONE_RE = re.compile(
    r"^\s*(?:and|but|so|what about|how about)\s+(?:(?:for|in|with|on|about)\s+)?(?:the\s+)?"
    r"(?P<what>[\w'’.-]+(?:\s+[\w'’.-]+)??)(?:\s+ones?)?\s*[?.!]*\s*$",
    re.I,
)


def other_one(question: str, previous: str, known: list[list[str]]) -> str:
    """"and the notion one?" after "how often does the logseq sync run?": the earlier question asked
    again with the new name where it named another of the same kind ("how often does the notion
    sync run?"). ``known``: the names of each kind the person can see (tags, people, clients…).
    Empty unless the follow-up names only a known value and the earlier question one of its kind."""
    m = _OTHER_ONE_RE.match(question)
    if not m or not previous:
        return ""
    what = m["what"].strip()
    for values in known:
        # A name is typed whole or by its first word: "Northwind Fund", "northwind", "Leo".
        names = {v.lower(): {v.lower(), v.split()[0].lower()} for v in values if v and v.strip()}
        mine = [name for name, forms in names.items() if what.lower() in forms]
        if not mine:
            continue
        others = [form for name, forms in names.items() if name not in mine for form in forms if len(form) >= 3]
        for form in sorted(set(others), key=len, reverse=True):  # "Acme Capital" before "Acme"
            said = re.compile(rf"(?<![\w]){re.escape(form)}(?![\w])", re.I)
            if said.search(previous):
                return said.sub(what, previous.rstrip(" ?.!"), count=1) + "?"
    return ""


# "what about a tweet?" after "how do i embed a youtube video": the earlier question for another
# thing of the kind it asked about with "a" ("how do i embed a tweet?").
_ANOTHER_THING_RE = re.compile(
    r"^\s*(?:and|but|so|what about|how about)\s+(?P<what>(?:a|an)\s+[\w'’.-]+(?:\s+[\w'’.-]+){0,2}?)\s*[?.!]*\s*$",
    re.I,
)
# The thing a question ends on, named with "a" or "an" ("…embed a youtube video?").
_LAST_THING_RE = re.compile(r"\b(?:a|an)\s+(?:(?!(?:a|an)\b)[\w'’.-]+\s*){1,3}[?.!]*\s*$", re.I)


def another_thing(question: str, previous: str) -> str:
    """"what about a tweet?" after "how do i embed a youtube video": the earlier question with the
    new thing in place of the one it ended on; empty unless both name one with "a" or "an"."""
    m = _ANOTHER_THING_RE.match(question)
    last = _LAST_THING_RE.search(previous) if m and previous else None
    return f"{previous[: last.start()]}{m['what']}?" if last else ""


# "and the weights?", "what about the text part": a part of what the previous question asked about,
# named with "the" as something the conversation already holds (a name of its own is ``other_one``).
_ASPECT_RE = re.compile(
    r"^\s*(?:and|but|so)?\s*(?:(?:what|how)\s+about\s+)?the\s+(?P<what>[\w'’.-]+(?:\s+[\w'’.-]+)?)\s*[?.!]*\s*$",
    re.I,
)


def aspect_of(question: str) -> str:
    """The part "and the weights?" asks about ("weights"); empty for any other question."""
    m = _ASPECT_RE.match(question)
    return m["what"] if m and re.match(r"^\s*(?:and|but|so|what|how)\b", question, re.I) else ""


# The subject an earlier question asked about with "about" ("what did maya say about latency").
_ABOUT_SUBJECT_RE = re.compile(r"\babout\s+(?:the\s+)?(?P<what>[\w'’.-]+(?:\s+[\w'’.-]+){0,3})\s*[?.!]*\s*$", re.I)


def about_another(question: str, previous: str) -> str:
    """"and what about the notion sync" after "what did maya say about latency": the earlier
    question about the new subject ("what did maya say about the notion sync"), not the new subject
    searched with the old one's words; empty unless the earlier question ends on "about" its
    subject and the follow-up names only another one."""
    what = aspect_of(question)
    m = _ABOUT_SUBJECT_RE.search(previous) if what and previous else None
    if not m or m["what"].lower() == what.lower():
        return ""
    return f"{previous[: m.start()].rstrip()} about the {what}"


_PERSON_PRONOUN_RE = re.compile(r"\b(?:he|she|him|her|his|hers)\b", re.I)


def person_follow_up(question: str, previous: str, people: list[str]) -> str:
    """"what did he say" after "who is sam": ``question`` with its pronouns for a person replaced
    by the one person of ``people`` the previous question named ("what did Sam say"; "his" is
    "Sam's"). Empty when the question has no such pronoun or the previous question named no one
    person."""
    from rag.answering.analysis import match_values

    named = match_values(previous, people, names=True)
    return pronouns_as(question, named[0]) if len(named) == 1 else ""


def pronouns_as(question: str, person: str) -> str:
    """``question`` with its pronouns for a person read as ``person`` ("what is she working on"
    with Maya Chen: "what is Maya working on"); empty when it has none."""
    if not _PERSON_PRONOUN_RE.search(question):
        return ""
    first = person.split()[0]

    def name(m: re.Match) -> str:
        return f"{first}'s" if m.group(0).lower() in ("his", "hers") else first

    return _PERSON_PRONOUN_RE.sub(name, question)


def offline_rewrite(
    *, question: str, previous: list[str], today=None, known: list[list[str]] | None = None,
    people: list[str] | None = None,
) -> Rewrite:  # fmt: skip
    """The searched query for ``question`` given the earlier questions (oldest first).

    - "which ones?" after "how many meetings…": the counting question again (``recount``).
    - "and last month?": the previous question for that period (``period``).
    - "and the notion one?": the previous question for another name of the same kind (``other_one``),
      among ``known`` (the names of each kind the person can see); "what about a tweet?" after "how
      do i embed a youtube video", for another thing it named with "a" (``other_one`` too).
    - "what did he say" after a question naming one person (of ``people``): the question about
      that person (``person``).
    - "and what about the notion sync" after "what did maya say about latency": the earlier
      question about that subject instead (``other_one``).
    - "and the weights?", "what about the text part": a part of the earlier subject, searched
      with it (``carried``).
    - "how often?", "when exactly", "what formats?": a bare question, asked of the earlier subject
      (``bare``).
    - "tell me more about X" with a subject X: X is a new query (the earlier sources are not
      reused: they were retrieved for something else).
    - A question that points back ("who raised them?", "when was that?") and says little of its
      own: the previous question's content words are carried in, so the search finds the same
      subject.
    - Anything else stands alone, whatever was asked before ("how many times did I meet Leo
      this year?" carries nothing of "what is the capital of France?").
    """
    import datetime as dt

    if previous and asks_which_were_counted(question, previous[-1]):
        return Rewrite(searched_query=previous[-1], kind="recount", subject=previous[-1])
    if previous and (again := period_follow_up(question, previous[-1], today=today or dt.date.today())):
        return Rewrite(searched_query=again, kind="period", subject=previous[-1])
    if previous and (again := other_one(question, previous[-1], known or []) or another_thing(question, previous[-1])):
        return Rewrite(searched_query=again, kind="other_one", subject=previous[-1])
    if previous and people and (again := person_follow_up(question, previous[-1], people)):
        return Rewrite(searched_query=again, kind="person", subject=previous[-1])
    if previous and (again := about_another(question, previous[-1])):
        return Rewrite(searched_query=again, kind="other_one", subject=previous[-1])
    if previous and aspect_of(question):
        # Searched as a pointing follow-up: the earlier subject, the part named.
        return _carried(question, previous[-1])
    if previous and _asks_bare(question):
        # "how often?", "what formats?" ask their question of the earlier subject: searched, and
        # answered, with it.
        carried = _carried(question, previous[-1])
        return replace(carried, kind="bare") if carried.kind == "carried" else carried
    subject = more_about(question)
    if subject:
        return Rewrite(
            searched_query=subject if len(subject.split()) > 1 else f"{subject} {question}",
            kind="new_subject",
            subject=subject,
        )
    if not previous or not points_back(question):
        return Rewrite(searched_query=question, kind="standalone")
    return _carried(question, previous[-1])


def _carried(question: str, previous: str) -> Rewrite:
    """``question`` searched with the previous question's content words it lacks (``carried``)."""
    from rag.words import EVERYDAY_VERB_TERMS, content_terms

    asked = {w.lower() for w in _content_words(question)}
    # "what should i do then" after "what happens if redis goes down" is about redis, not "happens".
    carried = [
        w for w in _content_words(previous) if w.lower() not in asked and not content_terms(w) <= EVERYDAY_VERB_TERMS
    ][:MAX_CARRIED_TERMS]
    if not carried:
        return Rewrite(searched_query=question, kind="standalone")
    return Rewrite(
        searched_query=f"{question.rstrip()} ({' '.join(carried)})", kind="carried", subject=" ".join(carried)
    )


REWRITE_PROMPT = (
    "Rewrite the user's last question so it can be understood without the conversation: replace "
    "pronouns and vague references with what they refer to. Keep the user's words otherwise. If the "
    "question already stands alone, return it unchanged. Reply with the question only."
)


def llm_rewrite(
    *, question: str, exchanges: list[tuple[str, str]], llm, timeout: float | None = None, today=None
) -> Rewrite:
    """A generative model's standalone version of ``question``; the offline rule on failure.

    A question that stands on its own is not sent to the model: a rewrite could only add the
    previous turn's words to it."""
    previous = [q for q, _ in exchanges]
    fallback = offline_rewrite(question=question, previous=previous, today=today)
    if not exchanges or fallback.kind == "standalone":
        return fallback
    history = "\n".join(f"User: {q}\nAssistant: {(a or '')[:600]}" for q, a in exchanges[-3:])
    messages = [
        {"role": "system", "content": REWRITE_PROMPT},
        {"role": "user", "content": f"Conversation:\n{history}\n\nLast question: {question}"},
    ]
    try:
        completion = llm.complete(messages=messages, max_tokens=120, temperature=0.0, timeout=timeout)
    except (LLMError, OSError, TimeoutError) as exc:
        logger.warning("follow-up rewrite failed, carrying terms instead: %s", exc)
        return fallback
    text = (completion.text or "").strip().strip('"').strip()
    text = (
        re.sub(r"^(?:standalone question|question|rewritten)\s*:\s*", "", text, flags=re.I).splitlines()[0].strip()
        if text
        else ""
    )
    if not text or len(text) > 500:
        return fallback
    return Rewrite(searched_query=text, kind="llm")


# "Who was it with?", "who was there?", "and who attended?": asks for the people of what the
# conversation is about, not for a sentence sharing the question's (few) words.
_WHO_RE = re.compile(r"^\s*(?:and|so|ok(?:ay)?|then)?[\s,]*(?:who|with whom)\b", re.I)
_PRESENCE_WORDS = {
    "attend", "attende", "meet", "join", "present", "participant", "participate", "involve", "there", "else", "came",
    "come", "meeting", "call",
}


def asks_who_was_there(question: str) -> bool:
    """A short "who" follow-up that names nothing new: who took part in what was just discussed."""
    from rag.words import content_terms

    if not _WHO_RE.match(question) or len(question.split()) > 8:
        return False
    return not (content_terms(question) - _QUESTION_WORDS - _PRESENCE_WORDS)


# "Who attended the acme kickoff?", "who was at the review", "who took part in it": the people of
# the meeting the question names, which its metadata lists and its lines seldom say.
_TOOK_PART_RE = re.compile(
    r"^\s*(?:(?:and|so)\s+)?who\s+(?:else\s+)?(?:attended|joined|came\s+to|participated\s+in|took\s+part\s+in"
    r"|(?:was|were)\s+(?:at|in|there|present|invited\s+to))\b",
    re.I,
)


def asks_who_took_part(question: str) -> bool:
    """A question asking who took part in something it names ("who attended the acme kickoff")."""
    return bool(_TOOK_PART_RE.search(question))
