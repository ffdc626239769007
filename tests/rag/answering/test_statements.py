"""What the metadata states before any quote: pure functions over source documents."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from rag.answering.selectors import CountedEntry
from rag.answering.statements import (
    COUNTED_LISTED,
    clients_statement,
    counted_statement,
    mention_listing,
    period_listing,
    period_listing_asked,
    period_statement,
    person_statement,
)


def doc(n: int, title: str, date: dt.date | None = None, **metadata) -> SimpleNamespace:
    """A source document as the statements read it: its number, best hit and hits' metadata."""
    hit = SimpleNamespace(title=title, source_id=f"doc-{n}", date=date, metadata=metadata)
    return SimpleNamespace(n=n, best=hit, hits=[hit])


ENTITIES = [{"value": "Acme Capital", "count": 2}, {"value": "Northwind Fund", "count": 1}]


def test_the_clients_are_listed_with_their_counts_and_cited_where_a_source_is_about_them():
    docs = [doc(1, "Acme Capital pilot review", entity="Acme Capital"), doc(2, "Release checklist")]
    assert clients_statement("clients", ENTITIES, docs) == (
        "The sources you can see name 2 clients: **Acme Capital** (2 documents) [1] and **Northwind Fund** "
        "(1 document), according to their metadata."
    )
    # No source about any of them: an uncited list is no answer from the sources.
    assert clients_statement("clients", ENTITIES, [doc(2, "Release checklist")]) == ""
    assert clients_statement("customers", ENTITIES[:1], docs).startswith("The sources you can see name 1 customer:")


def test_where_a_person_took_part_is_read_newest_first_from_the_documents_listing_them():
    docs = [
        doc(1, "Acme Capital pilot review", dt.date(2026, 9, 9), people=["Sam Okafor", "Maya Chen"]),
        doc(2, "1:1 with Leo", dt.date(2026, 11, 20), people=["Leo Martin", "Maya Chen"]),
        doc(3, "Platform weekly", dt.date(2026, 11, 14), people=["Sam Okafor"]),
    ]
    assert person_statement("Sam Okafor", docs) == (
        "Sam Okafor took part in **Platform weekly** (2026-11-14) [3] and **Acme Capital pilot review** "
        "(2026-09-09) [1], according to their metadata."
    )
    assert person_statement("Priya Raman", docs) == ""


def counted(title: str, date: dt.date | None = None) -> CountedEntry:
    return CountedEntry(key=("meetings", "demo", title), title=title, date=date)


def source(n: int, entry: CountedEntry) -> SimpleNamespace:
    collection, source_type, source_id = entry.key
    best = SimpleNamespace(collection=collection, source_type=source_type, source_id=source_id)
    return SimpleNamespace(n=n, best=best)


def test_the_documents_a_count_counted_are_named_in_date_order_and_cited_where_they_are_sources():
    kickoff, review = counted("Acme Capital kickoff", dt.date(2026, 8, 1)), counted("Acme Capital pilot review")
    assert counted_statement([kickoff, review], [source(2, kickoff), source(1, review)]) == (
        "They are **Acme Capital kickoff** (2026-08-01) [2] and **Acme Capital pilot review** [1]."
    )
    # One of them is not among the sources: named, uncited.
    assert counted_statement([kickoff, review], [source(1, review)]) == (
        "They are **Acme Capital kickoff** (2026-08-01) and **Acme Capital pilot review** [1]."
    )
    assert counted_statement([kickoff], [source(1, kickoff)]) == "It is **Acme Capital kickoff** (2026-08-01) [1]."
    journal = counted("Journal 2026-11-03", dt.date(2026, 11, 3))
    assert counted_statement([journal], [source(4, journal)]) == "It is **Journal 2026-11-03** [4]."
    # None among the sources: the names would cite nothing.
    assert counted_statement([kickoff], [source(1, review)]) == ""


def test_past_a_handful_of_counted_documents_the_latest_are_named():
    entries = [counted(f"Weekly {i}", dt.date(2026, 1, 1) + dt.timedelta(weeks=i)) for i in range(COUNTED_LISTED + 3)]
    statement = counted_statement(entries, [source(1, entries[-1])])
    assert statement.startswith(f"The latest {COUNTED_LISTED}: **Weekly 3**")
    assert statement.endswith(f"**Weekly {COUNTED_LISTED + 2}** ({entries[-1].date.isoformat()}) [1].")
    assert "**Weekly 2**" not in statement


