"""``manage.py ask`` streams to the terminal; ``bench_ask`` prints its figures."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from feedback.models import Interaction

pytestmark = pytest.mark.django_db


class Chunks(io.StringIO):
    """A stdout that remembers each write: streaming means many writes before the end."""

    def __init__(self):
        super().__init__()
        self.writes: list[str] = []

    def write(self, s):
        self.writes.append(s)
        return super().write(s)


def test_ask_streams_the_answer_then_sources_and_costs(corpus):
    out, err = Chunks(), io.StringIO()
    call_command("ask", "What states can a promise be in?", "--all-projects", stdout=out, stderr=err)
    text = out.getvalue()
    assert "pending" in text.split("Sources")[0]
    assert "Sources" in text and "*[" in text and "Promises" in text
    # Words a person reads, not internal names (issue 10, point 8).
    assert "quotes from the sources" in text and "new search" in text and "free (local)" in text
    assert "NEW_QUERY" not in text and "$0.00000" not in text
    assert len([w for w in out.writes if w.strip()]) > 4  # sentence by sentence, not one block
    assert "searching" in err.getvalue() and "generating" in err.getvalue()
    assert Interaction.objects.filter(query="What states can a promise be in?", user=None).exists()


def test_ask_json_matches_the_api_shape(corpus):
    out = io.StringIO()
    call_command("ask", "What did Aurora Fund return?", "--json", "--all-projects", stdout=out)
    body = json.loads(out.getvalue())
    assert body["error"] is None and "4.2 percent" in body["answer"]
    assert body["filters"]["entity"] == "Aurora Fund" and body["citations"][0]["url"] == "https://meetings.example/m1"
    assert body["interaction_id"]


def test_ask_as_a_user_respects_the_acl(corpus, user):
    out = io.StringIO()
    call_command("ask", "Who founded Zephyr Robotics?", "--json", "--user", user.username, stdout=out)
    assert "Mirela" not in out.getvalue()
    out = io.StringIO()
    call_command("ask", "Who founded Zephyr Robotics?", "--json", "--user", "insider", stdout=out)
    assert "Mirela Voss" in json.loads(out.getvalue())["answer"]


def test_ask_without_user_does_not_answer_as_an_all_seeing_operator(corpus):
    """Issue 26: without --user the CLI answered from every project, restricted and private
    documents included. Now it asks whose view to answer from."""
    out = io.StringIO()
    with pytest.raises(CommandError, match="--user USERNAME.*--all-projects"):
        call_command("ask", "Who founded Zephyr Robotics?", "--json", stdout=out)
    assert "Mirela" not in out.getvalue()
    assert not Interaction.objects.exists()
    with pytest.raises(CommandError, match="not both"):
        call_command("ask", "Who founded Zephyr Robotics?", "--user", "insider", "--all-projects")
    call_command("ask", "Who founded Zephyr Robotics?", "--json", "--all-projects", stdout=out)
    assert "Mirela Voss" in json.loads(out.getvalue())["answer"]


def test_ask_refuses_bad_input_with_a_message(corpus):
    with pytest.raises(CommandError, match="empty"):
        call_command("ask", "  ", "--all-projects")
    with pytest.raises(CommandError, match="Unknown collection"):
        call_command("ask", "closures", "--collection", "nope", "--all-projects")
    with pytest.raises(CommandError, match="YYYY-MM-DD"):
        call_command("ask", "closures", "--from", "yesterday-ish", "--all-projects")
    with pytest.raises(CommandError, match="model"):
        call_command("ask", "closures", "--model", "gpt-9-ultra", "--all-projects")
    assert not Interaction.objects.exists()


def test_bench_ask_prints_latency_percentiles_and_citation_accuracy(corpus, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("# comment\nWhat is a closure?\nWhat did Aurora Fund return?\n")
    out = io.StringIO()
    call_command("bench_ask", "--questions", str(questions), "-n", "3", "--citations", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["asks"] == 3
    for key in ("ttfb_ms", "first_text_ms", "total_ms"):
        assert report[key]["n"] == 3 and 0 < report[key]["p50"] <= report[key]["p95"]
    assert report["ttfb_ms"]["p50"] <= report["total_ms"]["p50"]
    acc = report["citation_accuracy"]
    assert acc["questions"] == 2 and acc["citations"] >= 2 and acc["accuracy"] == 1.0
    assert not Interaction.objects.exists()  # benchmarks do not pollute the interaction log
