"""Checks the answerer makes on written documents only (``rag.llm.prose``)."""

from __future__ import annotations

from rag.llm.candidates import Sentence
from rag.llm.context import ContextSource
from rag.llm.prose import (
    answers_otherwise,
    asks_when,
    dated_lead,
    dated_sources,
    expected_form_missing,
    has_expected_form,
    names_the_title,
    naming_sources,
    negation_unmet,
    unmentioned_names,
)


def test_a_name_the_sources_never_mention_is_reported():
    text = "Mount Etna in Sicily is active. Küçükdeveci worked for Swedex."
    assert unmentioned_names("Which volcano in Iceland erupted?", text) == ["Iceland"]
    assert unmentioned_names("Which volcano in Sicily is active?", text) == []
    # a sentence's first word, accents and a name spelt a little differently are not "missing"
    assert unmentioned_names("Where did Kucukdeveci work?", text) == []
    assert unmentioned_names("Sicily has which volcano?", text) == []
    # misspelt within its first letters ("Kucokdeveci"), still the same name; another name is not
    assert unmentioned_names("Where did Kucokdeveci work?", text) == []
    assert unmentioned_names("Where did Kowalski work?", text) == ["Kowalski"]
    # two letters swapped, as fingers that outran each other type initials ("TEFU" for "TFEU")
    treaty = "Under TFEU article 30 no quantitative restrictions may be placed on trade."
    assert unmentioned_names("Which TEFU article bans quantitative restrictions?", treaty) == []
    assert unmentioned_names("Which TEUF article bans quantitative restrictions?", treaty) == []
    assert unmentioned_names("Which EFTU article bans quantitative restrictions?", treaty) == ["EFTU"]


def test_a_figure_of_the_question_the_sources_never_say_is_reported():
    text = "The Łazienki Park covers the area of 76 ha. The British campaigns of 1755 failed."
    assert unmentioned_names("What park covers an area of 74 ha?", text) == ["74"]
    assert unmentioned_names("What park covers an area of 76 ha?", text) == []
    # after a year, two digits are the next years with their century left out
    assert unmentioned_names("Why did British campaigns fail in 1755, 56, 57?", text) == []
    # a span of years written with a dash holds both ends
    council = "In the years 1994–1999 the mayor of the district Centrum was the President."
    assert unmentioned_names("Who was President between 1994 and 1999?", council) == []
    assert unmentioned_names("Who was President between 1994 and 2001?", council) == ["2001"]


def test_a_hyphenated_name_is_the_name_written_apart():
    text = "Like Maududi, Al Banna believed in gradual persuasion."
    assert unmentioned_names("What did Al-Banna believe?", text) == []
    assert unmentioned_names("What did Al-Qaeda believe?", text) == ["Al-Qaeda"]


def test_an_acronym_of_a_name_the_sources_spell_out_is_mentioned():
    text = "After World War II the city was rebuilt. The European Coal and Steel Community pooled coal."
    assert unmentioned_names("What was rebuilt after WWII?", text) == []
    assert unmentioned_names("What did the ECSC pool?", text) == []
    assert unmentioned_names("What did the EEC pool?", text) == ["EEC"]
    # Only a word in capitals is read as initials: "Ww" is a name like any other.
    assert unmentioned_names("What did Ecsc pool?", text) == ["Ecsc"]


def test_two_names_the_sources_write_as_one_word_are_mentioned():
    text = "AppleTalk let local networks form without a router."
    assert unmentioned_names("What were features of Apple Talk", text) == []
    assert unmentioned_names("What were features of Apple Share", text) == ["Share"]


def test_a_letter_unicode_does_not_decompose_folds_to_its_plain_letter():
    text = "The Maria Skłodowska-Curie Institute of Oncology has 700 beds. Søren Kierkegaard wrote."
    assert unmentioned_names("How many beds does the Maria Sklodowska-Curie Institute have?", text) == []
    assert unmentioned_names("What did Soren Kierkegaard write?", text) == []


