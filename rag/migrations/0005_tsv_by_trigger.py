import django.contrib.postgres.search
from django.db import migrations

# ``tsv`` stops being a generated column and is written by a trigger, so that the bm25 document
# length can be generated from it instead of analysing the text again (``rag.text_columns``).
# DROP EXPRESSION keeps the stored values and rewrites nothing. A database set up for
# pg_textsearch moves its length column over in the backend's own set-up (at the next start).
TSV_EXPRESSION = (
    "setweight(to_tsvector('english'::regconfig, COALESCE(title, ''::varchar)::text), 'A') "
    "|| setweight(to_tsvector('english'::regconfig, COALESCE(content, ''::text)), 'B')"
)


def forward(apps, schema_editor):
    from rag import text_columns

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("ALTER TABLE rag_chunk ALTER COLUMN tsv DROP EXPRESSION")
        cursor.execute(text_columns.CREATE_FUNCTION)
        cursor.execute(f"DROP TRIGGER IF EXISTS {text_columns.TRIGGER} ON rag_chunk")
        cursor.execute(text_columns.CREATE_TRIGGER)


def backward(apps, schema_editor):
    from rag import text_columns

    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER IF EXISTS {text_columns.TRIGGER} ON rag_chunk")
        cursor.execute(f"DROP FUNCTION IF EXISTS {text_columns.FUNCTION}()")
        # A column cannot become generated again: drop it (with its index and the bm25 length
        # generated from it, which the backend set-up adds again) and add it as it was.
        cursor.execute("ALTER TABLE rag_chunk DROP COLUMN tsv CASCADE")
        cursor.execute(f"ALTER TABLE rag_chunk ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({TSV_EXPRESSION}) STORED")
        cursor.execute("ALTER TABLE rag_chunk ALTER COLUMN tsv SET STORAGE MAIN")
        cursor.execute("CREATE INDEX chunk_tsv_gin ON rag_chunk USING gin (tsv)")


class Migration(migrations.Migration):
    dependencies = [("rag", "0004_inline_vectors")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, backward)],
            state_operations=[
                migrations.AlterField(
                    model_name="chunk",
                    name="tsv",
                    field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
                ),
            ],
        ),
    ]
