import django.contrib.postgres.indexes
import django.db.models.functions.comparison
import pgvector.django.halfvec
import pgvector.django.indexes
from django.conf import settings
from django.db import migrations

from rag.db_ops import column_dims, hnsw_index_sql

# The HNSW graph holds the vectors at half precision: a build walks half the memory and runs
# faster, and the search re-orders what the graph finds by full-precision distance. The column
# keeps full precision. The index is built for the dimensions the column has now, which a
# re-embed may have changed from the configured ones.


def _half(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        dims = column_dims(cursor)
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        cursor.execute(hnsw_index_sql("chunk_embedding_hnsw", "embedding", dims))


def _full(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
        cursor.execute(
            "CREATE INDEX chunk_embedding_hnsw ON rag_chunk "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )


class Migration(migrations.Migration):
    dependencies = [("rag", "0006_rows_fit_two_a_page")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name="chunk_embedding_hnsw"),
                migrations.AddIndex(
                    model_name="chunk",
                    index=pgvector.django.indexes.HnswIndex(
                        django.contrib.postgres.indexes.OpClass(
                            django.db.models.functions.comparison.Cast(
                                "embedding",
                                pgvector.django.halfvec.HalfVectorField(dimensions=settings.KNOWHUB_EMBEDDING_DIMS),
                            ),
                            name="halfvec_cosine_ops",
                        ),
                        ef_construction=64,
                        m=16,
                        name="chunk_embedding_hnsw",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(_half, _full)],
        )
    ]
