"""Threads asked before conversations were stored get a row on migration, so they stay in
their owner's history."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("rag", "0002_term_stats")]
AFTER = [("rag", "0003_conversations")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([*targets, ("feedback", "0002_feedback_loop")]).apps


@pytest.fixture(autouse=True)
def latest_schema_after():
    """The schema every other test expects (later migrations change rag_chunk), once this test
    has gone back in time."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_old_threads_get_a_conversation_row_owned_by_their_first_asker(user, other_user):
    apps = migrate(BEFORE)
    try:
        Interaction = apps.get_model("feedback", "Interaction")
        for who, cid, query in [
            (user.pk, "old-1", "What is a closure?"),
            (user.pk, "old-1", "tell me more"),
            (other_user.pk, "old-1", "someone else reusing the id"),
            (other_user.pk, "old-2", "  How do   promises work?  "),
            (None, "anon", "anonymous ask"),
        ]:
            Interaction.objects.create(kind="ask", user_id=who, query=query, filters={"conversation_id": cid})
        Interaction.objects.create(kind="query", user_id=user.pk, query="a search", filters={})
    finally:
        apps = migrate(AFTER)
    Conversation = apps.get_model("rag", "Conversation")
    rows = {c.pk: (c.user_id, c.title) for c in Conversation.objects.all()}
    assert rows == {"old-1": (user.pk, "What is a closure?"), "old-2": (other_user.pk, "How do promises work?")}
