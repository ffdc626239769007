"""Words as knowhub counts them: one pattern and one stop-word list for every module.

The extractive answerer, follow-up detection and the learned ranking's title feature all split
text with ``WORD_RE`` and drop ``STOPWORDS``, so they agree on what a content word is.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

# Letters and digits of any alphabet ("Céloron", "Skłodowska" are one word each), keeping inner
# apostrophes, dots, plus and hash ("don't", "v1.2", "C++", "C#"); an underscore separates words.
WORD_RE = re.compile(r"[^\W_](?:[^\W_]|['+#.-])*(?:[^\W_]|[+#])|[^\W_]")

_STOP_TEXT = """a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves tell please show give explain
describe does much many way ways get make know want need also go goes going gone gonna yet already still
anything something everything nothing anyone someone everyone"""
# Stop words typed without their apostrophe, as people type questions ("whats the p95", "whos on
# call", "dont"): still stop words, never a word the documents failed to mention.
_UNAPOSTROPHED = """whats whos wheres whens hows whys thats theres heres im ive youre theyre
dont doesnt didnt isnt arent wasnt werent cant couldnt wont wouldnt shouldnt hasnt havent hadnt"""
# And with it ("what's the p95", "who's maya"): the word pattern keeps the apostrophe inside a word.
_APOSTROPHED = """what's who's where's when's how's why's that's there's here's i'm i've you're they're
don't doesn't didn't isn't aren't wasn't weren't can't couldn't won't wouldn't shouldn't hasn't haven't
hadn't it's let's"""
STOPWORDS = frozenset(_STOP_TEXT.split()) | frozenset(_UNAPOSTROPHED.split()) | frozenset(_APOSTROPHED.split())
# "Use" says what a question is about ("how do I use it?" after "how do I create a macro?" asks
# for something else), so it is a content word; it is common enough never to be taken for a
# misspelling of a document's word.
COMMON_WORDS = STOPWORDS | {"use", "uses", "using", "used"}


# A number written in words ("five analysts", "six years", "three hundred"), as a regex alternation.
CARDINALS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    "|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds"
    "|thousand|thousands|million|millions|dozen|dozens"
)

# Word families the crude stemmer cannot join: a question asks "what did we decide", the notes
# say "Decision:". Ordinary English morphology, not tuned to any corpus.
_FAMILIES = {
    "decision": "decide", "decisions": "decide", "decided": "decide", "deciding": "decide",
    "agreement": "agree", "agreed": "agree", "conclusion": "conclude", "concluded": "conclude",
    "complaint": "complain", "complaints": "complain", "complained": "complain",
    "proposal": "propose", "proposed": "propose", "discussion": "discuss", "discussed": "discuss",
    "recommendation": "recommend", "suggestion": "suggest", "explanation": "explain",
    "description": "describe", "preference": "prefer", "preferred": "prefer", "decrease": "decrease",
    "raised": "raise", "raising": "raise", "said": "say", "says": "say", "thought": "think",
    # Short verbs the suffix rule leaves alone (it keeps stems of four letters or more) and
    # common irregular pasts: "what did Leo ask for?" is answered by "Leo asked for…".
    "asked": "ask", "asking": "ask", "added": "add", "adding": "add", "paid": "pay", "sent": "send",
    "met": "meet", "took": "take", "wrote": "write", "written": "write", "chose": "choose",
    "chosen": "choose", "bought": "buy", "sold": "sell", "built": "build", "spent": "spend",
    "lost": "lose", "won": "win", "began": "begin", "begun": "begin", "used": "use", "using": "use",
}  # fmt: skip
# Short verbs ending in "e" lose it before "-ing" and "-ed" ("tune", "tuning", "tuned"), which leaves
# a stem of three letters, too short for the suffix rule: each form is joined to the verb here.
_SHORT_E_VERBS = (
    "make", "take", "tune", "code", "name", "save", "move", "vote", "rate", "note", "type", "size", "hire",
    "fire", "hide", "ride", "wire", "cite", "time", "file", "like", "bake", "wake", "dine", "mute",
)  # fmt: skip
for _verb in _SHORT_E_VERBS:
    _FAMILIES.setdefault(_verb[:-1] + "ing", _verb)
    _FAMILIES.setdefault(_verb + "d", _verb)
