"""The analysed text of a chunk (``tsv``) and the pg_textsearch backend's stored document length,
written together by one trigger: the index's rounding, the text analysed once, both following
every change of the text, and a database set up by an earlier version moved over."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from rag import text_columns, text_search
from rag.bm25_length import DL_FUNCTION
from rag.models import Chunk
from tests.rag.factories import doc, load

pytestmark = pytest.mark.django_db


def lucene_rounded(length: int) -> int:
    """Lucene's SmallFloat intToByte4 with 24 free values, decoded: what the index stores."""
    if length < 40:
        return length
    y = length - 24
    k = y.bit_length() - 4  # the low bits dropped: all but the four significant ones
    return 24 + (y & ~((1 << k) - 1))


@pytest.mark.parametrize("words", [0, 1, 39, 40, 41, 55, 56, 100, 257, 1000, 4100, 12000])
def test_the_length_is_the_token_count_rounded_like_the_index(pg_textsearch, words):
    body = " ".join(f"w{i}x" for i in range(words))  # distinct tokens: one position each
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {DL_FUNCTION}(to_tsvector('english', %s))", [body])
        assert cursor.fetchone()[0] == lucene_rounded(words)


def _stored(chunk_id: int) -> tuple[str, str, int | None]:
    """(tsv, the tsv of its title and content analysed afresh, search_dl) of a stored chunk."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsv::text, (setweight(to_tsvector('english', title), 'A') "
            "|| setweight(to_tsvector('english', content), 'B'))::text, search_dl FROM rag_chunk WHERE id = %s",
            [chunk_id],
        )
        return cursor.fetchone()


def _text_length(chunk_id: int) -> int:
    """The length as it was computed before: the token count of title and content as one text."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {DL_FUNCTION}(to_tsvector('english', title || E'\\n' || content)) FROM rag_chunk WHERE id = %s",
            [chunk_id],
        )
        return cursor.fetchone()[0]


def test_tsv_and_length_follow_the_text_through_every_kind_of_write(pg_textsearch, hashing_embedder):
    long_text = " ".join(f"the {i}th reading of the oxidative stress marker" for i in range(12))
    load([doc("a", "Stress markers", long_text)], hashing_embedder)
    chunk = Chunk.objects.filter(source_id="a").order_by("chunk_idx").first()
    tsv, fresh, length = _stored(chunk.pk)
    assert tsv == fresh and "'oxid'" in tsv and "'marker'" in tsv
    assert length == _text_length(chunk.pk) > 40  # the same count the text analysed again gives

    # The ORM saves the whole row, writing back the tsv it read: nothing changes.
    chunk.refresh_from_db()
    chunk.domain = "biology"
    chunk.save()
    assert _stored(chunk.pk) == (tsv, fresh, length)

    # A new content through the ORM, and through an UPDATE statement.
    chunk.content = "Mitochondria make ATP."
    chunk.save()
    tsv, fresh, length = _stored(chunk.pk)
    assert tsv == fresh and "'mitochondria'" in tsv and "'oxid'" not in tsv and length == 5
    Chunk.objects.filter(pk=chunk.pk).update(title="Zeolite catalysts")
    tsv, fresh, length = _stored(chunk.pk)
    assert tsv == fresh and "'zeolit'" in tsv and length == _text_length(chunk.pk) == 5

    # A statement writing tsv itself gets the text's tsv, never its own.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE rag_chunk SET tsv = 'bogus'::tsvector WHERE id = %s", [chunk.pk])
    assert _stored(chunk.pk) == (tsv, fresh, length)

    # Unrelated updates keep them, and the search finds the chunk by its new words.
    Chunk.objects.filter(pk=chunk.pk).update(visibility="public")
    assert _stored(chunk.pk) == (tsv, fresh, length)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM rag_chunk WHERE tsv @@ to_tsquery('english', 'zeolite') AND id = %s", [chunk.pk]
        )
        assert cursor.fetchone()[0] == 1


