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


def _run(searched: str, chips=(), docs=(), cited=()):
    """What ``question_subject`` and ``subject_held`` read of an ask (no database needed)."""
    from types import SimpleNamespace

    return SimpleNamespace(searched_query=searched, chips=list(chips), docs=list(docs), cited=list(cited))


def test_a_questions_subject_is_what_is_left_without_its_period_people_and_kind_of_answer():
    from types import SimpleNamespace

    from rag.answering.unmentioned import question_subject

    week = SimpleNamespace(field="date", phrase="last week")
    assert question_subject(_run("what did we discuss last week about pgvector", [week])) == ["pgvector"]
    leo = SimpleNamespace(field="people", phrase="leo")
    month = SimpleNamespace(field="date", phrase="last month")
    assert question_subject(_run("what did leo say last month", [leo, month])) == []


def test_an_answer_holds_the_subject_in_its_quotes_titles_or_other_words_hyphen_or_not():
    from types import SimpleNamespace

    from rag.answering.unmentioned import subject_held

    runbook = SimpleNamespace(n=1, best=SimpleNamespace(title="On-call runbook: ingestion backlog"))
    run = _run("who is oncall this week", docs=[runbook], cited=[1])
    assert subject_held(run, "If the ingestion backlog grows, first check the worker [1].", ["oncall"]) == 1
    uncited = _run("who is oncall this week", docs=[runbook], cited=[])
    assert subject_held(uncited, "The event loop runs the call stack [1].", ["oncall"]) == 0
    assert subject_held(uncited, "Judgments can retune these weights [1].", ["change", "weights"]) == 2


def test_a_figure_is_the_same_however_it_is_written():
    from rag.answering.unmentioned import figures

    assert set(figures("latency at 1m chunks")) == set(figures("at 1 million chunks")) == {(1e6, "")}
    assert (1e6, "") in figures("we loaded 1,000,000 chunks", in_digits=True)
    assert set(figures("p95 is 24 ms at 100k chunks")) == {(24.0, "ms"), (1e5, "")}
    assert figures("the top 3 complaints of 2026") == {}  # a bare number counts nothing it names


def test_a_figure_no_source_states_opens_the_answer_with_a_note():
    from types import SimpleNamespace

    from rag.answering.unmentioned import unstated_figure_note

    weekly = SimpleNamespace(text="Maya Chen: p95 search latency is 24 ms at 100k chunks.")
    answer = "Maya Chen: “p95 search latency is 24 ms at 100k chunks.” [1]"

    def note(question, chips=()):
        return unstated_figure_note(SimpleNamespace(query=question, chips=list(chips), docs=[weekly]), answer)

    assert note("what is the latency at 1m chunks") == (
        "Nothing you can see gives a figure for “1m”; the closest your sources come:"
    )
    assert note("what is the latency at 100k chunks") == ""
    assert note("is search under 50 ms") == ""  # a bound, which 24 ms answers
    # a period or a frequency is no figure a document states
    assert note("what did we decide in the last 24 hours") == ""
    assert note("what broke 2 hours ago") == note("does it sync every 15 minutes") == ""
    last_year = SimpleNamespace(field="date", phrase="in 2026")
    assert note("what did we spend 10k on in 2026", [last_year]) == (
        "Nothing you can see gives a figure for “10k”; the closest your sources come:"
    )


def test_a_time_no_source_gives_opens_the_answer_with_a_note():
    from types import SimpleNamespace

    from rag.answering.unmentioned import unstated_time_note

    weekly = SimpleNamespace(
        best=SimpleNamespace(title="Platform weekly"),
        text="Sam Okafor: The nightly Notion sync hit rate limits twice.\nMaya Chen: p95 is 24 ms.",
    )
    budget = SimpleNamespace(
        best=SimpleNamespace(title="Platform team budget 2027"),
        text="The platform team budget for 2027 is 412,000 euros.",
    )
    release = SimpleNamespace(
        best=SimpleNamespace(title="1:1 with Leo"), text="Leo: I will ship the release by Friday."
    )

    def note(question, answer, docs):
        run = SimpleNamespace(query=question, searched_query=question, chips=[], docs=docs)
        return unstated_time_note(run, answer)

    # How often the sync runs is no date the next meeting falls on, nor is another page's 2027.
    nightly = "Sam: “The nightly sync hit rate limits.” [1]"
    assert note("when is the next platform weekly", nightly, [weekly, budget]) == (
        "Nothing you can see gives a time for “next platform weekly”; the closest your sources come:"
    )
    assert note("when does the notion sync run", "Sam: “The nightly Notion sync hit rate limits.” [1]", [weekly]) == ""
    # A time the quotes missed but a source on the subject states: no claim that none does.
    assert note("when is the release", "Leo: “I will hand the checklist to Sam.” [1]", [release]) == ""
    assert note("what is the platform budget", "The budget is 412,000 euros [1].", [budget]) == ""  # no "when"
    # A quote on how the time is set is about the time: no claim that nothing gives one.
    journals = SimpleNamespace(best=SimpleNamespace(title="Syncing a Logseq graph"), text="Journals take their date.")
    answer = "Journals take their date from the file name [1]."
    assert note("which date do the journals of a synced graph take", answer, [journals]) == ""
