"""The ask page at ``/``: login required, filters and models from the caller's own facets."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    r = client.get("/")
    assert r.status_code == 302 and r["Location"].startswith("/login/?next=/")


def test_page_offers_the_callers_filters_and_models(client, corpus, user):
    client.force_login(user)
    html = client.get("/").content.decode()
    for needle in (
        'id="question"', 'id="stop-btn"', 'value="extractive"', 'value="journal"', 'value="Aurora Fund"', 'value="Leo"',
        'name="csrf-token"', "rag/ask.js", 'id="filters-count"', 'id="clear-filters"',
    ):
        assert needle in html, needle
    # The page's script is a static file (no inline script under the Content-Security-Policy).
    assert "/rag/ask/stream" in Path(finders.find("rag/ask.js")).read_text()
    assert "secret" not in html and "Mirela" not in html and "Okafor" not in html


def test_a_regular_user_signs_in_on_the_site_login_and_lands_on_the_ask_page(client, django_user_model):
    django_user_model.objects.create_user(username="reader", password="pw-reader-123")
    response = client.post("/login/?next=/", {"username": "reader", "password": "pw-reader-123", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    page = client.get("/")
    assert page.status_code == 200 and "reader" in page.content.decode()
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302