def test_a_row_written_by_sql_gets_its_tsv_and_length(pg_textsearch, hashing_embedder):
    """Rows written by SQL, not the ORM (the benchmark COPYs a million in), go through the same trigger."""
    load([doc("model", "Model", "A model row.")], hashing_embedder)
    columns = [
        "chunk_uid", "collection", "source_type", "source_id", "unit_anchor", "chunk_idx", "title", "content",
        "content_hash", "embedding", "embedding_model", "visibility",
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO rag_chunk ({', '.join(columns)}, breadcrumb, url, domain, concepts, mnemonic_tags, "
            "code_languages, has_image, pii_level, author_hash, metadata, owner_hash, created_at, updated_at) "
            f"SELECT 'copied', collection, source_type, 'copied', unit_anchor, 0, 'Copied title', "
            "'Copied words about enzymes', content_hash, embedding, embedding_model, visibility, breadcrumb, url, "
            "domain, concepts, mnemonic_tags, code_languages, has_image, pii_level, author_hash, metadata, "
            "owner_hash, created_at, updated_at FROM rag_chunk WHERE source_id = 'model' RETURNING id"
        )
        copied = cursor.fetchone()[0]
    tsv, fresh, length = _stored(copied)
    assert tsv == fresh and "'enzym'" in tsv and length == _text_length(copied) == 5


def test_a_database_set_up_by_an_earlier_version_is_moved_to_the_trigger(pg_textsearch, hashing_embedder):
    """An earlier version generated the length from the text; the move keeps the values (the
    same count) and rewrites nothing, and the trigger keeps the length from then on."""
    load([doc("a", "Stress markers", "Oxidative stress markers rise after exercise.")], hashing_embedder)
    chunk_id = Chunk.objects.get(source_id="a").pk
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the loaded rows' foreign keys, before ALTER TABLE
        # As an earlier version left it: the length generated from the text by its own function,
        # and (after the migration) a trigger that writes tsv only.
        cursor.execute(
            f"CREATE FUNCTION {DL_FUNCTION}(body text) RETURNS integer LANGUAGE sql IMMUTABLE STRICT "
            f"AS $$ SELECT {DL_FUNCTION}(to_tsvector('english', body)) $$"
        )
        cursor.execute(
            "ALTER TABLE rag_chunk DROP COLUMN search_dl, ADD COLUMN search_dl integer "
            f"GENERATED ALWAYS AS ({DL_FUNCTION}(title || E'\\n' || content)) STORED"
        )
        cursor.execute(text_columns.function_sql(with_length=False))
        cursor.execute("SELECT relfilenode FROM pg_class WHERE oid = 'rag_chunk'::regclass")
        before = cursor.fetchone()[0]
        assert _stored(chunk_id)[2] == 7
        assert not text_search.PgTextsearch().is_set_up(cursor)
        text_search.reset()
        text_search.ensure_backend()
        assert text_search.PgTextsearch().is_set_up(cursor)
        assert not text_columns.column_generated(cursor, "search_dl") and text_columns.fills_length(cursor)
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = %s", [DL_FUNCTION])
        assert cursor.fetchone()[0] == 1
        cursor.execute("SELECT relfilenode FROM pg_class WHERE oid = 'rag_chunk'::regclass")
        assert cursor.fetchone()[0] == before  # not rewritten
        assert _stored(chunk_id)[2] == 7
        Chunk.objects.filter(pk=chunk_id).update(content="Mitochondria make ATP.")
        assert _stored(chunk_id)[2] == _text_length(chunk_id) == 5


@pytest.mark.parametrize("text_backend", ["sql"], indirect=True)
def test_the_sql_backend_keeps_the_trigger_and_drops_the_length(text_backend, hashing_embedder):
    load([doc("a", "Stress markers", "Oxidative stress markers rise after exercise.")], hashing_embedder)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = %s", [DL_FUNCTION])
        assert cursor.fetchone()[0] == 0
        assert not text_columns.fills_length(cursor)
        cursor.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass AND attname = %s "
                       "AND NOT attisdropped", ["search_dl"])  # fmt: skip
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT tsv::text FROM rag_chunk WHERE source_id = 'a'")
        assert "'oxid'" in cursor.fetchone()[0]
