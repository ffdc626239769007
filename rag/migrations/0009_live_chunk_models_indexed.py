from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

# Built without locking the table against writes: on a large index the build takes a while, and
# ingestion goes on meanwhile.


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("rag", "0008_hnsw_built_narrower")]

    operations = [
        AddIndexConcurrently(
            model_name="chunk",
            index=models.Index(
                condition=models.Q(deleted_at__isnull=True),
                fields=["embedding_model"],
                name="chunk_live_model_idx",
            ),
        )
    ]
