"""export_judgments: JSONL lines and a BEIR folder that the evaluation reader accepts.

Corpus embedded with the hashing stand-in: these tests are about file formats.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from feedback.services import feedback_submit
from rag.evaluation import load_dataset

from .conftest import record, uid

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(hashed_corpus, user, staff_user):
    a = record("javascript closures scope", hashed_corpus, user=user)
    feedback_submit(user=user, interaction_id=a.pk, embedder=hashed_corpus, judgments=[
        {"chunk_uid": uid("closures-guide"), "label": "positive", "reason": "the definition"},
        {"chunk_uid": uid("promises"), "label": "negative"},
        {"chunk_uid": uid("closures-guide"), "preferred_over": uid("closures-faq")},
    ])  # fmt: skip
    # the same query again, labelled by a reviewer: merged into one query on export
    b = record("javascript closures scope", hashed_corpus, user=user)
    feedback_submit(
        user=staff_user,
        interaction_id=b.pk,
        embedder=hashed_corpus,
        judgments=[{"chunk_uid": uid("closures-faq"), "label": "positive"}],
    )
    c = record("sourdough bread", hashed_corpus, user=user)
    feedback_submit(
        user=user,
        interaction_id=c.pk,
        embedder=hashed_corpus,
        judgments=[{"chunk_uid": uid("css-grid"), "label": "negative"}],
    )
    return a, b, c


def test_jsonl_export(tmp_path, labelled, capsys):
    call_command("export_judgments", "--format", "jsonl", "--out", str(tmp_path), "--json")
    summary = json.loads(capsys.readouterr().out)
    lines = (tmp_path / "judgments.jsonl").read_text().splitlines()
    assert summary["judgments"] == len(lines) == 5
    rows = [json.loads(line) for line in lines]
    first = next(
        r for r in rows if r["chunk_uid"] == uid("closures-guide") and not r["preferred_over"]
    )
    assert first["query"] == "javascript closures scope" and first["label"] == "positive"
    assert first["reason"] == "the definition" and first["labelled_by"] == "alice"
    assert first["chunk_title"] == "JavaScript closures" and "closure" in first["chunk_content"]
    pair = next(r for r in rows if r["preferred_over"])
    assert (pair["chunk_uid"], pair["preferred_over"]) == (
        uid("closures-guide"),
        uid("closures-faq"),
    )
    assert {r["labelled_by"] for r in rows} == {"alice", "staff"}


def test_qrels_export_is_a_beir_folder(tmp_path, labelled):
    a, b, c = labelled
    call_command(
        "export_judgments", "--format", "qrels", "--out", str(tmp_path), "--corpus", "retrieved"
    )
    tsv = (tmp_path / "qrels" / "test.tsv").read_text().splitlines()
    assert tsv[0] == "query-id\tcorpus-id\tscore"
    rows = {tuple(line.split("\t")) for line in tsv[1:]}
    qa, qc = f"q{a.pk}", f"q{c.pk}"
    assert rows == {
        (qa, uid("closures-guide"), "1"),
        (qa, uid("closures-faq"), "1"),  # merged from the second interaction of the same query
        (qa, uid("promises"), "0"),
        (qc, uid("css-grid"), "0"),
    }
    queries = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text().splitlines()]
    assert queries == [
        {"_id": qa, "text": "javascript closures scope"},
        {"_id": qc, "text": "sourdough bread"},
    ]
    corpus = {
        json.loads(line)["_id"]: json.loads(line)
        for line in (tmp_path / "corpus.jsonl").read_text().splitlines()
    }
    retrieved = {r["chunk_uid"] for i in labelled for r in i.retrieved}
    assert set(corpus) == retrieved | {
        uid("closures-guide"),
        uid("closures-faq"),
        uid("promises"),
        uid("css-grid"),
    }
    assert corpus[uid("css-grid")]["title"] == "CSS grid layout"
    # the evaluation reader sees the positives (queries without one are left out, as BEIR does)
    loaded = load_dataset(tmp_path, "test")
    assert loaded.queries == {qa: "javascript closures scope"}
    assert loaded.qrels == {qa: {uid("closures-guide"): 1, uid("closures-faq"): 1}}


def test_judged_only_corpus(tmp_path, labelled):
    call_command(
        "export_judgments", "--format", "qrels", "--out", str(tmp_path), "--corpus", "judged"
    )
    ids = {json.loads(line)["_id"] for line in (tmp_path / "corpus.jsonl").read_text().splitlines()}
    assert ids == {uid("closures-guide"), uid("closures-faq"), uid("promises"), uid("css-grid")}
