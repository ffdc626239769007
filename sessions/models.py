"""Guided learning sessions: a learner maps a topic onto a realm's symbols."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class CatalogEntry(models.Model):
    """What realms and topics share: an admin-ordered entry that can be switched off."""

    order = models.PositiveIntegerField(default=0)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["order", "slug"]


class Realm(CatalogEntry):
    """A world of symbols (wizard, portal, key…) a learner builds metaphors from."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    symbols = models.JSONField(
        default=list, blank=True, help_text='[{"name": "Wizard", "meaning": "acts when called"}, …]'
    )
    hints = models.JSONField(default=list, blank=True, help_text="Short tips for building metaphors in this realm.")

    def __str__(self) -> str:
        return self.name

    def snapshot(self) -> dict:
        """What a session keeps of its realm, so later edits don't change a session under way."""
        return {
            "slug": self.slug,
            "name": self.name,
            "description": self.description,
            "symbols": list(self.symbols or []),
            "hints": list(self.hints or []),
        }


class Topic(CatalogEntry):
    """A thing to learn: entities to map onto symbols, truths, misconceptions and tests.

    A topic with no realms is offered in every realm; otherwise only in the realms it lists.
    """

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    domain = models.CharField(
        max_length=100, db_index=True, help_text="Course domain, e.g. javascript; used to ground the guide."
    )
    summary = models.TextField(blank=True, default="")
    entities = models.JSONField(default=list, blank=True, help_text='[{"name": …, "description": …}]')
    truths = models.JSONField(default=list, blank=True, help_text="Statements that are true about the topic.")
    misconceptions = models.JSONField(default=list, blank=True, help_text='[{"claim": …, "correction": …}]')
    tests = models.JSONField(
        default=list, blank=True, help_text='[{"question": …, "expected": …, "keywords": ["a|b", …]}]'
    )
    realms = models.ManyToManyField(
        Realm, blank=True, related_name="topics", help_text="Leave empty to offer the topic in every realm."
    )

    def __str__(self) -> str:
        return self.title

    def pack(self) -> dict:
        """The topic pack a session snapshots at start."""
        return {
            "slug": self.slug,
            "title": self.title,
            "domain": self.domain,
            "summary": self.summary,
            "entities": list(self.entities or []),
            "truths": list(self.truths or []),
            "misconceptions": list(self.misconceptions or []),
            # The eval answers measure the grader; a session has no use for them.
            "tests": [{k: v for k, v in t.items() if k != "eval"} for t in (self.tests or [])],
        }


class LearningSession(models.Model):
    """One learner working one topic in one realm, with the artifact it produced."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        FINISHED = "finished", "Finished"

    class Guide(models.TextChoices):
        OFFLINE = "offline", "Offline guide"
        LLM = "llm", "LLM guide"

    class ArtifactSource(models.TextChoices):
        NONE = "", "Not extracted"
        DETERMINISTIC = "deterministic", "Deterministic extraction"
        LLM = "llm", "LLM structured output"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="learning_sessions")
    realm_id = models.CharField(max_length=100)
    topic_id = models.CharField(max_length=100)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    topic_pack = models.JSONField(default=dict, blank=True)
    realm_snapshot = models.JSONField(default=dict, blank=True)
    state = models.JSONField(default=dict, blank=True)
    guide = models.CharField(max_length=20, choices=Guide.choices, default=Guide.OFFLINE)
    legend = models.JSONField(default=list, blank=True)
    rules = models.JSONField(default=list, blank=True)
    script = models.TextField(blank=True, default="")
    red_flags = models.JSONField(default=list, blank=True)
    score = models.FloatField(null=True, blank=True)
    artifact_source = models.CharField(max_length=20, choices=ArtifactSource.choices, default="", blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    indexed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(name="session_user_realm_idx", fields=["user", "realm_id", "status"])]
        constraints = [
            # One open session per learner and realm: "start" resumes it instead of piling up.
            models.UniqueConstraint(
                name="session_one_active_per_realm",
                fields=["user", "realm_id"],
                condition=models.Q(status="active"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.realm_id}/{self.topic_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status == self.Status.FINISHED

    @property
    def topic_title(self) -> str:
        return (self.topic_pack or {}).get("title") or self.topic_id

    @property
    def realm_name(self) -> str:
        return (self.realm_snapshot or {}).get("name") or self.realm_id


class SessionEvent(models.Model):
    """One message in a session's chat."""

    class Role(models.TextChoices):
        USER = "user", "Learner"
        ASSISTANT = "assistant", "Guide"
        SYSTEM = "system", "System"

    session = models.ForeignKey(LearningSession, on_delete=models.CASCADE, related_name="events")
    role = models.CharField(max_length=20, choices=Role.choices)
    content = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class SessionProgress(models.Model):
    """A topic a learner has completed in a realm."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_progress")
    realm_id = models.CharField(max_length=100)
    topic_id = models.CharField(max_length=100)
    session = models.ForeignKey(LearningSession, null=True, blank=True, on_delete=models.SET_NULL)
    best_score = models.FloatField(null=True, blank=True)
    completed_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "session progress"
        constraints = [
            models.UniqueConstraint(name="progress_unique_user_realm_topic", fields=["user", "realm_id", "topic_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.realm_id}/{self.topic_id}"
