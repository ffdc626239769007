"""Grading a test answer the way a teacher would: exact values by value, explanations by meaning.

Two kinds of answers reach the grader:

* **Values.** "What does this log?" is answered by ``1``, ``It logs 1``, ``one`` or ``"1"``
  just as well as by the full expected sentence. A test that asks for a value declares it
  (``"value": "1"``, ``"a c b"``, ``"no"``); the answer is normalised (lead-ins such as "it
  logs", quotes, brackets and punctuation dropped, number words read as digits) and compared by
  value. An answer that *opens* with a different value of the same kind ("It logs 3 because …",
  "Yes, await blocks …") contradicts the expected one and fails, whatever else it says: its
  wording can sound very much like the right explanation.
* **Explanations.** Compared by meaning with the local embedding model (the cosine is rescaled
  from [SIM_FLOOR, SIM_CEIL] onto [0, 1]) and by the test's key facts (``keywords``, each a
  ``|``-separated set of alternatives); the score is ``meaning · (0.4 + 0.6 · coverage)``.
  A short answer is compared with the expected answer's closest clause as well as with the
  whole of it, so "Only the inner functions can reach them" is not punished for leaving out
  the expected answer's second half.

* **Rubrics.** Before either, a test's rubric (``parts`` and ``refuted_by``, see
  ``sessions.rubric``) is read the way a teacher reads a terse answer: an answer that states
  every part and nothing that refutes it passes ("3 3 3, use let"; "at def time"); one that
  states one part of a two-part question gets partial credit and is told which part is
  missing; one that says what the rubric names as a refutation fails, whatever its wording.
  An answer that states none of the parts is still graded by value and meaning, so a
  paraphrase the rubric did not foresee can pass.

Every grade carries a one-line explanation for the learner, naming what was missing on a fail.
The test's ``eval`` block (paraphrases and wrong answers used by ``evaluate_session_scoring``)
is never read here: the grader must not know the answers it is measured on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings

from rag.metrics import cosine
from sessions.rubric import RubricResult, read_rubric

SKIP = re.compile(r"^\s*(skip|next|pass|suggest|you choose|you pick|any|idk|i don'?t know|no idea)\b[\s.!]*$", re.I)

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}
_BOOLEAN_WORDS = {"yes", "no", "true", "false", "nope", "yep", "none", "null", "undefined", "nothing"}
_CANONICAL = {"nope": "no", "yep": "yes", "not": "no", "never": "no"}
# Lead-ins that introduce a value without being part of it ("It logs 1", "Output: [0, 1, 4]").
_LEAD_IN = re.compile(
    r"^\s*(?:(?:the\s+)?(?:answer|output|result)\s*(?:is|:|=)\s*"
    r"|(?:[a-z_][\w().\[\]']*\s+){0,2}?"
    r"(?:logs|prints|outputs|returns|gives|shows|equals|evaluates to|will (?:log|print|return|output))\s*[:=]?\s*"
    r"|it'?s\s+|=\s*)",
    re.I,
)
MYTH_MARGIN = 0.05
# Words that join values without being one ("A, then C, then B", "[0, 1, 4] and []").
_JOINERS = {"then", "and", "followed", "by", "after", "that"}


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters, digits, dots kept inside names like Promise.all)."""
    return re.findall(r"[a-z0-9]+(?:[.'][a-z0-9]+)*", text.lower())


def keyword_hit(answer: str, keyword: str) -> bool:
    """Whether any ``|``-separated alternative of ``keyword`` occurs in ``answer`` as whole words.

    Alternatives are compared as word sequences, so "a c b" matches "A, C, B" and "0 1 4"
    matches "[0, 1, 4]"; a word also matches its plural/verb forms ("reject" ⊂ "rejects").
    """
    tokens = words(answer.replace(".", " "))  # "functools.wraps" also counts as "wraps"
    joined = " " + " ".join(tokens) + " "
    for alt in keyword.split("|"):
        alt_tokens = words(alt.replace(".", " "))
        if not alt_tokens:
            continue
        if " " + " ".join(alt_tokens) + " " in joined:
            return True
        if len(alt_tokens) == 1 and len(alt_tokens[0]) >= 4 and any(t.startswith(alt_tokens[0]) for t in tokens):
            return True
    return False


def value_tokens(text: str) -> list[str]:
    """The normalised tokens of a value: lower case, no punctuation or brackets, digits for
    number words, one lead-in ("it logs", "the output is") dropped."""
    text = _LEAD_IN.sub("", text.strip(), count=1).lower()
    text = re.sub(r"\b(\w+)n't\b", r"\1 not", text)  # "doesn't" → "does not": a no
    text = re.sub(r"\ban? empty (?:list|array)\b", "[]", text)
    out = []
    for tok in re.findall(r"\[\s*\]|\{\s*\}|-?\d+(?:\.\d+)?|[a-z_][a-z0-9_]*", text):
        tok = re.sub(r"\s+", "", tok)
        if tok in _JOINERS:
            continue
        tok = _NUMBER_WORDS.get(tok, tok)
        out.append(_CANONICAL.get(tok, tok))
    return out


