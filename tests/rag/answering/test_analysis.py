"""Query analysis: the deterministic parser, and the LLM analyser's output held to the same shape."""

from __future__ import annotations

import datetime as dt

import pytest

from rag.answering.analysis import analyse_query, match_values, parse_dates, parse_query
from rag.answering.selectors import Facets
from rag.llm import get_llm
from tests.rag.answering.fake_openai import FakeOpenAI, use_fake

TODAY = dt.date(2025, 6, 12)  # a Thursday
D = dt.date


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did I write in the last 6 months", D(2024, 12, 12), TODAY),
        ("meetings in March 2024", D(2024, 3, 1), D(2024, 3, 31)),
        ("anything since Monday?", D(2025, 6, 9), TODAY),
        ("notes from last week", D(2025, 6, 2), D(2025, 6, 8)),
        ("what happened this year", D(2025, 1, 1), TODAY),
        ("what happened last month", D(2025, 5, 1), D(2025, 5, 31)),
        ("trips in March", D(2025, 3, 1), D(2025, 3, 31)),
        ("trips in September", D(2024, 9, 1), D(2024, 9, 30)),  # the most recent September
        ("books I read in 2023", D(2023, 1, 1), D(2023, 12, 31)),
        ("between January 2024 and March 2024", D(2024, 1, 1), D(2024, 3, 31)),
        ("over the past two weeks", D(2025, 5, 29), TODAY),
        ("what did I do yesterday", D(2025, 6, 11), D(2025, 6, 11)),
        ("the meeting on 2024-03-05", D(2024, 3, 5), D(2024, 3, 5)),
        ("anything before 2024-05-01", None, D(2024, 4, 30)),
        ("since March 2025", D(2025, 3, 1), TODAY),
        ("anything from september", D(2024, 9, 1), D(2024, 9, 30)),
        ("from March to May 2025", D(2025, 3, 1), D(2025, 5, 31)),
        # Documents carry a day, not a time: the last hours reach back into yesterday.
        ("what did we decide in the last 24 hours", D(2025, 6, 11), TODAY),
        ("anything in the past 48 hours", D(2025, 6, 10), TODAY),
        ("what changed in the last hour", D(2025, 6, 11), TODAY),
        ("the deploy 3 hours ago", D(2025, 6, 11), TODAY),
        ("the outage 48 hours ago", D(2025, 6, 10), D(2025, 6, 10)),
    ],
)
def test_date_phrases_resolve_relative_to_today(text, start, end):
    got_start, got_end, phrase = parse_dates(text, TODAY)
    assert (got_start, got_end) == (start, end)
    assert phrase


@pytest.mark.parametrize("text", ["may I ask about closures?", "what is a closure", "list 2 examples of promises"])
def test_questions_without_time_get_no_dates(text):
    assert parse_dates(text, TODAY) == (None, None, "")


def test_known_names_match_capitalised_and_by_unambiguous_first_name():
    people = ["Leo Martin", "Will", "Ana"]
    assert match_values("How many times did I meet Leo this year?", people, names=True) == ["Leo Martin"]
    assert match_values("what will Ana say", people, names=True) == ["Ana"]  # "will" is not Will
    assert match_values("dinner with ana and will", people, names=True) == ["Will", "Ana"]  # all lower case
    # A possessive typed without its apostrophe is the name; a longer word that starts with it is not.
    assert match_values("what are leos tasks", people, names=True) == ["Leo Martin"]
    assert match_values("what are anas tasks", people, names=True) == ["Ana"]
    assert match_values("leonardo and anastasia", people, names=True) == []


def test_tags_match_plural_forms_and_whole_words_only():
    assert match_values("dinners at restaurants", ["restaurant", "dinner", "rest"]) == ["restaurant", "dinner"]


FACETS = Facets(
    collections=[],
    domains=[{"value": "javascript", "count": 3}],
    people=[{"value": "Leo", "count": 4}, {"value": "Ana", "count": 2}],
    tags=[{"value": "climbing", "count": 2}],
    entities=[{"value": "Aurora Fund", "count": 1}],
)


def test_parser_turns_a_counting_question_into_filters():
    a = parse_query("How many times did I meet Leo this year?", today=TODAY, facets=FACETS)
    assert (a.people, a.date_from, a.date_to, a.counting, a.source) == (["Leo"], D(2025, 1, 1), TODAY, True, "parser")
    b = parse_query("What did the Aurora Fund managers say about javascript climbing?", today=TODAY, facets=FACETS)
    assert (b.entity, b.domain, b.tags, b.counting) == ("Aurora Fund", "javascript", ["climbing"], False)


def test_what_a_how_many_question_counts_names_no_domain():
    facets = Facets(collections=[], domains=[{"value": "people", "count": 2}], people=[], tags=[], entities=[])
    assert parse_query("how many people joined the pilot", today=TODAY, facets=facets).domain is None
    assert parse_query("what did we discuss in the people domain", today=TODAY, facets=facets).domain == "people"


