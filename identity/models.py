"""Identities from the OpenID provider, and the admin's table turning its groups into projects."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from rag.models import Project


class ExternalIdentity(models.Model):
    """A person at an OpenID provider (issuer + subject) and the knowhub user they sign in as.

    The subject is the provider's stable id for the person; email can change or be reused, so it
    only matches a user the first time (and only when the provider says it is verified)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="identity_issuer_subject_unique")]

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer}"


class GroupProjectMapping(models.Model):
    """Members of ``group`` at the provider are members of ``project`` here. Unmapped groups are
    ignored."""

    group = models.CharField(
        max_length=255, help_text="The group's name (or id) exactly as the groups claim carries it."
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="group_mappings")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group", "project__slug"]
        constraints = [models.UniqueConstraint(fields=["group", "project"], name="identity_group_project_unique")]

    def __str__(self) -> str:
        return f"{self.group} → {self.project.slug}"


class GroupGrant(models.Model):
    """A project membership that exists because of the user's groups (not one an admin gave):
    the memberships a later sign-in or token may take away again."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="group_grants")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="group_grants")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="identity_group_grant_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.project_id} by group"
