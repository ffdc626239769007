"""A chunk's analysed text, ``tsv`` (title weighted A, content B), written by a trigger.

As a generated column it could not be read by another generated column, so the bm25 document
length (``search_dl``, pg_textsearch backend) analysed the text a second time: half of what
loading a row cost the server. Written by a BEFORE trigger, ``tsv`` is an ordinary column, and
``search_dl`` is generated from it: one analysis a row. The trigger fires on every insert and
update but does the work only when the title or the content changed or a statement wrote ``tsv``
itself (the ORM writes it back as it read it, which changes nothing), so ``tsv`` always follows
the text, as a generated column would. Generated columns are computed after BEFORE triggers, so
``search_dl`` sees the new ``tsv``.
"""

from __future__ import annotations

TRIGGER = "rag_chunk_text_columns"
FUNCTION = "rag_chunk_text_columns"

CREATE_FUNCTION = f"""
    CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW.title IS NOT DISTINCT FROM OLD.title
                AND NEW.content IS NOT DISTINCT FROM OLD.content AND NEW.tsv IS NOT DISTINCT FROM OLD.tsv THEN
            RETURN NEW;
        END IF;
        NEW.tsv := setweight(to_tsvector('english', coalesce(NEW.title, '')), 'A')
            || setweight(to_tsvector('english', coalesce(NEW.content, '')), 'B');
        RETURN NEW;
    END
    $$
"""

CREATE_TRIGGER = (
    f"CREATE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE ON rag_chunk FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()"
)


def generation_expression(cursor, column: str) -> str | None:
    """The expression a generated column of rag_chunk is computed with (None: not generated, or
    no such column)."""
    cursor.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
        "JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE a.attrelid = 'rag_chunk'::regclass AND a.attname = %s AND a.attgenerated <> '' AND NOT a.attisdropped",
        [column],
    )
    row = cursor.fetchone()
    return row[0] if row else None
