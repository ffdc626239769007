"""The keyword backends: search tests run once per backend (the test server offers both)."""

from __future__ import annotations

import pytest

from rag import text_search


@pytest.fixture(params=["pg_textsearch", "sql"])
def text_backend(request, settings, db):
    """Switch the schema to one keyword backend for this test (inside the test's transaction, so
    the switch is rolled back with it) and forget the process' cached choice after."""
    settings.KNOWHUB_TEXT_BACKEND = request.param
    text_search.reset()
    backend = text_search.ensure_backend()
    assert backend.name == request.param
    yield request.param
    text_search.reset()


@pytest.fixture
def pg_textsearch(settings):
    """The pg_textsearch backend for this test, and the process' cached choice forgotten after."""
    settings.KNOWHUB_TEXT_BACKEND = "pg_textsearch"
    text_search.reset()
    text_search.ensure_backend()
    yield
    text_search.reset()
