"""Words typed a little wrong: names in lower case or misspelt, and content words the index never
saw. The parser's part needs no database; the asks run on the demo corpus (real PostgreSQL, the
real local model, the offline answerer)."""

from __future__ import annotations

import pytest

from rag.acl import Scope
from rag.answering.analysis import parse_query
from rag.answering.selectors import Facets
from rag.answering.services import ask_collect
from rag.answering.spelling import (
    accented,
    correct_query,
    correction,
    dehyphenated,
    edit_distance,
    english_words,
    hyphenated_pairs,
    is_code,
    letter_left_out,
    pairs_of,
    slip_of_common_word,
    unknown_words,
    unmarked,
    vocabulary_of,
)
from rag.demo import demo_documents
from rag.services import chunk_upsert
from tests.rag.answering.conftest import add_page
from tests.rag.answering.test_scenarios import DEMO_TODAY, pinned_today, users  # noqa: F401 (fixtures)

PEOPLE = Facets(
    collections=[], domains=[], tags=[], entities=[],
    people=[{"value": v, "count": 1} for v in ("Maya Chen", "Sam Okafor", "Leo Martin")],
)  # fmt: skip


def test_edit_distance_counts_a_swap_as_one():
    assert edit_distance("maya", "maia") == 1
    assert edit_distance("mya", "maya") == 1
    assert edit_distance("flashcrds", "flashcards") == 1
    assert edit_distance("loe", "leo") == 1
    assert edit_distance("kitten", "sitting", limit=2) == 3  # beyond the limit


def test_a_misspelt_first_name_the_index_never_saw_is_that_person():
    analysis = parse_query("what did mya say about the logseq sync", today=DEMO_TODAY, facets=PEOPLE,
                           unknown={"mya", "say"})  # fmt: skip
    assert analysis.people == ["Maya Chen"]  # and "say" is not Sam: a changed letter makes another word
    chip = analysis.chips[0]
    assert (chip.value, chip.phrase, chip.origin) == ("Maya Chen", "mya", "guessed")


def test_a_misspelt_whole_name_is_the_person_and_names_them_as_surely_as_capitals():
    analysis = parse_query("how many meetings did maia chen attend", today=DEMO_TODAY, facets=PEOPLE,
                           unknown={"maia", "chen"})  # fmt: skip
    assert [(c.value, c.phrase, c.origin) for c in analysis.chips] == [("Maya Chen", "maia chen", "stated")]


def test_a_word_the_index_holds_is_not_read_as_a_misspelt_name():
    assert parse_query("what did mya say", today=DEMO_TODAY, facets=PEOPLE, unknown=set()).people == []


def test_a_whole_name_in_lower_case_is_stated():
    analysis = parse_query("what did sam okafor say about the notion sync", today=DEMO_TODAY, facets=PEOPLE)
    assert [(c.value, c.origin) for c in analysis.chips] == [("Sam Okafor", "stated")]
    # A first name alone stays a guess: it ranks what carries it and hides nothing.
    assert parse_query("what did sam say", today=DEMO_TODAY, facets=PEOPLE).chips[0].origin == "guessed"


def test_an_unknown_word_is_corrected_to_the_one_nearest_word_of_the_vocabulary():
    vocabulary = {"flashcards", "cards", "work", "review"}
    assert correct_query("how do flashcrds work", unknown={"flashcrds"}, vocabulary=vocabulary) == (
        "how do flashcards work",
        {"flashcrds": "flashcards"},
    )
    # A capitalised name the index never saw is something it does not hold, not a slip.
    assert correct_query("Who founded Zephir Robotics?", unknown={"zephir"}, vocabulary={"zephyr"})[1] == {}
    assert correct_query("who founded zephir robotics", unknown={"zephir"}, vocabulary={"zephyr"})[1] == {
        "zephir": "zephyr"
    }
    assert correction("planed", {"planned", "placed"}) is None  # two equally near: no guess
    assert correction("moons", {"moods"}) is None  # too short to tell a slip from another word


def test_a_slip_no_english_word_spells_is_corrected_even_when_short_or_unknown_to_the_documents():
    english = frozenset({"moons", "moods", "budget", "responsible", "release", "releases", "same"})
    # Four or five letters that spell no English word, a letter left out: a slip, not a subject.
    assert letter_left_out("budgt", {"budget", "budgets"}, english) == "budget"
    assert letter_left_out("pilt", {"pilot", "pill"}, english) == "pilot"
    assert letter_left_out("moons", {"mooons"}, english) is None  # an English word
    assert letter_left_out("saml", {"same", "sample"}, english) is None  # a letter changed: maybe an acronym
    assert letter_left_out("plt", {"plot"}, english) is None  # three letters are too few to tell
    assert correct_query("what is the budgt", unknown={"budgt"}, vocabulary={"budget"}, english=english)[0] == (
        "what is the budget"
    )
    # A word no document holds in any spelling is corrected toward English itself.
    assert correct_query(
        "who is responsibel for releases", unknown={"responsibel"}, vocabulary={"release", "checklist"},
        english=english,
    ) == ("who is responsible for releases", {"responsibel": "responsible"})  # fmt: skip
    # A word that is English is spelt as meant, whatever the documents hold.
    assert correct_query("any moons", unknown={"moons"}, vocabulary={"moods"}, english=english)[1] == {}


