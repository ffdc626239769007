"""The group → project mapping on its own (no provider needed): what a groups claim gives, and the
admin page where the mapping is kept."""

from __future__ import annotations

import pytest

from identity.models import GroupGrant, GroupProjectMapping
from identity.services import apply_groups, groups_from_claims
from rag.acl import Scope
from rag.models import Project

pytestmark = pytest.mark.django_db


def test_the_groups_claim_may_be_nested_or_a_single_string(settings):
    assert groups_from_claims({"groups": ["a", "b", 3, ""]}) == ["a", "b"]
    assert groups_from_claims({"groups": "a"}) == ["a"]
    assert groups_from_claims({}) == []
    settings.KNOWHUB_OIDC_GROUPS_CLAIM = "realm_access.roles"
    assert groups_from_claims({"realm_access": {"roles": ["eng"]}}) == ["eng"]
    assert groups_from_claims({"realm_access": "eng"}) == []


def test_groups_give_exactly_their_mapped_projects_and_again_is_a_no_op(user):
    eng, sales, ops = (Project.objects.create(slug=s, name=s) for s in ("eng", "sales", "ops"))
    GroupProjectMapping.objects.create(group="engineers", project=eng)
    GroupProjectMapping.objects.create(group="engineers", project=ops)  # one group, two projects
    GroupProjectMapping.objects.create(group="sellers", project=sales)
    apply_groups(user, ["engineers", "unmapped"])
    apply_groups(user, ["engineers", "unmapped"])
    assert set(Scope.for_user(user).project_ids) == {eng.id, ops.id}
    assert GroupGrant.objects.filter(user=user).count() == 2
    apply_groups(user, ["sellers"])
    assert set(Scope.for_user(user).project_ids) == {sales.id}
    # A mapping the admin deletes is gone at the next sign-in.
    GroupProjectMapping.objects.filter(group="sellers").delete()
    apply_groups(user, ["sellers"])
    assert Scope.for_user(user).project_ids == ()


def test_the_mapping_is_kept_in_the_admin(client, django_user_model):
    admin = django_user_model.objects.create_superuser(username="root", password="pw-root-123")
    client.force_login(admin)
    project = Project.objects.create(slug="eng", name="Eng")
    assert client.get("/admin/identity/groupprojectmapping/add/").status_code == 200
    response = client.post("/admin/identity/groupprojectmapping/add/", {"group": "engineers", "project": project.pk})
    assert response.status_code == 302
    assert GroupProjectMapping.objects.get().project == project
    assert b"engineers" in client.get("/admin/identity/groupprojectmapping/").content
    assert client.get("/admin/identity/externalidentity/").status_code == 200