def test_which_questions_ask_what_the_meetings_or_the_documents_of_a_period_were():
    # The period is taken out before: "what was discussed in november" arrives as its first words.
    for question in (
        "what was discussed", "what did we talk about", "What did we discuss?", "what happened",
        "which meetings did we have", "so what was covered in the meetings", "list the meetings",
    ):
        assert period_listing(question) == "meeting", question
    for question in ("meetings", "any meetings", "our meetings?", "meetings we had"):
        assert period_listing(question) == "meeting", question  # "meetings in the last 2 weeks"
    for question in ("how many meetings did we have", "how many meetings", "how many times did we meet"):
        assert period_listing(question) == "meeting", question  # "how many meetings in november"
    for question in ("anything", "any docs", "all the notes"):
        assert period_listing(question) == "document", question  # "anything from september"
    for question in ("what's new", "whats new", "anything new?", "what changed", "what was added"):
        assert period_listing(question) == "document", question
    for question in (
        "what was discussed about the budget", "what did we decide", "what happened to the sync",
        "what's new in pgvector", "meetings about acme", "anything about acme",
        "how many meetings did we have with acme", "how many times did we meet leo",
    ):
        assert period_listing(question) == "", question


def test_which_questions_count_the_documents_that_name_a_subject():
    assert mention_listing("how many meetings mention the pilot") == ("meeting", "pilot")
    assert mention_listing("how many meetings did we have about the budget?") == ("meeting", "budget")
    assert mention_listing("how many times did we talk about notion") == ("meeting", "notion")
    assert mention_listing("how many times have we discussed the release checklist") == ("meeting", "release checklist")
    assert mention_listing("how many pages are about closures") == ("document", "closures")
    assert mention_listing("how many notes mention pgvector") == ("document", "pgvector")
    for question in (
        "how many meetings did we have", "how many docs do we have", "how many times did we meet acme",
        "how many meetings did we have with acme", "how many analysts joined the pilot",
    ):
        assert mention_listing(question) is None, question


def test_the_meetings_of_a_period_are_named_with_the_period_or_the_latest_when_it_held_none():
    weekly, one = counted("Platform weekly", dt.date(2026, 11, 20)), counted("1:1 with Leo", dt.date(2026, 11, 26))
    period = " in november (between 2026-11-01 and 2026-11-30)"
    assert period_statement([weekly, one], [source(1, weekly), source(2, one)], period) == (
        "2 meetings in november (between 2026-11-01 and 2026-11-30): **Platform weekly** (2026-11-20) [1] and "
        "**1:1 with Leo** (2026-11-26) [2], according to their metadata."
    )
    assert period_statement([one], [source(1, one)], "", latest=True) == (
        "The latest meeting: **1:1 with Leo** (2026-11-26) [1], according to its metadata."
    )
    assert period_statement([one], [source(1, one)], " this week", noun="document") == (
        "A document this week: **1:1 with Leo** (2026-11-26) [1], according to its metadata."
    )
    assert period_statement([one], [source(1, weekly)], period) == ""
    assert period_statement([one], [source(1, one)], " this week", counting=True) == (
        "**1** meeting this week: **1:1 with Leo** (2026-11-26) [1], according to its metadata."
    )
    # Their text names the subject, not their metadata.
    both = [source(1, weekly), source(2, one)]
    assert period_statement([weekly, one], both, "", counting=True, mentioning="sync") == (
        "**2** meetings mention “sync”: **Platform weekly** (2026-11-20) [1] and **1:1 with Leo** (2026-11-26) [2]."
    )


def test_an_earlier_question_on_a_periods_meetings_is_known_with_its_period_in_it():
    today = dt.date(2026, 11, 29)
    assert period_listing_asked("what was discussed in november", today) == "meeting"
    assert period_listing_asked("what did we talk about last week", today) == "meeting"
    assert period_listing_asked("what's new this week", today) == "document"
    assert period_listing_asked("what was discussed", today) == ""  # no period: no listing
    assert period_listing_asked("what did we decide in november", today) == ""
