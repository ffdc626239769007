"""Reads for learning sessions: realms with progress, topics of a realm, a learner's sessions."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q, QuerySet

from sessions.models import LearningSession, Realm, SessionProgress, Topic


class SessionNotFound(Exception):
    """No such session, or not one the caller may see (the two are not told apart)."""


def realm_topics(realm: Realm) -> QuerySet[Topic]:
    """Active topics offered in ``realm``: those listing it and those listing no realm at all."""
    return (
        Topic.objects.filter(is_active=True)
        .filter(Q(realms=realm) | Q(realms__isnull=True))
        .distinct()
        .order_by("order", "slug")
    )


def completed_topic_ids(*, user, realm_slug: str) -> set[str]:
    return set(SessionProgress.objects.filter(user=user, realm_id=realm_slug).values_list("topic_id", flat=True))


def next_topic(*, user, realm: Realm) -> Topic | None:
    """The first topic of the realm (by order) the learner has not completed there yet."""
    done = completed_topic_ids(user=user, realm_slug=realm.slug)
    return next((t for t in realm_topics(realm) if t.slug not in done), None)


@dataclass
class TopicRow:
    topic: Topic
    completed: bool
    best_score: float | None


@dataclass
class RealmProgress:
    realm: Realm
    topics: list[TopicRow] = field(default_factory=list)
    open_session: LearningSession | None = None
    next_topic: Topic | None = None

    @property
    def completed(self) -> int:
        return sum(1 for t in self.topics if t.completed)

    @property
    def total(self) -> int:
        return len(self.topics)

    @property
    def percent(self) -> int:
        return round(100 * self.completed / self.total) if self.total else 0


def realm_progress_list(*, user) -> list[RealmProgress]:
    """Every active realm with its topics, what the learner completed, and their open session."""
    progress = {
        (p.realm_id, p.topic_id): p.best_score
        for p in SessionProgress.objects.filter(user=user).only("realm_id", "topic_id", "best_score")
    }
    open_sessions = {
        s.realm_id: s for s in LearningSession.objects.filter(user=user, status=LearningSession.Status.ACTIVE)
    }
    out = []
    for realm in Realm.objects.filter(is_active=True).order_by("order", "slug"):
        rows = [
            TopicRow(topic=t, completed=(realm.slug, t.slug) in progress, best_score=progress.get((realm.slug, t.slug)))
            for t in realm_topics(realm)
        ]
        out.append(
            RealmProgress(
                realm=realm,
                topics=rows,
                open_session=open_sessions.get(realm.slug),
                next_topic=next((r.topic for r in rows if not r.completed), None),
            )
        )
    return out


def session_get_for_user(*, session_id: int, user) -> LearningSession:
    """The session if ``user`` is its learner or staff; otherwise ``SessionNotFound``."""
    qs = LearningSession.objects.select_related("user")
    if not (user.is_staff or user.is_superuser):
        qs = qs.filter(user=user)
    try:
        return qs.get(pk=session_id)
    except LearningSession.DoesNotExist:
        raise SessionNotFound(session_id) from None


def session_history(*, user) -> QuerySet[LearningSession]:
    """The learner's finished sessions, newest first."""
    return LearningSession.objects.filter(user=user, status=LearningSession.Status.FINISHED).order_by(
        "-finished_at", "-id"
    )
