"""What people did with answers: interactions and their relevance judgments."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField


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
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="interactions",
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.QUERY)
    query = models.TextField()
    filters = models.JSONField(default=dict, blank=True)
    retrieved = models.JSONField(
        default=list, blank=True, help_text="[{chunk_uid, score, vec_score, txt_score, rank}]"
    )
    selected = models.JSONField(
        default=list, blank=True, help_text="chunk uids the answer used or the user opened"
    )
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
    # The query's embedding, so labels can follow paraphrases of it (see feedback.ranking).
    # Filled lazily: when the search just embedded it, or when the first judgment arrives.
    query_embedding = VectorField(dimensions=settings.KNOWHUB_EMBEDDING_DIMS, null=True, blank=True)
    query_embedding_model = models.CharField(max_length=200, blank=True, default="")
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reviewed_interactions",
        help_text="the last staff member who labelled or corrected this interaction",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The admin lists interactions as the queue staff label from.
        verbose_name = "interaction to review"
        verbose_name_plural = "judgment review queue"
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
    # collection:source_type:source_id of the judged chunk, for the per-document judgment balance.
    document_key = models.CharField(max_length=800, blank=True, default="")
    label = models.CharField(max_length=10, choices=Label.choices)
    preferred_over = models.CharField(max_length=600, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    labelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="judgments",
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
            models.CheckConstraint(
                name="judgment_not_preferred_over_itself",
                condition=~Q(chunk_uid=models.F("preferred_over")),
            ),
        ]
        indexes = [
            models.Index(name="judgment_chunk_uid_idx", fields=["chunk_uid"]),
            models.Index(name="judgment_document_key_idx", fields=["document_key"]),
            models.Index(
                name="judgment_preferred_over_idx",
                fields=["preferred_over"],
                condition=~Q(preferred_over=""),
            ),
        ]

    def __str__(self) -> str:
        if self.preferred_over:
            return f"{self.chunk_uid} > {self.preferred_over}"
        return f"{self.chunk_uid} {self.label}"


class JudgmentLog(models.Model):
    """Who labelled, corrected or deleted what, and when: judgments change, their history stays."""

    class Action(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        DELETED = "deleted", "Deleted"

    interaction = models.ForeignKey(
        Interaction, on_delete=models.CASCADE, related_name="judgment_logs"
    )
    judgment = models.ForeignKey(
        Judgment, null=True, blank=True, on_delete=models.SET_NULL, related_name="logs"
    )
    chunk_uid = models.CharField(max_length=600)
    preferred_over = models.CharField(max_length=600, blank=True, default="")
    action = models.CharField(max_length=10, choices=Action.choices)
    label = models.CharField(max_length=10, blank=True, default="")
    previous_label = models.CharField(max_length=10, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    source = models.CharField(
        max_length=20, blank=True, default="", help_text="api, admin, command"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="judgment_logs",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(name="judgmentlog_created_idx", fields=["created_at"])]

    def __str__(self) -> str:
        return f"{self.action} {self.chunk_uid} {self.label}"


class ClickEvent(models.Model):
    """A user opened a source of a result list: which chunk, at which rank."""

    interaction = models.ForeignKey(Interaction, on_delete=models.CASCADE, related_name="clicks")
    chunk_uid = models.CharField(max_length=600)
    rank = models.PositiveSmallIntegerField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="click_events",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(name="click_interaction_idx", fields=["interaction", "chunk_uid"]),
            # the label effect looks up the clicks on a search's candidate chunks
            models.Index(name="click_chunk_uid_idx", fields=["chunk_uid"]),
        ]

    def __str__(self) -> str:
        return f"click {self.chunk_uid} @{self.rank}"


class RankingConfig(models.Model):
    """Fusion weights and feature coefficients; exactly one is active, older ones stay restorable.

    ``weights`` holds ``w_vec``, ``w_txt``, ``w_title``, ``w_recency``, ``w_judgment`` (see
    ``feedback.ranking.RankingWeights``); ``metrics`` what tuning measured (nDCG@10 before/after on
    the train and validation parts, split sizes, seed).
    """

    weights = models.JSONField()
    metrics = models.JSONField(default=dict, blank=True)
    active = models.BooleanField(default=False)
    note = models.CharField(max_length=200, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="ranking_configs",
    )
    activated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                name="rankingconfig_one_active", fields=["active"], condition=Q(active=True)
            ),
        ]

    def __str__(self) -> str:
        flag = " (active)" if self.active else ""
        return f"ranking #{self.pk}{flag}"


# --- learning sessions: contested grades ---------------------------------------------------------


class GradeContest(models.Model):
    """A learner's objection to how a session test answer was graded: a judgment on the grader.

    Kept apart from ``Judgment`` (which labels retrieved chunks for ranking) but reviewed in the
    same admin queue: staff uphold the grade or accept the answer, which re-scores the session.
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        UPHELD = "upheld", "Grade stands"
        ACCEPTED = "accepted", "Answer accepted"

    session = models.ForeignKey(
        "learning_sessions.LearningSession", on_delete=models.CASCADE, related_name="grade_contests"
    )
    learner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="grade_contests",
    )
    test_index = models.PositiveSmallIntegerField(help_text="0-based index of the test in the session")
    question = models.TextField()
    answer = models.TextField()
    expected = models.TextField()
    score = models.FloatField()
    passed = models.BooleanField()
    explanation = models.TextField(blank=True, default="", help_text="what the grader told the learner")
    reason = models.TextField(blank=True, default="", help_text="why the learner thinks the grade is wrong")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    review_note = models.TextField(blank=True, default="")
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reviewed_grade_contests",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(name="gradecontest_one_per_test", fields=["session", "test_index"]),
        ]
        indexes = [models.Index(name="gradecontest_status_idx", fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"contest #{self.pk} on session {self.session_id} test {self.test_index + 1} ({self.status})"
