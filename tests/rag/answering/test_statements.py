"""What the metadata states before any quote: pure functions over source documents."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from rag.answering.statements import clients_statement, person_statement


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
