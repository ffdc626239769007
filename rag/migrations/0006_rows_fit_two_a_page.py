from django.db import migrations

# A chunk row (vector, text, its tsv, the bm25 copy of its text) is ~5 KB. Past PostgreSQL's
# default TOAST target (~2 KB) every insert first tried to compress each text column (chunk-sized
# prose hardly compresses: nearly every attempt was thrown away) and then moved both texts out of
# line. A target of half a page keeps two rows a page and moves out only what it must; the text
# columns skip the compression attempt. Writes cost less and the table and its TOAST shrink
# together. Only rows written from now on are stored this way; nothing is rewritten.


def _storage_sql(target: str, storage: str) -> str:
    """The table's TOAST target and the text columns' storage (``search_text`` exists only where
    the pg_textsearch backend was set up; its set-up stores it the same way)."""
    return f"""
        ALTER TABLE rag_chunk {target};
        ALTER TABLE rag_chunk ALTER COLUMN content SET STORAGE {storage};
        DO $$ BEGIN
            IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass
                       AND attname = 'search_text' AND NOT attisdropped) THEN
                ALTER TABLE rag_chunk ALTER COLUMN search_text SET STORAGE {storage};
            END IF;
        END $$;
    """


class Migration(migrations.Migration):
    dependencies = [("rag", "0005_tsv_by_trigger")]

    operations = [
        migrations.RunSQL(
            _storage_sql("SET (toast_tuple_target = 4080)", "EXTERNAL"),
            _storage_sql("RESET (toast_tuple_target)", "EXTENDED"),
        )
    ]
