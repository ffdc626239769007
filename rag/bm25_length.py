"""The document length pg_textsearch scores a row with, as SQL: a stored column and the function
that fills it at write time."""

from __future__ import annotations

# The document length pg_textsearch scores a row with: its token count (the positions
# ``to_tsvector`` gives its text, which the index's tokeniser also yields) rounded down the way
# the index stores it. Stored per row at write time, so scoring a row from ``tsv`` reads it
# instead of deriving it per query (two ts_rank calls and the rounding: ~65 µs a row, most of a
# selective filter's keyword half).
DL_COLUMN = "search_dl"
DL_FUNCTION = "rag_bm25_length"


# PL/pgSQL rather than a SQL function: a SQL body with sub-selects is never inlined, and running
# it through the SQL-function executor for every written row cost several times the text
# analysis itself, which made bulk loads crawl. It takes the row's ``tsv`` (title and content
# analysed with the same parser and configuration as the index): counting its positions costs a
# fraction of analysing the text a second time, which every write did while the length was a
# generated column of its own. The rounding is Lucene's SmallFloat ``intToByte4`` with 24 free
# values (0…39 exact, then 4 significant bits of ``length − 24``).
CREATE_LENGTH_FUNCTION = f"""
    CREATE OR REPLACE FUNCTION {DL_FUNCTION}(doc tsvector) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE
        x integer;
        k integer := 1;
    BEGIN
        SELECT coalesce(sum(cardinality(u.positions)), 0) INTO x FROM unnest(doc) u;
        IF x < 40 THEN
            RETURN x;
        END IF;
        WHILE x - 24 >= (16 << k) LOOP
            k := k + 1;
        END LOOP;
        RETURN 24 + ((x - 24) & ~((1 << k) - 1));
    END
    $$
"""
# Earlier versions computed the length from the text, in a generated column.
OLD_LENGTH_FUNCTION = f"{DL_FUNCTION}(text)"


def length_function_current(cursor) -> bool:
    """The length function is the PL/pgSQL one over a tsvector, and no earlier one is left (a
    database set up earlier has one over the text, in SQL or PL/pgSQL)."""
    cursor.execute(
        "SELECT bool_and(l.lanname = 'plpgsql' AND p.proargtypes = ARRAY['tsvector'::regtype]::oidvector), "
        "count(*) = 1 FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.proname = %s",
        [DL_FUNCTION],
    )
    current, alone = cursor.fetchone()
    return bool(current and alone)
