import pytest

from rag.demo import demo_documents
from rag.models import Chunk
from rag.services import chunk_upsert

pytestmark = pytest.mark.django_db


def test_chunk_admin_lists_and_shows_history(client, django_user_model, hashing_embedder):
    # The stand-in embedder: this test is about the admin pages, not about vectors.
    chunk_upsert(documents=demo_documents()[:2], embedder=hashing_embedder)
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client.force_login(admin)
    listing = client.get("/admin/rag/chunk/?state=live")
    assert listing.status_code == 200
    assert "Getting started with knowhub" in listing.content.decode()
    chunk = Chunk.objects.first()
    page = client.get(f"/admin/rag/chunk/{chunk.pk}/change/")
    assert page.status_code == 200 and "created" in page.content.decode()
