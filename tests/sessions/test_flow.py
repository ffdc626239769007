"""The offline guide end to end through the REST API, and finishing twice."""

from __future__ import annotations

import pytest

from rag.models import Chunk
from sessions.models import LearningSession, SessionEvent, SessionProgress
from tests.sessions.factories import good_answers, poor_answers

pytestmark = pytest.mark.django_db


def _walk(api_client, session_id, answers):
    replies = []
    for answer in answers:
        res = api_client.post(f"/sessions/{session_id}/chat", {"message": answer}, format="json")
        assert res.status_code == 200, res.json()
        replies.append(res.json())
    return replies


def test_offline_session_end_to_end(learning_content, user, api_client):
    api_client.force_authenticate(user)
    res = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json")
    assert res.status_code == 201, res.json()
    body = res.json()
    assert body["resumed"] is False and body["topic"]["slug"] == "js-closures"
    assert body["events"][0]["role"] == "assistant" and "Idea 1 of 5" in body["events"][0]["content"]
    session = LearningSession.objects.get(pk=body["id"])

    replies = _walk(api_client, session.pk, good_answers(session))
    legend_sizes = [len(r["session"]["legend"]) for r in replies]
    assert legend_sizes[:5] == [1, 2, 3, 4, 5]  # the legend builds up as entities are mapped
    phases = [r["session"]["progress"]["phase"] for r in replies]
    assert phases[4] == "rules" and phases[5] == "misconceptions" and phases[-1] == "done"
    test_replies = [r["event"] for r in replies if r["event"]["data"].get("kind") == "test"]
    assert len(test_replies) == 4 and all(r["data"]["result"]["passed"] for r in test_replies)
    assert "Press Finish" in replies[-1]["event"]["content"]
    # Every learner message and every reply is a stored event.
    assert SessionEvent.objects.filter(session=session, role="user").count() == len(replies)
    assert SessionEvent.objects.filter(session=session, role="assistant").count() == len(replies) + 1

    res = api_client.post(f"/sessions/{session.pk}/finish", format="json")
    assert res.status_code == 200, res.json()
    art = res.json()
    assert art["status"] == "finished" and art["already_finished"] is False
    assert art["artifact_source"] == "deterministic" and art["indexed"] is True
    assert [row["entity"] for row in art["legend"]] == [e["name"] for e in session.topic_pack["entities"]]
    own = LearningSession.objects.get(pk=session.pk).state["own_rule"]
    # The learner's own words stand in the artifact: in place of the rule they restate, or beside the rules.
    assert own["text"] in art["rules"] and not any(r.startswith("In my words") for r in art["rules"])
    assert len(art["rules"]) == len(session.topic_pack["truths"]) + (0 if own["matches"] else 1)
    assert any("(the " in rule for rule in art["rules"])
    assert len(art["red_flags"]) == len(session.topic_pack["misconceptions"])
    assert art["legend"][0]["symbol"] in art["script"]
    assert art["score"] > 0.8
    progress = SessionProgress.objects.get(user=user, realm_id="fantasy", topic_id="js-closures")
    assert progress.best_score == pytest.approx(art["score"]) and progress.session_id == session.pk

    # The next start moves on to the next topic.
    res = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json")
    assert res.status_code == 201 and res.json()["topic"]["slug"] == "js-promises"


def test_poor_answers_score_low_and_myths_are_still_flagged(learning_content, user, api_client):
    api_client.force_authenticate(user)
    sid = api_client.post("/sessions/start", {"realm": "kitchen"}, format="json").json()["id"]
    session = LearningSession.objects.get(pk=sid)
    replies = _walk(api_client, sid, poor_answers(session))
    myths = [r["event"]["data"] for r in replies if r["event"]["data"].get("kind") == "misconception"]
    assert myths and not any(m["caught"] for m in myths)
    art = api_client.post(f"/sessions/{sid}/finish", format="json").json()
    assert art["score"] == 0
    assert len(art["legend"]) == 5  # "suggest" still maps every idea
    assert len(art["red_flags"]) == len(session.topic_pack["misconceptions"])


