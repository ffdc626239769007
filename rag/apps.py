from django.apps import AppConfig
from django.db.models.signals import pre_migrate


def _require_pgvector(sender, using="default", **kwargs):
    """Stop ``migrate`` before it writes anything when the server cannot hold the index."""
    from django.db import connections

    from rag.db_ops import check_pgvector_available

    with connections[using].cursor() as cursor:
        check_pgvector_available(cursor, connections[using].settings_dict)


class RagConfig(AppConfig):
    name = "rag"
    verbose_name = "Index and retrieval"

    def ready(self):
        pre_migrate.connect(_require_pgvector, sender=self, dispatch_uid="rag_require_pgvector")
        from knowhub.celery import log_broker_mode_once

        log_broker_mode_once()
