"""Words as knowhub counts them: one stem for a word's family, so a question's verb finds the
sentence that reports it in another tense."""

from __future__ import annotations

import pytest

from rag.words import content_terms, stem


@pytest.mark.parametrize(
    ("forms", "root"),
    [
        (["ask", "asks", "asked", "asking"], "ask"),
        (["decide", "decided", "decision", "decisions"], "decide"),
        (["meeting", "meetings"], "meet"),
        (["met", "meet"], "meet"),
        (["pay", "paid"], "pay"),
        (["write", "wrote", "written"], "write"),
    ],
)
def test_a_word_family_shares_one_stem(forms, root):
    assert {stem(f) for f in forms} == {root}


def test_a_question_and_the_sentence_that_answers_it_share_terms():
    question = content_terms("What did Leo ask for?")
    answer = content_terms("Leo Martin asked for a monthly report of unanswered questions.")
    assert question <= answer
