"""Fixtures for learning sessions: the shipped content, an offline LLM setting, a scripted learner."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def offline_llm(monkeypatch):
    """Pin the sessions to the offline guide, whatever the machine's LLM settings are.

    Tests about the LLM paths pass an explicit ``llm=`` to the services instead.
    """
    monkeypatch.setattr("rag.llm.get_chat_llm", lambda *a, **k: None)


@pytest.fixture
def learning_content(db):
    """The shipped realms and topics (the data migration loads them too, but transactional tests
    flush tables, so every test that needs them asks for them)."""
    from sessions.services import learning_content_import

    learning_content_import()
