import django.contrib.postgres.search
from django.db import migrations

# ``tsv`` stops being a generated column and is written by a trigger that analyses the text once
# for it and for the bm25 document length (``rag.text_columns``). DROP EXPRESSION keeps the stored
# values and rewrites nothing. A database set up for pg_textsearch keeps its generated length
# column until the backend's own set-up moves it to the trigger (at the next start, the same way:
# no rewrite).
TSV_EXPRESSION = (
    "setweight(to_tsvector('english'::regconfig, COALESCE(title, ''::varchar)::text), 'A') "
    "|| setweight(to_tsvector('english'::regconfig, COALESCE(content, ''::text)), 'B')"
)


def forward(apps, schema_editor):
    from rag import text_columns

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("ALTER TABLE rag_chunk ALTER COLUMN tsv DROP EXPRESSION")
        cursor.execute(text_columns.function_sql(with_length=False))
        cursor.execute(f"DROP TRIGGER IF EXISTS {text_columns.TRIGGER} ON rag_chunk")
        cursor.execute(text_columns.CREATE_TRIGGER)


def backward(apps, schema_editor):
    from rag import text_columns

    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER IF EXISTS {text_columns.TRIGGER} ON rag_chunk")
        cursor.execute(f"DROP FUNCTION IF EXISTS {text_columns.FUNCTION}()")
        # A column cannot become generated again: drop it (and its index) and add it as it was; the
        # length column, which the trigger kept, too (the backend's set-up adds it again).
        cursor.execute("ALTER TABLE rag_chunk DROP COLUMN tsv, DROP COLUMN IF EXISTS search_dl")
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
