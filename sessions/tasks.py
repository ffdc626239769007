"""Celery tasks of learning sessions: thin wrappers that re-fetch and call a service."""

from __future__ import annotations

import logging

from celery import shared_task

from rag.embeddings import TransientEmbeddingError

logger = logging.getLogger(__name__)


@shared_task(autoretry_for=(TransientEmbeddingError,), retry_backoff=True, retry_jitter=True, max_retries=5)
def session_artifact_index_task(session_id: int) -> bool:
    """(Re-)index a finished session's artifact, e.g. after the embedding provider was down."""
    from sessions.models import LearningSession
    from sessions.services import session_artifact_index

    session = LearningSession.objects.filter(pk=session_id, status=LearningSession.Status.FINISHED).first()
    if session is None:
        logger.info("session %s is gone or not finished; nothing to index", session_id)
        return False
    session_artifact_index(session=session)
    return True
