"""A chunk's analysed text, written with the row by one trigger: ``tsv`` (title weighted A, content
B) and, when the pg_textsearch backend is set up, the document length it scores with
(``search_dl``, counted from that ``tsv``).

As generated columns each analysed the text on its own (a generated column cannot read another),
so every written row ran the English text analysis twice, half of what loading a row costs the
server. The trigger analyses once and fills both. It fires on inserts and on updates that write
the title, the content or ``tsv`` (a soft delete, an ACL change or a re-embedding does not call
it), and does the work only when one of them changed (the ORM writes every column back as it read
it, which changes nothing): both always follow the text, as generated columns would. Which of the
two bodies is installed follows the keyword backend: the SQL backend has no length column.
"""

from __future__ import annotations

from rag.bm25_length import DL_COLUMN, DL_FUNCTION

TRIGGER = "rag_chunk_text_columns"
FUNCTION = "rag_chunk_text_columns"
WATCHED = ("title", "content", "tsv")  # the columns an update must write for the trigger to run


def function_sql(*, with_length: bool) -> str:
    """The trigger function: ``tsv`` only, or ``tsv`` and the bm25 document length."""
    unchanged = " AND ".join(f"NEW.{col} IS NOT DISTINCT FROM OLD.{col}" for col in WATCHED)
    set_length = f"NEW.{DL_COLUMN} := {DL_FUNCTION}(NEW.tsv);" if with_length else ""
    return f"""
        CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' AND {unchanged} THEN
                RETURN NEW;
            END IF;
            NEW.tsv := setweight(to_tsvector('english', coalesce(NEW.title, '')), 'A')
                || setweight(to_tsvector('english', coalesce(NEW.content, '')), 'B');
            {set_length}
            RETURN NEW;
        END
        $$
    """


CREATE_TRIGGER = (
    f"CREATE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE OF {', '.join(WATCHED)} ON rag_chunk "
    f"FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()"
)


def fills_length(cursor) -> bool:
    """Whether the installed trigger function also writes the document length."""
    cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [FUNCTION])
    row = cursor.fetchone()
    return bool(row and DL_COLUMN in row[0])


def column_generated(cursor, column: str) -> bool:
    """Whether rag_chunk has ``column`` as a generated column."""
    cursor.execute(
        "SELECT attgenerated <> '' FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass AND attname = %s "
        "AND NOT attisdropped",
        [column],
    )
    row = cursor.fetchone()
    return bool(row and row[0])
