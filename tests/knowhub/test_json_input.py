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
