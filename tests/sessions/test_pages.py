"""The learner pages with the Django test client (the no-JavaScript path)."""

from __future__ import annotations

import pytest

from sessions.models import LearningSession, SessionProgress
from tests.sessions.factories import good_answers

pytestmark = pytest.mark.django_db


def test_learner_signs_in_on_the_learn_login_page(learning_content, user, client):
    res = client.post("/learn/login/", {"username": "alice", "password": "pw-alice-123", "next": "/learn/"})
    assert res.status_code == 302 and res["Location"] == "/learn/"
    assert "The Fantasy Kingdom" in client.get("/learn/").content.decode()
    client.logout()
    bad = client.post("/learn/login/", {"username": "alice", "password": "nope"})
    assert bad.status_code == 200 and "Wrong username or password" in bad.content.decode()


def test_home_start_chat_finish_summary_history(learning_content, user, client):
    client.force_login(user)
    home = client.get("/learn/").content.decode()
    assert "The Fantasy Kingdom" in home and "The Restaurant Kitchen" in home
    assert "0 / 6" in home and "Start: JavaScript closures" in home

    res = client.post("/learn/fantasy/start")
    session = LearningSession.objects.get(user=user)
    assert res.status_code == 302 and res["Location"] == f"/learn/session/{session.pk}/"
    page = client.get(res["Location"]).content.decode()
    assert "Idea 1 of 5: Function" in page and 'id="composer"' in page and "Map an idea to see it here." in page
    assert "Resume: JavaScript closures" in client.get("/learn/").content.decode()

    for answer in good_answers(session)[:2]:
        assert client.post(f"/learn/session/{session.pk}/chat", {"message": answer}).status_code == 302
    page = client.get(f"/learn/session/{session.pk}/").content.decode()
    session.refresh_from_db()
    for row in session.legend:
        assert f'<td class="sym">{row["symbol"]}</td><td>{row["entity"]}</td>' in page

    # error message, nothing stored
    assert client.post(f"/learn/session/{session.pk}/chat", {"message": ""}).status_code == 302
    res = client.post(f"/learn/session/{session.pk}/finish")
    assert res["Location"] == f"/learn/session/{session.pk}/summary/"
    summary = client.get(res["Location"]).content.decode()
    assert "Saved to your searchable notes" in summary and "Red flags" in summary and "Script" in summary
    assert client.get(f"/learn/session/{session.pk}/")["Location"] == f"/learn/session/{session.pk}/summary/"

    assert SessionProgress.objects.filter(user=user, topic_id="js-closures").exists()
    home = client.get("/learn/").content.decode()
    assert "1 / 6" in home and "Start: JavaScript promises and async/await" in home
    history = client.get("/learn/history/").content.decode()
    assert f"/learn/session/{session.pk}/summary/" in history and "JavaScript closures" in history


def test_completed_realm_offers_revisits(learning_content, user, client):
    client.force_login(user)
    from sessions.models import Realm
    from sessions.selectors import realm_topics

    for topic in realm_topics(Realm.objects.get(slug="kitchen")):
        SessionProgress.objects.create(user=user, realm_id="kitchen", topic_id=topic.slug, best_score=0.5)
    res = client.post("/learn/kitchen/start", follow=True)
    assert "You have completed every topic" in res.content.decode()
    res = client.post("/learn/kitchen/start", {"topic": "sql-joins"})
    assert LearningSession.objects.get(user=user, realm_id="kitchen").topic_id == "sql-joins"
