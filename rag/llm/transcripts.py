"""What only transcripts need: speaker turns, hesitations, role names, a question's reply.

The general answerer (``rag.llm.extractive``) reads any document; when a source's lines are
speaker turns ("Maya Chen: …", "Professor A: …") it calls what is here: the turn's words tidied
as an edited transcript would print them, quotes that name their speaker, a question naming a
speaker ("what did the professor say"), the agenda item a meeting's answer comes from, and the
reply a question asked in the meeting lends its relevance to. Nothing here runs for handbooks,
articles or notes.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from rag.words import GENERIC_TERMS, PERIOD_TERMS, STOPWORDS, content_terms, stem

if TYPE_CHECKING:
    from rag.llm.candidates import Sentence

# Words of conversation rather than of its subject: what keeps a line going, not what it is about
# (beside the stopwords, which ``content_terms`` drops already).
_CHAT_TERMS = frozenset(
    stem(w)
    for w in [
        "yeah", "yes", "okay", "ok", "right", "sure", "guess", "think", "mean", "thing", "stuff", "kind", "sort",
        "lot", "really", "well", "actually", "say", "wanna", "gonna", "go", "going", "got", "see", "look", "like",
        "maybe", "probably", "yep", "huh", "oh", "alright",
    ]
)  # fmt: skip


def says_something(text: str) -> bool:
    """Whether a spoken sentence has a word about its subject, not only conversation."""
    return bool(content_terms(text) - _CHAT_TERMS)


SPEAKER_RE = re.compile(r"^\s*([A-Z][\w.'’-]*(?: [A-Za-z0-9][\w.'’-]*){0,3}):\s+(\S.*)$")
# Labels that introduce a part of a page, not a voice: a course page's "Image: …" and "Video: …"
# lines are no speakers, and a page holding both is no transcript.
_PAGE_LABELS = frozenset(
    ["Image", "Video", "Audio", "Figure", "Caption", "Note", "Tip", "Warning", "Example", "Source", "Link", "Table"]
)


def speaker_turn(line: str) -> re.Match | None:
    """``line`` as a turn ("Name: what they said"), or None when it is not one."""
    m = SPEAKER_RE.match(line)
    return m if m and m[1] not in _PAGE_LABELS else None


# Hesitation sounds, and a word or two said twice in a row ("the the", "I I", "we were we were"):
# how people speak, not what they say. Quotes drop them, as an edited transcript would.
_FILLER_RE = re.compile(r"(?:,\s*)?\b(?:mm-hmm|uh-huh|u+h+|u+m+|e+r+m+|h+m+|m+h*m+)\b(?:\s*,)?", re.I)
_REPEAT_RE = re.compile(r"\b(\w+(?:['’]\w+)?(?: \w+(?:['’]\w+)?)?)(?:,? \1\b)+", re.I)
# A word broken off and said again whole ("agai again", "w what", "ap applicable"): up to four
# letters that begin the next word. A real short word keeps its place ("in into", "a again"),
# and so does a contraction's end ("we're recording").
_FALSE_START_RE = re.compile(r"(?<!['’])\b([A-Za-z]{1,4})[-,]? (?=\1[a-z])", re.I)
_SENTENCE_START_RE = re.compile(r"(\w{2,}[.!?] )([a-z])")
# A sentence broken off and begun again ("So this is The project is called…", "but we find that
# We want the meeting…"): transcribers capitalise the word that starts the new one. Only words
# that are capitalised nowhere but at a sentence's start tell ("we use Matlab" is a name, "I"
# is always capital), and only a short broken-off start goes: a long one is a sentence whose
# stop the transcript lacks.
_RESTART_RE = re.compile(
    r"(?:^|(?<=[.!?] ))(?:[^.!?\s]+ ){0,9}?[^.!?\s]*[a-z,] "
    r"(?=(?:The|We|It|This|That|So|And|But|What|You|They|He|She|There|If|How|Our|My|In|Then|When|Now|Why|Where)\b)"
)
_LEAD_MARKER_RE = re.compile(r"^(?:(?:yeah|okay|ok|so|well|and|but|oh)\b[,.]?\s+)+(?=\w)", re.I)


# Doubled words that are grammar, not a stammer ("he had had enough"), and numbers ("10 10").
_KEEP_DOUBLED = frozenset({"had", "that", "is", "do"})


def _once(m: re.Match) -> str:
    said = m[1]
    if said.lower() in _KEEP_DOUBLED or any(ch.isdigit() for ch in said):
        return m[0]
    return said


def _false_start(m: re.Match) -> str:
    return m[0] if m[1].lower() in STOPWORDS else ""


def tidy_speech(text: str) -> str:
    """A spoken turn as readable words: no "um"/"uh", no stammered repeats, no leading "yeah, so".

    The words said stay in their order; hesitations and false starts go, and so do discourse
    markers that only open a turn ("yeah", "so", "and", "but"). ("Um, build a system that, uh,
    classifies these, um these" → "Build a system that classifies these".)"""
    original = text
    text = re.sub(r"\s+([,.!?;:])", r"\1", re.sub(r"\s+", " ", _FILLER_RE.sub(" ", text)))
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)
    # "the project. Um." lost its "Um" but kept the stop: one stop (an ellipsis stays).
    text = re.sub(r"(?<!\.)([.!?])\.(?!\.)", r"\1", text)
    text = _REPEAT_RE.sub(_once, text).strip(" ,").lstrip(".;: ")  # a turn that opened "Um. So…"
    text = _FALSE_START_RE.sub(_false_start, text)
    for _ in range(3):  # "We m We may wind up with ver We may need…": one restart at a time
        text, restarts = _RESTART_RE.subn("", text)
        if not restarts:
            break
    # "you guys. Um sends a message" lost its "Um": the sentence starts with a capital again.
    text = _SENTENCE_START_RE.sub(lambda m: m[1] + m[2].upper(), text)
    text = _LEAD_MARKER_RE.sub("", text)
    # A turn that lost its opening "um, so" starts with a capital again; one that begins as the
    # speaker began it keeps its case ("knowhub can pull…" is the product's name).
    if text and not original.lstrip().startswith(text[:12]):
        return text[:1].upper() + text[1:]
    return text


