"""Guided learning sessions: a learner maps a topic onto a realm's symbols."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class LearningSession(models.Model):
    """One learner working one topic in one realm, with the artifact it produced."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        FINISHED = "finished", "Finished"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="learning_sessions")
    realm_id = models.CharField(max_length=100)
    topic_id = models.CharField(max_length=100)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    topic_pack = models.JSONField(default=dict, blank=True)
    realm_snapshot = models.JSONField(default=dict, blank=True)
    state = models.JSONField(default=dict, blank=True)
    legend = models.JSONField(default=dict, blank=True)
    rules = models.JSONField(default=list, blank=True)
    script = models.TextField(blank=True, default="")
    red_flags = models.JSONField(default=list, blank=True)
    score = models.FloatField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(name="session_user_realm_idx", fields=["user", "realm_id", "status"])]

    def __str__(self) -> str:
        return f"{self.realm_id}/{self.topic_id} ({self.status})"


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
