from django.db import migrations

# A chunk row (vector, text, its tsv, the bm25 copy of its text) is ~5 KB. Past PostgreSQL's
# default TOAST target (~2 KB) every insert first tried to compress each text column (chunk-sized
# prose hardly compresses: nearly every attempt was thrown away) and then moved both texts out of
# line. A target of half a page keeps two rows a page and moves out only what it must; the text
# columns skip the compression attempt. Writes cost less and the table and its TOAST shrink
# together. Only rows written from now on are stored this way; nothing is rewritten.
FORWARD = """
    ALTER TABLE rag_chunk SET (toast_tuple_target = 4080);
    ALTER TABLE rag_chunk ALTER COLUMN content SET STORAGE EXTERNAL;
    DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass
                   AND attname = 'search_text' AND NOT attisdropped) THEN
            ALTER TABLE rag_chunk ALTER COLUMN search_text SET STORAGE EXTERNAL;
        END IF;
    END $$;
"""
BACKWARD = """
    ALTER TABLE rag_chunk RESET (toast_tuple_target);
    ALTER TABLE rag_chunk ALTER COLUMN content SET STORAGE EXTENDED;
    DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'rag_chunk'::regclass
                   AND attname = 'search_text' AND NOT attisdropped) THEN
            ALTER TABLE rag_chunk ALTER COLUMN search_text SET STORAGE EXTENDED;
        END IF;
    END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("rag", "0005_tsv_by_trigger")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