def test_when_and_how_many_want_a_date_and_a_number():
    assert expected_form_missing("When did the crisis begin?", ["The crisis began after the embargo."])
    assert not expected_form_missing("When did the crisis begin?", ["The crisis began in October 1973."])
    # a time of day or of the week is an answer to "when" too (handbooks and timetables)
    assert not expected_form_missing("When is the bicycle cellar locked?", ["It is locked at nine in the evening."])
    assert not expected_form_missing("when do the boats leave", ["The first ferry leaves at 7:30."])
    assert not expected_form_missing("When are backups run?", ["Backups run every Sunday."])
    assert expected_form_missing("How many analysts joined?", ["Analysts joined the pilot."])
    assert not expected_form_missing("How many analysts joined?", ["Five analysts joined the pilot."])
    assert not expected_form_missing("Who joined?", ["Analysts joined the pilot."])


def test_when_is_asked_the_ways_people_type_it():
    assert asks_when("whens the next release")  # "when's", its apostrophe left out
    assert asks_when("what is the review date for the pilot")
    assert asks_when("whats the date of the kickoff")
    assert asks_when("what was the deadline for the proposal")
    assert not asks_when("what is the date format of journals")  # a date's form, not a time
    assert not asks_when("what is the update on the pilot")
    assert not asks_when("whenever the sync fails who is told")


def _sentence(text: str) -> Sentence:
    page = ContextSource(n=1, title="Shipyards of the north", text=text)
    return Sentence(source=page, position=0, text=text)


def test_when_is_answered_by_the_event_a_rule_waits_for():
    rule = ["The new rota applies as soon as the board signs it."]
    assert not expected_form_missing("When does the new rota apply?", rule)
    assert expected_form_missing("When does the new rota apply?", ["The new rota applies to every team."])


def test_where_wants_a_place():
    assert has_expected_form("Where did the fleet winter?", "The fleet wintered along the Tagus, near Lisbon.")
    assert not has_expected_form("Where did the fleet winter?", "The fleet wintered badly that year.")


def test_how_long_wants_a_span_of_time_not_any_number():
    assert has_expected_form("How long did the strike last?", "The strike was over in six weeks.")
    assert has_expected_form("how long does a full sync take", "A full sync takes about 40 minutes.")
    assert not has_expected_form("How long did the strike last?", "The strike began in 1984 at 20 pits.")


def test_a_name_that_says_what_kind_of_thing_is_asked_need_not_be_quoted():
    quoted = [_sentence("Brill and Hoek had joint ventures with Ostrava and Velden, respectively.")]
    assert not answers_otherwise("Brill and Hoek partnered with which Dutch shipping firm?", quoted)
    # a name the question is about, not the kind of answer it wants, must still be said
    assert answers_otherwise("Which shipping firm did Brill sell to Maersk?", quoted)


def test_a_sentence_holding_the_asked_form_is_told_apart():
    assert has_expected_form("When did the crisis begin?", "The crisis began in October 1973.")
    assert not has_expected_form("When did the crisis begin?", "The crisis began after the embargo.")
    assert has_expected_form("How many analysts joined?", "Five analysts joined the pilot.")
    assert has_expected_form("Who signed the treaty?", "The treaty was signed by Nixon.")
    assert not has_expected_form("Who signed the treaty?", "The treaty was signed by the envoy.")
    assert not has_expected_form("What does the treaty say?", "The treaty was signed in 1973.")


def test_how_often_wants_a_frequency():
    assert has_expected_form("how often does the sync run", "Decision: move the Logseq sync to every fifteen minutes.")
    assert has_expected_form("how often does the notion sync run", "The nightly Notion sync hit rate limits twice.")
    assert has_expected_form("How often are keys rotated?", "Keys are rotated twice a year.")
    assert not has_expected_form("how often does the sync run", "Run manage.py sync_markdown PATH to index a graph.")
    assert expected_form_missing("how often does the sync run", ["The sync indexes the graph."])
    assert not expected_form_missing("how often does the sync run", ["The sync runs hourly."])


