"""The LLM paths: structured artifact extraction with fallback, and the grounded chat voice.

The LLMs here are fakes implementing ``rag.llm.base.LLMProvider``: these tests are about what
knowhub does with a model's output (validate, fall back, keep citations honest), not about a
model's quality, and no model can run offline.
"""

from __future__ import annotations

import json

import pytest

from rag.llm.base import Completion, LLMError, LLMProvider
from rag.services import chunk_upsert
from rag.units import SourceDocument, Unit
from sessions import services
from sessions.artifacts import validate_artifact
from tests.sessions.factories import good_answers, play

pytestmark = pytest.mark.django_db


class FakeLLM:
    """A scripted chat model: ``completion`` is what ``complete`` returns, ``deltas`` what
    ``stream`` yields; ``fail_stream`` raises midway. Records the messages it was sent."""

    name = "fake:scripted"
    generative = True

    def __init__(self, *, completion: str = "", deltas: list[str] | None = None, fail_stream: bool = False):
        self.completion = completion
        self.deltas = deltas or ["Hello ", "learner."]
        self.fail_stream = fail_stream
        self.calls: list[dict] = []

    def complete(self, *, messages, max_tokens=800, temperature=0.2, json_schema=None, timeout=None):
        self.calls.append({"kind": "complete", "messages": messages, "json_schema": json_schema})
        return Completion(text=self.completion, model=self.name, prompt_tokens=100, completion_tokens=50)

    def stream(self, *, messages, max_tokens=800, temperature=0.2, timeout=None):
        self.calls.append({"kind": "stream", "messages": messages})
        for i, delta in enumerate(self.deltas):
            if self.fail_stream and i == 1:
                raise LLMError("connection reset")
            yield delta
        yield Completion(text="".join(self.deltas), model=self.name, prompt_tokens=120, completion_tokens=8)


def test_fake_speaks_the_protocol():
    assert isinstance(FakeLLM(), LLMProvider)


@pytest.fixture
def walked(learning_content, user, local_embedder):
    session = services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder).session
    play(session, user, good_answers(session), embedder=local_embedder)
    return session


@pytest.mark.parametrize(
    "output",
    [
        "Sure! Here is your artifact: legend = …",  # not JSON at all
        json.dumps({"legend": [], "rules": ["r"], "script": "short", "red_flags": [], "score": 2}),  # schema violations
        json.dumps(
            {
                "legend": [{"entity": "Monad", "symbol": "Wizard", "meaning": "m"}],
                "rules": ["a rule"],
                "script": "x" * 40,
                "red_flags": [],
                "score": 0.5,
            }
        ),  # invented entity
    ],
)
def test_invalid_llm_artifact_falls_back_to_the_deterministic_one(walked, user, local_embedder, output):
    llm = FakeLLM(completion=output)
    result = services.session_finish(session=walked, user=user, llm=llm, embedder=local_embedder)
    walked.refresh_from_db()
    assert llm.calls and llm.calls[0]["json_schema"]["required"] == ["legend", "rules", "script", "red_flags", "score"]
    assert walked.artifact_source == "deterministic"
    assert [r["entity"] for r in walked.legend] == [e["name"] for e in walked.topic_pack["entities"]]
    assert walked.score > 0.8 and walked.script.startswith("The story of JavaScript closures")
    assert result.indexed


def test_valid_llm_artifact_is_used_but_the_measured_score_wins(walked, user, local_embedder):
    legend = [{"entity": r["entity"], "symbol": r["symbol"], "meaning": "why it fits"} for r in walked.legend]
    artifact = {
        "legend": legend,
        "rules": ["The Lantern keeps the light of the castle where it was lit."],
        "script": "Once upon a time a lantern was lit in a castle and carried far away, still glowing.",
        "red_flags": ["The lantern does not carry a painting of the light; it carries the light itself."],
        "score": 0.1,
    }
    assert validate_artifact(artifact, topic=walked.topic_pack) == []
    fenced = "```json\n" + json.dumps(artifact) + "\n```"
    services.session_finish(session=walked, user=user, llm=FakeLLM(completion=fenced), embedder=local_embedder)
    walked.refresh_from_db()
    assert walked.artifact_source == "llm"
    assert walked.script == artifact["script"] and walked.rules == artifact["rules"]
    assert walked.score > 0.8  # from the embedding-scored tests, not the model's 0.1