# A family's word is its own stem: "decide" as typed is the "decide" of "decision".
for _root in set(_FAMILIES.values()):
    _FAMILIES.setdefault(_root, _root)


def stem(word: str) -> str:
    """A deliberately crude stemmer: enough to match "meetings" with "meeting"."""
    word = word.lower().strip("'.-")
    if word in _FAMILIES:
        return _FAMILIES[word]
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ied"):
        return word[:-3] + "y"  # "applied", "carried": the verb
    for suffix in ("ing", "edly", "ed", "er"):
        # "ended" is "end" and "owned" "own", but "bring" and "water" keep their four letters.
        shortest = 3 if suffix in ("ed", "edly") else 4
        if len(word) >= len(suffix) + shortest and word.endswith(suffix) and not word.endswith("eed"):
            # "stopped" is "stop", but a "planner" is no "plan" (and "setting" stays apart from "set").
            return _undoubled(word[: -len(suffix)]) if suffix in ("ed", "edly") else word[: -len(suffix)]
    for suffix in ("fully", "ful"):  # "successfully", "successful": "success"
        if len(word) >= len(suffix) + 5 and word.endswith(suffix):
            return word[: -len(suffix)]
    if len(word) >= 5 and word.endswith("e") and not word.endswith(("ee", "ie", "ye")):
        return word[:-1]  # "resonate" as "resonated" loses it: "resonat"
    return word


def _undoubled(stem_: str) -> str:
    """A stem without its doubled last consonant: "stopp" (of "stopped") is "stop"; "call" (of
    "called") and "pass" keep theirs."""
    if len(stem_) >= 4 and stem_[-1] == stem_[-2] and stem_[-1] not in "aeioulsz":
        return stem_[:-1]
    return stem_


def content_terms(text: str) -> set[str]:
    return {stem(w) for w in WORD_RE.findall(text) if w.lower() not in STOPWORDS and len(w) > 1}


# A sum of money says what something costs without the word: "contributors ($5 or $15 per month)"
# answers "what does sync cost?", "412,000 euros" answers "how much is the budget?".
_MONEY_RE = re.compile(
    r"[$€£¥]\s?\d|\d(?:[\d,.]*\d)?\s?(?:k|m|bn)?\s?(?:euros?|dollars?|pounds?|usd|eur|gbp|cents?)\b"
    r"|\b(?:thousand|million|billion) (?:euros|dollars|pounds)\b|\b(?:free of charge|for free|costs? nothing)\b",
    re.I,
)
# "how much did we spend on hosting", "what does the pilot cost": a sum of money, which a count of
# something else ("hosting stays on the two existing servers") does not give.
_MONEY_ASKED_RE = re.compile(
    r"\bhow much\b(?=.*\b(?:spen[dt]|spending|costs?|costing|pa(?:y|id|ying)|charged?|earn(?:ed|s)?|prices?"
    r"|budget(?:ed)?|invest(?:ed)?|fund(?:ed|ing)?|worth)\b)"
    r"|\bwhat (?:does|did|do|will|would)\b.*\bcost\b"
    r"|\bhow much money\b"
    r"|\bwhat(?:s|'s|’s| is| was| are| were| will be)? (?:the |our |its |their )?(?:\w+ )?(?:cost|price|budget)s?\b"
    r"(?=\s*(?:$|[?.!,]|of\b|for\b|in\b|on\b|to\b|this\b|next\b|last\b))",
    re.I,
)
_PRICE_TERMS = frozenset(stem(w) for w in ["cost", "price", "fee", "charge", "pay", "expensive", "cheap"])
# The words of a question on money that say it asks for a sum, not what the sum is for.
MONEY_TERMS = _PRICE_TERMS | frozenset(
    stem(w) for w in ["spend", "spent", "paid", "money", "budget", "earn", "invest", "fund", "worth"]
)
# A time something takes says how fast it is without the word: "p95 search latency is 24 ms"
# answers "is search fast?".
_DURATION_RE = re.compile(
    r"\d(?:[\d,.]*\d)?\s?(?:ms|milliseconds?|µs|microseconds?|seconds?|secs?|minutes?|mins?|hours?)\b", re.I
)
_SPEED_TERMS = frozenset(stem(w) for w in ["fast", "faster", "slow", "slower", "quick", "quickly", "speed"])
# A day something is due by says "deadline" without the word: "send a proposal … by Friday".
_DAYS = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|today|"
    r"(?:the\s+)?end\s+of\s+(?:the\s+)?(?:day|week|month|quarter|year)|next\s+\w+|"
    r"jan(?:uary)?|feb(?:ruary)?|march|april|may|june|july|aug(?:ust)?|sep(?:tember)?|oct(?:ober)?|"
    r"nov(?:ember)?|dec(?:ember)?|(?:the\s+)?\d{1,2}(?:st|nd|rd|th)|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?"
)
_DUE_RE = re.compile(rf"\b(?:by|before|until|due(?:\s+on)?|no\s+later\s+than)\s+(?:{_DAYS})\b", re.I)
_DUE_TERMS = frozenset(stem(w) for w in ["deadline", "due"])


