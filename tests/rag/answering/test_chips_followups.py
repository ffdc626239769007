"""Analysis chips (stated vs guessed, removal) and the offline follow-up rewrite: pure functions."""

from __future__ import annotations

import datetime as dt

import pytest

from rag.answering.analysis import parse_query
from rag.answering.conversations import NEW_QUERY, NO_RAG, REUSE, Conversation, Exchange, choose_strategy
from rag.answering.followups import asks_who_took_part, asks_who_was_there, offline_rewrite
from rag.answering.selectors import Facets
from rag.answering.statements import asks_for_clients, asks_where_took_part, asks_who_is
from rag.search import SearchFilters

TODAY = dt.date(2026, 11, 23)


def facets() -> Facets:
    def rows(*values):
        return [{"value": v, "count": 1} for v in values]

    return Facets(
        collections=rows("meetings", "handbook"), domains=rows("engineering", "clients"),
        people=rows("Sam Okafor", "Maya Chen"), tags=rows("search", "ingestion", "acme"),
        entities=rows("Acme Capital", "Northwind Fund"),
    )  # fmt: skip


def chips(query):
    return {(c.field, c.value): c for c in parse_query(query, today=TODAY, facets=facets()).chips}


def test_an_ordinary_word_is_a_guess_and_only_boosts():
    analysis = parse_query("What is the p95 search latency?", today=TODAY, facets=facets())
    chip = chips("What is the p95 search latency?")[("tags", "search")]
    assert (chip.origin, chip.phrase, chip.label) == ("guessed", "search", "tag: search (from the word 'search')")
    applied, boosted = analysis.split(SearchFilters())
    assert applied.tags == [] and boosted.tags == ["search"]
    # The word shown is the name, not the "and" the phrase took along.
    maya = chips("what did sam and maya talk about")[("people", "Maya Chen")]
    assert maya.phrase == "and maya" and maya.label == "person: Maya Chen (from the word 'maya')"


@pytest.mark.parametrize(
    ("query", "key", "phrase"),
    [
        ("What did we decide last month?", ("date", "2026-10-01/2026-10-31"), "last month"),
        ("What was decided in the meetings collection?", ("collections", "meetings"), "in the meetings collection"),
        ("What did we agree with Sam?", ("people", "Sam Okafor"), "with Sam"),
        ("Which notes are tagged search?", ("tags", "search"), "tagged search"),
        ("What did Acme Capital ask for?", ("entity", "Acme Capital"), "Acme Capital"),
    ],
)
def test_explicit_phrases_are_stated_and_filter(query, key, phrase):
    chip = chips(query)[key]
    assert chip.origin == "stated" and chip.phrase == phrase
    applied, _ = parse_query(query, today=TODAY, facets=facets()).split(SearchFilters())
    assert applied != SearchFilters()


def test_a_removed_chip_is_not_applied_and_the_request_wins():
    analysis = parse_query("What did we decide last month with Sam?", today=TODAY, facets=facets())
    applied, _ = analysis.split(SearchFilters(), [{"field": "date", "value": ""}])
    assert applied.date_from is None and applied.people == ["Sam Okafor"]
    applied, _ = analysis.split(SearchFilters(people=["Maya Chen"]))
    assert applied.people == ["Maya Chen"] and applied.date_from == dt.date(2026, 10, 1)


def test_pronoun_follow_up_carries_the_previous_subject():
    rewrite = offline_rewrite(question="who raised them?", previous=["What did Acme complain about in the pilot?"])
    assert rewrite.kind == "carried" and rewrite.searched_query == "who raised them? (Acme complain pilot)"
    assert (
        offline_rewrite(question="What is a closure?", previous=["Who is Sam?"]).searched_query == "What is a closure?"
    )


def test_the_part_of_the_subject_a_follow_up_names_is_searched_with_the_subject():
    previous = ["how does search rank results"]
    for question, part in (("and the weights?", "weights"), ("what about the text part", "text part")):
        rewrite = offline_rewrite(question=question, previous=previous)
        assert rewrite.kind == "carried" and rewrite.searched_query.endswith("(search rank results)"), rewrite
        assert part in rewrite.searched_query
    # A question of its own, or a name, is no part of the last subject.
    assert offline_rewrite(question="and the capital of france?", previous=previous).kind == "standalone"
    assert offline_rewrite(question="what about acme", previous=previous).kind == "new_subject"
    assert offline_rewrite(question="and the weights?", previous=[]).kind == "standalone"


