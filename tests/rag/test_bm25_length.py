"""The stored document length of the pg_textsearch backend: the index's rounding, and a database
set up with the earlier SQL-language function gets the PL/pgSQL one."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from rag import text_search
from rag.bm25_length import DL_FUNCTION

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
        cursor.execute(f"SELECT {DL_FUNCTION}(%s)", [body])
        assert cursor.fetchone()[0] == lucene_rounded(words)


def test_an_earlier_sql_length_function_is_replaced(pg_textsearch):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE OR REPLACE FUNCTION {DL_FUNCTION}(body text) RETURNS integer "
            "LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT length(body) $$"
        )
        assert not text_search.PgTextsearch().is_set_up(cursor)
        text_search.reset()
        text_search.ensure_backend()
        cursor.execute(f"SELECT {DL_FUNCTION}('three small words')")
        assert cursor.fetchone()[0] == 3
