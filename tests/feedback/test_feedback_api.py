"""POST /rag/feedback and /rag/feedback/click: who may label, idempotency, all-or-nothing validation.

The corpus here is embedded with the hashing stand-in (these tests are about permissions and
writes, not ranking quality); feedback itself embeds the query with the real model.
"""

from __future__ import annotations

import pytest

from feedback.models import ClickEvent, Interaction, Judgment, JudgmentLog

from .conftest import record, uid

pytestmark = pytest.mark.django_db

URL = "/rag/feedback"
CLICK = "/rag/feedback/click"


@pytest.fixture
def interaction(hashed_corpus, user):
    return record("javascript closures scope", hashed_corpus, user=user)


def retrieved_uids(interaction):
    return [r["chunk_uid"] for r in interaction.retrieved]


def test_owner_records_outcome_and_judgments(api_client, user, interaction):
    first, second = retrieved_uids(interaction)[:2]
    api_client.force_authenticate(user)
    response = api_client.post(
        URL,
        {
            "interaction_id": interaction.pk,
            "outcome": -1,
            "comment": "the second result is off topic",
            "judgments": [
                {"chunk_uid": first, "label": "positive", "reason": "explains it"},
                {"chunk_uid": second, "label": "negative"},
                {"chunk_uid": first, "preferred_over": second},
            ],
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["created"], body["updated"], body["outcome"]) == (3, 0, -1)
    interaction.refresh_from_db()
    assert interaction.outcome == -1 and interaction.comment == "the second result is off topic"
    labels = {(j.chunk_uid, j.preferred_over): j.label for j in interaction.judgments.all()}
    assert labels == {
        (first, ""): "positive",
        (second, ""): "negative",
        (first, second): "positive",
    }
    assert all(j.labelled_by_id == user.pk for j in interaction.judgments.all())
    assert (
        interaction.judgments.get(chunk_uid=first, preferred_over="").document_key
        == "fbtest:doc:" + first.split(":")[2]
    )
    # the query was embedded so the label can follow paraphrases
    assert interaction.query_embedding is not None and interaction.query_embedding_model.startswith(
        "local:"
    )


def test_repeating_a_judgment_updates_it_and_keeps_history(api_client, user, interaction):
    chunk = retrieved_uids(interaction)[0]
    api_client.force_authenticate(user)
    payload = {
        "interaction_id": interaction.pk,
        "outcome": 0,
        "judgments": [{"chunk_uid": chunk, "label": "positive"}],
    }
    assert api_client.post(URL, payload, format="json").json()["created"] == 1
    again = api_client.post(URL, payload, format="json").json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 1)
    payload["judgments"][0]["label"] = "negative"
    changed = api_client.post(URL, payload, format="json").json()
    assert (changed["created"], changed["updated"]) == (0, 1)
    assert Judgment.objects.filter(interaction=interaction).count() == 1
    assert Judgment.objects.get(interaction=interaction).label == "negative"
    history = list(
        JudgmentLog.objects.filter(interaction=interaction)
        .order_by("id")
        .values_list("action", "previous_label", "label")
    )
    assert history == [("created", "", "positive"), ("updated", "positive", "negative")]


def test_outcome_zero_with_labels_keeps_an_earlier_thumb(api_client, user, interaction):
    api_client.force_authenticate(user)
    assert (
        api_client.post(
            URL, {"interaction_id": interaction.pk, "outcome": 1}, format="json"
        ).status_code
        == 200
    )
    chunk = retrieved_uids(interaction)[0]
    api_client.post(
        URL,
        {
            "interaction_id": interaction.pk,
            "outcome": 0,
            "judgments": [{"chunk_uid": chunk, "label": "negative"}],
        },
        format="json",
    )
    interaction.refresh_from_db()
    assert interaction.outcome == 1
    api_client.post(URL, {"interaction_id": interaction.pk, "outcome": -1}, format="json")
    interaction.refresh_from_db()
    assert interaction.outcome == -1