def test_when_quoted_from_a_dated_source_that_says_no_time_gives_its_date():
    lines = ["Analysts used the pilot 340 times.", "Two complaints: old memos ranked above recent ones."]
    review = ContextSource(n=2, title="Acme Capital pilot review", text="", date="2026-09-09")
    lead = dated_lead("when is the acme review", lines, [review])
    assert lead == "“Acme Capital pilot review” is dated 2026-09-09 [2]."
    # No "when", no date, or a quoted time of its own: nothing to add.
    assert not dated_lead("what did acme say", lines, [review])
    assert not dated_lead("when is the acme review", lines, [ContextSource(n=1, title="Acme review", text="")])
    assert not dated_lead("when is the review", ["The review is in October."], [review])
    # The date of a page that only mentions the subject is not the subject's date.
    one_on_one = ContextSource(n=1, title="1:1 with Leo", text="", date="2026-11-20")
    assert not dated_lead("when is the next release", lines, [one_on_one])


def test_when_we_last_met_is_the_date_of_the_latest_meeting_the_question_names():
    kickoff = ContextSource(n=1, title="Acme Capital kickoff", text="", date="2026-07-26")
    review = ContextSource(n=2, title="Acme Capital pilot review", text="", date="2026-09-09")
    other = ContextSource(n=3, title="Northwind Fund introduction", text="", date="2026-10-15")
    sources = [kickoff, review, other]
    assert dated_sources("when did we last meet acme", sources) == [review]
    assert dated_sources("when was our first meeting with acme capital", sources) == [kickoff]
    assert dated_sources("when did we meet acme", sources) == [kickoff, review]
    # A meeting's lines name times of other things ("the 2019 memos"), never the meeting's date.
    memos = ["We agreed to start with the 2019 to 2024 memos."]
    assert dated_lead("when did we meet acme", memos, sources, spoken=True) == (
        "“Acme Capital kickoff” is dated 2026-07-26 [1]. “Acme Capital pilot review” is dated 2026-09-09 [2]."
    )
    assert not dated_lead("when did we meet acme", memos, sources)


def test_when_was_that_is_the_date_of_the_one_dated_source():
    weekly = ContextSource(n=1, title="Platform weekly", text="", date="2026-11-14")
    page = ContextSource(n=2, title="Syncing a Logseq graph", text="")
    assert dated_sources("when was that", [weekly, page]) == [weekly]
    # Two dated sources and nothing named: neither is "that".
    review = ContextSource(n=3, title="Acme Capital pilot review", text="", date="2026-09-09")
    assert dated_sources("when was that", [weekly, review]) == []


def test_the_sources_naming_the_question_s_names_are_told_apart():
    course = ContextSource(n=1, title="Call stack, task queue and microtasks", text="The same task runs to completion.")
    one_on_one = ContextSource(n=2, title="1:1 with Leo", text="Leo Martin: I will hand the release checklist to Sam.")
    weekly = ContextSource(n=3, title="Platform weekly", text="Sam Okafor: The sync hit rate limits twice.")
    sources = [course, one_on_one, weekly]
    # "same" is not Sam; the possessive is the name.
    assert naming_sources("what are Sam's tasks", sources) == {2, 3}
    assert naming_sources("what are the tasks", sources) is None  # the question names no one
    assert naming_sources("what did Priya say", sources) is None  # no source names her
    assert naming_sources("what did Leo say to Sam", sources) == {2}


def test_a_negated_question_wants_a_sentence_that_negates():
    assert negation_unmet("Who did not sign the treaty?", ["Nixon signed the treaty."])
    assert negation_unmet("What wasn't in Loudoun's plans?", ["Loudoun planned three expeditions."])
    assert not negation_unmet("Who did not sign the treaty?", ["Norway did not sign the treaty."])
    assert not negation_unmet("Who signed the treaty?", ["Nixon signed the treaty."])


def test_a_name_spelt_like_the_title_names_the_title():
    assert names_the_title("Warszowa", "Warsaw")
    assert not names_the_title("Warwick", "Warsaw")  # another name that begins alike
    assert not names_the_title("Canada", "United States")
