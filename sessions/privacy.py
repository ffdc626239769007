"""Personal data the sessions app holds, for ``manage.py export_user``.

Forgetting needs nothing here: sessions, their chat and progress belong to the user row and go
with it (cascade); their indexed artifacts are private chunks, which ``rag.privacy`` deletes.
"""

from __future__ import annotations

from sessions.models import LearningSession, SessionProgress


def personal_data_export(*, user, hashes: set[str]) -> dict:
    sessions = LearningSession.objects.filter(user=user).order_by("created_at").prefetch_related("events")
    return {
        "learning_sessions": [
            {
                "id": s.pk, "realm": s.realm_id, "topic": s.topic_id, "status": s.status, "score": s.score,
                "created_at": s.created_at, "finished_at": s.finished_at, "state": s.state, "legend": s.legend,
                "chat": [{"role": e.role, "content": e.content, "at": e.created_at} for e in s.events.all()],
            }
            for s in sessions
        ],
        "progress": list(
            SessionProgress.objects.filter(user=user).order_by("completed_at").values(
                "realm_id", "topic_id", "best_score", "completed_at"
            )
        ),
    }  # fmt: skip
