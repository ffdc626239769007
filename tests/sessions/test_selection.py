"""Which topic a session starts on, and resuming the open one."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from sessions import services
from sessions.models import LearningSession, Realm, SessionProgress, Topic
from sessions.selectors import next_topic, realm_topics

pytestmark = pytest.mark.django_db


def _ordered_slugs(realm_slug: str) -> list[str]:
    return list(realm_topics(Realm.objects.get(slug=realm_slug)).values_list("slug", flat=True))


def test_start_picks_the_first_uncompleted_topic_in_order(learning_content, user, local_embedder):
    slugs = _ordered_slugs("fantasy")
    assert slugs[:3] == ["js-closures", "js-promises", "js-event-loop"]
    SessionProgress.objects.create(user=user, realm_id="fantasy", topic_id=slugs[0], best_score=0.9)
    result = services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder)
    assert result.created
    assert result.session.topic_id == slugs[1]
    # Progress is per realm: the same topic is still new in the kitchen.
    assert next_topic(user=user, realm=Realm.objects.get(slug="kitchen")).slug == slugs[0]


def test_start_resumes_the_open_session(learning_content, user, local_embedder):
    first = services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder)
    again = services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder)
    assert not again.created and again.session.pk == first.session.pk
    assert LearningSession.objects.filter(user=user).count() == 1
    # A different realm is a different session.
    other = services.session_start(user=user, realm="kitchen", llm=None, embedder=local_embedder)
    assert other.created and other.session.pk != first.session.pk
    # Asking for another topic while one is open in the realm says which one is open.
    with pytest.raises(services.SessionOpen) as exc:
        services.session_start(user=user, realm="fantasy", topic="sql-joins", llm=None, embedder=local_embedder)
    assert exc.value.extra["session_id"] == first.session.pk


def test_session_snapshots_topic_and_realm(learning_content, user, local_embedder):
    session = services.session_start(user=user, realm="kitchen", llm=None, embedder=local_embedder).session
    Topic.objects.filter(slug=session.topic_id).update(title="renamed later")
    session.refresh_from_db()
    assert session.topic_pack["title"] == "JavaScript closures"
    assert session.realm_snapshot["name"] == "The Restaurant Kitchen"
    assert len(session.topic_pack["entities"]) == 5
    assert session.events.get().role == "assistant"  # the guide's opening


def test_realm_complete_and_explicit_revisit(learning_content, user, local_embedder):
    for slug in _ordered_slugs("fantasy"):
        SessionProgress.objects.create(user=user, realm_id="fantasy", topic_id=slug)
    with pytest.raises(services.RealmComplete):
        services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder)
    revisit = services.session_start(user=user, realm="fantasy", topic="sql-joins", llm=None, embedder=local_embedder)
    assert revisit.created and revisit.session.topic_id == "sql-joins"


def test_unknown_realm_topic_and_realm_restricted_topics(learning_content, user, local_embedder):
    with pytest.raises(services.UnknownRealm):
        services.session_start(user=user, realm="atlantis", llm=None, embedder=local_embedder)
    with pytest.raises(services.UnknownTopic):
        services.session_start(user=user, realm="fantasy", topic="nope", llm=None, embedder=local_embedder)
    kitchen_only = Topic.objects.create(
        slug="knife-skills", title="Knife skills", domain="cooking", order=0,
        entities=[{"name": "Claw grip", "description": "fingertips tucked"}], truths=["t"],
        tests=[{"question": "q", "expected": "e"}],
    )
    kitchen_only.realms.set([Realm.objects.get(slug="kitchen")])
    assert "knife-skills" not in _ordered_slugs("fantasy")
    assert _ordered_slugs("kitchen")[0] == "knife-skills"
    Realm.objects.filter(slug="kitchen").update(is_active=False)
    with pytest.raises(services.UnknownRealm):
        services.session_start(user=user, realm="kitchen", llm=None, embedder=local_embedder)


def test_one_active_session_per_realm_is_enforced_by_the_database(learning_content, user):
    LearningSession.objects.create(user=user, realm_id="fantasy", topic_id="a")
    with pytest.raises(IntegrityError), transaction.atomic():
        LearningSession.objects.create(user=user, realm_id="fantasy", topic_id="b")
    LearningSession.objects.create(user=user, realm_id="fantasy", topic_id="c", status="finished")
