"""Admin: the group → project mapping, and who is linked to which provider identity."""

from __future__ import annotations

from django.contrib import admin

from identity.models import ExternalIdentity, GroupProjectMapping


@admin.register(GroupProjectMapping)
class GroupProjectMappingAdmin(admin.ModelAdmin):
    list_display = ("group", "project", "created_at")
    list_filter = ("project",)
    search_fields = ("group", "project__slug", "project__name")
    autocomplete_fields = ("project",)


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin):
    list_display = ("subject", "issuer", "user", "created_at")
    search_fields = ("subject", "issuer", "user__username", "user__email")
    raw_id_fields = ("user",)
    readonly_fields = ("created_at",)