# A change between two values says how they compare without the words: "412,000 euros, up from
# 365,000" answers "is the budget bigger than last year?".
_CHANGE_RE = re.compile(
    r"\b(?:up|down)\s+from\b|\b(?:increased?|increases|decreased?|decreases|rose|risen|fell|fallen|grew|grown|"
    r"doubled|halved|tripled)\b|\b(?:more|less|higher|lower|larger|smaller|bigger)\s+than\b",
    re.I,
)
_CHANGE_TERMS = frozenset(
    stem(w)
    for w in [
        "bigger", "larger", "higher", "smaller", "lower", "increase", "decrease", "grow", "rise", "drop", "change",
        "compare", "difference",
    ]
)  # fmt: skip


# A decision or a task taken on is what was done about a problem: "Decision: add recency as a
# ranking feature" answers "did we fix it?" after the complaint it answers. ("Handle" is not one:
# "who is handling it" asks who is in charge, which a decision does not say.)
_REMEDY_TERMS = frozenset(stem(w) for w in ["fix", "fixed", "solve", "address", "resolve", "tackle", "remedy"])


def asks_amount_of_money(question: str) -> bool:
    """The question asks what something costs (spent, paid, budgeted)."""
    return bool(_MONEY_ASKED_RE.search(question))


def states_money(text: str) -> bool:
    """The text gives a sum of money ("412,000 euros", "$40 per barrel", "free of charge")."""
    return bool(_MONEY_RE.search(text))


def implied_terms(text: str) -> set[str]:
    """Content terms ``text`` states without saying them: the words for a price when it names a
    sum of money, "fast" when it says how long something takes, "deadline" when it names the day
    something is due by, the words of a comparison when it gives a change ("up from 365,000") or an
    alternative ("…instead of the default"), "ask" when it speaks of questions, "fix" when it states
    a decision or a task taken on, "join" when it says who was at a meeting, "change" when it says
    something is retuned, adjusted or edited."""
    terms = set(_PRICE_TERMS) if _MONEY_RE.search(text) else set()
    if _DUE_RE.search(text):
        terms |= _DUE_TERMS
    if _DURATION_RE.search(text):
        terms |= _SPEED_TERMS
    if _CHANGE_RE.search(text):
        terms |= _CHANGE_TERMS
    if _ALTERNATIVE_RE.search(text):
        terms |= _ALTERNATIVE_TERMS
    if _EDIT_RE.search(text):
        terms |= _EDIT_TERMS
    if _QUESTIONS_RE.search(text):
        terms |= _ASK_TERMS
    if STATES_DECISION_RE.search(text) or STATES_ACTION_RE.search(text):
        terms |= _REMEDY_TERMS
    if _TOOK_PART_RE.search(text):
        terms |= _TOOK_PART_TERMS
    return terms