def quote(speaker: str, sentences: list[str], n: int) -> str:
    """A speaker's words as a quote with its citation: ``Maya Chen: “…” [1]``."""
    text = " ".join(s.strip() for s in sentences)
    return f"{speaker}: “{text}” [{n}]"


_NAMEWORD_RE = re.compile(r"[A-Za-z][\w'’.-]*")


def names_speaker(question: str, speaker: str) -> bool:
    """Whether the question names this speaker: the whole name ("industrial designer"), or one
    of its capitalised words as written ("Maya", "Marketing", the "C" of "Professor C")."""
    words = _NAMEWORD_RE.findall(speaker)
    if len(words) > 1 and re.search(rf"\b{re.escape(speaker)}\b", question, flags=re.I):
        return True
    # A role and a letter ("Professor A", "PhD C") is named by its role: "the professor".
    if (
        len(words) == 2
        and re.fullmatch(r"[A-Z0-9]", words[1])
        and re.search(rf"\bthe {re.escape(words[0])}\b", question, flags=re.I)
    ):
        return True
    asked_words = _NAMEWORD_RE.findall(question)
    # A sentence's first word is capitalised anyway: "A plan for…" names no "Grad A".
    asked = set(asked_words[1:]) | {w for w in asked_words[:1] if len(w) > 1}
    if any(
        word in asked
        and word[0].isupper()
        and (len(word) == 1 or (word.lower() not in STOPWORDS and word.lower() not in _TITLE_WORDS))
        for word in words
    ):
        return True
    # People type names in lower case ("what did sam say about notion"): a lower-case word names
    # a speaker where a person stands, before what they said or decided, never as a topic
    # ("summarize the marketing strategy" names no "Marketing").
    return _named_as_subject(speaker, _speaking_subjects(question))


@functools.lru_cache(maxsize=256)
def _speaking_subjects(question: str) -> frozenset[str]:
    """The words standing where a person does before what they said or decided ("sam" in "what
    did sam say"), lower case, no pronoun or title. Cached: asked once per candidate line."""
    found = {next(filter(None, m.groups())).lower() for m in _SPEAKING_SUBJECT_RE.finditer(question)}
    return frozenset(found - STOPWORDS - _TITLE_WORDS)


