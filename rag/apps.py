from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate


def _require_pgvector(sender, using="default", **kwargs):
    """Stop ``migrate`` before it writes anything when the server cannot hold the index."""
    from django.db import connections

    from rag.db_ops import check_pgvector_available

    with connections[using].cursor() as cursor:
        check_pgvector_available(cursor, connections[using].settings_dict)


def _set_up_text_backend(sender, using="default", **kwargs):
    """Put the schema in the keyword backend's state right after migrating (not at first search)."""
    from rag import text_search

    text_search.reset()
    text_search.ensure_backend()


class RagConfig(AppConfig):
    name = "rag"
    verbose_name = "Index and retrieval"

    def ready(self):
        pre_migrate.connect(_require_pgvector, sender=self, dispatch_uid="rag_require_pgvector")
        post_migrate.connect(_set_up_text_backend, sender=self, dispatch_uid="rag_text_backend")
        from django.db.backends.signals import connection_created

        from rag import text_search

        connection_created.connect(text_search.forget_bm25_check, dispatch_uid="rag_bm25_check")
        # Each request and task starts with no write and no replica chosen (knowhub.replicas).
        from celery.signals import task_prerun
        from django.core.signals import request_started

        from knowhub import replicas

        request_started.connect(replicas.begin, dispatch_uid="knowhub_replicas_request")
        task_prerun.connect(replicas.begin, dispatch_uid="knowhub_replicas_task", weak=False)
        from knowhub.celery import log_broker_mode_once

        log_broker_mode_once()
