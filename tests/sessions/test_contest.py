"""Contesting a test grade: stored for the admin's review queue; accepting it re-scores."""

from __future__ import annotations

import pytest

from feedback.models import GradeContest
from sessions.models import LearningSession, SessionProgress
from sessions.services import grade_contest_review, session_finish, session_start
from tests.sessions.factories import good_answers, play

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(learning_content, user, local_embedder):
    """A finished closures session whose last answer was graded wrong."""
    session = session_start(user=user, realm="fantasy", llm=None, embedder=local_embedder).session
    answers = good_answers(session)
    answers[-1] = "Whenever the engine feels like it"
    play(session, user, answers, embedder=local_embedder)
    session_finish(session=session, user=user, llm=None, embedder=local_embedder)
    session.refresh_from_db()
    assert session.state["test_results"][-1]["passed"] is False
    return session


def test_learner_contests_on_the_summary_page_and_staff_see_it_in_the_admin(finished, user, staff_user, client):
    client.force_login(user)
    page = client.get(f"/learn/session/{finished.pk}/summary/").content.decode()
    assert "Contest this grade" in page and "Missing the key point" in page
    res = client.post(
        f"/learn/session/{finished.pk}/contest",
        {"test": "3", "reason": "The engine decides when, that's what I meant."},
    )
    assert res.status_code == 302
    contest = GradeContest.objects.get(session=finished)
    assert contest.test_index == 3 and contest.status == "open" and contest.learner == user
    assert contest.answer == "Whenever the engine feels like it" and not contest.passed
    page = client.get(f"/learn/session/{finished.pk}/summary/").content.decode()
    assert "is with a reviewer" in page and "Contested: <strong>Open</strong>" in page

    client.force_login(staff_user)
    staff_user.is_superuser = True
    staff_user.save()
    queue = client.get("/admin/feedback/gradecontest/").content.decode()
    assert "Whenever the engine feels like it" in queue and "Open" in queue


def test_accepting_a_contest_regrades_the_answer_and_the_session_score(finished, user, staff_user):
    before = finished.score
    contest = GradeContest.objects.create(
        session=finished, learner=user, test_index=3, question="q", answer="a", expected="e", score=0.1, passed=False
    )
    grade_contest_review(contest=contest, reviewer=staff_user, accept=True, note="fair enough")
    finished.refresh_from_db()
    row = finished.state["test_results"][3]
    assert row["passed"] is True and row["score"] == 1.0 and row["contest"] == "accepted"
    assert finished.score > before
    assert SessionProgress.objects.get(user=user, topic_id=finished.topic_id).best_score == finished.score
    contest.refresh_from_db()
    assert contest.status == "accepted" and contest.reviewed_by == staff_user


def test_admin_actions_decide_open_contests(finished, user, staff_user, client):
    contest = GradeContest.objects.create(
        session=finished, learner=user, test_index=3, question="q", answer="a", expected="e", score=0.1, passed=False
    )
    staff_user.is_superuser = True
    staff_user.save()
    client.force_login(staff_user)
    res = client.post("/admin/feedback/gradecontest/", {"action": "uphold_grades", "_selected_action": [contest.pk]})
    assert res.status_code == 302
    contest.refresh_from_db()
    assert contest.status == "upheld"
    finished.refresh_from_db()
    assert finished.state["test_results"][3]["passed"] is False


def test_contest_api_validates_and_only_the_learner_may_contest(finished, user, other_user, staff_user, api_client):
    url = f"/sessions/{finished.pk}/contest"
    api_client.force_authenticate(other_user)
    assert api_client.post(url, {"test": 4}, format="json").status_code == 404
    api_client.force_authenticate(staff_user)
    assert api_client.post(url, {"test": 4}, format="json").status_code == 404  # staff can read, not contest
    api_client.force_authenticate(user)
    assert api_client.post(url, {"test": 9}, format="json").status_code == 400
    assert api_client.post(url, {"test": 0}, format="json").status_code == 400
    assert api_client.post(url, {"test": 4, "extra": 1}, format="json").status_code == 400
    assert api_client.post(url, {"test": 4, "reason": "x" * 2001}, format="json").status_code == 400
    assert not GradeContest.objects.exists()  # nothing partial
    res = api_client.post(url, {"test": 4, "reason": "it is right"}, format="json")
    assert res.status_code == 201 and res.json()["status"] == "open" and res.json()["test"] == 4
    again = api_client.post(url, {"test": 4, "reason": "really"}, format="json")
    assert again.status_code == 201 and GradeContest.objects.get().reason == "really"
    grade_contest_review(contest=GradeContest.objects.get(), reviewer=staff_user, accept=False)
    closed = api_client.post(url, {"test": 4, "reason": "please"}, format="json")
    assert closed.status_code == 409 and closed.json()["error"] == "contest_closed"


def test_privacy_wording_matches_who_can_find_the_artifact(
    finished, user, other_user, staff_user, client, local_embedder
):
    from rag.acl import Scope
    from rag.search import SearchFilters, chunk_search

    client.force_login(user)
    page = client.get(f"/learn/session/{finished.pk}/summary/").content.decode()
    assert "only you can find it" not in page
    assert "You and the site's staff can find it; other learners can't." in page
    filters = SearchFilters(collections=["user_sessions"])

    def found(who) -> bool:
        hits = chunk_search(
            query="closures legend", scope=Scope.for_user(who), filters=filters, top_k=5, embedder=local_embedder
        ).hits
        return any(h.source_id == str(finished.pk) for h in hits)

    assert found(user) and found(staff_user) and not found(other_user)
    assert LearningSession.objects.get(pk=finished.pk).indexed_at is not None