def asks_what_busy_with(question: str) -> bool:
    """"What is maya working on", "what does sam work on", "who is maya": every line of theirs
    answers it, and ``ACTIVITY_TERMS`` are no subject a line must hold."""
    return any(m[3] or m[4] or m[5] for m in _SPEAKING_SUBJECT_RE.finditer(question))


def _named_as_subject(speaker: str, subjects: frozenset[str]) -> bool:
    return any(len(word) > 1 and word.lower() in subjects for word in _NAMEWORD_RE.findall(speaker))


def lines_said_by(question: str, q_terms: set[str], candidates: list[Sentence]) -> list[Sentence]:
    """The lines of the person the question asks about that say what it asks about ("what did
    sam say about notion": Sam's lines naming Notion). They are the answer, however well a page
    on the subject ranks: that page is no one's words. Empty when the question asks for no one's
    words, or that person said nothing on its subject.

    A question that asks only for an act ("what did maya decide") is answered by the person's
    lines that state it ("Decision: …", "We agreed to …"), from every source: with no subject to
    tell meetings apart, each decision of theirs is part of the answer; one that asks only what
    they said ("what did sam say") by every line of theirs."""
    subjects = _speaking_subjects(question)
    if not subjects:
        return []
    acts = frozenset().union(*(_ACT_KIN[t] for t in q_terms if t in _ACT_KIN))
    said, stated = [], []
    for c in candidates:
        person = _voice(c, subjects)
        if not person:
            continue
        about = q_terms - GENERIC_TERMS - content_terms(person)
        terms = content_terms(c.text)
        # An act is said in any of its words: "what did Maya promise" is answered by "I promised…".
        covered = sum(1 for t in about if t in terms or _ACT_KIN.get(t, frozenset()) & terms)
        # Most of what the question is about, not one word of a long question: a line naming the
        # budget does not answer why Marketing disagreed about a touch screen within it.
        if about and says_something(c.text) and covered * 2 >= len(about):
            said.append(c)
        elif not about and (acts & terms or (not acts and says_something(c.text))):
            stated.append(c)  # "what did sam say": every line of theirs that says something
    if not said:
        return stated
    # From one meeting, the best-ranked: the same name (a role, "Marketing") speaks in others too.
    first = min(c.source.n for c in said)
    return [c for c in said if c.source.n == first]


# What a line records of each act, for saying that none of the quoted lines is the person's.
_ACT_RECORD = {
    stem("decide"): "a decision", stem("agree"): "a decision", stem("conclude"): "a decision",
    stem("propose"): "a proposal", stem("suggest"): "a proposal", stem("recommend"): "a recommendation",
    stem("ask"): "a request", stem("promise"): "a promise", stem("complain"): "a complaint",
}  # fmt: skip


def unvoiced_lead(question: str, q_terms: set[str], chosen: list[Sentence], sources) -> str:
    """The line opening an answer to a question that asks only for what a person did ("what did
    sam decide") when no quoted line is theirs: the quotes are the closest the sources come (the
    decisions of the meetings Sam was in, or of the only meeting in the period asked about), not
    Sam's own. Empty otherwise."""
    subjects = _speaking_subjects(question)
    acts = [t for t in _ACT_RECORD if t in q_terms]  # in the table's order: one reading of the question
    # A line of theirs that states another act is no answer either: "what did maya decide in
    # september" quoting her complaints there is still no decision of hers.
    kin = frozenset().union(*(_ACT_KIN[a] for a in acts))
    if not subjects or not acts or not chosen or any(
        _voice(c, subjects) and kin & content_terms(c.text) for c in chosen
    ):
        return ""
    person = next(
        (
            turn[1]
            for source in sources
            for line in source.text.splitlines()
            if (turn := speaker_turn(line)) and _named_as_subject(turn[1], subjects)
        ),
        "",
    )
    # Nobody of that name speaks in these sources ("what did sam decide last week" where last
    # week's one meeting was Leo's and Maya's): the quotes are still not theirs.
    typed = sorted(subjects, key=lambda w: question.lower().find(w))  # "maya chen", as typed
    person = person or " ".join(w[:1].upper() + w[1:] for w in typed)
    # Only a question asking for the act alone: "what did the professor decide about X" with
    # nothing of theirs on X is answered by what the meeting said on X, without this line. A
    # period ("last week") says when, not what.
    if not person or q_terms - GENERIC_TERMS - PERIOD_TERMS - content_terms(person) - set(acts):
        return ""
    return f"Nothing you can see records {_ACT_RECORD[acts[0]]} by {person}; the closest your sources come:"


