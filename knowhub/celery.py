"""The Celery app. With no broker configured tasks run inline, and the log says so once."""

import logging
import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "knowhub.settings")

logger = logging.getLogger("knowhub")

app = Celery("knowhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

_inline_logged = False


def log_broker_mode_once() -> None:
    """Say once per process that tasks run inline because no Redis answered."""
    global _inline_logged
    from django.conf import settings

    if settings.KNOWHUB_BROKER == "inline" and not _inline_logged:
        _inline_logged = True
        logger.warning(
            "No Redis broker (REDIS_URL unset and nothing on 127.0.0.1:6379): "
            "tasks run inline in the calling process."
        )


@worker_process_init.connect
def _close_inherited_connections(**_kwargs):
    # A forked worker process must not share the parent's database socket.
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()
