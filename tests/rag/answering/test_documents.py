"""The document view (API and page): the whole parent document of a chunk, with the same ACL
as search: 404 for what the caller may not see, soft-deleted chunks included."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.utils import timezone

from rag.acl import user_hash
from rag.models import Chunk, ChunkHistory
from rag.services import chunk_upsert
from rag.units import SourceDocument, Unit

pytestmark = pytest.mark.django_db(transaction=False)

API = "/rag/documents/"


def uid_of(collection: str, source_id: str) -> str:
    return Chunk.objects.filter(collection=collection, source_id=source_id).order_by("id").values_list(
        "chunk_uid", flat=True
    )[0]


def api(client, uid):
    return client.get(API + quote(uid, safe=""))


def page(client, uid):
    return client.get(f"/documents/{quote(uid, safe='')}/")


@pytest.fixture
def long_doc(corpus, local_embedder):
    """A Logseq-style page with three parts and a ``logseq://`` link, then an edit (a version)."""
    units = [
        Unit(unit_anchor=f"u{i}", title="Runbook: ingestion backlog", content=text, url="logseq://graph/ops?page=Runbook",
             breadcrumb="ops > runbooks", metadata={"tags": ["oncall"], "people": ["Sam"]})
        for i, text in enumerate(["First, check the queue depth.", "Then scale the workers.",
                                  "Finally, page the owner."])
    ]  # fmt: skip
    doc = SourceDocument(collection="logseq", source_type="page", source_id="pages/Runbook.md", units=units)
    assert not chunk_upsert(documents=[doc], embedder=local_embedder).errors
    units[1] = Unit(unit_anchor="u1", title=units[1].title, content="Then scale the workers to eight.",
                    url=units[1].url,
                    breadcrumb=units[1].breadcrumb, metadata=units[1].metadata)  # fmt: skip
    doc = SourceDocument(collection="logseq", source_type="page", source_id="pages/Runbook.md", units=units)
    assert not chunk_upsert(documents=[doc], embedder=local_embedder).errors
    return doc


def test_the_whole_document_in_order_with_history_and_its_original_link(client, user, long_doc):
    client.force_login(user)
    middle = Chunk.objects.get(collection="logseq", unit_anchor="u1").chunk_uid
    assert "/" in middle  # source ids with slashes must survive the URL
    body = api(client, middle).json()
    assert [c["content"] for c in body["chunks"]] == [
        "First, check the queue depth.", "Then scale the workers to eight.", "Finally, page the owner."
    ]
    assert [c["cited"] for c in body["chunks"]] == [False, True, False]
    assert body["url"] == "logseq://graph/ops?page=Runbook" and body["collection"] == "logseq"
    assert body["title"] == "Runbook: ingestion backlog" and body["metadata"]["people"] == ["Sam"]
    changes = [(h["change"], h["content"]) for h in body["history"] if h["chunk_uid"] == middle]
    assert changes == [("updated", "Then scale the workers to eight."), ("created", "Then scale the workers.")]
    assert body["page_url"].startswith("/documents/")

    r = page(client, middle)
    html = r.content.decode()
    assert r.status_code == 200
    assert 'href="logseq://graph/ops?page=Runbook"' in html and "Open in Logseq" in html
    assert 'class="chunk cited" id="cited"' in html and "History of versions (4)" in html


def test_documents_without_a_link_still_have_a_page(client, user, corpus):
    client.force_login(user)
    uid = uid_of("secret", "s1")
    Chunk.objects.filter(chunk_uid=uid).update(visibility="public", project=None)
    r = page(client, uid)
    assert r.status_code == 200 and "Project Nightingale" in r.content.decode()
    assert "original-link" not in r.content.decode()


def test_unsafe_links_are_not_offered(client, user, corpus):
    client.force_login(user)
    uid = uid_of("course", "p1")
    Chunk.objects.filter(chunk_uid=uid).update(url="javascript:alert(1)", content="<script>alert(1)</script> closures")
    assert api(client, uid).json()["url"] == ""
    html = page(client, uid).content.decode()
    assert "javascript:alert" not in html and "<script>alert(1)" not in html


@pytest.mark.parametrize(
    ("who", "collection", "source_id", "visible"),
    [
        ("alice", "course", "p1", True),
        ("alice", "secret", "s1", False),  # restricted, not a member
        ("insider", "secret", "s1", True),  # member of the project
        ("staff", "secret", "s1", True),
        ("alice", "journal", "private-1", False),  # someone else's private note
        ("owner", "journal", "private-1", True),  # the owner's own
        ("insider", "journal", "private-1", False),
    ],
)
def test_acl_matrix(client, corpus, user, staff_user, who, collection, source_id, visible):
    people = {"alice": user, "staff": staff_user, "insider": corpus["insider"], "owner": corpus["owner"]}
    client.force_login(people[who])
    uid = uid_of(collection, source_id)
    assert (api(client, uid).status_code == 200) is visible
    assert (page(client, uid).status_code == 200) is visible
    if not visible:
        assert api(client, uid).status_code == 404 and page(client, uid).status_code == 404


def test_hidden_parts_of_a_visible_document_are_left_out(client, user, corpus, local_embedder):
    units = [Unit(unit_anchor="pub", title="Mixed", content="A public part about lunch."),
             Unit(unit_anchor="priv", title="Mixed", content="A private part about salaries.")]  # fmt: skip
    chunk_upsert(
        documents=[SourceDocument(collection="notes", source_type="doc", source_id="mixed", units=units)],
        embedder=local_embedder,
    )
    Chunk.objects.filter(source_id="mixed", unit_anchor="priv").update(
        visibility="private", owner_hash=user_hash(corpus["owner"].pk)
    )
    client.force_login(user)
    body = api(client, Chunk.objects.get(source_id="mixed", unit_anchor="pub").chunk_uid).json()
    assert [c["content"] for c in body["chunks"]] == ["A public part about lunch."]
    assert all("salaries" not in h["content"] for h in body["history"])


def test_soft_deleted_and_unknown_chunks_are_404(client, user, corpus):
    client.force_login(user)
    uid = uid_of("course", "p2")
    Chunk.objects.filter(chunk_uid=uid).update(deleted_at=timezone.now())
    assert api(client, uid).status_code == 404 and page(client, uid).status_code == 404
    assert api(client, "course:page:nope:b0:0").status_code == 404
    assert ChunkHistory.objects.filter(chunk_uid=uid).exists()  # kept, just not shown


def test_anonymous_callers_are_sent_to_log_in(client, corpus):
    uid = uid_of("course", "p1")
    assert api(client, uid).status_code in (401, 403)
    assert page(client, uid).status_code == 302


def test_api_docs_are_served_without_a_cdn(client, user):
    client.force_login(user)
    html = client.get("/api/docs/").content.decode()
    assert "cdn.jsdelivr" not in html and "unpkg" not in html and "@latest" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