def test_the_last_meeting_is_the_day_of_the_newest_meeting_the_person_can_see():
    from dataclasses import replace

    facets = replace(FACETS, latest_meeting="2025-05-20")
    a = parse_query("what happened in the last meeting", today=TODAY, facets=facets)
    assert (a.date_from, a.date_to) == (D(2025, 5, 20), D(2025, 5, 20))
    chip = a.chips[0]
    assert (chip.origin, chip.phrase) == ("stated", "the last meeting")
    assert chip.label == "date: 2025-05-20 (from 'the last meeting')"
    # The newest meeting with someone is found by the name, not by the newest of all meetings.
    assert parse_query("when was our last meeting with Leo", today=TODAY, facets=facets).date_from is None
    # A period the question names is that period; nobody's meetings, no date.
    assert parse_query("what did we decide last month", today=TODAY, facets=facets).date_from != D(2025, 5, 20)
    assert parse_query("what happened in the last meeting", today=TODAY, facets=FACETS).date_from is None


@pytest.mark.parametrize(
    ("question", "counting"),
    [
        ("how often did I see Leo", True),
        ("how often have we talked to the Aurora Fund", True),
        ("how often do I meet Leo", True),
        ("how often does Leo join the weekly this year", True),  # a period: what happened in it
        ("how often does the logseq sync run", False),  # a schedule the documents state
        ("How often are backups taken?", False),
        ("how often should we rotate the keys", False),
    ],
)
def test_how_often_counts_what_happened_not_a_schedule(question, counting):
    assert parse_query(question, today=TODAY, facets=FACETS).counting is counting


def test_llm_analysis_has_the_parser_shape_and_drops_invented_values(settings):
    analysis = {
        "date_from": "2025-01-01", "date_to": "2025-06-12", "people": ["leo", "Zorro"], "tags": [],
        "entity": None, "domain": "cobol", "counting": True,
    }  # fmt: skip
    with FakeOpenAI(analysis=analysis) as fake:
        use_fake(settings, fake)
        a = analyse_query("how often did I see Leo this year", today=TODAY, facets=FACETS, llm=get_llm())
        sent = fake.requests[0]
    assert a.source == "llm"
    assert a.people == ["Leo"]  # canonical spelling; "Zorro" is not a known value
    assert a.domain is None  # "cobol" is not a known domain
    assert (a.date_from, a.date_to, a.counting) == (D(2025, 1, 1), TODAY, True)
    assert (a.prompt_tokens, a.completion_tokens) == (120, 30)
    assert a.cost_usd == pytest.approx((120 * 1.0 + 30 * 2.0) / 1e6)
    assert set(a.as_dict()) == set(parse_query("x", today=TODAY, facets=FACETS).as_dict())
    system = sent["messages"][0]["content"]
    assert "2025-06-12" in system and "Leo" in system and "Aurora Fund" in system
    assert sent["response_format"]["type"] == "json_schema"


def test_the_last_meeting_is_read_the_same_when_a_model_analyses_the_question(settings):
    from dataclasses import replace

    analysis = {"date_from": None, "date_to": None, "people": [], "tags": [], "entity": None, "domain": None}
    with FakeOpenAI(analysis=analysis) as fake:
        use_fake(settings, fake)
        facets = replace(FACETS, latest_meeting="2025-05-20")
        a = analyse_query("what happened in the last meeting", today=TODAY, facets=facets, llm=get_llm())
    assert (a.source, a.date_from, a.date_to) == ("llm", D(2025, 5, 20), D(2025, 5, 20))
    assert a.chips[0].label == "date: 2025-05-20 (from 'the last meeting')"


def test_llm_analysis_failure_falls_back_to_the_parser(settings):
    with FakeOpenAI(mode="error") as fake:
        use_fake(settings, fake)
        a = analyse_query("How many times did I meet Leo this year?", today=TODAY, facets=FACETS, llm=get_llm())
    assert a.source == "parser" and a.people == ["Leo"] and a.counting
    assert "llm analysis failed" in a.error


def test_llm_values_not_grounded_in_the_question_are_dropped(settings):
    # What a 135M-parameter model really answered for "What is a closure in JavaScript?".
    analysis = {
        "date_from": "2025-06-12", "date_to": "2025-06-12", "people": ["Ana"], "tags": ["climbing"],
        "entity": "Aurora Fund", "domain": "javascript", "counting": False,
    }  # fmt: skip
    with FakeOpenAI(analysis=analysis) as fake:
        use_fake(settings, fake)
        a = analyse_query("What is a closure in JavaScript?", today=TODAY, facets=FACETS, llm=get_llm())
    assert (a.date_from, a.date_to, a.people, a.tags, a.entity) == (None, None, [], [], None)
    assert a.domain == "javascript"  # this one the question does name
