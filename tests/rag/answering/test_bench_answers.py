"""``manage.py bench_answers`` on two small QMSum-shaped meetings written here (real PostgreSQL,
the real local model); and once against a fake OpenAI-compatible server (the test is about the
command running through the openai provider, not about a model's answers)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.rag.answering.fake_openai import FakeOpenAI, use_fake

pytestmark = pytest.mark.django_db(transaction=False)

GARDEN = [
    ("Chair", "Welcome everyone , today we plan the community garden ."),
    ("Anna", "The tomato beds need watering twice a day in July because the soil dries out fast ."),
    ("Ben", "I propose we install drip irrigation on the tomato beds before the summer ."),
    ("Chair", "Agreed , Ben will order the drip irrigation kit and install it in June ."),
]
BUDGET = [
    ("Chair", "Next item is the library budget for the coming year ."),
    ("Dana", "The library wants to spend forty thousand pounds on new laptops for students ."),
    ("Eli", "I think the laptop purchase should wait until the roof repair is paid for ."),
    ("Chair", "We decided to fund the roof repair first and revisit laptops in the autumn ."),
]


def meeting(turns, questions):
    return {
        "topic_list": [{"topic": "main", "relevant_text_span": [["0", str(len(turns) - 1)]]}],
        "general_query_list": [],
        "specific_query_list": [{"query": q, "answer": a, "relevant_text_span": [["0", "3"]]} for q, a in questions],
        "meeting_transcripts": [{"speaker": s, "content": c} for s, c in turns],
    }


@pytest.fixture
def dataset(tmp_path):
    folder = tmp_path / "meetings"
    folder.mkdir()
    (folder / "garden01.json").write_text(json.dumps(meeting(GARDEN, [
        ("How will the tomato beds be watered?",
         "Ben proposed drip irrigation for the tomato beds; he will install it in June."),
    ])))  # fmt: skip
    (folder / "library01.json").write_text(json.dumps(meeting(BUDGET, [
        ("What was decided about the library laptops and the roof repair?",
         "The roof repair is funded first; laptops are revisited in the autumn."),
    ])))  # fmt: skip
    offtopic = tmp_path / "offtopic.txt"
    offtopic.write_text(
        "# unanswerable\nWho won the 1998 FIFA World Cup final?\nWhat is the boiling point of mercury?\n"
    )
    return folder, offtopic


def run(*args) -> dict:
    out = io.StringIO()
    call_command("bench_answers", *args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_bench_answers_reports_every_figure_and_is_idempotent(dataset, local_embedder):
    folder, offtopic = dataset
    report = run("--dataset", str(folder), "--collection", "bench-meetings", "--offtopic", str(offtopic))
    assert report["questions"] == 2 and report["offtopic_questions"] == 2
    assert report["meeting_in_sources"] == 1.0
    assert report["citations_from_meeting"] == 1.0, report
    assert report["refusal_rate"] == 0.0 and report["offtopic_refusal_rate"] == 1.0, report
    assert 0.1 < report["rougeL_f1"] <= 1.0
    assert report["seconds"] > 0
    from rag.models import Chunk

    chunks = Chunk.objects.filter(collection="bench-meetings").count()
    again = run("--dataset", str(folder), "--collection", "bench-meetings", "--offtopic", str(offtopic))
    assert Chunk.objects.filter(collection="bench-meetings").count() == chunks
    assert again["meeting_in_sources"] == report["meeting_in_sources"]


def test_bench_answers_runs_against_an_openai_compatible_server(dataset, local_embedder, settings):
    folder, offtopic = dataset
    reply = "Ben will install drip irrigation on the tomato beds in June [1]."
    analysis = {
        "date_from": None, "date_to": None, "people": [], "tags": [], "entity": None, "domain": None, "counting": False
    }
    with FakeOpenAI(reply=reply, analysis=analysis) as fake:  # a fake server: the test is about the command's plumbing
        use_fake(settings, fake)
        report = run("--dataset", str(folder), "--collection", "bench-meetings", "--offtopic", str(offtopic))
        assert any(r.get("stream") for r in fake.requests)
    assert report["model"] == "default" and report["questions"] == 2
    assert report["refusal_rate"] == 0.0  # the fake always cites [1]
    assert report["rougeL_f1"] > 0


def test_bench_answers_refuses_a_missing_or_empty_folder(tmp_path):
    with pytest.raises(CommandError, match="is not a folder"):
        call_command("bench_answers", "--dataset", str(tmp_path / "nope"))
    with pytest.raises(CommandError, match="No QMSum meeting file"):
        call_command("bench_answers", "--dataset", str(tmp_path))