def test_tell_me_more_about_a_new_thing_is_a_new_query():
    last = Exchange(interaction_id=1, query="What did Acme complain about in the pilot?",
                    topic="What did Acme complain about in the pilot?",
                    answer="Two complaints [1].", retrieved=[{"chunk_uid": "x"}], cited=["x"], request_filters={},
                    strategy=NEW_QUERY)  # fmt: skip
    conversation = Conversation(id="c", exchanges=[last])
    assert (
        choose_strategy(question="tell me more about Northwind", conversation=conversation, request_filters={})
        == NEW_QUERY
    )
    assert choose_strategy(question="tell me more", conversation=conversation, request_filters={}) == REUSE
    assert (
        offline_rewrite(question="tell me more about Northwind", previous=[last.query]).searched_query
        == "Northwind tell me more about Northwind"
    )


def test_a_bare_question_is_asked_of_the_earlier_subject():
    previous = ["how do i sync my logseq graph"]
    for question in ("how often", "how often?", "when exactly", "and how much?", "who"):
        rewrite = offline_rewrite(question=question, previous=previous)
        assert rewrite.kind == "bare" and rewrite.searched_query.endswith("(sync logseq graph)"), (question, rewrite)
    # With nothing before it, or with a subject of its own, it stands alone.
    assert offline_rewrite(question="how often", previous=[]).kind == "standalone"
    assert offline_rewrite(question="how often does the notion sync run", previous=previous).kind == "standalone"


def test_another_thing_of_the_kind_asks_the_earlier_question_of_it():
    for question, previous, again in (
        ("what about a tweet", "how do i embed a youtube video", "how do i embed a tweet?"),
        ("and a promise?", "what is a closure", "what is a promise?"),
    ):
        rewrite = offline_rewrite(question=question, previous=[previous])
        assert (rewrite.kind, rewrite.searched_query) == ("other_one", again), question
    # Without "a" on both sides it is no such question: a name, or a plural the earlier one lacks.
    assert offline_rewrite(question="what about acme", previous=["what is a closure"]).kind == "new_subject"
    assert offline_rewrite(question="what about a tweet", previous=["how do i embed videos"]).kind != "other_one"


def test_another_subject_after_a_question_about_one_asks_that_question_of_it():
    for question, previous, again in (
        ("and what about the notion sync", "what did maya say about latency",
         "what did maya say about the notion sync"),
        ("and the notion sync?", "what did we decide about the logseq sync?",
         "what did we decide about the notion sync"),
    ):  # fmt: skip
        rewrite = offline_rewrite(question=question, previous=[previous])
        assert (rewrite.kind, rewrite.searched_query) == ("other_one", again), question
    # A part of a subject no "about" named is searched with the earlier question's words.
    rewrite = offline_rewrite(question="and the weights?", previous=["how does search rank results"])
    assert rewrite.kind == "carried" and "rank" in rewrite.searched_query


def test_which_ones_after_a_count_asks_the_counting_question_again():
    counted = "how many meetings did we have with acme"
    for question in ("which ones", "which ones?", "what were they", "and which", "list them"):
        rewrite = offline_rewrite(question=question, previous=[counted])
        assert (rewrite.kind, rewrite.searched_query) == ("recount", counted), question
    last = Exchange(interaction_id=1, query=counted, topic=counted,
                    answer="**2** entries are tagged **acme**, according to the metadata [1] [2].",
                    retrieved=[{"chunk_uid": "x"}], cited=["x"], request_filters={}, strategy=NEW_QUERY)  # fmt: skip
    conversation = Conversation(id="c", exchanges=[last])
    assert choose_strategy(question="what are they", conversation=conversation, request_filters={}) == NEW_QUERY
    # After a question that counted nothing, "which ones" is no recount.
    assert offline_rewrite(question="which ones", previous=["what did we decide with acme"]).kind != "recount"


