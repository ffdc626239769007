"""Generic documents and meeting transcripts: sections, turn-boundary units, QMSum, the payload."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ingestion.sources.documents import (
    parse_document_payload,
    qmsum_to_document,
    text_to_document,
    transcript_to_document,
)
from rag.chunking import split_text
from tests.conftest import shared_data

NOTES = """Quarterly call with the manager.

# Performance
Returns were 4% above benchmark.

## Risks
Currency exposure is rising.

# Next steps
Send the factsheet by Friday.
"""


def test_markdown_text_split_by_headings_with_metadata():
    doc = text_to_document(
        source_id="call-2024-q1", text=NOTES, title="Q1 call", fmt="markdown", date="2024-03-28",
        entity="Alpha Fund", people=["Dana", "Eli", "Dana"], tags=["Quarterly", "risk"],
    )  # fmt: skip
    assert (doc.collection, doc.source_type, doc.source_id) == ("documents", "document", "call-2024-q1")
    assert [u.breadcrumb for u in doc.units] == [
        "Q1 call", "Q1 call > Performance", "Q1 call > Performance > Risks", "Q1 call > Next steps",
    ]  # fmt: skip
    assert doc.units[2].content == "## Risks\nCurrency exposure is rising."
    for unit in doc.units:
        assert unit.date == dt.date(2024, 3, 28)
        assert unit.metadata["entity"] == "Alpha Fund"
        assert unit.metadata["people"] == ["Dana", "Eli"]
        assert unit.metadata["tags"] == ["Quarterly", "risk"]
        assert unit.concepts == ["quarterly", "risk"]
    assert len({u.unit_anchor for u in doc.units}) == 4
    # Editing one section keeps every anchor.
    edited = text_to_document(source_id="x", text=NOTES.replace("4%", "5%"), title="Q1 call", fmt="markdown")
    assert [u.unit_anchor for u in edited.units] == [u.unit_anchor for u in doc.units]


def test_plain_text_is_one_unit_and_bad_input_is_refused():
    doc = text_to_document(source_id="t", text="# not a heading in plain text\nbody", date=dt.date(2024, 1, 1))
    assert [u.unit_anchor for u in doc.units] == ["u_0"]
    assert doc.units[0].content.startswith("# not a heading")
    with pytest.raises(ValueError, match="date"):
        text_to_document(source_id="t", text="x", date="28/03/2024")
    with pytest.raises(ValueError, match="format"):
        text_to_document(source_id="t", text="x", fmt="html")  # type: ignore[arg-type]


def _turns(n: int, length: int = 150) -> list[dict]:
    speakers = ["Ana", "Ben", "Cleo"]
    return [{"speaker": speakers[i % 3], "text": f"Turn {i} " + "word " * ((length - 8) // 5)} for i in range(n)]


def test_transcript_units_end_on_turn_boundaries():
    turns = _turns(30)
    doc = transcript_to_document(source_id="m1", turns=turns, title="Board meeting", date="2024-05-02",
                                 entity="Beta Fund", tags=["board"])  # fmt: skip
    assert doc.source_type == "transcript" and doc.collection == "meetings"
    assert len(doc.units) > 3
    expected_next = 0
    for unit in doc.units:
        start, end = unit.metadata["turn_start"], unit.metadata["turn_end"]
        assert start == expected_next  # no turn skipped or repeated
        expected_next = end + 1
        lines = unit.content.split("\n")
        assert len(lines) == end - start + 1
        for line, turn in zip(lines, turns[start : end + 1], strict=True):
            assert line == f"{turn['speaker']}: {turn['text'].strip()}"
        assert unit.metadata["speakers"] == list(dict.fromkeys(t["speaker"] for t in turns[start : end + 1]))
        assert len(unit.content) <= doc.chunk_size
        assert split_text(unit.content, size=doc.chunk_size, overlap=doc.chunk_overlap) == [unit.content]
        assert unit.date == dt.date(2024, 5, 2) and unit.metadata["entity"] == "Beta Fund"
        assert unit.metadata["people"] == ["Ana", "Ben", "Cleo"]  # defaults to the speakers
        assert unit.breadcrumb == f"Board meeting > turns {start}–{end}"
    assert expected_next == 30
    assert len(doc.units) < 30  # turns were grouped, not one unit each


def test_one_long_turn_is_split_keeping_the_speaker():
    long_text = " ".join(f"Sentence number {i} explains the budget." for i in range(80))
    turns = [{"speaker": "Ana", "text": "Short opener."}, {"speaker": "Ben", "text": long_text},
             {"speaker": "Ana", "text": "Thanks."}]  # fmt: skip
    doc = transcript_to_document(source_id="m2", turns=turns, title="Budget", people=["Ana", "Ben", "Zoe"])
    ben = [u for u in doc.units if u.metadata["turn_start"] == 1]
    assert len(ben) > 1
    assert all(u.content.startswith("Ben: ") and len(u.content) <= doc.chunk_size for u in ben)
    assert "".join(u.content.removeprefix("Ben: ") + " " for u in ben).split() == long_text.split()
    assert len({u.unit_anchor for u in doc.units}) == len(doc.units)
    assert doc.units[0].content == "Ana: Short opener." and doc.units[-1].content == "Ana: Thanks."
    assert doc.units[0].metadata["people"] == ["Ana", "Ben", "Zoe"]


def test_transcript_rejects_malformed_turns():
    with pytest.raises(ValueError, match=r"turns\[1\]"):
        transcript_to_document(source_id="m", title="x", turns=[{"speaker": "A", "text": "hi"}, {"speaker": "B"}])


def test_qmsum_file(tmp_path):
    path = tmp_path / "ES2099a.json"
    path.write_text(json.dumps({
        "topic_list": [{"topic": "Opening", "relevant_text_span": [["0", "1"]]}],
        "general_query_list": [], "specific_query_list": [],
        "meeting_transcripts": [
            {"speaker": "Project Manager", "content": "OK , we 're on {disfmarker} let 's start ."},
            {"speaker": "Marketing", "content": "I do n't mind ."},
            {"speaker": "Project Manager", "content": "Good ."},
        ],
    }))  # fmt: skip
    doc = qmsum_to_document(path, entity="AMI", date="2005-01-01")
    assert doc.source_id == "ES2099a" and doc.units[0].title == "AMI meeting ES2099a"
    unit = doc.units[0]
    assert unit.content.split("\n") == [
        "Project Manager: OK, we're on let's start.", "Marketing: I don't mind.", "Project Manager: Good.",
    ]  # fmt: skip
    assert unit.metadata["topics"] == ["Opening"] and unit.metadata["entity"] == "AMI"
    assert unit.metadata["people"] == ["Project Manager", "Marketing"]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        qmsum_to_document(bad)


def test_real_qmsum_val():
    folder = shared_data("qmsum-val")
    files = sorted(folder.glob("*.json"))
    docs = [qmsum_to_document(p) for p in files]
    units = [u for d in docs for u in d.units]
    print(f"qmsum-val: {len(files)} files, {len(units)} units")
    assert len(docs) == len(files) > 30
    for doc, path in zip(docs, files, strict=True):
        raw = json.loads(path.read_text())
        turns = [t for t in raw["meeting_transcripts"] if t["content"].strip()]
        assert doc.units, doc.source_id
        assert sum(u.content.count("\n") + 1 for u in doc.units if "-" not in u.unit_anchor[2:]) <= len(turns)
        assert all(len(u.content) <= doc.chunk_size for u in doc.units)
        assert "{disfmarker}" not in "".join(u.content for u in doc.units)
    from rag.services import plan_rows

    # Units were sized for the document's chunk size: one chunk row per unit, nothing re-cut.
    assert sum(len(plan_rows(d, {})) for d in docs) == len(units)
    bed = next(d for d in docs if d.source_id == "Bed002")
    assert bed.units[0].title == "ICSI meeting Bed002"
    assert any("Setting up recording equipment" in t for t in bed.units[0].metadata["topics"])


# -- payload ------------------------------------------------------------------------------------
def test_payload_text_and_turns():
    doc = parse_document_payload({
        "id": "fs-42", "title": "Factsheet", "format": "markdown", "text": "# Fees\n0.5% a year.",
        "date": "2024-06-30", "entity": "Gamma", "people": ["Ivy"], "tags": ["fees"],
        "collection": "factsheets", "url": "https://example.org/fs-42",
    })  # fmt: skip
    assert doc.collection == "factsheets" and doc.source_id == "fs-42"
    assert doc.units[0].breadcrumb == "Factsheet > Fees" and doc.units[0].url == "https://example.org/fs-42"
    assert doc.units[0].metadata == {"entity": "Gamma", "people": ["Ivy"], "tags": ["fees"], "section": "Fees"}

    meeting = parse_document_payload({"id": "m-1", "title": "Stand-up", "turns": [
        {"speaker": "Ana", "text": "Done."}, {"speaker": "Ben", "text": "Blocked."}]})  # fmt: skip
    assert meeting.collection == "meetings" and meeting.source_type == "transcript"
    assert meeting.units[0].content == "Ana: Done.\nBen: Blocked."


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"text": "x"}, "id is required"),
        ({"id": "", "text": "x"}, "id is required"),
        ({"id": "a"}, "exactly one of 'text' or 'turns'"),
        ({"id": "a", "text": "x", "turns": []}, "exactly one of 'text' or 'turns'"),
        ({"id": "a", "text": "x", "date": "2024-13-01"}, "date"),
        ({"id": "a", "text": "x", "date": 20240101}, "date"),
        ({"id": "a", "text": "x", "tags": "fees"}, "tags must be a list"),
        ({"id": "a", "text": "x", "people": [1]}, "people must be a list"),
        ({"id": "a", "text": "x", "format": "pdf"}, "format"),
        ({"id": "a", "text": "x", "colour": "red"}, r"unknown field\(s\): colour"),
        ({"id": "a", "text": "x", "visibility": "public"}, r"unknown field\(s\): visibility"),
        ({"id": "a", "text": "   "}, "text is empty"),
        ({"id": "a", "text": 5}, "text must be a string"),
        ({"id": "a", "turns": [{"speaker": "A"}]}, r"turns\[0\]"),
        ({"id": "a", "turns": [{"speaker": "A", "text": "x", "at": 3}]}, r"turns\[0\]"),
        ({"id": "a", "turns": "hello"}, "turns must be a non-empty list"),
        ({"id": "a", "text": "x", "collection": "Bad:Name"}, "collection"),
    ],
)
def test_payload_errors(payload, message):
    with pytest.raises(ValueError, match=message):
        parse_document_payload(payload)