# Retuning, adjusting or editing something changes it: "judgments … can retune these weights"
# answers "who changes them?". The verbs only: a noun such as "an update" changes nothing.
_EDIT_RE = re.compile(
    r"\b(?:re)?tun(?:e|es|ed|ing)\b|\b(?:adjust|alter|edit)(?:s|ed|ing)?\b|\bmodif(?:y|ies|ied|ying)\b|"
    r"\b(?:overrid|reconfigur|updat)(?:es|ed|ing)\b|\boverrides?\b",
    re.I,
)
_EDIT_TERMS = frozenset(stem(w) for w in ["change", "modify", "adjust", "alter", "edit", "tune", "update"])


# Who was at a meeting says who joined it: "Acme Capital kickoff was with Leo Martin and Maya Chen"
# answers "who joined the acme kickoff", "Leo Martin took part in …" "who attended …".
_TOOK_PART_RE = re.compile(r"\btook\s+part\s+in\b|\b(?:was|were)\s+with\s+[A-Z]")
_TOOK_PART_TERMS = frozenset(
    stem(w) for w in ["join", "joined", "attend", "attended", "participate", "participated", "present"]
)


# An alternative says there is a default it differs from: "Reciprocal rank fusion is available as
# an alternative" answers "how does it differ from the default?".
_ALTERNATIVE_RE = re.compile(
    r"\b(?:an?\s+alternative|alternatively|instead\s+of|rather\s+than|in\s+place\s+of)\b", re.I
)
_ALTERNATIVE_TERMS = frozenset(
    stem(w)
    for w in ["alternative", "default", "differ", "different", "difference", "compare", "instead", "option"]
)


# Questions are what people ask: "most questions were about fund performance" answers "what did
# they ask about?".
_QUESTIONS_RE = re.compile(r"\bquestion(?:s|ed)?\b", re.I)
_ASK_TERMS = frozenset([stem("ask")])


# Words that say what kind of answer is wanted, not what it is about.
GENERIC_TERMS = frozenset(
    stem(w)
    for w in [
        "decide", "agree", "say", "talk", "discuss", "happen", "mention", "new", "update", "plan", "conclude",
        "propose", "next", "action", "item", "summary", "summarize", "tldr", "recap", "gist", "outcome", "result",
        "think", "opinion", "view", "feel", "idea", "consider", "reason", "detail", "attend", "attendee",
        "participate", "participant", "feedback", "reaction", "impression", "raise", "bring", "brought",
        # "what is the default X": the value X has unless set, which a source states without the word
        "default",
    ]
)  # fmt: skip


