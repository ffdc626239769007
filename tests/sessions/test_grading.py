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
    result = _grade("sql-joins", 1, "Use an INNER JOIN and keep the rows where orders.id IS NULL.", local_embedder)
    assert not result.passed
    assert result.explanation.startswith("Missing the key point") and "left join" in result.explanation


def test_an_answer_repeating_a_known_misconception_is_told_so(local_embedder):
    result = _grade(
        "js-closures", 2, "Because closures copy the variables, so changes outside never affect them.", local_embedder
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
