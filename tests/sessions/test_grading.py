"""Grading test answers as a teacher would, with the real local model."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from sessions.content import DATA_DIR
from sessions.grading import score_answer, value_tokens


def _topic(slug: str) -> dict:
    return json.loads((DATA_DIR / "topics" / f"{slug}.json").read_text())


def _grade(slug: str, index: int, answer: str, embedder):
    topic = _topic(slug)
    test = topic["tests"][index]
    return score_answer(
        answer,
        test["expected"],
        test.get("keywords"),
        embedder,
        value=test.get("value"),
        misconceptions=topic["misconceptions"],
        parts=test.get("parts"),
        refuted_by=test.get("refuted_by"),
    )


@pytest.mark.parametrize("answer", ["1", "It logs 1", "it logs 1.", "one", '"1"', "1 is logged", "b() returns 1"])
def test_the_correct_value_passes_in_any_short_form(local_embedder, answer):
    result = _grade("js-closures", 0, answer, local_embedder)
    assert result.passed, result
    assert result.score >= 0.5


@pytest.mark.parametrize(
    ("slug", "index", "answer"),
    [
        ("js-promises", 0, "A, C, B"),
        ("js-promises", 0, "a c b"),
        ("js-event-loop", 0, "sync, promise, timeout"),
        ("js-promises", 3, "No."),
        ("js-promises", 3, "nope"),
        ("sql-joins", 0, "six"),
        ("python-generators", 1, "[0, 1, 4] then []"),
        ("python-generators", 1, "[0, 1, 4] and an empty list"),
    ],
)
def test_exact_values_are_compared_by_value(local_embedder, slug, index, answer):
    result = _grade(slug, index, answer, local_embedder)
    assert result.passed and result.method == "value", result


@pytest.mark.parametrize(
    ("slug", "index", "answer", "said"),
    [
        ("js-closures", 0, "It logs 3 because a and b share the same counter", "3"),
        ("js-closures", 0, "2", "2"),
        ("js-promises", 0, "A, B, C", "a b c"),
        ("js-promises", 3, "Yes, await blocks until the promise settles so no other code runs", "yes"),
        ("sql-joins", 0, "4 rows, one per order", "4"),
    ],
)
def test_a_different_value_fails_and_says_what_was_given(local_embedder, slug, index, answer, said):
    result = _grade(slug, index, answer, local_embedder)
    assert not result.passed and result.method == "contradiction", result
    assert f"“{said}”" in result.explanation and "but the answer is" in result.explanation


def test_a_failed_explanation_names_the_missing_key_point(local_embedder):
    result = _grade("sql-joins", 1, "Use a subquery on the customers table sorted by name.", local_embedder)
    assert not result.passed
    assert result.explanation.startswith("Missing the key point") and "left join" in result.explanation


@pytest.mark.parametrize(
    ("slug", "index", "answer"),
    [
        ("js-closures", 1, "3 3 3, use let"),  # was "✗ Not quite (41 %)"
        ("js-closures", 2, "only the inner functions can see them"),  # was "✗ Not quite (33 %)"
        ("python-generators", 1, "[0,1,4] []"),
        ("python-decorators", 3, "at def time"),
        ("js-closures", 3, "once nothing references the closure"),
        ("sql-joins", 2, "null rows fail the where, move it to the on clause"),
    ],
)
def test_terse_right_answers_pass_as_a_teacher_reads_them(local_embedder, slug, index, answer):
    result = _grade(slug, index, answer, local_embedder)
    assert result.passed, result
    assert result.explanation.startswith(("Right", "Exactly right")), result.explanation


@pytest.mark.parametrize(
    ("slug", "index", "answer", "missing"),
    [
        ("js-closures", 1, "it prints 3 3 3", "the fix"),
        ("js-closures", 1, "use let instead of var", "what is printed"),
        ("python-decorators", 1, "use functools.wraps", "why"),
        ("js-promises", 2, "use Promise.all", "one failure rejects"),
    ],
)
def test_half_an_answer_to_a_two_part_question_gets_partial_credit_and_is_told_the_missing_part(
    local_embedder, slug, index, answer, missing
):
    result = _grade(slug, index, answer, local_embedder)
    assert not result.passed and result.method == "partial", result
    assert 0 < result.score < 0.5
    assert any(p.startswith(missing) for p in result.missing_parts), result.missing_parts
    assert result.explanation.startswith("Partly right") and f"Missing: {missing}" in result.explanation


@pytest.mark.parametrize(
    ("slug", "index", "answer"),
    [
        ("js-closures", 1, "2 2 2, use let"),
        ("python-decorators", 0, "f = a(b(f)), b's wrapper runs first"),
        ("python-decorators", 3, "every time f is called"),
        ("sql-joins", 1, "left join orders where orders.id is not null"),
        ("js-promises", 1, "a rejected promise, and the next onFulfilled still runs"),
    ],
)
def test_terse_wrong_answers_are_refuted_with_a_reason(local_embedder, slug, index, answer):
    result = _grade(slug, index, answer, local_embedder)
    assert not result.passed and result.method == "refuted", result
    assert result.explanation.startswith("Not so: ") and len(result.explanation) > 30


def test_a_negated_refutation_does_not_refute(local_embedder):
    result = _grade("python-decorators", 3, "once at import, not on each call", local_embedder)
    assert result.passed, result


def test_an_answer_repeating_a_known_misconception_is_told_so(local_embedder):
    # Graded by meaning alone (no rubric): the misconception check is what the meaning grader adds.
    topic = _topic("js-closures")
    test = topic["tests"][2]
    result = score_answer(
        "Because closures copy the variables, so changes outside never affect them.",
        test["expected"], test["keywords"], local_embedder, misconceptions=topic["misconceptions"],
    )
    assert not result.passed
    assert "misconception" in result.explanation and "copies the values" in result.explanation


def test_paraphrase_passes_and_blank_fails(local_embedder):
    para = _grade(
        "python-decorators",
        3,
        "It runs a single time when the def statement is executed, typically on import, not per call.",
        local_embedder,
    )
    assert para.passed, para
    blank = _grade("python-decorators", 3, "I don't know", local_embedder)
    assert not blank.passed and blank.score == 0 and blank.explanation == "No answer was given."


def test_value_normalisation():
    assert value_tokens("It logs: 'one'") == ["1"]
    assert value_tokens("The output is [0, 1, 4] then []") == ["0", "1", "4", "[]"]
    assert value_tokens("It doesn't") == ["it", "does", "no"]


def test_grader_never_reads_the_eval_answers(local_embedder):
    """The eval block must not change a grade (the grader is measured on it)."""
    topic = _topic("js-closures")
    test = topic["tests"][2]
    wrong = test["eval"]["wrong"][0]
    with_eval = score_answer(
        wrong, test["expected"], test["keywords"], local_embedder, misconceptions=topic["misconceptions"]
    )
    stripped = {k: v for k, v in test.items() if k != "eval"}
    without = score_answer(
        wrong, stripped["expected"], stripped["keywords"], local_embedder, misconceptions=topic["misconceptions"]
    )
    assert with_eval == without


@pytest.mark.django_db
def test_evaluate_session_scoring_json_reports_the_four_rates(learning_content, capsys):
    call_command("evaluate_session_scoring", "--json", "--topic", "js-closures")
    out = json.loads(capsys.readouterr().out)
    for key in (
        "expected_pass", "short_pass", "paraphrase_pass", "wrong_pass", "holdout_paraphrase_pass", "holdout_wrong_pass"
    ):
        assert 0.0 <= out[key] <= 1.0, key
    assert out["tests"] == 4 and out["answers"]["paraphrase"] == 8 and out["answers"]["wrong"] == 12
    assert out["expected_pass"] == 1.0 and out["short_pass"] == 1.0
    assert out["paraphrase_pass"] >= 0.9 and out["wrong_pass"] <= 0.05


@pytest.mark.django_db
def test_evaluate_session_scoring_rejects_an_unknown_topic(learning_content):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Unknown topic"):
        call_command("evaluate_session_scoring", "--topic", "no-such-topic")


def test_rubric_patterns_read_words_gaps_prefixes_and_slots():
    from sessions.rubric import pattern_match, rubric_tokens

    tokens = rubric_tokens("f = a(b(f)), b's wrapper runs first; [0,1,4] [] can't")
    assert tokens[-1] == "cant" and "emptylist" in tokens and "b" in tokens
    assert pattern_match(tokens, "b ~ first")  # up to three words between
    assert not pattern_match(tokens, "a ~ first")  # five words between
    assert pattern_match(tokens, "wrap* + 0 1 4 ~ emptylist/empty")
    assert not pattern_match(rubric_tokens("it is not on each call"), "each call", negatable=True)
    assert pattern_match(rubric_tokens("on each call"), "each call", negatable=True)


@pytest.mark.django_db
def test_evaluate_session_scoring_reports_the_learner_typed_sets(learning_content, capsys):
    call_command("evaluate_session_scoring", "--set", "learner", "--json", "--topic", "js-closures")
    sets = json.loads(capsys.readouterr().out)
    assert [s["set"] for s in sets] == ["learner_answers.json", "learner_answers_round2.json"]
    first = sets[0]
    assert first["answers"]["correct"] >= 20 and first["answers"]["wrong"] >= 20 and first["answers"]["partial"] >= 2
    for key in ("correct_pass", "wrong_fail", "partial_credit"):
        assert 0.0 <= first[key] <= 1.0
