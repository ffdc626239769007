"""Who may see what: the one place that turns a user into the visibility scope of a query."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings


def user_hash_key(secret: str | None = None) -> bytes:
    """The key of the user pseudonyms: ``KNOWHUB_USER_HASH_KEY``, else derived from SECRET_KEY.

    Derived (not SECRET_KEY itself) so the pseudonym key is never the key Django signs with.
    """
    if secret is None:
        secret = settings.KNOWHUB_USER_HASH_KEY or ""
        if not secret:
            return derived_user_hash_key(settings.SECRET_KEY)
    return secret.encode()


def derived_user_hash_key(secret_key: str) -> bytes:
    """The pseudonym key derived from a SECRET_KEY (when KNOWHUB_USER_HASH_KEY is unset)."""
    return hashlib.sha256(f"knowhub user pseudonyms|{secret_key}".encode()).digest()


def user_hash(user_id: int | str, *, key: bytes | None = None) -> str:
    """HMAC-SHA256 of a user id under a secret key: how private chunks and PII-bearing rows name
    their owner. Without the key the hash cannot be reversed by hashing every possible id
    (the earlier unkeyed sha256 could be; ``manage.py rekey_user_hashes`` replaces it)."""
    return hmac.new(key or user_hash_key(), str(user_id).encode(), hashlib.sha256).hexdigest()


def legacy_user_hash(user_id: int | str, salt: str = "knowhub") -> str:
    """The unkeyed ``sha256("<salt>:<id>")`` earlier versions stored; only for re-keying."""
    return hashlib.sha256(f"{salt}:{user_id}".encode()).hexdigest()


@dataclass(frozen=True)
class Scope:
    """What a caller may see: public chunks, restricted ones of ``project_ids``, own private ones.

    ``staff`` sees everything. Retrieval SQL takes these three values as parameters; nothing is
    ever filtered in Python after the fact.
    """

    staff: bool
    project_ids: tuple[int, ...]
    owner_hash: str

    @classmethod
    def for_user(cls, user) -> Scope:
        if user is None or not getattr(user, "is_authenticated", False):
            return cls(staff=False, project_ids=(), owner_hash="")
        if user.is_staff or user.is_superuser:
            return cls(staff=True, project_ids=(), owner_hash=user_hash(user.pk))
        ids = tuple(user.knowhub_projects.values_list("id", flat=True))
        return cls(staff=False, project_ids=ids, owner_hash=user_hash(user.pk))

    @classmethod
    def everything(cls) -> Scope:
        """For offline commands (evaluate, bench) that act as the operator."""
        return cls(staff=True, project_ids=(), owner_hash="")

    def sql(self, alias: str = "c") -> tuple[str, list]:
        """A WHERE fragment and its parameters enforcing this scope on chunk alias ``alias``."""
        if self.staff:
            return "TRUE", []
        return (
            f"({alias}.visibility = 'public'"
            f" OR ({alias}.visibility = 'restricted' AND {alias}.project_id = ANY(%s))"
            f" OR ({alias}.visibility = 'private' AND {alias}.owner_hash = %s AND %s <> ''))",
            [list(self.project_ids), self.owner_hash, self.owner_hash],
        )
