"""Stored conversations: the ask pipeline files turns under the caller's conversation, and the
API lists, reads, renames and deletes only the caller's own (everything else is a 404)."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token

from feedback.models import Interaction
from rag.models import Conversation

pytestmark = pytest.mark.django_db(transaction=False)

ASK = "/rag/ask"
LIST = "/rag/conversations"


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def patch(client, url, body):
    return client.patch(url, data=json.dumps(body), content_type="application/json")


@pytest.fixture
def alice(client, user):
    client.force_login(user)
    return client


def test_a_conversation_is_listed_read_renamed_and_deleted(alice, corpus, user):
    first = post(alice, ASK, {"query": "What is a closure in JavaScript?"}).json()
    cid = first["conversation_id"]
    second = post(alice, ASK, {"query": "tell me more", "conversation_id": cid}).json()
    assert second["conversation_id"] == cid
    other = post(alice, ASK, {"query": "How do list comprehensions work in Python?"}).json()
    assert other["conversation_id"] != cid

    listed = alice.get(LIST).json()
    assert [c["id"] for c in listed] == [other["conversation_id"], cid]  # newest first
    assert listed[1]["title"] == "What is a closure in JavaScript?" and listed[1]["turns"] == 2

    thread = alice.get(f"{LIST}/{cid}").json()
    assert [t["question"] for t in thread["turns"]] == ["What is a closure in JavaScript?", "tell me more"]
    t0 = thread["turns"][0]
    assert t0["answer"] == first["answer"] and t0["strategy"] == "NEW_QUERY"
    assert [(c["n"], c["chunk_uid"]) for c in t0["citations"]] == [(c["n"], c["chunk_uid"]) for c in first["citations"]]
    assert [(s["n"], s["chunk_uid"]) for s in t0["sources"]] == [(s["n"], s["chunk_uid"]) for s in first["sources"]]
    assert t0["sources"][0]["title"] and t0["sources"][0]["content"]

    renamed = patch(alice, f"{LIST}/{cid}", {"title": "  Closures,   explained "})
    assert renamed.status_code == 200 and renamed.json()["title"] == "Closures, explained"
    assert alice.get(f"{LIST}/{cid}").json()["title"] == "Closures, explained"
    assert [c["id"] for c in alice.get(LIST).json()] == [other["conversation_id"], cid]  # a rename does not reorder

    assert patch(alice, f"{LIST}/{cid}", {"title": "   "}).status_code == 400
    assert patch(alice, f"{LIST}/{cid}", {"title": "x" * 201}).status_code == 400
    assert patch(alice, f"{LIST}/{cid}", {"name": "typo"}).status_code == 400
    assert alice.get(f"{LIST}/{cid}").json()["title"] == "Closures, explained"  # nothing partial

    assert alice.delete(f"{LIST}/{cid}").status_code == 204
    assert alice.get(f"{LIST}/{cid}").status_code == 404
    assert [c["id"] for c in alice.get(LIST).json()] == [other["conversation_id"]]
    # The interactions stay for the feedback loop; continuing the deleted id starts a new thread.
    assert Interaction.objects.filter(filters__conversation_id=cid).count() == 2
    again = post(alice, ASK, {"query": "tell me more", "conversation_id": cid}).json()
    assert again["conversation_id"] != cid and again["strategy"] == "NEW_QUERY"


def test_another_users_conversation_is_404_and_cannot_be_joined(alice, corpus, user, other_user, client):
    cid = post(alice, ASK, {"query": "What is a closure in JavaScript?"}).json()["conversation_id"]
    client.force_login(other_user)
    assert client.get(f"{LIST}/{cid}").status_code == 404
    assert patch(client, f"{LIST}/{cid}", {"title": "mine now"}).status_code == 404
    assert client.delete(f"{LIST}/{cid}").status_code == 404
    assert client.get(LIST).json() == []
    theirs = post(client, ASK, {"query": "tell me more", "conversation_id": cid}).json()
    assert theirs["conversation_id"] != cid and theirs["strategy"] == "NEW_QUERY"
    row = Conversation.objects.get(pk=cid)
    assert row.user == user and row.title == "What is a closure in JavaScript?" and row.deleted_at is None
    assert Interaction.objects.filter(filters__conversation_id=cid).count() == 1


def test_token_auth_and_anonymous_callers(api_client, corpus, user):
    token = Token.objects.create(user=user)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    r = api_client.post(ASK, {"query": "What is a promise?"}, format="json")
    cid = r.json()["conversation_id"]
    assert [c["id"] for c in api_client.get(LIST).json()] == [cid]
    assert api_client.get(f"{LIST}/{cid}").json()["turns"][0]["question"] == "What is a promise?"
    assert api_client.get(f"{LIST}?limit=0").status_code == 400
    api_client.credentials()
    assert api_client.get(LIST).status_code in (401, 403)
    assert api_client.get(f"{LIST}/{cid}").status_code in (401, 403)


def test_reused_sources_are_checked_again_against_what_the_user_may_see_now(client, corpus):
    insider = corpus["insider"]
    client.force_login(insider)
    first = post(client, ASK, {"query": "What is Project Nightingale?"}).json()
    secret = [s for s in first["sources"] if s["collection"] == "secret"]
    assert secret, first["sources"]
    cid = first["conversation_id"]
    corpus["project"].members.remove(insider)  # no longer on the deal team

    more = post(client, ASK, {"query": "tell me more", "conversation_id": cid}).json()
    assert not [s for s in more["sources"] if s["collection"] == "secret"]
    assert "Zephyr" not in (more["answer"] or "") and "Mirela" not in (more["answer"] or "")
    # Reading the thread back hides the restricted source of the first turn too.
    thread = client.get(f"{LIST}/{cid}").json()
    assert all(s["collection"] != "secret" for t in thread["turns"] for s in t["sources"])
    assert all(c["chunk_uid"] != secret[0]["chunk_uid"] for t in thread["turns"] for c in t["citations"])


def test_turns_keep_the_analysis_fields_when_the_pipeline_gives_them(alice, corpus, user, monkeypatch):
    """The page shows chips and "Searched for" from stored turns; this stores them from whatever
    the pipeline reports (constructed here: the analysis that produces them is another change)."""
    from rag.answering import services

    chips = [
        {
            "field": "tags", "value": "climbing", "origin": "guessed", "phrase": "climbing", "effect": "boost",
            "label": "tag: climbing",
        }
    ]
    extra = {"analysis_filters": chips, "searched_query": "climbing with Leo"}
    for name in ("_sources_payload", "_done_payload"):  # both events may carry the fields
        real = getattr(services, name)
        monkeypatch.setattr(services, name, lambda run, real=real: {**real(run), **extra})
    body = post(alice, ASK, {"query": "Who did I go climbing with?"}).json()
    turn = alice.get(f"{LIST}/{body['conversation_id']}").json()["turns"][0]
    assert turn["analysis_filters"] == chips and turn["searched_query"] == "climbing with Leo"


def test_conversation_endpoints_are_in_the_openapi_schema(alice):
    schema = alice.get("/api/schema/?format=json").json()
    assert {"get"} <= set(schema["paths"]["/rag/conversations"])
    assert {"get", "patch", "delete"} <= set(schema["paths"]["/rag/conversations/{conversation_id}"])
    assert "get" in schema["paths"]["/rag/documents/{chunk_uid}"]
