"""Writes: the user an identity signs in as, and the projects and staff status their groups give."""

from __future__ import annotations

import hashlib
import logging
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from identity.models import ExternalIdentity, GroupGrant, GroupProjectMapping
from rag.models import Project

logger = logging.getLogger(__name__)


class IdentityRefused(Exception):
    """The claims cannot be turned into a knowhub user (the message says why)."""


def groups_from_claims(claims: dict) -> list[str]:
    """The groups claim (KNOWHUB_OIDC_GROUPS_CLAIM; a dotted path such as ``realm_access.roles``
    reaches into nested claims). Absent, the person is in no group: nothing is granted that the
    provider did not state."""
    value: object = claims
    for part in settings.KNOWHUB_OIDC_GROUPS_CLAIM.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [g for g in value if isinstance(g, str) and g]


def _verified(claims: dict) -> bool:
    # Some providers send the boolean as a string.
    return claims.get("email_verified") in (True, "true", "True")


def _free_username(claims: dict, issuer: str, subject: str) -> str:
    User = get_user_model()
    base = claims.get("preferred_username") or (claims.get("email") or "").split("@")[0] or subject
    base = re.sub(r"[^\w.@+-]", "-", str(base))[:120] or "user"
    if not User.objects.filter(username=base).exists():
        return base
    return f"{base}-{hashlib.sha256(f'{issuer}|{subject}'.encode()).hexdigest()[:12]}"


def user_for_identity(issuer: str, claims: dict, *, create: bool = True):
    """The user of ``(issuer, sub)``: the linked one, else (first sign-in) the one user whose
    email the provider says is verified and who has no identity at this issuer yet, else a new
    user. Raises IdentityRefused."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise IdentityRefused("the provider gave no subject (sub)")
    issuer = issuer.rstrip("/")
    linked = ExternalIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if linked:
        return linked.user
    User = get_user_model()
    email = claims.get("email") or ""
    with transaction.atomic():
        user = None
        if email and _verified(claims) and settings.KNOWHUB_OIDC_MATCH_EMAIL:
            matches = list(
                User.objects.filter(email__iexact=email).exclude(external_identities__issuer=issuer)[:2]
            )
            if len(matches) > 1:
                raise IdentityRefused(f"several users have the email {email}; an admin must link one")
            user = matches[0] if matches else None
        if user is None:
            if not create:
                raise IdentityRefused("no knowhub user for this identity")
            user = User.objects.create_user(
                username=_free_username(claims, issuer, subject), email=email if _verified(claims) else "",
                first_name=str(claims.get("given_name", ""))[:150], last_name=str(claims.get("family_name", ""))[:150],
            )  # fmt: skip
        try:
            with transaction.atomic():
                ExternalIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        except IntegrityError:  # a concurrent first sign-in of the same person linked it first
            return ExternalIdentity.objects.select_related("user").get(issuer=issuer, subject=subject).user
    logger.info("identity %s at %s linked to user %s", subject, issuer, user.pk)
    return user


@transaction.atomic
def apply_groups(user, groups: list[str]) -> None:
    """Make the user's group-given projects exactly those the mapping gives ``groups``; set staff
    status from KNOWHUB_OIDC_STAFF_GROUP when configured. Memberships an admin gave by hand are
    left alone. Runs at every sign-in and every JWT use, so a removal takes effect at once."""
    User = get_user_model()
    # One writer per user at a time: two requests with different tokens must not interleave.
    locked = User.objects.select_for_update().get(pk=user.pk)
    wanted = set(GroupProjectMapping.objects.filter(group__in=groups).values_list("project_id", flat=True))
    granted = set(GroupGrant.objects.filter(user=locked).values_list("project_id", flat=True))
    member_of = set(locked.knowhub_projects.values_list("id", flat=True))
    through = Project.members.through
    gone = granted - wanted
    if gone:
        through.objects.filter(user_id=locked.pk, project_id__in=gone).delete()
        GroupGrant.objects.filter(user=locked, project_id__in=gone).delete()
    new = wanted - member_of
    if new:
        through.objects.bulk_create([through(user_id=locked.pk, project_id=p) for p in new], ignore_conflicts=True)
        GroupGrant.objects.bulk_create([GroupGrant(user=locked, project_id=p) for p in new], ignore_conflicts=True)
    staff_group = settings.KNOWHUB_OIDC_STAFF_GROUP
    if staff_group:
        is_staff = staff_group in groups
        if locked.is_staff != is_staff:
            locked.is_staff = is_staff
            locked.save(update_fields=["is_staff"])
        user.is_staff = is_staff
    if gone or new:
        logger.info("user %s projects from groups: +%s -%s", user.pk, sorted(new), sorted(gone))


def api_token_create(user) -> str:
    """A new API token for ``user`` (DRF's ``Authorization: Token <key>``), replacing the one
    they had; returns its key (shown once)."""
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user).key


def api_token_revoke(user) -> None:
    from rest_framework.authtoken.models import Token

    Token.objects.filter(user=user).delete()