# Words that ask what was decided, and the words a line states a decision in ("Decision: …", "We
# agreed to …"): a stemmer does not join "decide" and "Decision:", nor does meaning bring them close.
DECISION_TERMS = frozenset(stem(w) for w in ["decide", "decision", "agree", "conclude", "resolve", "outcome"])
DECISION_RE = re.compile(r"\b(?:decisions?|decided|agreed|concluded|resolved)\b", re.I)  # the words, in any use
# A sentence that states a decision ("Decision: pilot with five analysts", "We agreed to start with
# …", "so we've decided that …"), not one that uses the words otherwise, as course pages do ("is
# decided by where it is written", "a promise resolved with a value").
STATES_DECISION_RE = re.compile(
    r"\b(?:decisions?|decided|agreed|resolved|conclusion)\s*:"  # a line labelled as one
    r"|\b(?:decided|agreed|concluded)\s+(?:to|that|on|upon|against)\b"
    r"|\b(?:we|they|i|he|she|it|everyone|everybody|all|team|group|board|committee)\s+(?:[\w']+\s+){0,2}?"
    r"(?:decided|agreed|concluded|resolved)\b"
    r"|\bdecisions?\s+(?:is|was|were|to|on|about)\b",
    re.I,
)
# A question asking for what is to be done ("what are the action items", "any todos", "next steps").
# A promise asked about ("what did we promise northwind", "what have we committed to"), or who is
# to do something ("who is going to do releases now"), is the tasks taken on and the decisions
# made, which are rarely written with those words ("I will hand the release checklist to Sam").
# "Who should I talk to about notion" asks who knows about it, not who is to do it.
_COMMITMENT = (
    r"\b(?:we|i)\s+(?:have\s+|had\s+)?(?:promised?|committed|commit)\b|\bcommitments?\b"
    r"|^\s*who\s*(?:is|are|'s|’s|s)\s+(?:going\s+to|gonna|supposed\s+to|responsible\s+for|in\s+charge\s+of)\b"
    r"|^\s*who\s+(?:will|should|must)\b(?!\s+(?:i|we)\s+(?:talk|speak|ask|contact|reach|go|call|email|ping|message)\b)"
    r"|^\s*who\s+(?:owns|handles|takes\s+care\s+of|looks\s+after|is\s+doing|does)\b"
    r"|^\s*who\s*(?:is|'s|’s|s|will\s+be)?\s+(?:taking|takes|took|to\s+take)\s+over\b"
)
COMMITMENT_TERMS = frozenset(
    stem(w)
    for w in ["promise", "promised", "promises", "commit", "committed", "commitment", "commitments", "responsible",
              "charge", "supposed", "owns", "handles", "taking", "takes", "took", "take"]
)
ASKS_ACTIONS_RE = re.compile(rf"\b(?:action[- ]items?|to-?dos?|next steps?|follow[- ]ups?)\b|{_COMMITMENT}", re.I)
_COMMITMENT_RE = re.compile(_COMMITMENT, re.I)


def asked_terms(question: str) -> set[str]:
    """A question's content terms, a promise or a task it asks about read as the tasks it is
    stated as."""
    terms = content_terms(question)
    if _COMMITMENT_RE.search(question):
        terms = (terms - COMMITMENT_TERMS) | {stem("action")}
    return terms


# A sentence that gives someone a task: labelled as one ("Action: Sam sends the notes"), a first
# person's promise ("I will hand the release checklist to Sam", "we'll send it Friday"), or a
# decision, which minutes list beside them. Only the first person: "the browser will paint" in a
# course page promises nothing (a task a meeting gives to one of its speakers, "Sam will send…",
# takes knowing who speaks there: ``rag.llm.listing.states``).
STATES_ACTION_RE = re.compile(
    r"(?i:\b(?:action(?: items?)?|to-?dos?|next steps?|follow-ups?)\s*:)"
    r"|\b(?:I|[Ww]e)(?:\s+will|\s*['’]ll|\s+(?:am|are)\s+going\s+to)\s+(?!be\b)[a-z]+"
    rf"|(?i:{STATES_DECISION_RE.pattern})"
)
# Words of a period ("this week", "last month"): a question's filters, not its subject.
PERIOD_TERMS = frozenset(
    stem(w) for w in ["week", "month", "year", "quarter", "day", "today", "yesterday", "recent", "last", "latest"]
)
# Words that ask for a list as such ("list the decisions", "decisions made so far", "recap the
# decisions"): they name no subject of their own.
LIST_REQUEST_TERMS = frozenset(stem(w) for w in ["list", "made", "taken", "reached", "far", "recap", "every"])

