"""How a chunk row is stored: rows are longer than PostgreSQL's default TOAST target, and the
texts are moved out of line as they are, never compressed on the way (chunk-sized prose rarely
compresses, and the attempt cost every write). The embedder is the hashing fake: this is about
storage, not vectors."""

from __future__ import annotations

import pytest
from django.db import connection

from rag.models import Chunk
from tests.rag.factories import doc, load

pytestmark = pytest.mark.django_db


def test_two_rows_a_page_and_the_texts_stored_uncompressed(pg_textsearch, hashing_embedder):
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = 'rag_chunk'::regclass")
        assert "toast_tuple_target=4080" in cursor.fetchone()[0]
        cursor.execute(
            "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass "
            "AND attname IN ('content', 'search_text')"
        )
        assert dict(cursor.fetchall()) == {"content": "e", "search_text": "e"}

    # Repetitive enough that pglz would have compressed it: stored as written, and read back whole.
    text = " ".join(["The nightly sync pulls every page and its comments."] * 40)
    load([doc("long", "Nightly sync", text)], hashing_embedder)
    chunk = Chunk.objects.filter(source_id="long").order_by("chunk_idx").first()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(content), pg_column_compression(search_text), "
            "content = %s FROM rag_chunk WHERE id = %s",
            [chunk.content, chunk.pk],
        )
        assert cursor.fetchone() == (None, None, True)