def value_present(answer: str, value: str) -> bool:
    """Whether the answer states the value somewhere: its tokens, each first named in order
    ("sync is logged first, then promise …, and timeout last" states "sync promise timeout")."""
    expected = value_tokens(value)
    given = value_tokens(answer)
    firsts: list[int] = []
    for tok in expected:
        try:
            start = firsts[-1] + 1 if firsts and tok in expected[: len(firsts)] else 0
            firsts.append(given.index(tok, start))
        except ValueError:
            return False
    return firsts == sorted(firsts)


def _is_number(tok: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(?:\.\d+)?", tok))


def _same_kind(tok: str, expected: list[str]) -> bool:
    """Whether ``tok`` is a value of the kind the expected value is made of (so stating it
    instead of the expected one is a different answer, not a lead-in)."""
    if _is_number(tok):
        return any(_is_number(e) for e in expected)
    if tok in _BOOLEAN_WORDS:
        return any(e in _BOOLEAN_WORDS for e in expected)
    return tok in expected


def _clauses(text: str) -> list[str]:
    """The expected answer's clauses (split at ; : and sentence ends), each long enough to mean something."""
    parts = [p.strip() for p in re.split(r"[;:]\s+|(?<=[.!?])\s+", text) if p.strip()]
    return [p for p in parts if len(words(p)) >= 4]


@dataclass
class TestScore:
    """How an answer was graded, and why (``explanation`` is shown to the learner)."""

    similarity: float
    keyword_coverage: float | None
    score: float
    passed: bool
    missing_keywords: list[str] = field(default_factory=list)
    method: str = "meaning"  # "rubric" | "refuted" | "partial" | "value" | "contradiction" | "meaning" | "empty"
    explanation: str = ""
    # The rubric parts (named for the learner) a failing answer leaves out.
    missing_parts: list[str] = field(default_factory=list)


def _show_keyword(keyword: str) -> str:
    return " / ".join(k.strip() for k in keyword.split("|")[:3])


def allowed_missing(n_keywords: int) -> int:
    """How many key facts a passing answer may leave out: none of one or two, one of three or more."""
    return n_keywords // 3


def score_answer(
    answer: str,
    expected: str,
    keywords: list[str] | None,
    embedder,
    *,
    value: str | None = None,
    misconceptions: list[dict] | None = None,
    parts: list[dict] | None = None,
    refuted_by: list[dict] | None = None,
) -> TestScore:
    """Grade one answer against a test's expected answer, key facts and (if any) exact value.

    ``misconceptions`` are the topic's known wrong claims (``{"claim", "correction"}``): an
    answer clearly closer in meaning to a claim than to both the expected answer and that
    claim's correction repeats the misconception, and fails with it named. (Comparing with the
    correction too matters: "await doesn't block" is close to "await blocks" for an embedding
    model, but closer still to the correction that says so.)
    """
    answer = (answer or "").strip()
    keywords = list(keywords or [])
    if not answer or SKIP.match(answer):
        return TestScore(0.0, 0.0 if keywords else None, 0.0, False, keywords, "empty", "No answer was given.")

    rubric = read_rubric(answer, parts or [], refuted_by) if (parts or refuted_by) else None
    complete = rubric is not None and bool(parts) and rubric.complete
    graded, value_ok = _grade_value(answer, value, keywords) if value else (None, False)
    # Every rubric part stated outweighs an opening working ("4+2=6 rows" is not the value 4).
    if graded is not None and (graded.passed or not complete):
        return graded
    if rubric is not None and (rubric.refuted_by or complete):
        return _rubric_grade(rubric, keywords)

    floor = settings.KNOWHUB_SESSIONS_SIM_FLOOR
    ceil = settings.KNOWHUB_SESSIONS_SIM_CEIL
    clauses = _clauses(expected)
    # Clause-level comparison only helps answers shorter than the expected one; a long answer is
    # measured against the whole expected answer, so it cannot score on one matching clause.
    use_clauses = len(clauses) > 1 and len(words(answer)) < len(words(expected)) * 0.6
    references = [expected] + (clauses if use_clauses else [])
    myths = [m for m in (misconceptions or []) if m.get("claim")]
    claim_texts = [m["claim"] for m in myths] + [m.get("correction") or m["claim"] for m in myths]
    vecs = embedder.embed_documents([answer, *references, *claim_texts])
    sims = [cosine(vecs[0], v) for v in vecs[1 : 1 + len(references)]]
    sim = max(sims)
    rest = [cosine(vecs[0], v) for v in vecs[1 + len(references) :]]
    claim_sims, correction_sims = rest[: len(myths)], rest[len(myths) :]
    sim_score = min(1.0, max(0.0, (sim - floor) / (ceil - floor)))

    def hit(keyword: str) -> bool:
        # A key fact that spells the test's value ("sync promise timeout") is found as a value.
        if value and any(value_tokens(alt) == value_tokens(value) for alt in keyword.split("|")):
            return value_present(answer, value)
        return keyword_hit(answer, keyword)

    if keywords:
        missing = [k for k in keywords if not hit(k)]
        coverage = 1 - len(missing) / len(keywords)
        score = sim_score * (0.4 + 0.6 * coverage)
    else:
        missing, coverage, score = [], None, sim_score
    states_value = bool(value) and (value_ok or value_present(answer, value))
    if value and not states_value:
        missing.append(value)
    threshold = settings.KNOWHUB_SESSIONS_PASS_SCORE
    passed = score >= threshold and len(missing) <= allowed_missing(len(keywords))
    if value_ok and not passed:
        # The value asked for is right; a thin explanation after it does not undo that.
        score, passed = max(score, threshold), True
    claim = None
    if claim_sims and not states_value:
        # An answer that states the right value does not follow a misconception; otherwise the
        # claim must be closer by a clear margin, as an embedding's nearest text is noisy.
        best = max(range(len(myths)), key=claim_sims.__getitem__)
        if claim_sims[best] > max(sim, correction_sims[best]) + MYTH_MARGIN:
            claim = myths[best]["claim"]
            passed = False
            score = min(score, threshold - 0.01)
    score = round(max(score, 0.0), 4)
    explanation = _explanation(claim=claim, value=value if value_ok else None, passed=passed, missing=missing)
    result = TestScore(
        round(sim, 4), None if coverage is None else round(coverage, 4), score, passed, missing, "meaning", explanation
    )
    if rubric is not None and rubric.partial and len(parts or []) > 1:
        # One part of a two-part question: credit for it, never a pass, and the missing part named.
        result.passed = False
        result.method = "partial"
        result.score = round(PARTIAL_CREDIT * len(rubric.found) / len(parts), 4)
        result.missing_parts = list(rubric.missing)
        result.explanation = (
            f"Partly right: you have {'; '.join(rubric.found)}. Missing: {'; '.join(rubric.missing)}."
        )
    elif rubric is not None and not result.passed:
        result.missing_parts = list(rubric.missing)
    return result


# A half-right answer to a two-part question earns this share of each part it states.
PARTIAL_CREDIT = 0.9


def _rubric_grade(rubric: RubricResult, keywords: list[str]) -> TestScore:
    """The grade of an answer the rubric settles: every part stated, or refuted."""
    cover = 1.0 if keywords else None
    if rubric.refuted_by:
        return TestScore(
            0.0, cover and 0.0, 0.0, False, keywords, "refuted", f"Not so: {rubric.refuted_by['why']}",
            missing_parts=list(rubric.missing),
        )  # fmt: skip
    return TestScore(1.0, cover, 1.0, True, [], "rubric", f"Right: {'; '.join(rubric.found)}.")


def _grade_value(answer: str, value: str, keywords: list[str]) -> tuple[TestScore | None, bool]:
    """Compare the answer's opening value with the test's: a final grade when it states exactly
    the value or contradicts it, else ``(None, whether it opens with the value)``."""
    expected_tokens = value_tokens(value)
    given = value_tokens(answer)
    head = given[: len(expected_tokens)]
    if given == expected_tokens:
        return TestScore(1.0, 1.0 if keywords else None, 1.0, True, [], "value", f"Exactly right: {value}."), True
    if head == expected_tokens:
        return None, True
    if head and all(_same_kind(t, expected_tokens) for t in head):
        return TestScore(
            0.0, 0.0 if keywords else None, 0.0, False, keywords, "contradiction",
            f"You answered “{' '.join(head)}”, but the answer is “{value}”.",
        ), False  # fmt: skip
    return None, False


def _explanation(*, claim: str | None, value: str | None, passed: bool, missing: list[str]) -> str:
    """The grade in one line for the learner; ``value`` is given when the answer opened with it."""
    shown = "; ".join(_show_keyword(k) for k in missing)
    if claim:
        return f"That is a common misconception: “{claim}”"
    if value is not None:
        return f"The value is right ({value})." + (f" Your reasoning leaves out: {shown}." if missing else "")
    if passed and not missing:
        return "Right: it says what the expected answer says."
    if passed:
        return f"Right in substance; it would be complete with: {shown}."
    if missing:
        return f"Missing the key point{'s' if len(missing) > 1 else ''}: {shown}."
    return "It uses the right terms but doesn't say what the expected answer says."