# Everyday verbs, in all their forms, that carry a question's grammar rather than its subject:
# "what happens if redis goes down", "why did Leo want to stop doing releases". A document need
# not use them to answer, nor a follow-up carry them.
EVERYDAY_VERB_TERMS = frozenset(
    content_terms(
        "go goes going went gone come comes coming came get gets getting got gotten make makes making made "
        "take takes taking took taken give gives giving gave given put puts putting keep keeps keeping kept "
        "let lets letting want wants wanting wanted need needs needing needed stop stops stopping stopped "
        "start starts starting started try tries trying tried do does doing did done see sees seeing saw seen "
        "know knows knowing knew known tell tells telling told seem seems seemed become becomes became "
        "happen happens happening happened"
    )
)
# "What's the latest on the pilot", "the status of the proposal": how recent an answer is wanted,
# which the documents' dates say, not their words.
RECENCY_TERMS = frozenset(content_terms("latest status news progress"))

# "can you show me one" after "what is a closure": an example of the thing just explained (also an
# example asked for, ``rag.llm.examples``).
SHOW_ME_ONE = r"\b(?:give|show)\s+(?:me|us)\s+(?:one|another(?:\s+one)?)(?:\s+please)?\s*[?.!]*\s*$"
# A follow-up asking for more than the conversation already said ("tell me more", "what else",
# "go on", a bare "why?", "give me an example").
_ASKS_MORE_RE = re.compile(
    r"\b(?:tell me more|more (?:about|on|details?)|go on|continue|what else|anything else|keep going|"
    r"expand on|elaborate|(?:any|some) more|say more|and then|(?:give|show) me (?:an?|some|another) examples?)\b"
    r"|^\s*(?:why|how so|really|such as|for example|for instance|(?:an?|any|another)?\s*examples?|like what)\s*\??\s*$"
    # "can you give an example", "is there an example of that": no subject of their own, the
    # conversation's ("give an example of a closure" names one, and is a question of its own).
    r"|\b(?:(?:give|show|got|have)(?:\s+(?:me|us))?|(?:is|are)\s+there)\s+(?:an?|any|some|another|more|other)\s+"
    r"examples?(?:\s+(?:of|for)\s+(?:it|that|this|them|those))?(?:\s+please)?\s*[?.!]*\s*$"
    r"|^\s*(?:an?\s+)?examples?(?:\s+(?:of|for)\s+(?:it|that|this|them|those))?(?:\s+please)?\s*[?.!]*\s*$"
    rf"|{SHOW_ME_ONE}",
    re.I,
)


def asks_for_more(question: str) -> bool:
    """Whether ``question`` asks for more than was already said."""
    return bool(_ASKS_MORE_RE.search(question))


# Words that ask for what is to be done: the kind of answer, no subject.
ACTION_TERMS = frozenset(content_terms("action items todo todos to-do to-dos next steps follow-up follow-ups"))
# Words that say what kind of answer is wanted, or carry a question's grammar, never what it is about:
# a document need not say "summarize", "list", "goes", "latest" or "owns" to answer.
KIND_OF_ANSWER_TERMS = (
    GENERIC_TERMS | LIST_REQUEST_TERMS | ACTION_TERMS | EVERYDAY_VERB_TERMS | RECENCY_TERMS | COMMITMENT_TERMS
)
_NO_SUBJECT = DECISION_TERMS | GENERIC_TERMS | PERIOD_TERMS | LIST_REQUEST_TERMS | ACTION_TERMS


_HOW_TO_RE = re.compile(
    r"^\s*(?:(?:and|so|but|then)\s+)?(?:how (?:do|can|should|could|would|to) (?:i|we|you|one)\b|how to\b)", re.I
)


def asks_how_to(question: str) -> bool:
    """A "how do I create a macro?" question: the answer is a procedure, read from its first step."""
    return bool(_HOW_TO_RE.match(question))


@dataclass(frozen=True)
class Listing:
    """A kind of line that a question naming no subject asks for every one of: how such a line
    reads (``states``), and the words that find it (``search``), which the question's own words do
    poorly ("decide" is not "Decision:" to a keyword index, nor "action items" "I will…")."""

    states: re.Pattern
    search: str


DECISIONS = Listing(STATES_DECISION_RE, "decision decisions decided agreed")
ACTIONS = Listing(STATES_ACTION_RE, "action item todo next step decision decided agreed")