def test_english_words_come_with_the_local_model():
    words = english_words()
    assert {"budget", "responsible", "release"} <= words
    assert not {"budgt", "responsibel", "pgvector"} & words


def test_letters_typed_in_another_order_are_a_slip_two_edits_apart():
    assert correction("ableine", {"abilene", "able"}) == "abilene"
    assert correction("ableine", {"abilene", "ablaine"}) == "ablaine"  # one edit is nearer still
    assert correction("ableine", {"abiline"}) is None  # two edits that change the letters: no guess


def test_two_words_typed_without_their_space_are_split():
    vocabulary = {"user", "datagram", "protocol", "packet", "switching", "sunder", "land"}
    assert correct_query("What does UserDatagram Protocol guarantee", unknown={"userdatagram"}, vocabulary=vocabulary)[
        1
    ] == {"UserDatagram": "User Datagram"}
    assert correct_query("what is packetswitching", unknown={"packetswitching"}, vocabulary=vocabulary)[0] == (
        "what is packet switching"
    )
    # A capitalised name with no capital inside it is one word the index does not hold.
    assert correct_query("Where is Sunderland?", unknown={"sunderland"}, vocabulary=vocabulary)[1] == {}
    # The documents write the two words side by side, or the word is one English writes whole
    # ("outcome", "deadline"), whatever two shorter words spell it.
    pairs = pairs_of(["The Packet switching page.", "Over the User Datagram Protocol."])
    assert correct_query("what is packetswitching", unknown={"packetswitching"}, vocabulary=vocabulary, pairs=pairs)[
        1
    ] == {"packetswitching": "packet switching"}
    words = {"out", "come", "dead", "line", "proposal", "review"}
    pairs = pairs_of(["Find out. Come back to the line that is dead.", "The proposal review"])
    for typed in ("what was the outcome of the review", "what is the proposal deadline"):
        assert correct_query(typed, unknown={"outcome", "deadline"}, vocabulary=words, pairs=pairs)[1] == {}


def test_a_word_the_documents_hold_in_another_form_is_no_slip():
    vocabulary = {"complaints", "memos", "old"}
    assert correct_query("who complained about old memos", unknown={"complained"}, vocabulary=vocabulary)[1] == {}
    # A slip is still one: "complants" is no form of "complaints".
    assert correct_query("any complants about memos", unknown={"complants"}, vocabulary=vocabulary)[1] == {
        "complants": "complaints"
    }


def test_two_words_the_documents_write_as_one_are_joined():
    vocabulary = {"gunpowder", "destroyed", "power", "data", "database"}
    # "powder" is no word of the documents; without the join it would become "power".
    assert correct_query("How much gun powder was destroyed?", unknown={"powder"}, vocabulary=vocabulary) == (
        "How much gunpowder was destroyed?",
        {"gun powder": "gunpowder"},
    )
    assert correct_query("what is a data-base", unknown={"base"}, vocabulary=vocabulary)[0] == "what is a database"
    # Both words known: each means itself, nothing is joined.
    assert correct_query("what is a data base", unknown=set(), vocabulary=vocabulary)[1] == {}


def test_a_word_typed_without_its_hyphen_is_the_documents_word():
    vocabulary = vocabulary_of(["On-call runbook: a second on-call engineer", "Real-time and real-time-ish sync"])
    assert {"on-call", "real-time", "real-time-ish", "runbook"} <= vocabulary
    assert dehyphenated("oncall", vocabulary) == "on-call"
    assert dehyphenated("Realtime", vocabulary) == "Real-time"
    assert dehyphenated("runbook", vocabulary) is None  # written whole: no hyphen to add
    assert dehyphenated("engineer", vocabulary) is None
    assert dehyphenated("email", {"e-mail", "em-ail"}) is None  # two ways: no guess between them
    # "on" is too short a half for ``unglued``: the hyphenated word is what the documents write.
    assert correct_query("who is oncall", unknown={"oncall"}, vocabulary=vocabulary) == (
        "who is on-call",
        {"oncall": "on-call"},
    )