def test_finishing_twice_is_harmless_and_finished_sessions_are_read_only(learning_content, user, api_client):
    api_client.force_authenticate(user)
    sid = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json").json()["id"]
    session = LearningSession.objects.get(pk=sid)
    _walk(api_client, sid, good_answers(session)[:3])  # finish early: two ideas unmapped
    first = api_client.post(f"/sessions/{sid}/finish", format="json").json()
    chunks = list(
        Chunk.objects.filter(collection="user_sessions", source_id=str(sid)).values_list("chunk_uid", "updated_at")
    )
    events = SessionEvent.objects.filter(session_id=sid).count()
    assert chunks and "Still without a symbol" in first["script"]

    second = api_client.post(f"/sessions/{sid}/finish", format="json")
    assert second.status_code == 200
    assert second.json()["already_finished"] is True
    assert second.json()["score"] == first["score"] and second.json()["script"] == first["script"]
    assert list(
        Chunk.objects.filter(collection="user_sessions", source_id=str(sid)).values_list("chunk_uid", "updated_at")
    ) == chunks
    assert SessionEvent.objects.filter(session_id=sid).count() == events
    assert SessionProgress.objects.filter(user=user).count() == 1

    res = api_client.post(f"/sessions/{sid}/chat", {"message": "one more"}, format="json")
    assert res.status_code == 409 and res.json()["error"] == "session_finished"
    res = api_client.post(
        f"/sessions/{sid}/chat/stream", {"message": "one more"}, format="json", HTTP_ACCEPT="text/event-stream"
    )
    assert res.status_code == 409 and b"session_finished" in res.content
    assert SessionEvent.objects.filter(session_id=sid).count() == events


def test_resume_over_the_api(learning_content, user, api_client):
    api_client.force_authenticate(user)
    first = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json").json()
    api_client.post(f"/sessions/{first['id']}/chat", {"message": "suggest"}, format="json")
    again = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json")
    assert again.status_code == 200
    assert again.json()["resumed"] is True and again.json()["id"] == first["id"]
    assert len(again.json()["legend"]) == 1


def test_stream_endpoint_sends_deltas_then_done(learning_content, user, api_client):
    api_client.force_authenticate(user)
    sid = api_client.post("/sessions/start", {"realm": "fantasy"}, format="json").json()["id"]
    res = api_client.post(
        f"/sessions/{sid}/chat/stream", {"message": "suggest"}, format="json", HTTP_ACCEPT="text/event-stream"
    )
    assert res.status_code == 200 and res["Content-Type"] == "text/event-stream"
    body = b"".join(res.streaming_content).decode()
    kinds = [line.split(": ", 1)[1] for line in body.splitlines() if line.startswith("event: ")]
    assert kinds[0] == "delta" and kinds[-1] == "done"
    assert '"legend": [{"entity": "Function"' in body
    assert LearningSession.objects.get(pk=sid).legend[0]["entity"] == "Function"


@pytest.mark.parametrize(
    ("path", "payload", "code"),
    [
        ("/sessions/start", {"realm": "fantasy", "extra": 1}, 400),
        ("/sessions/start", {}, 400),
        ("/sessions/start", {"realm": "atlantis"}, 404),  # no such realm: a name, like any id
        ("/sessions/start", {"realm": "fantasy", "topic": "nope"}, 404),
        ("/sessions/{id}/chat", {"message": ""}, 400),
        ("/sessions/{id}/chat", {"message": "x" * 4001}, 400),
        ("/sessions/{id}/chat", {"msg": "hello"}, 400),
        ("/sessions/{id}/chat", ["hello"], 400),
        ("/sessions/{id}/finish", {"force": True}, 400),
    ],
)
def test_bad_input_is_rejected_and_writes_nothing(learning_content, user, api_client, path, payload, code):
    api_client.force_authenticate(user)
    sid = api_client.post("/sessions/start", {"realm": "kitchen"}, format="json").json()["id"]
    before = (LearningSession.objects.count(), SessionEvent.objects.count())
    res = api_client.post(path.format(id=sid), payload, format="json")
    assert res.status_code == code, res.content
    assert "error" in res.json()
    assert (LearningSession.objects.count(), SessionEvent.objects.count()) == before
    assert LearningSession.objects.get(pk=sid).status == "active"


def test_malformed_json_is_a_400(learning_content, user, api_client):
    api_client.force_authenticate(user)
    res = api_client.post("/sessions/start", "{not json", content_type="application/json")
    assert res.status_code == 400
