"""Words as knowhub counts them: one stem for a word's family, so a question's verb finds the
sentence that reports it in another tense."""

from __future__ import annotations

import pytest

from rag.words import (
    ACTIONS,
    DECISIONS,
    STATES_ACTION_RE,
    STATES_DECISION_RE,
    WORD_RE,
    asked_listing,
    asked_terms,
    asks_for_decisions,
    content_terms,
    in_written_forms,
    joined_as_written,
    stem,
)


@pytest.mark.parametrize(
    ("forms", "root"),
    [
        (["ask", "asks", "asked", "asking"], "ask"),
        (["decide", "decided", "decision", "decisions"], "decide"),
        (["meeting", "meetings"], "meet"),
        (["met", "meet"], "meet"),
        (["pay", "paid"], "pay"),
        (["write", "wrote", "written"], "write"),
        (["tune", "tunes", "tuning", "tuned"], "tune"),  # a short verb that drops its "e"
        (["name", "named", "naming"], "name"),
        (["stop", "stops", "stopped"], "stop"),  # a doubled consonant before the suffix
        (["end", "ends", "ended"], "end"),  # a three-letter verb in the past
        (["resonate", "resonates", "resonated"], "resonat"),  # the "e" the past tense drops
        (["apply", "applies", "applied"], "apply"),
        (["success", "successful", "successfully"], "success"),
        (["speed", "speeds"], "speed"),  # "-eed" is no past tense
    ],
)
def test_a_word_family_shares_one_stem(forms, root):
    assert {stem(f) for f in forms} == {root}


def test_a_doer_is_not_the_thing_done():
    # "what did the wedding planner say" is not answered by a line about a plan
    assert stem("planner") != stem("plan")
    assert stem("planned") == stem("plan")


def test_a_question_and_the_sentence_that_answers_it_share_terms():
    question = content_terms("What did Leo ask for?")
    answer = content_terms("Leo Martin asked for a monthly report of unanswered questions.")
    assert question <= answer


def test_a_word_with_letters_of_another_alphabet_is_one_word():
    assert content_terms("Who was Frédéric Chopin?") == {"frédéric", "chopin"}
    assert WORD_RE.findall("Skłodowska-Curie met Céloron") == ["Skłodowska-Curie", "met", "Céloron"]
    # an underscore still separates ("hnsw_ef" is two words the index holds), and "C++" stays whole
    assert WORD_RE.findall("hnsw_ef C++") == ["hnsw", "ef", "C++"]


def test_a_stop_word_typed_without_its_apostrophe_is_still_one():
    assert content_terms("whats the p95") == {"p95"}
    assert content_terms("whos on call, dont we know") == {"call"}


def test_words_that_only_shape_a_question_are_no_subject():
    assert content_terms("is ocr done yet") == {"ocr", "done"}
    assert content_terms("anything new on the pilot") == {"new", "pilot"}


def test_two_words_the_documents_hyphenate_are_read_as_that_one_word():
    texts = ["On-call runbook: ingestion backlog", "JavaScript runs your code with one call stack."]
    assert joined_as_written("whos on call", texts) == "whos on-call"
    assert content_terms(joined_as_written("who is on call", texts)) == {"on-call"}
    # Written apart in every document, the words stay apart; a word joins one compound at most.
    assert joined_as_written("what is the call stack", texts) == "what is the call stack"
    assert joined_as_written("a b c", ["a-b", "b-c"]) == "a-b c"
    # Typed closed up, it is the compound too.
    assert joined_as_written("what is the oncall engineer for", texts) == "what is the on-call engineer for"


def test_a_word_typed_in_another_form_is_put_in_the_form_the_documents_write():
    texts = ["Relevance judgments can retune these weights.", "The old weights stay; a weight is a number."]
    assert in_written_forms("whats the default weighting", texts) == "whats the default weights"
    # A word the documents write as typed, a word of no family there, and short words stay.
    assert in_written_forms("is a weight tuned", texts) == "is a weight tuned"
    assert in_written_forms("Weighting of ranks", []) == "Weighting of ranks"


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("what did we decide", True),
        ("list the decisions", True),
        ("what decisions were made so far", True),
        ("recap the decisions from last week", True),
        ("what did we decide with acme", False),  # a subject
        ("list the files", False),  # no decision asked for
    ],
)
def test_a_question_asks_for_every_decision_when_it_names_nothing_besides_the_list(question, asks):
    assert asks_for_decisions(question) is asks


@pytest.mark.parametrize(
    ("sentence", "states"),
    [
        ("Decision: pilot with five analysts, review after six weeks.", True),
        ("We agreed to start with the 2019 to 2024 memos and a weekly sync.", True),
        ("so we 've decided that we 'll use the mic", True),
        ("It was decided that the remote has no LCD.", True),
        ("The team finally agreed on a yellow case.", True),
        ("The decision was to postpone.", True),
        # The words used otherwise: a course page, a handbook.
        ("Where a variable can be used is decided by where it is written, not where it is called.", False),
        ("`.then` returns a new promise resolved with whatever its callback returns.", False),
        ("Block references are resolved to the text they point to.", False),
        ("That is a decision for later.", False),
    ],
)
def test_a_sentence_states_a_decision_only_when_someone_decided(sentence, states):
    assert bool(STATES_DECISION_RE.search(sentence)) is states


@pytest.mark.parametrize(
    ("question", "listing"),
    [
        ("what are the action items", ACTIONS),
        ("list the action items from last week", ACTIONS),
        ("any todos", ACTIONS),
        ("what did we decide", DECISIONS),
        ("next steps for acme", None),  # a subject: the steps on it, not every step
        ("what are the steps to create a macro", None),  # a procedure, not tasks
        ("what have we committed to", ACTIONS),  # a promise is a task taken on
        ("what did i promise", ACTIONS),
        ("what did we promise northwind", None),  # a subject: the promises to Northwind
        ("what is a promise", None),  # the word, asked about as such
        ("how do i make a todo", None),  # a procedure: how a task is written, not the tasks written
        ("how can we decide", None),
    ],
)
def test_what_a_question_naming_no_subject_lists(question, listing):
    assert asked_listing(question) is listing


@pytest.mark.parametrize(
    ("sentence", "gives"),
    [
        ("I will hand the release checklist to Sam.", True),
        ("We'll send the proposal on Friday.", True),
        ("Action: Sam sends the notes.", True),
        ("Decision: move the Logseq sync to every fifteen minutes.", True),
        ("The browser will paint between the slices.", False),  # a course page promises nothing
        ("React will re-render the component.", False),
        ("I will be there.", False),
    ],
)
def test_a_sentence_gives_a_task_when_someone_takes_it_on(sentence, gives):
    assert bool(STATES_ACTION_RE.search(sentence)) is gives


def test_a_promise_asked_about_is_read_as_the_tasks_it_is_stated_as():
    assert asked_terms("what did we promise northwind") == {"northwind", "action"}
    assert asked_terms("what is a promise") == {stem("promise")}
    # Who owns or handles something now is who took the task on.
    assert asked_terms("who owns the release checklist now") == {stem("release"), "checklist", "action"}
    assert asked_terms("who handles the on-call rota") == {"on-call", "rota", "action"}
    assert asked_terms("who wrote the ownership guide") == {"write", "ownership", stem("guide")}
    # Who should do something is who took it on; who to talk to about something is who knows it.
    assert "action" in asked_terms("who should do the release")
    assert asked_terms("who should i talk to about notion") == {"talk", "notion"}