def test_a_user_cannot_label_another_users_interaction(api_client, other_user, interaction):
    api_client.force_authenticate(other_user)
    chunk = retrieved_uids(interaction)[0]
    response = api_client.post(
        URL,
        {
            "interaction_id": interaction.pk,
            "outcome": -1,
            "judgments": [{"chunk_uid": chunk, "label": "negative"}],
        },
        format="json",
    )
    assert response.status_code == 403
    assert response.json()["error"] == "permission_denied"
    interaction.refresh_from_db()
    assert interaction.outcome is None and not interaction.judgments.exists()
    click = api_client.post(
        CLICK, {"interaction_id": interaction.pk, "chunk_uid": chunk, "rank": 1}, format="json"
    )
    assert click.status_code == 403 and not ClickEvent.objects.exists()


def test_staff_may_label_any_interaction_and_is_recorded_as_reviewer(
    api_client, staff_user, interaction
):
    api_client.force_authenticate(staff_user)
    chunk = retrieved_uids(interaction)[0]
    response = api_client.post(
        URL,
        {
            "interaction_id": interaction.pk,
            "judgments": [{"chunk_uid": chunk, "label": "negative"}],
        },
        format="json",
    )
    assert response.status_code == 200
    interaction.refresh_from_db()
    assert interaction.reviewed_by == staff_user and interaction.reviewed_at is not None
    assert interaction.judgments.get().labelled_by == staff_user


def test_anonymous_is_refused(api_client, interaction):
    response = api_client.post(URL, {"interaction_id": interaction.pk, "outcome": 1}, format="json")
    assert response.status_code in (401, 403)
    interaction.refresh_from_db()
    assert interaction.outcome is None


