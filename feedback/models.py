"""What people did with answers: interactions and their relevance judgments."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Interaction(models.Model):
    """One query or ask, with what was retrieved and answered, and how it was received."""

    class Kind(models.TextChoices):
        QUERY = "query", "Query"
        ASK = "ask", "Ask"

    class Outcome(models.IntegerChoices):
        BAD = -1, "Not useful"
        NEUTRAL = 0, "Neutral"
        GOOD = 1, "Useful"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="interactions"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.QUERY)
    query = models.TextField()
    filters = models.JSONField(default=dict, blank=True)
    retrieved = models.JSONField(default=list, blank=True, help_text="[{chunk_uid, score, vec_score, txt_score, rank}]")
    selected = models.JSONField(default=list, blank=True, help_text="chunk uids the answer used or the user opened")
    answer = models.TextField(blank=True, default="")
    strategy = models.CharField(max_length=20, blank=True, default="")
    domain = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    outcome = models.SmallIntegerField(choices=Outcome.choices, null=True, blank=True)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(name="interaction_created_idx", fields=["created_at"]),
            models.Index(name="interaction_outcome_idx", fields=["outcome"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.query[:60]}"


class Judgment(models.Model):
    """A relevance label on one chunk for one interaction's query (optionally against another)."""

    class Label(models.TextChoices):
        POSITIVE = "positive", "Relevant"
        NEGATIVE = "negative", "Not relevant"

    interaction = models.ForeignKey(Interaction, on_delete=models.CASCADE, related_name="judgments")
    chunk_uid = models.CharField(max_length=600)
    label = models.CharField(max_length=10, choices=Label.choices)
    preferred_over = models.CharField(max_length=600, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    labelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgments"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                name="judgment_unique_per_interaction_chunk_pair",
                fields=["interaction", "chunk_uid", "preferred_over"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.chunk_uid} {self.label}"
