"""The claim a yes/no question's note names when its verb is the word no document says."""

from __future__ import annotations

import pytest

from rag.answering.unmentioned import _claim


@pytest.mark.parametrize(
    ("question", "unmentioned", "claim"),
    [
        ("does knowhub support google docs", ["support"], "knowhub supports google docs"),
        ("Does it fetch Confluence pages?", ["fetch"], "it fetches Confluence pages"),
        ("do the workers copy files", ["copy"], "the workers copy files"),
        ("can knowhub import confluence pages", ["import"], "knowhub can import confluence pages"),
        ("does the bot have a name", ["have"], "the bot has a name"),
    ],
)
def test_a_missing_verb_names_the_claim(question, unmentioned, claim):
    assert _claim(question, unmentioned) == claim


@pytest.mark.parametrize(
    ("question", "unmentioned"),
    [
        ("does knowhub support pdf", ["support", "pdf"]),  # what it is asked of is missing too
        ("can knowhub import confluence pages", ["confluence"]),  # not the verb
        ("can the team import confluence pages", ["confluence"]),
        ("is logseq sync encrypted", ["encrypted"]),  # no verb with something after it
        ("what does knowhub support", ["support"]),
    ],
)
def test_otherwise_the_words_are_named(question, unmentioned):
    assert _claim(question, unmentioned) == ""