def test_a_word_typed_without_its_accents_is_the_documents_word():
    assert unmarked("Śródmieście") == "srodmiescie"
    assert unmarked("Łódź") == "lodz"
    vocabulary = {"fort", "beauséjour", "kraków", "warsaw", "katyń", "liège", "liege", "résumé", "resumé"}
    assert accented("Beausejour", vocabulary) == "Beauséjour"
    assert accented("krakow", vocabulary) == "kraków"
    assert accented("KATYN", vocabulary) == "KATYŃ"
    assert accented("Liege", vocabulary) is None  # the documents also write it as typed
    assert accented("resume", vocabulary) is None  # "résumé" or "resumé": no guess between the two
    assert accented("Warsaw", vocabulary) is None  # no accent to add
    assert accented("Cracow", vocabulary) is None  # another spelling is no accent left out
    # A capitalised name is never corrected to a near word, but the same name with its accents
    # is that name.
    assert correct_query("Who captured Fort Beausejour?", unknown={"beausejour"}, vocabulary=vocabulary) == (
        "Who captured Fort Beauséjour?",
        {"Beausejour": "Beauséjour"},
    )
    assert correct_query("Who captured Fort Beausejoux?", unknown={"beausejoux"}, vocabulary=vocabulary)[1] == {}


def test_a_slip_of_a_question_word_is_no_subject():
    for typed in ("wat", "waht", "teh", "hwo", "becuase"):
        assert slip_of_common_word(typed), typed
    for word in ("cat", "goes", "redis", "what", "sync"):
        assert not slip_of_common_word(word), word


# -- through the ask, on the demo corpus ----------------------------------------------------------


@pytest.fixture
def demo(users, local_embedder, db):  # noqa: F811
    assert not chunk_upsert(documents=demo_documents(DEMO_TODAY), embedder=local_embedder).errors
    return users


def ask(user, query):
    return ask_collect(user=user, scope=Scope.for_user(user), query=query, today=DEMO_TODAY, log=False)


@pytest.mark.django_db
def test_unknown_words_are_those_no_visible_document_holds(demo):
    scope = Scope.for_user(demo["member"])
    assert unknown_words({"flashcrds", "notion", "sync", "the"}, scope=scope) == {"flashcrds"}
    # "latency" is only in a restricted meeting: to an outsider it is a word no document holds.
    assert "latency" in unknown_words({"latency"}, scope=Scope.for_user(demo["outsider"]))


@pytest.mark.django_db
def test_two_words_typed_apart_that_the_visible_documents_hyphenate_are_that_word(demo):
    member, outsider = Scope.for_user(demo["member"]), Scope.for_user(demo["outsider"])
    assert hyphenated_pairs("who is on call this week", scope=member) == {"on call": "on-call"}
    assert hyphenated_pairs("what is the call stack", scope=member) == {}
    # "acknowledged-late" is written only in a runbook the outsider may not see.
    assert hyphenated_pairs("are tasks acknowledged late", scope=member) == {"acknowledged late": "acknowledged-late"}
    assert hyphenated_pairs("are tasks acknowledged late", scope=outsider) == {}
    # The runbook writes "rate-limits", the weekly meeting "rate limits": typed apart, as a
    # document writes it, it stays apart (and still finds the meeting).
    assert hyphenated_pairs("anything about rate limits", scope=member) == {}
    body = ask(demo["member"], "who is on call")
    assert body["searched_query"] == "who is on-call", body["searched_query"]
    assert "call stack" not in body["answer"], body["answer"]


@pytest.mark.django_db
def test_a_lower_case_name_also_ranks_what_mentions_the_person(demo):
    body = ask(demo["member"], "what did leo ask for")
    # Sam reports what Leo asked for: that line is the answer, before any line Leo spoke himself.
    assert body["answer"].startswith("Sam Okafor: “Leo Martin asked for a monthly report of unanswered questions.”"), (
        body["answer"]
    )


@pytest.mark.django_db
def test_a_misspelt_name_is_searched_as_the_index_spells_it(demo):
    body = ask(demo["member"], "what did mya say about the logseq sync")
    assert "Maya" in body["searched_query"]
    assert "fifteen minutes" in body["answer"], body["answer"]


@pytest.mark.django_db
def test_a_possessive_typed_without_its_apostrophe_is_searched_as_the_name_s(demo):
    body = ask(demo["member"], "what are sams tasks")
    assert body["searched_query"] == "what are Sam's tasks", body["searched_query"]


@pytest.mark.django_db
def test_a_misspelt_word_is_searched_as_the_nearest_word_of_the_documents_found(demo):
    body = ask(demo["member"], "what happens to notoin pages that were deleted")
    assert "notion" in body["searched_query"].split(), body["searched_query"]
    assert "soft-deletes" in body["answer"], body["answer"]