def test_an_example_asked_for_without_a_subject_is_of_the_last_answer():
    last = Exchange(interaction_id=1, query="what is a closure", topic="what is a closure",
                    answer="A closure is a function together with the variables of its scope [1].",
                    retrieved=[{"chunk_uid": "x"}], cited=["x"], request_filters={}, strategy=NEW_QUERY)  # fmt: skip
    conversation = Conversation(id="c", exchanges=[last])
    for question in ("can you give an example", "is there an example", "do you have an example of that?",
                     "show an example", "example please", "for instance?", "can you show me one"):  # fmt: skip
        assert choose_strategy(question=question, conversation=conversation, request_filters={}) == REUSE, question
    # An example of something named is a question of its own.
    for question in ("can you give an example of promise chaining", "what is an example of a microtask",
                     "show me one of the acme meetings"):
        assert choose_strategy(question=question, conversation=conversation, request_filters={}) == NEW_QUERY, question


def test_summarize_that_rewords_the_last_answer_and_summarize_something_else_searches_it():
    last = Exchange(interaction_id=1, query="summarize the acme review", topic="summarize the acme review",
                    answer="Sam Okafor: “Analysts used the pilot 340 times.” [1]", retrieved=[{"chunk_uid": "x"}],
                    cited=["x"], request_filters={}, strategy=NEW_QUERY)  # fmt: skip
    conversation = Conversation(id="c", exchanges=[last])
    for question in ("summarize that", "tldr", "in bullet points", "summarize it in one sentence",
                     "translate it to french"):  # fmt: skip
        assert choose_strategy(question=question, conversation=conversation, request_filters={}) == NO_RAG, question
    for question in ("tldr of the platform weekly", "summarize the platform weekly"):
        assert choose_strategy(question=question, conversation=conversation, request_filters={}) == NEW_QUERY, question


def test_a_closing_then_points_back_to_the_case_asked_about():
    rewrite = offline_rewrite(question="what should i do then", previous=["what happens if redis goes down"])
    # The subject is carried, not the question's everyday verbs ("happens", "goes").
    assert (rewrite.kind, rewrite.searched_query) == ("carried", "what should i do then (redis)")
    assert offline_rewrite(question="what do we do then?", previous=["what if the worker dies"]).kind == "carried"
    # "then" inside a question of its own is no pointer.
    assert offline_rewrite(question="what comes then after pending", previous=["a"]).kind == "standalone"


def test_a_question_word_and_one_noun_asks_it_of_the_earlier_subject():
    rewrite = offline_rewrite(question="what formats?", previous=["how do i export my graph"])
    assert (rewrite.kind, rewrite.searched_query) == ("bare", "what formats? (export graph)")
    assert offline_rewrite(question="which port", previous=["how do i run the server"]).kind == "bare"
    # A first question, or one saying more, stands alone.
    assert offline_rewrite(question="what formats", previous=[]).kind == "standalone"
    assert offline_rewrite(question="what formats does export write", previous=["x y"]).kind == "standalone"


def test_is_there_asks_whether_something_exists_and_points_back_to_nothing():
    previous = ["can it read scanned pdfs"]
    rewrite = offline_rewrite(question="is there an api for documents", previous=previous)
    assert (rewrite.kind, rewrite.searched_query) == ("standalone", "is there an api for documents")
    assert offline_rewrite(question="are there any for notion", previous=previous).kind == "standalone"
    # "there" as a place still points back.
    assert offline_rewrite(question="who was there", previous=["the acme kickoff"]).kind == "carried"


def test_a_period_the_subject_is_measured_against_only_boosts():
    for query, phrase in (
        ("how much more is the budget than this year", "this year"),
        ("is the budget bigger compared to last year", "last year"),
    ):
        chip = chips(query)[next(k for k in chips(query) if k[0] == "date")]
        assert chip.origin == "guessed" and chip.phrase == phrase, chip
        applied, boosted = parse_query(query, today=TODAY, facets=facets()).split(SearchFilters())
        assert applied.date_from is None and boosted.date_from is not None
    assert chips("what did we decide this year")[("date", "2026-01-01/2026-11-23")].origin == "stated"


