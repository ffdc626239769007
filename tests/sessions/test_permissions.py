"""Only a session's learner (or staff) can read or write it, over the API and the pages."""

from __future__ import annotations

import pytest

from sessions import services
from sessions.models import LearningSession, SessionEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_session(learning_content, user, local_embedder):
    return services.session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder).session


def test_other_users_get_404_and_change_nothing(alice_session, other_user, api_client, client):
    api_client.force_authenticate(other_user)
    sid = alice_session.pk
    before = SessionEvent.objects.filter(session_id=sid).count()
    assert api_client.get(f"/sessions/{sid}").status_code == 404
    assert api_client.post(f"/sessions/{sid}/chat", {"message": "suggest"}, format="json").status_code == 404
    assert api_client.post(f"/sessions/{sid}/chat/stream", {"message": "suggest"}, format="json").status_code == 404
    assert api_client.post(f"/sessions/{sid}/finish", format="json").status_code == 404
    assert api_client.get("/sessions/999999").status_code == 404  # same answer as for a missing one
    assert SessionEvent.objects.filter(session_id=sid).count() == before
    assert LearningSession.objects.get(pk=sid).status == "active"

    client.force_login(other_user)
    for path in (f"/learn/session/{sid}/", f"/learn/session/{sid}/summary/"):
        assert client.get(path).status_code == 404
    assert client.post(f"/learn/session/{sid}/chat", {"message": "hi"}).status_code == 404
    assert client.post(f"/learn/session/{sid}/finish").status_code == 404


def test_services_refuse_other_users_too(alice_session, other_user, local_embedder):
    with pytest.raises(services.SessionForbidden):
        services.session_chat(
            session=alice_session, user=other_user, message="suggest", llm=None, embedder=local_embedder
        )
    with pytest.raises(services.SessionForbidden):
        services.session_finish(session=alice_session, user=other_user, llm=None, embedder=local_embedder)


def test_staff_can_read_and_the_learner_sees_their_session(alice_session, user, staff_user, api_client):
    api_client.force_authenticate(staff_user)
    res = api_client.get(f"/sessions/{alice_session.pk}")
    assert res.status_code == 200 and res.json()["topic"]["slug"] == "js-closures"
    api_client.force_authenticate(user)
    assert api_client.get(f"/sessions/{alice_session.pk}").status_code == 200


def test_anonymous_requests_are_refused(alice_session, api_client, client):
    assert api_client.post("/sessions/start", {"realm": "fantasy"}, format="json").status_code in (401, 403)
    assert api_client.get(f"/sessions/{alice_session.pk}").status_code in (401, 403)
    res = client.get("/learn/")
    assert res.status_code == 302 and res["Location"].startswith("/learn/login/")


def test_token_auth_works(alice_session, user, api_client):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api_client.get(f"/sessions/{alice_session.pk}").status_code == 200
    api_client.credentials(HTTP_AUTHORIZATION="Token wrong")
    assert api_client.get(f"/sessions/{alice_session.pk}").status_code in (401, 403)


def test_session_auth_requires_csrf(alice_session, user):
    from rest_framework.test import APIClient

    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    res = browser.post(f"/sessions/{alice_session.pk}/chat", {"message": "suggest"}, format="json")
    assert res.status_code == 403
