"""The ask page at ``/``: login required, filters and models from the caller's own facets."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    r = client.get("/")
    assert r.status_code == 302 and r["Location"].startswith("/admin/login/?next=/")


def test_page_offers_the_callers_filters_and_models(client, corpus, user):
    client.force_login(user)
    html = client.get("/").content.decode()
    for needle in ('id="question"', 'id="stop-btn"', 'value="extractive"', 'value="journal"', 'value="Aurora Fund"', 'value="Leo"', 'name="csrf-token"', "/rag/ask/stream"):
        assert needle in html, needle
    assert "secret" not in html and "Mirela" not in html and "Okafor" not in html
