"""Personal data services: re-keying user pseudonyms, forgetting a user.

Users appear in the index only as pseudonyms (``rag.acl.user_hash``): ``owner_hash`` and
``author_hash`` of chunks, the per-owner partitions of ``rag_term_stat`` (kept by triggers), and
the stored payloads of private documents posted to the API. Everything else that names a user
is a foreign key (interactions, judgments, sessions, reflections).

The personal data other apps hold (ingestion's stored payloads and sync states, feedback's
interactions and judgments) is re-keyed and forgotten by those apps: each registers its part in
its ``AppConfig.ready`` (``register_personal_data``), so rag never imports them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Q

from rag.acl import legacy_user_hash, user_hash, user_hash_key

logger = logging.getLogger(__name__)


# --- what other apps hold -----------------------------------------------------------------------


@dataclass(frozen=True)
class PersonalData:
    """Another app's part in re-keying and forgetting users (either may be ``None``).

    - ``rekey(*, mapping)``: rewrite the pseudonyms it stores (``{old: new}``);
    - ``forget(*, user, hashes, chunk_uids, sources)``: delete or anonymise what it holds about
      ``user`` (``hashes``: their pseudonyms; ``chunk_uids`` and ``sources``
      (``(collection, source_type, source_id)``): their private chunks, already deleted);
    - ``export(*, user, hashes)``: what it holds about ``user``, as JSON-able data (a dict of
      sections), for an access request (``manage.py export_user``).

    ``rekey`` and ``forget`` run inside the caller's transaction and return counts keyed by the
    name of a field of ``RekeyResult`` / ``ForgetResult`` (added to it).
    """

    rekey: Callable[..., dict[str, int]] | None = None
    forget: Callable[..., dict[str, int]] | None = None
    export: Callable[..., dict] | None = None


_holders: dict[str, PersonalData] = {}


def register_personal_data(name: str, holder: PersonalData) -> None:
    """Add (or replace: ``ready`` may run twice) app ``name``'s part; parts run in the order
    they were first registered (the order of ``INSTALLED_APPS``)."""
    _holders[name] = holder


def _add(result, counts: dict[str, int]) -> None:
    for key, n in counts.items():
        setattr(result, key, getattr(result, key) + n)


# --- re-keying ----------------------------------------------------------------------------------


@dataclass
class RekeyResult:
    users: int = 0
    chunks: int = 0
    documents: int = 0
    unmatched_hashes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "users": self.users, "chunks": self.chunks, "documents": self.documents,
            "unmatched_hashes": len(self.unmatched_hashes),
        }  # fmt: skip


def _old_hashes(user_id: int, *, old_keys: Iterable[bytes], legacy_salts: Iterable[str]) -> set[str]:
    olds = {legacy_user_hash(user_id, salt) for salt in legacy_salts}
    olds |= {user_hash(user_id, key=key) for key in old_keys}
    return olds


@transaction.atomic
def user_hashes_rekey(
    *, old_keys: Iterable[bytes] = (), legacy_salts: Iterable[str] = ("knowhub",)
) -> RekeyResult:
    """Rewrite every stored user pseudonym to the current key (``user_hash``).

    ``old_keys``: keys the hashes may have been made with (a rotated KNOWHUB_USER_HASH_KEY or
    the key derived from an old SECRET_KEY); ``legacy_salts``: salts of the unkeyed sha256 of
    earlier versions. Pseudonyms of no existing user are reported (``unmatched_hashes``), not
    guessed. One transaction; idempotent (current hashes map to themselves).
    """
    old_keys, legacy_salts = list(old_keys), list(legacy_salts)
    current_key = user_hash_key()
    mapping: dict[str, str] = {}
    user_ids = list(get_user_model().objects.values_list("pk", flat=True))
    for user_id in user_ids:
        new = user_hash(user_id, key=current_key)
        for old in _old_hashes(user_id, old_keys=old_keys, legacy_salts=legacy_salts):
            if old != new:
                mapping[old] = new
    result = RekeyResult(users=len(user_ids))
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE knowhub_rekey (old text PRIMARY KEY, new text NOT NULL) ON COMMIT DROP")
        if mapping:
            cursor.executemany("INSERT INTO knowhub_rekey (old, new) VALUES (%s, %s)", list(mapping.items()))
        # One statement per column: the term-statistics triggers move the owner partitions along.
        cursor.execute(
            "UPDATE rag_chunk c SET owner_hash = m.new FROM knowhub_rekey m WHERE c.owner_hash = m.old"
        )
        result.chunks = cursor.rowcount
        cursor.execute(
            "UPDATE rag_chunk c SET author_hash = m.new FROM knowhub_rekey m WHERE c.author_hash = m.old"
        )
        result.chunks += cursor.rowcount
        current = {user_hash(uid, key=current_key) for uid in user_ids}
        cursor.execute(
            "SELECT DISTINCT h FROM (SELECT owner_hash AS h FROM rag_chunk UNION SELECT author_hash FROM rag_chunk) t"
            " WHERE h <> ''"
        )
        result.unmatched_hashes = sorted(h for (h,) in cursor.fetchall() if h not in current)
        cursor.execute("DROP TABLE knowhub_rekey")  # also when an outer transaction goes on
    for holder in _holders.values():
        if holder.rekey is not None:
            _add(result, holder.rekey(mapping=mapping))
    from rag import term_stats

    term_stats.compact()
    logger.info("re-keyed user pseudonyms: %s", result.as_dict())
    return result


# --- forgetting a user --------------------------------------------------------------------------


@dataclass
class ForgetResult:
    user_id: int
    chunks: int = 0
    history: int = 0
    documents: int = 0
    interactions: int = 0
    judgments_deleted: int = 0
    judgments_anonymised: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@transaction.atomic
def user_forget(*, user) -> ForgetResult:
    """Delete a user and the personal data knowhub holds about them, in one transaction.

    - their private chunks (learning-session artifacts, reflections, private documents) and the
      ``ChunkHistory`` rows of those chunks (history otherwise outlives a chunk), the stored
      payloads and sync states that would bring them back on a reindex;
    - their pseudonym as the author of any other chunk;
    - what they typed: the text of their questions (and its embedding), comments and answers is
      scrubbed from their interactions, which are kept without a user for aggregate figures;
      judgments of their own chunks are deleted, their judgments elsewhere keep the label but
      lose the labeller and the free-text reason;
    - the user row, and with it (by cascade) their conversations, sessions and their chat,
      reflections, progress and token.

    The payloads, sync states, interactions and judgments are the registered parts of the
    ingestion and feedback apps (``register_personal_data``). The admin deletes users through
    this too (``rag.admin``).
    """
    result = _forget_data(user)
    user.delete()
    logger.info("forgot user %s: %s", result.user_id, result.as_dict())
    return result


def _forget_data(user) -> ForgetResult:
    from rag.models import Chunk, ChunkHistory

    result = ForgetResult(user_id=user.pk)
    hashes = user_hashes_of(user)
    owned = Chunk.objects.filter(Q(owner_hash__in=hashes) | Q(author_hash__in=hashes, pii_level__gte=2))
    uids = set(owned.values_list("chunk_uid", flat=True))
    sources = set(owned.values_list("collection", "source_type", "source_id").distinct())
    result.history, _ = ChunkHistory.objects.filter(chunk_uid__in=uids).delete()
    result.chunks, _ = owned.delete()
    Chunk.objects.filter(author_hash__in=hashes).update(author_hash="")
    if result.chunks:
        from rag.index_version import index_changed

        index_changed()  # their people, tags and collections leave the filter counts at once
    for holder in _holders.values():
        if holder.forget is not None:
            _add(result, holder.forget(user=user, hashes=hashes, chunk_uids=uids, sources=sources))
    from rag import term_stats

    term_stats.compact()  # the lexemes of their private text leave the BM25 statistics too
    return result


def user_hashes_of(user) -> set[str]:
    """Every pseudonym ``user`` may appear under in the index."""
    return {user_hash(user.pk)} | {legacy_user_hash(user.pk)}


# --- exporting a user's data ---------------------------------------------------------------------


def user_export(*, user) -> dict:
    """Everything knowhub holds about ``user``, as JSON-able data, for an access request: the
    account, their projects, conversations and private chunks, and each app's registered part
    (interactions, judgments, sessions, stored documents). Secrets (password hash, API token)
    are named, never included."""
    from rag.models import Chunk, Conversation

    hashes = user_hashes_of(user)
    out: dict = {
        "user": {
            "id": user.pk, "username": user.get_username(), "email": getattr(user, "email", ""),
            "first_name": getattr(user, "first_name", ""), "last_name": getattr(user, "last_name", ""),
            "is_staff": user.is_staff, "date_joined": user.date_joined, "last_login": user.last_login,
            "has_api_token": hasattr(user, "auth_token"), "pseudonym": user_hash(user.pk),
        },
        "projects": sorted(user.knowhub_projects.values_list("slug", flat=True)),
        "conversations": list(
            Conversation.objects.filter(user=user)
            .order_by("created_at")
            .values("id", "title", "created_at", "updated_at", "deleted_at")
        ),
        "private_chunks": list(
            Chunk.objects.filter(Q(owner_hash__in=hashes) | Q(author_hash__in=hashes))
            .order_by("chunk_uid")
            .values("chunk_uid", "collection", "title", "content", "visibility", "created_at")
        ),
    }  # fmt: skip
    for holder in _holders.values():
        if holder.export is not None:
            out.update(holder.export(user=user, hashes=hashes))
    return out
