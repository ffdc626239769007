"""Personal data: keyed pseudonyms (re-keyable), forgetting a user, PII left out of exports.

Chunks are embedded with the hashing stand-in: these tests are about who can see and what is
kept, not about ranking.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command

from feedback.models import ClickEvent, Interaction, Judgment
from ingestion.models import IngestedDocument
from rag.acl import Scope, legacy_user_hash, user_hash
from rag.models import Chunk, ChunkHistory, TermStat
from rag.search import SearchFilters, chunk_search
from rag.services import chunk_upsert
from rag.units import SourceDocument, Unit

pytestmark = pytest.mark.django_db


def private_doc(source_id: str, owner: str, text: str, *, pii_level: int = 2) -> SourceDocument:
    return SourceDocument(
        collection="user_sessions", source_type="session", source_id=source_id, visibility="private",
        owner_hash=owner, author_hash=owner, pii_level=pii_level,
        units=[Unit(unit_anchor="artifact", title=f"Reflection {source_id}", content=text)],
    )  # fmt: skip


def public_doc(source_id: str, text: str) -> SourceDocument:
    return SourceDocument(
        collection="course_content", source_type="page", source_id=source_id,
        units=[Unit(unit_anchor="main", title=f"Page {source_id}", content=text)],
    )  # fmt: skip


def visible_uids(user, embedder, query: str = "closures memory palace") -> set[str]:
    result = chunk_search(
        query=query, scope=Scope.for_user(user), filters=SearchFilters(), top_k=20,
        query_vector=embedder.embed_query(query), embedder=embedder,
    )  # fmt: skip
    return {h.chunk_uid for h in result.hits}


def test_user_hash_is_keyed_and_not_the_constant_salt_sha256(user, settings):
    constant_salt = hashlib.sha256(f"knowhub:{user.pk}".encode()).hexdigest()
    assert user_hash(user.pk) != constant_salt
    before = user_hash(user.pk)
    settings.KNOWHUB_USER_HASH_KEY = "another-secret-key"
    assert user_hash(user.pk) != before  # keyed: who lacks the key cannot recompute it
    settings.KNOWHUB_USER_HASH_KEY = ""
    settings.SECRET_KEY = "a-different-secret-key-" + "x" * 40
    assert user_hash(user.pk) != before  # default key derived from SECRET_KEY


def test_rekey_replaces_constant_salt_hashes_and_the_owner_still_sees_their_chunks(
    user, other_user, hashing_embedder, capsys
):
    legacy = legacy_user_hash(user.pk)
    assert legacy == hashlib.sha256(f"knowhub:{user.pk}".encode()).hexdigest()
    chunk_upsert(documents=[
        private_doc("1", legacy, "my closures memory palace reflection"),
        public_doc("p", "closures memory palace for everyone"),
    ], embedder=hashing_embedder)  # fmt: skip
    IngestedDocument.objects.create(
        collection="notes", source_type="doc", source_id="x", payload={"payload": {}, "owner_hash": legacy},
        payload_hash="0",
    )  # fmt: skip
    # with the keyed hash the owner no longer matches their legacy-hashed chunk
    assert "user_sessions:session:1:artifact:0" not in visible_uids(user, hashing_embedder)

    call_command("rekey_user_hashes", "--json")
    summary = json.loads(capsys.readouterr().out)

    assert summary["chunks"] == 2 and summary["documents"] == 1 and summary["unmatched_hashes"] == 0
    hashes = set(Chunk.objects.values_list("owner_hash", flat=True)) | set(
        Chunk.objects.values_list("author_hash", flat=True)
    )
    assert legacy not in hashes and user_hash(user.pk) in hashes
    assert not TermStat.objects.filter(owner_hash=legacy).exists()
    assert IngestedDocument.objects.get().payload["owner_hash"] == user_hash(user.pk)
    assert "user_sessions:session:1:artifact:0" in visible_uids(user, hashing_embedder)
    assert "user_sessions:session:1:artifact:0" not in visible_uids(other_user, hashing_embedder)
    # idempotent
    call_command("rekey_user_hashes", "--json")
    assert json.loads(capsys.readouterr().out)["chunks"] == 0


def test_rekey_after_a_key_rotation(user, hashing_embedder, settings, monkeypatch, capsys):
    settings.KNOWHUB_USER_HASH_KEY = "old-key"
    chunk_upsert(documents=[private_doc("1", user_hash(user.pk), "closures")], embedder=hashing_embedder)
    settings.KNOWHUB_USER_HASH_KEY = "new-key"
    monkeypatch.setenv("OLD_KNOWHUB_KEY", "old-key")
    call_command("rekey_user_hashes", "--old-key-env", "OLD_KNOWHUB_KEY", "--json")
    assert json.loads(capsys.readouterr().out)["chunks"] == 2
    assert Chunk.objects.get().owner_hash == user_hash(user.pk)


@pytest.fixture
def alice_data(user, other_user, staff_user, hashing_embedder):
    """alice: two private chunks (with history), an interaction with a click and judgments;
    bob: a private chunk; and a public page."""
    mine = user_hash(user.pk)
    chunk_upsert(documents=[
        private_doc("1", mine, "my closures memory palace reflection"),
        private_doc("2", mine, "my second closures reflection"),
        private_doc("3", user_hash(other_user.pk), "bob closures memory palace notes"),
        public_doc("p", "closures memory palace for everyone"),
    ], embedder=hashing_embedder)  # fmt: skip
    chunk_upsert(
        documents=[private_doc("1", mine, "my closures memory palace reflection, edited")], embedder=hashing_embedder
    )
    interaction = Interaction.objects.create(
        user=user, query="my closures", answer="quoting my reflection", comment="I am Alice"
    )
    Judgment.objects.create(interaction=interaction, chunk_uid="course_content:page:p:main:0", label="positive",
                            reason="alice says so", labelled_by=user)  # fmt: skip
    Judgment.objects.create(interaction=interaction, chunk_uid="user_sessions:session:1:artifact:0", label="positive",
                            labelled_by=staff_user)  # fmt: skip
    ClickEvent.objects.create(interaction=interaction, chunk_uid="course_content:page:p:main:0", rank=1, user=user)
    return interaction


def test_forget_user_removes_private_chunks_and_history_and_anonymises_the_rest(
    user, other_user, alice_data, hashing_embedder, capsys
):
    mine = {"user_sessions:session:1:artifact:0", "user_sessions:session:2:artifact:0"}
    assert ChunkHistory.objects.filter(chunk_uid__in=mine).count() >= 3

    call_command("forget_user", "--username", "alice", "--yes", "--json")
    summary = json.loads(capsys.readouterr().out)

    assert summary["chunks"] == 2 and summary["history"] >= 3
    assert not Chunk.objects.filter(chunk_uid__in=mine).exists()
    assert not ChunkHistory.objects.filter(chunk_uid__in=mine).exists()
    assert not Chunk.objects.filter(owner_hash=user_hash(user.pk)).exists()
    assert not TermStat.objects.filter(owner_hash=user_hash(user.pk), docs__gt=0).exists()
    # bob's private chunk and the public page are untouched
    assert Chunk.objects.filter(chunk_uid="user_sessions:session:3:artifact:0").exists()
    assert "user_sessions:session:3:artifact:0" in visible_uids(other_user, hashing_embedder)
    interaction = Interaction.objects.get(pk=alice_data.pk)
    assert interaction.user is None and interaction.comment == "" and interaction.answer == ""
    left = list(Judgment.objects.filter(interaction=interaction))
    assert [(j.chunk_uid, j.labelled_by, j.reason) for j in left] == [("course_content:page:p:main:0", None, "")]
    assert ClickEvent.objects.get().user is None
    assert not type(user).objects.filter(username="alice").exists()


def test_forget_user_is_all_or_nothing(user, alice_data, monkeypatch):
    def boom(self, *a, **kw):
        raise RuntimeError("the user row could not be deleted")

    monkeypatch.setattr(type(user), "delete", boom)
    with pytest.raises(RuntimeError):
        call_command("forget_user", "--username", "alice", "--yes")
    assert Chunk.objects.filter(owner_hash=user_hash(user.pk)).count() == 2
    assert Interaction.objects.get(pk=alice_data.pk).user_id == user.pk


def test_deleting_a_user_in_the_admin_forgets_them(client, user, alice_data, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin)
    response = client.post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Chunk.objects.filter(owner_hash=user_hash(user.pk)).exists()
    assert not ChunkHistory.objects.filter(chunk_uid="user_sessions:session:1:artifact:0").exists()
    assert Interaction.objects.get(pk=alice_data.pk).user is None


def test_exports_leave_out_personal_chunks_unless_asked(alice_data, tmp_path, capsys):
    call_command("export_judgments", "--format", "jsonl", "--out", str(tmp_path / "a"))
    rows = [json.loads(line) for line in (tmp_path / "a" / "judgments.jsonl").read_text().splitlines()]
    assert [r["chunk_uid"] for r in rows] == ["course_content:page:p:main:0"]
    assert all("reflection" not in (r["chunk_content"] or "") for r in rows)

    call_command("export_judgments", "--format", "qrels", "--corpus", "judged", "--out", str(tmp_path / "b"))
    corpus = (tmp_path / "b" / "corpus.jsonl").read_text()
    assert "reflection" not in corpus and "user_sessions" not in (tmp_path / "b" / "qrels" / "test.tsv").read_text()

    call_command("export_judgments", "--format", "jsonl", "--out", str(tmp_path / "c"), "--include-pii")
    rows = [json.loads(line) for line in (tmp_path / "c" / "judgments.jsonl").read_text().splitlines()]
    assert {r["chunk_uid"] for r in rows} == {"course_content:page:p:main:0", "user_sessions:session:1:artifact:0"}


def test_admin_shows_pii_level(client, alice_data, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin)
    page = client.get("/admin/rag/chunk/?pii_level__exact=2").content.decode()
    assert "Pii level" in page or "PII level" in page
    assert "Reflection 1" in page and "Page p" not in page


def test_forget_user_without_yes_and_without_a_terminal_says_so_and_changes_nothing(user, monkeypatch):
    import io

    from django.core.management.base import CommandError

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a script or cron: stdin is no terminal
    with pytest.raises(CommandError, match="no terminal to confirm on.*--yes"):
        call_command("forget_user", "--username", "alice")
    assert type(user).objects.filter(pk=user.pk).exists()


VICTOR = "My name is Victor Victim, employee id VV-99887; what is a closure?"


def rows_mentioning(word: str) -> list[str]:
    """Every table.column of the database whose text (or JSON) holds ``word``: the search a
    probe runs after forgetting someone."""
    from django.db import connection

    found = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
            " AND data_type IN ('text', 'character varying', 'jsonb', 'json')"
        )
        for table, column in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{word}%"])
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


@pytest.fixture
def victor_words(user, staff_user, hashing_embedder):
    """alice asks a question naming herself (with its embedding, a conversation and an ask
    turn), comments on it, and a labeller judges a result of it; she contests a grade."""
    from rag.models import Conversation

    Conversation.objects.create(id="c-victor", user=user, title=VICTOR[:200])
    interaction = Interaction.objects.create(
        user=user, kind="ask", query=VICTOR, answer=f"You asked: {VICTOR}", comment="VV-99887 here, thanks",
        filters={"conversation_id": "c-victor", "turn": {"subject": "Victor Victim VV-99887"},
                 "collections": ["course_content"]},
        query_embedding=hashing_embedder.embed_query(VICTOR), query_embedding_model=hashing_embedder.name,
        retrieved=[{"chunk_uid": "course_content:page:p:main:0", "rank": 1}], outcome=1,
    )  # fmt: skip
    Judgment.objects.create(interaction=interaction, chunk_uid="course_content:page:p:main:0", label="positive",
                            document_key="course_content:page:p", reason="Victor's question", labelled_by=staff_user)
    ClickEvent.objects.create(interaction=interaction, chunk_uid="course_content:page:p:main:0", rank=1, user=user)
    return interaction


def test_forget_user_scrubs_what_they_typed_and_keeps_what_the_loop_counts(user, victor_words):
    assert rows_mentioning("VV-99887")  # the probe finds the words before
    call_command("forget_user", "--username", "alice", "--yes")
    assert rows_mentioning("VV-99887") == [] and rows_mentioning("Victor Victim") == []
    interaction = Interaction.objects.get(pk=victor_words.pk)
    assert interaction.query == "" and interaction.query_embedding is None and interaction.user is None
    # kept without naming anyone: kind, outcome, what was retrieved, the click, the label
    assert interaction.kind == "ask" and interaction.outcome == 1
    assert interaction.filters == {"collections": ["course_content"]}
    assert interaction.retrieved == [{"chunk_uid": "course_content:page:p:main:0", "rank": 1}]
    judgment = Judgment.objects.get(interaction=interaction)
    assert (judgment.label, judgment.document_key, judgment.reason) == ("positive", "course_content:page:p", "")
    assert ClickEvent.objects.get(interaction=interaction).rank == 1


def test_a_forgotten_question_is_neither_tuned_on_nor_exported(user, victor_words, hashing_embedder):
    from feedback.selectors import judgments_export_qrels, labelled_queries

    call_command("forget_user", "--username", "alice", "--yes")
    assert labelled_queries(embedder=hashing_embedder) == []
    queries, qrels, _ = judgments_export_qrels(corpus="none")
    assert queries == [] and qrels == []


def test_export_user_prints_everything_they_typed_as_json(user, victor_words, alice_data, capsys):
    call_command("export_user", "--username", "alice")
    data = json.loads(capsys.readouterr().out)
    assert data["user"]["username"] == "alice" and "password" not in json.dumps(data["user"])
    assert VICTOR in [i["query"] for i in data["interactions"]]
    assert [c["title"] for c in data["conversations"]] == [VICTOR[:200]]
    assert {c["chunk_uid"] for c in data["private_chunks"]} == {
        "user_sessions:session:1:artifact:0", "user_sessions:session:2:artifact:0"
    }
    assert data["clicks"] and data["judgments_made"][0]["reason"] == "alice says so"
    assert data["learning_sessions"] == [] and "stored_documents" in data and "grade_contests" in data


def test_export_user_of_someone_unknown_is_a_clear_error():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user"):
        call_command("export_user", "--username", "nobody")