def listing_of(question: str, q_terms: set[str]) -> Listing | None:
    """What a question asks every one of, with a subject or not ("what did we decide with acme",
    "next steps for acme"): the decisions, the tasks, or None for other questions."""
    if asks_how_to(question):  # "how do i make a todo" asks for the steps, not for the tasks written
        return None
    if q_terms & DECISION_TERMS:
        return DECISIONS
    return ACTIONS if ASKS_ACTIONS_RE.search(question) else None


@lru_cache(maxsize=512)
def asked_listing(question: str) -> Listing | None:
    """``listing_of`` a question that names no subject ("what did we decide", "what are the action
    items", "list the decisions from last month"): then every such line answers it. None when the
    question names a subject or asks for no list."""
    terms = asked_terms(question)
    return listing_of(question, terms) if terms <= _NO_SUBJECT else None


def asks_for_decisions(question: str) -> bool:
    """The question asks what was decided and names no subject ("what did we decide last month",
    "list the decisions"): every stated decision answers it."""
    return asked_listing(question) is DECISIONS


# A word of letters only, not part of a hyphenated one.
_PLAIN_WORD_RE = re.compile(r"(?<![\w-])[^\W\d_]+(?![\w-])")


def closed_compounds(words) -> dict[str, str]:
    """The hyphenated ``words`` by the word they make typed without the hyphen ("oncall" →
    "on-call"); a closed form two of them share ("email": "e-mail", "em-ail") is none of them."""
    by_closed: dict[str, set[str]] = {}
    for word in words:
        if "-" in word:
            by_closed.setdefault(word.replace("-", ""), set()).add(word)
    return {closed: next(iter(found)) for closed, found in by_closed.items() if len(found) == 1}


def joined_as_written(question: str, texts: list[str]) -> str:
    """``question`` with two adjacent words written as the one word ``texts`` hyphenate ("who is
    on call" → "who is on-call", "real time" → "real-time", and "oncall" typed closed up): a
    compound means something its second half alone does not ("on call" is not the call of a call
    stack). Unchanged when no text writes the pair as one word."""
    compounds = {w.lower() for text in texts for w in WORD_RE.findall(text or "") if w.count("-") == 1}
    if not compounds:
        return question
    # The pair typed as one word ("oncall", "realtime") is the compound too.
    closed = closed_compounds(compounds)
    question = _PLAIN_WORD_RE.sub(lambda m: closed.get(m.group(0).lower(), m.group(0)), question)
    words = list(_PLAIN_WORD_RE.finditer(question))
    out, last = [], 0
    for a, b in zip(words, words[1:], strict=False):
        if (last and a.start() <= last) or question[a.end() : b.start()] != " ":
            continue  # a word joins one compound at most
        if f"{a.group(0)}-{b.group(0)}".lower() in compounds:
            out.append(question[last : a.end()] + "-")
            last = b.start()
    return "".join(out) + question[last:]


def in_written_forms(question: str, texts: list[str]) -> str:
    """``question`` with each word that ``texts`` never write, but write in another form of the
    same stem, put in the form they write most ("whats the default weighting" → "…default weights"
    where the sources say "weights"): a sentence embedding weighs word forms, and the question's
    closeness to a sentence should not depend on which form a person typed."""
    forms: dict[str, Counter] = {}
    written: set[str] = set()
    for text in texts:
        for w in _PLAIN_WORD_RE.findall(text or ""):
            low = w.lower()
            written.add(low)
            if len(low) > 3 and low not in STOPWORDS:
                forms.setdefault(stem(low), Counter())[low] += 1

    def written_form(m: re.Match) -> str:
        word = m.group(0)
        low = word.lower()
        if low in written or low in STOPWORDS or len(low) <= 3 or (family := forms.get(stem(low))) is None:
            return word
        return family.most_common(1)[0][0]

    return _PLAIN_WORD_RE.sub(written_form, question)
