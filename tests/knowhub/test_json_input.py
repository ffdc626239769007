"""Every JSON endpoint refuses strings PostgreSQL cannot store, before anything is written."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url, raw",
    [
        ("/rag/query", b'{"query": "latency\\u0000"}'),
        ("/rag/ask", b'{"question": "what \\udc00 was decided?"}'),
        ("/sessions/start", b'{"topic": "sql-joins", "note\\u0000": 1}'),
    ],
)  # fmt: skip
def test_nul_and_lone_surrogates_are_a_clear_400(api_client, user, url, raw):
    from rag.models import Conversation
    from sessions.models import LearningSession

    api_client.force_authenticate(user)
    response = api_client.post(url, data=raw, content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "parse_error"
    assert "NUL" in body["detail"] or "unpaired surrogate" in body["detail"]
    assert not Conversation.objects.exists() and not LearningSession.objects.exists()


def test_values_of_another_json_type_than_the_schema_says_are_refused(api_client, user, staff_user):
    """DRF would read 0 as the title "0" and as prune=false; the schema says string and boolean."""
    from ingestion.models import IngestRun
    from rag.models import Conversation

    Conversation.objects.create(id="c1", user=user, title="Closures")
    api_client.force_authenticate(user)
    response = api_client.patch("/rag/conversations/c1", {"title": 0}, format="json")
    assert response.status_code == 400 and response.json()["detail"] == {"title": ["Expected a string, not int."]}
    assert Conversation.objects.get(id="c1").title == "Closures"
    api_client.force_authenticate(staff_user)
    response = api_client.post("/rag/reindex", {"prune": 0}, format="json")
    assert response.status_code == 400 and response.json()["detail"] == {"prune": ["Expected a boolean, not int."]}
    assert not IngestRun.objects.exists()
    response = api_client.post("/rag/query", {"query": "closures", "top_k": True}, format="json")
    assert response.status_code == 400 and "top_k" in response.json()["detail"]