@pytest.fixture
def course_pages(local_embedder):
    """Two course pages: one of the topic's domain (javascript), one of another (sql)."""
    chunk_upsert(
        documents=[
            SourceDocument(
                collection="course_content", source_type="page", source_id="closures-101",
                units=[Unit(unit_anchor="p1", title="Closures in depth", url="/course/js/closures", domain="javascript",
                            content="A closure is a function bundled with references to its surrounding "
                                    "lexical environment. "
                                    "Closures are created every time a function is created.")],
            ),
            SourceDocument(
                collection="course_content", source_type="page", source_id="sql-101",
                units=[
                    Unit(
                        unit_anchor="p1", title="Closures of SQL cursors", domain="sql",
                        content="Closing a SQL cursor releases it.",
                    )
                ],
            ),
        ],
        embedder=local_embedder,
    )  # fmt: skip


def test_llm_guide_is_grounded_in_course_content_and_cites_it(learning_content, course_pages, user, local_embedder):
    session = services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder).session
    llm = FakeLLM(deltas=["A closure bundles a function with its surroundings [1]. ", "Which symbol fits? [7]"])
    events = list(
        services.session_chat_stream(
            session=session, user=user, message="What is a closure exactly?", llm=llm, embedder=local_embedder
        )
    )
    assert [e.type for e in events] == ["delta", "delta", "done"]
    system = llm.calls[0]["messages"][0]["content"]
    assert "[1] Closures in depth" in system and "Closing a SQL cursor" not in system  # only the topic's domain
    assert "Idea 1 of 5: Function" in system  # the structured step the model must voice
    reply = events[-1].data["event"]
    assert reply["content"].startswith("A closure bundles") and "[7]" not in reply["content"]
    assert [c["n"] for c in reply["data"]["citations"]] == [1]  # [7] points at nothing and is dropped
    assert reply["data"]["citations"][0]["url"] == "/course/js/closures"
    assert reply["data"]["guide"] == "llm" and reply["data"]["completion_tokens"] == 8


def test_a_citation_of_no_excerpt_never_reaches_the_learner(
    learning_content, course_pages, user, api_client, monkeypatch
):
    """The model cites [7] and [2, 9] with one excerpt retrieved, split across deltas: the stream,
    the stored reply and its citations only ever show [1]."""
    deltas = ["Closures keep their scope [", "1]. Pick a symbol [7", "] now [2, 9]."]
    monkeypatch.setattr("rag.llm.get_chat_llm", lambda: FakeLLM(deltas=deltas))
    api_client.force_authenticate(user)
    sid = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json").json()["id"]
    res = api_client.post(
        f"/sessions/{sid}/chat/stream",
        {"message": "What is a closure exactly?"},
        format="json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert res.status_code == 200
    body = b"".join(res.streaming_content).decode()
    events = [json.loads(line.removeprefix("data: ")) for line in body.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == ["delta", "delta", "delta", "done"]
    assert (
        "".join(e["text"] for e in events if e["type"] == "delta")
        == "Closures keep their scope [1]. Pick a symbol now."
    )
    assert "[7]" not in body and "[2, 9]" not in body
    reply = events[-1]["event"]
    assert reply["content"] == "Closures keep their scope [1]. Pick a symbol now."
    assert [c["n"] for c in reply["data"]["citations"]] == [1]


def test_llm_failure_midstream_falls_back_to_the_offline_reply(learning_content, user, local_embedder):
    session = services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder).session
    events = list(
        services.session_chat_stream(
            session=session, user=user, message="suggest", llm=FakeLLM(fail_stream=True), embedder=local_embedder
        )
    )
    assert [e.type for e in events] == ["delta", "replace", "done"]
    reply = events[-1].data["event"]
    assert reply["content"].startswith("Legend: Function =")
    assert reply["data"]["guide"] == "offline" and "connection reset" in reply["data"]["llm_error"]
    session.refresh_from_db()
    assert len(session.legend) == 1


def test_non_generative_provider_counts_as_offline(learning_content, user, local_embedder):
    class Extractive(FakeLLM):
        generative = False

    session = services.session_start(user=user, realm="fantasy", llm=Extractive(), embedder=local_embedder).session
    assert session.guide == "offline"
    reply = services.session_chat(
        session=session, user=user, message="suggest", llm=Extractive(), embedder=local_embedder
    ).event
    assert reply["data"]["guide"] == "offline"