def name_words(speaker: str) -> list[str]:
    """The words of a speaker's label a text names them by ("Maya", "Chen"; not "Mr." nor the "A"
    of "Professor A", which any sentence may start with)."""
    return [w for w in speaker.split() if w[:1].isupper() and len(w) > 1 and w.lower() not in _TITLE_WORDS]


@functools.lru_cache(maxsize=256)
def _speaker_names(transcript: str) -> frozenset[str]:
    """The words of the speakers' names in a transcript ("Maya", "Chen", "Sam", "Okafor")."""
    return frozenset(
        word for line in transcript.splitlines() if (turn := speaker_turn(line)) for word in name_words(turn[1])
    )


def gives_task(text: str, transcript: str) -> bool:
    """Whether ``text`` gives a task to someone who speaks in ``transcript`` ("Sam will send the
    incident report by Monday"): minutes record a promise made for another as often as one's own.
    Only a speaker of that meeting counts: "Acme Capital will extend the pilot" is a client's plan,
    and a course page's "React will re-render…" is no one's task."""
    names = _speaker_names(transcript)
    if not names:
        return False
    who = "|".join(re.escape(name) for name in sorted(names))
    return bool(re.search(rf"\b(?:{who})(?: [A-Z][\w'’-]*)? (?:will|shall|is going to) (?!be\b)[a-z]+", text))


def spoken_lines(question: str, candidates: list[Sentence]) -> list[Sentence]:
    """The spoken lines among ``candidates`` when the question asks what a person said or did and
    that person speaks, or is reported, in them ("what did leo promise"), or asks who said
    something ("who talked about notion": the lines naming it): a written page is no one's words,
    however well it shares the question's ("promise" in a page on JavaScript). Empty otherwise."""
    if who_said := _WHO_SAID_RE.match(question):
        # "Who talked about notion": someone's line naming it, never a page on it.
        about = content_terms(question[who_said.end() :]) - GENERIC_TERMS
        return [c for c in candidates if c.speaker and about & content_terms(c.text)]
    subjects = _speaking_subjects(question)
    if not subjects or not any(_voice(c, subjects) for c in candidates):
        return []
    return [c for c in candidates if c.speaker]


# What "who said it first", "who raised this one" point back with, beside the pronouns.
_POINTER_TERMS = frozenset(stem(w) for w in ["one", "first"])


def asks_who_said_it(question: str) -> bool:
    """Whether the question asks who said what the last answer quoted ("who said that", "who raised
    it"): no subject of its own."""
    who_said = _WHO_SAID_RE.match(question)
    return bool(who_said) and not (content_terms(question[who_said.end() :]) - GENERIC_TERMS - _POINTER_TERMS)


_WHO_SAID_RE = re.compile(
    r"^\s*(?:(?:and|so|ok(?:ay)?)[\s,]+)?who\s+(?:said|says|talked|spoke|mentioned|raised|brought|suggested|proposed|"
    r"complained|asked|wanted|worried)\b",
    re.I,
)


def _voice(line: Sentence, subjects: frozenset[str]) -> str:
    """Whose words among ``subjects`` a spoken line carries: its speaker's, or those of a person
    another speaker reports ("Sam: Leo Martin asked for a monthly report" carries Leo's, as much
    as his own line would); "" for neither, and for a written sentence."""
    if not line.speaker:
        return ""
    if _named_as_subject(line.speaker, subjects):
        return line.speaker
    return _reported_speech(line.text, subjects)


# Acts a line states by naming them ("Decision: …", "we agreed to…", "I propose…"), each with the
# words that state it too. Saying, thinking or feeling are left out: "I'd say" and "I think" open
# lines about anything.
_ACT_KIN = {
    stem(verb): frozenset(stem(w) for w in kin)
    for verb, kin in {
        "decide": ("decide", "agree", "conclude"),
        "agree": ("agree", "decide"),
        "conclude": ("conclude", "decide", "agree"),
        "propose": ("propose", "suggest"),
        "suggest": ("suggest", "propose"),
        "recommend": ("recommend", "suggest"),
        "ask": ("ask", "request"),
        "promise": ("promise", "promised"),  # "promised" stems to "promis"
        "complain": ("complain",),
    }.items()
}