@pytest.mark.parametrize(
    "judgment, message",
    [
        ({"chunk_uid": "KNOWN", "label": "maybe"}, "label"),
        ({"chunk_uid": "KNOWN", "preferred_over": "KNOWN"}, "itself"),
        ({"chunk_uid": "KNOWN", "label": "positive", "weight": 3}, "Unknown field"),
    ],
)
def test_bad_judgments_are_400_and_nothing_is_written(
    api_client, user, interaction, judgment, message
):
    good = retrieved_uids(interaction)[0]
    judgment = {k: (good if v == "KNOWN" else v) for k, v in judgment.items()}
    api_client.force_authenticate(user)
    response = api_client.post(
        URL,
        {
            "interaction_id": interaction.pk,
            "outcome": -1,
            "judgments": [
                {"chunk_uid": retrieved_uids(interaction)[1], "label": "negative"},
                judgment,
            ],
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert message in str(response.json())
    interaction.refresh_from_db()
    assert interaction.outcome is None
    assert not Judgment.objects.exists() and not JudgmentLog.objects.exists()


def test_a_chunk_outside_the_results_but_in_the_index_may_be_judged(api_client, user, interaction):
    outside = uid("sourdough")
    assert outside not in retrieved_uids(interaction)
    api_client.force_authenticate(user)
    response = api_client.post(
        URL,
        {
            "interaction_id": interaction.pk,
            "judgments": [{"chunk_uid": outside, "label": "negative"}],
        },
        format="json",
    )
    assert response.status_code == 200
    assert Judgment.objects.get().chunk_uid == outside


def test_unknown_interaction_and_malformed_bodies(api_client, user, interaction):
    api_client.force_authenticate(user)
    assert (
        api_client.post(URL, {"interaction_id": 999999, "outcome": 1}, format="json").status_code
        == 404
    )
    assert api_client.post(URL, {"outcome": 1}, format="json").status_code == 400
    assert (
        api_client.post(
            URL, {"interaction_id": interaction.pk, "outcome": 5}, format="json"
        ).status_code
        == 400
    )
    assert (
        api_client.post(
            URL, {"interaction_id": interaction.pk, "mood": "sad"}, format="json"
        ).status_code
        == 400
    )
    bad_json = api_client.post(URL, "{not json", content_type="application/json")
    assert bad_json.status_code == 400


def test_a_full_interaction_can_be_submitted(api_client, user, hashed_corpus):
    api_client.force_authenticate(user)
    retrieved = [uid("closures-guide"), uid("scope-chain")]
    response = api_client.post(
        URL,
        {
            "interaction": {
                "query": "what is a closure",
                "answer": "A function with its scope.",
                "retrieved": retrieved,
                "selected": retrieved[:1],
                "domain": "javascript",
            },
            "outcome": 1,
            "judgments": [{"chunk_uid": retrieved[0], "label": "positive"}],
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    interaction = Interaction.objects.get(pk=response.json()["interaction_id"])
    assert (
        interaction.user == user and interaction.outcome == 1 and interaction.domain == "javascript"
    )
    assert [r["chunk_uid"] for r in interaction.retrieved] == retrieved
    assert interaction.retrieved[0]["collection"] == "fbtest"
    bad = api_client.post(
        URL,
        {"interaction": {"query": "q", "retrieved": ["fbtest:doc:ghost:main:0"]}, "outcome": 1},
        format="json",
    )
    assert bad.status_code == 404 and bad.json()["error"] == "unknown_chunk"  # like any unknown reference
    assert Interaction.objects.count() == 1


def test_clicks_record_rank_and_mark_the_source_opened(api_client, user, interaction):
    api_client.force_authenticate(user)
    chunk = retrieved_uids(interaction)[2]
    response = api_client.post(
        CLICK, {"interaction_id": interaction.pk, "chunk_uid": chunk, "rank": 3}, format="json"
    )
    assert response.status_code == 201, response.content
    click = ClickEvent.objects.get()
    assert (click.chunk_uid, click.rank, click.user) == (chunk, 3, user)
    interaction.refresh_from_db()
    assert chunk in interaction.selected
    not_shown = api_client.post(
        CLICK,
        {"interaction_id": interaction.pk, "chunk_uid": uid("sourdough"), "rank": 1},
        format="json",
    )
    assert not_shown.status_code == 409 and not_shown.json()["error"] == "not_a_result"
    assert (
        api_client.post(
            CLICK, {"interaction_id": interaction.pk, "chunk_uid": chunk, "rank": 0}, format="json"
        ).status_code
        == 400
    )
    assert ClickEvent.objects.count() == 1


def test_feedback_on_a_chunk_that_was_not_a_result_is_a_409_and_nothing_is_written(api_client, user, interaction):
    """Well-formed (the schema allows any chunk id) but not about this interaction's results."""
    api_client.force_authenticate(user)
    response = api_client.post(URL, {"interaction_id": interaction.pk, "outcome": -1, "judgments": [
        {"chunk_uid": retrieved_uids(interaction)[1], "label": "negative"},
        {"chunk_uid": "fbtest:doc:nope:main:0", "label": "positive"},
    ]}, format="json")  # fmt: skip
    assert response.status_code == 409 and response.json()["error"] == "not_a_result"
    click = api_client.post(CLICK, {"interaction_id": interaction.pk, "chunk_uid": "fbtest:doc:nope:main:0", "rank": 1},
                            format="json")  # fmt: skip
    assert click.status_code == 409 and click.json()["error"] == "not_a_result"
    interaction.refresh_from_db()
    assert interaction.outcome is None
    assert not Judgment.objects.exists() and not ClickEvent.objects.exists()


def test_naming_the_interaction_both_ways_is_refused_by_the_schema_too(api_client, user, interaction):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert schema["components"]["schemas"]["FeedbackInputRequest"]["oneOf"] == [
        {"required": ["interaction_id"]}, {"required": ["interaction"]}
    ]
    api_client.force_authenticate(user)
    response = api_client.post(URL, {"interaction_id": interaction.pk, "interaction": {"query": "q"}}, format="json")
    assert response.status_code == 400