@pytest.mark.parametrize("mode", ["ok", "error"])
def test_with_an_llm_a_follow_up_is_rewritten_and_a_failure_falls_back(settings, mode):
    from rag.answering.followups import llm_rewrite
    from rag.llm import get_llm
    from tests.rag.answering.fake_openai import FakeOpenAI, use_fake

    # A fake OpenAI-compatible server: the test is about the rewrite step's plumbing, not a model.
    with FakeOpenAI(mode=mode, reply="Who raised the complaints about the Acme pilot?") as fake:
        use_fake(settings, fake, timeout=5.0)
        rewrite = llm_rewrite(
            question="who raised them?",
            exchanges=[("What did Acme complain about in the pilot?", "Two complaints [1].")],
            llm=get_llm("fake-model"),
        )  # fmt: skip
        asked = fake.requests[-1]["messages"][-1]["content"]
    assert "What did Acme complain about in the pilot?" in asked and "who raised them?" in asked
    if mode == "ok":
        assert (rewrite.kind, rewrite.searched_query) == ("llm", "Who raised the complaints about the Acme pilot?")
    else:
        assert rewrite.kind == "carried" and "Acme" in rewrite.searched_query


@pytest.mark.parametrize(
    ("question", "expected"),
    [("Who was it with?", True), ("who was there?", True), ("And who attended?", True),
     ("who else was in the meeting?", True), ("Who raised them?", False), ("Who decided the budget?", False),
     ("Who is Leo?", False), ("What was it about?", False)],
)  # fmt: skip
def test_which_follow_ups_ask_who_took_part(question, expected):
    assert asks_who_was_there(question) is expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [("who attended the acme kickoff", True), ("Who was at the pilot review?", True),
     ("and who took part in the weekly", True), ("who joined the northwind intro", True),
     ("Who decided the budget?", False), ("who is going to do releases", False), ("who was Leo", False)],
)  # fmt: skip
def test_which_questions_ask_who_took_part_in_what_they_name(question, expected):
    assert asks_who_took_part(question) is expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [("who is sam", True), ("whos sam okafor?", True), ("Who is Sam Okafor?", True), ("and who was sam", True),
     ("who is sam working with", False), ("who is on call", False), ("who is maya", False)],
)  # fmt: skip
def test_which_questions_ask_who_a_person_is(question, expected):
    assert asks_who_is(question, "Sam Okafor") is expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [("which meetings was sam in", True), ("what meetings did Sam Okafor attend?", True), ("who is sam", True),
     ("which calls has sam been on", True), ("which meetings was maya in", False),
     ("which meetings did sam decide anything in", False), ("sam", True), ("Sam Okafor?", True),
     ("sam okafor notion", False)],
)  # fmt: skip
def test_which_questions_ask_where_a_person_took_part(question, expected):
    assert asks_where_took_part(question, "Sam Okafor") is expected


@pytest.mark.parametrize(
    ("question", "kind"),
    [("which clients do we have", "clients"), ("who are our customers?", "customers"), ("list the clients", "clients"),
     ("What clients are there?", "clients"), ("which clients did acme mention", ""), ("what do our clients want", "")],
)  # fmt: skip
def test_which_questions_ask_for_the_list_of_clients(question, kind):
    assert asks_for_clients(question) == kind


def test_a_pronoun_for_the_one_person_the_last_question_named_is_that_person():
    people = ["Sam Okafor", "Maya Chen", "Leo Martin"]
    rewrite = offline_rewrite(question="what did he say", previous=["who is sam"], today=TODAY, people=people)
    assert (rewrite.searched_query, rewrite.kind) == ("what did Sam say", "person")
    rewrite = offline_rewrite(question="what are his tasks", previous=["who is Sam Okafor?"], people=people)
    assert rewrite.searched_query == "what are Sam's tasks"
    # Two people named: "he" is either; no one named: nothing to put in its place.
    two = offline_rewrite(question="what did he say", previous=["what did leo tell maya"], today=TODAY, people=people)
    assert two.kind != "person"
    none = offline_rewrite(question="what did she say", previous=["what is the budget"], today=TODAY, people=people)
    assert none.kind != "person"