def _reported_speech(text: str, subjects: frozenset[str]) -> str:
    """The name a line reports as saying, asking or wanting something ("Leo Martin" in "Leo Martin
    asked for a monthly report", "Leo" in "Leo wants more time with clients") when it is one of
    ``subjects``; "" otherwise."""
    for m in _REPORTED_RE.finditer(text):
        if _named_as_subject(m[1], subjects):
            return m[1]
    return ""


_SPEECH_VERBS = (
    "say|think|suggest|propose|decide|ask|mention|want|feel|recommend|agree|argue|raise|report|prefer|"
    "explain|present|believe|note|promise|plan|claim|answer|reply|respond|conclude|object|complain|worry|"
    "disagree|insist|offer|vote|pick|choose|like"
)
_SPEECH_VERBS_DONE = (
    "said|says|thinks|thought|suggested|suggests|proposed|proposes|decided|decides|asked|asks|mentioned|"
    "mentions|wanted|wants|felt|feels|recommended|recommends|agreed|agrees|argued|argues|raised|raises|"
    "reported|preferred|prefers|explained|presented|believed|believes|noted|promised|planned|claimed|"
    "answered|replied|responded|concluded|objected|complained|worried|disagreed|insisted|offered|voted|"
    "picked|chose|liked"
)
# What a person is busy with is asked in these words; they name no subject of the person's lines.
_ACTIVITY = "working|doing|busy|focus(?:ing|ed)?"
ACTIVITY_TERMS = frozenset(stem(w) for w in ["working", "work", "busy", "focusing", "focus"])
# "did sam say", "does the designer think", "what maya decided", "why marketing wanted", "what is
# maya working on".
_SPEAKING_SUBJECT_RE = re.compile(
    rf"\b(?:did|does|do|has|have|had|will|would|could|can|should)\s+(?:the\s+)?([a-z][\w'’-]*)\s+(?:{_SPEECH_VERBS})\b"
    rf"|\b([a-z][\w'’-]*)\s+(?:{_SPEECH_VERBS_DONE})\b"
    rf"|\b(?:is|was|are|were|has|have|had)\s+([a-z][\w'’-]*)\s+(?:been\s+)?(?:{_ACTIVITY})\b"
    # "who is maya", "whos sam": a person of the meetings is what they say there.
    r"|^\s*who(?:'s|’s|s|\s+is|\s+was)\s+([a-z][\w'’-]*)\s*[?.!]*\s*$"
    # "what does maya work on", "what did sam focus on".
    r"|\b(?:does|do|did)\s+([a-z][\w'’-]*)\s+(?:work|focus)\s+on\b",
    re.I,
)


# A capitalised name of up to three words, then what it did in words ("Leo Martin asked", "Maya
# suggested", "Priya wants").
_REPORTED_RE = re.compile(rf"\b([A-Z][\w'’-]*(?: [A-Z][\w'’-]*){{0,2}}) (?:{_SPEECH_VERBS_DONE})\b")


# Words of a speaker label that name no one in particular ("The Chair (Hon. …)", "Mr. …").
_TITLE_WORDS = frozenset(
    {"mr", "mrs", "ms", "dr", "hon", "hon.", "mr.", "ms.", "dr.", "mrs.", "right", "the", "am", "mp"}
)


def agenda_lead(agenda: str) -> str:
    """The line that opens an answer from one agenda item of a meeting."""
    return f"The meeting discussed “{agenda}”:"


def lend_to_replies(candidates: list[Sentence], *, weight: float) -> None:
    """A question asked in a meeting lends its relevance to the reply: the next speaker's first
    sentence answers it, though it seldom repeats its words ("Had HEFCW done any assessment…?"
    is asked by a member, answered by the witness)."""
    at = {(c.source.n, c.position): c for c in candidates}
    for asked in candidates:
        if not (asked.speaker and asked.asks):
            continue
        pos = asked.position + 1
        while (nxt := at.get((asked.source.n, pos))) is not None and nxt.speaker == asked.speaker:
            pos += 1  # the same person asking on ("… risk appetite? Do you feel that…?")
        if nxt is None or not nxt.speaker:
            continue
        nxt.relevance = max(nxt.relevance, weight * asked.relevance)