@pytest.mark.django_db
def test_words_of_a_person_not_visible_are_not_replaced_by_someone_elses(demo):
    # The outsider sees Sam Okafor in a public meeting but not his words on the Notion sync: the
    # public Notion page is not what he said, and the name is not lifted to quote it.
    body = ask(demo["outsider"], "what did sam okafor say about the notion sync")
    assert not body["citations"], body["answer"]
    person = next(c for c in body["analysis_filters"] if c["field"] == "people")
    assert not person.get("widened"), person


@pytest.mark.django_db
def test_a_name_typed_without_its_accents_finds_what_the_documents_say(demo, local_embedder):
    add_page(
        local_embedder, collection="handbook", source_id="offsite-2026", title="Team offsite 2026", content=(
            "The team offsite takes place in Kraków from 14 to 16 October. "
            "The workshops are held at the Hotel Wawel; the dinner is at Café Szafé on the first evening."
        ),
    )  # fmt: skip
    body = ask(demo["member"], "where is the offsite dinner in Krakow")
    assert "Kraków" in body["searched_query"], body["searched_query"]
    assert "Café Szafé" in body["answer"], body["answer"]
    # The sources do mention it, as they write it: no "Nothing you can see mentions Krakow".
    assert "Nothing you can see" not in body["answer"], body["answer"]



def test_a_slip_of_the_word_a_question_opens_with_is_that_word():
    assert correct_query("waht is hnsw", unknown={"waht"}, vocabulary={"hnsw"}) == ("what is hnsw", {"waht": "what"})
    assert correct_query("Whta is HNSW", unknown={"whta"}, vocabulary=set())[0] == "What is HNSW"
    # Inside the question a word a letter from "could" is a subject the sources lack, not a slip.
    assert correct_query("is cold storage supported", unknown={"cold"}, vocabulary=set())[1] == {}


def test_an_acronym_the_documents_never_write_is_the_words_they_write_it_for():
    from rag.answering.spelling import acronyms_of

    texts = ["Reciprocal rank fusion is available as an alternative.", "Search is hybrid."]
    acronyms = acronyms_of(texts, {"rrf"})
    assert acronyms == {"rrf": {"reciprocal rank fusion"}}
    assert correct_query("what is rrf", unknown={"rrf"}, vocabulary=set(), acronyms=acronyms)[0] == (
        "what is reciprocal rank fusion"
    )
    assert correct_query("What is RRF?", unknown={"rrf"}, vocabulary=set(), acronyms=acronyms)[0] == (
        "What is reciprocal rank fusion?"
    )
    # A capitalised word of a mixed-case question is a name, not an acronym typed in lower case.
    assert correct_query("Who is Rrf?", unknown={"rrf"}, vocabulary=set(), acronyms=acronyms)[1] == {}
    # Initials across a clause's end, or two runs spelling it: no expansion.
    assert acronyms_of(["Rank. Fusion rules"], {"rfr"}) == {}
    two = acronyms_of(["red fox runs", "rare fish rot"], {"rfr"})
    assert correct_query("what is rfr", unknown={"rfr"}, vocabulary=set(), acronyms=two)[1] == {}


def test_a_word_the_documents_write_only_longer_is_that_word():
    from rag.answering.spelling import abbreviation

    vocabulary = {"northwind", "fund", "introduction", "photograph", "photosynthesis", "connecting", "connected"}
    assert abbreviation("intro", vocabulary) == "introduction"
    assert abbreviation("photo", vocabulary) is None  # two families: no guess
    assert abbreviation("fun", vocabulary) is None  # too short to stand for anything
    assert correct_query("summarize the northwind intro", unknown={"intro"}, vocabulary=vocabulary)[0] == (
        "summarize the northwind introduction"
    )
    # A slip of a word written only in longer forms: the shortest of its family, without the
    # ending when the typed word has none.
    assert correct_query("how do i conect notion", unknown={"conect"}, vocabulary=vocabulary)[0] == (
        "how do i connect notion"
    )
    assert correct_query("how do i conected notion", unknown={"conected"}, vocabulary=vocabulary)[0] == (
        "how do i connected notion"
    )


@pytest.mark.parametrize("word", ["p99", "gpt4", "s3", "x86", "mp3", "p99th"])
def test_names_of_letters_and_digits_are_codes(word):
    assert is_code(word)


@pytest.mark.parametrize("word", ["24h", "10k", "1m", "2027", "latency", "on-call", "p"])
def test_numbers_with_units_and_plain_words_are_no_codes(word):
    assert not is_code(word)
