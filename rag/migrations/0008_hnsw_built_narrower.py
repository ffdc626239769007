import django.contrib.postgres.indexes
import django.db.models.functions.comparison
import pgvector.django.halfvec
import pgvector.django.indexes
from django.conf import settings
from django.db import migrations

# New HNSW graphs are built with a narrower ef_construction (rag.db_ops.HNSW_EF_CONSTRUCTION).
# A graph already in place is left as it was built: it finds its neighbours at least as well, and
# rebuilding it here would hold a lock on rag_chunk for as long as the build takes. The next build
# of the graph (a re-embed, a restore) takes the new width.


def _hnsw(ef_construction: int):
    return pgvector.django.indexes.HnswIndex(
        django.contrib.postgres.indexes.OpClass(
            django.db.models.functions.comparison.Cast(
                "embedding",
                pgvector.django.halfvec.HalfVectorField(dimensions=settings.KNOWHUB_EMBEDDING_DIMS),
            ),
            name="halfvec_cosine_ops",
        ),
        ef_construction=ef_construction,
        m=16,
        name="chunk_embedding_hnsw",
    )


class Migration(migrations.Migration):
    dependencies = [("rag", "0007_vectors_indexed_at_half_precision")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name="chunk_embedding_hnsw"),
                migrations.AddIndex(model_name="chunk", index=_hnsw(48)),
            ],
            database_operations=[],
        )
    ]
