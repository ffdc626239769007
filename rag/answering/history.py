"""Stored conversations: the ask page's history list and the threads it reloads.

A conversation row (``rag.Conversation``) names and owns a thread; its turns are the logged asks
carrying its id (``rag.interactions``: feedback's ``Interaction`` rows of kind ``ask``). Reading
a turn re-reads its sources through the caller's current ``Scope``: a chunk deleted or hidden
since the answer was given is left out of the sources and citations (its number stays in the
stored answer text, as said then).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from rag.acl import Scope
from rag.answering.selectors import chunks_by_uid
from rag.answering.sources import collection_label, snippet
from rag.interactions import LoggedTurn, conversation_turn_counts, conversation_turns
from rag.models import Conversation

TITLE_MAX = 200
MAX_TURNS = 200


class ConversationNotFound(Exception):
    """No live conversation with this id belongs to the caller (a 404: never say whose it is)."""


def _title_from(question: str) -> str:
    text = " ".join(question.split())
    return text if len(text) <= 80 else text[:79].rstrip() + "…"


def _owned(user) -> bool:
    return bool(getattr(user, "is_authenticated", False))


# -- selectors ---------------------------------------------------------------------------------


def conversation_id_for_ask(*, user, conversation_id: str | None) -> tuple[str, bool]:
    """The id an ask continues, and whether it continues an earlier thread.

    Another user's id, or one its owner deleted, starts a fresh conversation under a new id, so
    the turns of two people never share a thread and a deleted thread stays closed.
    """
    if not conversation_id:
        return uuid.uuid4().hex, False
    row = Conversation.objects.filter(pk=conversation_id).only("user_id", "deleted_at").first()
    if row is None:
        return conversation_id, True  # a client-chosen id, or one from before conversations were stored
    if row.deleted_at is None and _owned(user) and row.user_id == user.pk:
        return conversation_id, True
    return uuid.uuid4().hex, False


def conversation_visible(*, conversation_id: str, user) -> bool:
    """Whether ``user`` may read the turns logged under ``conversation_id``.

    True for their own live conversation and for ids no conversation row claims (turns logged
    before rows existed are still filtered by their user).
    """
    row = Conversation.objects.filter(pk=conversation_id).only("user_id", "deleted_at").first()
    if row is None:
        return True
    return row.deleted_at is None and _owned(user) and row.user_id == user.pk


def conversation_list(*, user, limit: int = 50, ids: list[str] | None = None) -> list[dict]:
    """The caller's live conversations, most recently continued first, with their turn count."""
    qs = Conversation.objects.filter(user=user, deleted_at__isnull=True)
    if ids is not None:
        qs = qs.filter(pk__in=ids)
    rows = list(qs.order_by("-updated_at", "-created_at")[:limit])
    counts: dict[str, int] = {}
    if rows:
        counts = conversation_turn_counts(user=user, conversation_ids=[r.pk for r in rows])
    return [
        {
            "id": r.pk, "title": r.title, "created_at": r.created_at, "updated_at": r.updated_at,
            "turns": counts.get(r.pk, 0),
        }
        for r in rows
    ]


def conversation_exists(*, user, conversation_id: str) -> bool:
    """Whether ``conversation_id`` is one of the caller's live conversations."""
    return _owned(user) and Conversation.objects.filter(pk=conversation_id, user=user, deleted_at__isnull=True).exists()


def _get(*, user, conversation_id: str) -> Conversation:
    if not _owned(user):
        raise ConversationNotFound(conversation_id)
    row = Conversation.objects.filter(pk=conversation_id, user=user, deleted_at__isnull=True).first()
    if row is None:
        raise ConversationNotFound(conversation_id)
    return row


@dataclass
class _Numbered:
    n: int
    chunk_uid: str
    chunk_uids: tuple[str, ...] = ()
    agenda: str = ""


def _numbered(items: list, fallback: list[str]) -> list[_Numbered]:
    if items:
        return [
            _Numbered(int(i["n"]), i["chunk_uid"], tuple(i.get("chunk_uids") or ()), str(i.get("agenda") or ""))
            for i in items
            if i.get("chunk_uid") and i.get("n")
        ]
    return [_Numbered(n, uid) for n, uid in enumerate(fallback, start=1)]


def _source_dict(n: int, hit, grouped: list, cited: bool, agenda: str = "") -> dict:
    """One document row as the live answer sent it (chunks the caller may still see only)."""
    return {
        "n": n,
        "chunk_uid": hit.chunk_uid,
        "chunk_uids": [h.chunk_uid for h in grouped],
        "chunks": [
            {"chunk_uid": h.chunk_uid, "breadcrumb": h.breadcrumb, "snippet": snippet(h.content)} for h in grouped
        ],
        "snippet": snippet(hit.content),
        "cited": cited,
        "title": hit.title,
        "url": hit.url,
        "ocr": any((h.metadata or {}).get("ocr") for h in grouped),
        "date": hit.date.isoformat() if hit.date else None,
        "collection": hit.collection,
        "collection_label": collection_label(hit.collection),
        "source_type": hit.source_type,
        "source_id": hit.source_id,
        "breadcrumb": hit.breadcrumb,
        "agenda": agenda,
        "content": hit.content,
    }


def _turn(row: LoggedTurn, scope: Scope) -> dict:
    filters = row.filters or {}
    stored = filters.get("turn") or {}
    ranked = [r["chunk_uid"] for r in sorted(row.retrieved or [], key=lambda r: r.get("rank", 0))]
    sources = _numbered(stored.get("sources") or [], ranked)
    wanted = {uid for s in sources for uid in (s.chunk_uid, *s.chunk_uids)}
    by_uid = {h.chunk_uid: h for h in chunks_by_uid(scope=scope, uids=list(wanted))}
    visible = [s for s in sources if s.chunk_uid in by_uid]
    n_of = {s.chunk_uid: s.n for s in visible}
    if stored.get("citations") is not None:
        cited = [c for c in _numbered(stored["citations"], []) if c.chunk_uid in by_uid]
    else:
        cited = [_Numbered(n_of[uid], uid) for uid in (row.selected or []) if uid in n_of]
    turn = {
        "interaction_id": row.pk,
        "question": row.query,
        "answer": None if filters.get("error") else row.answer,
        "error": filters.get("error"),
        "stopped": bool(filters.get("stopped")),
        "strategy": row.strategy,
        "model": row.model,
        "created_at": row.created_at,
        "outcome": row.outcome,
        "sources": [
            _source_dict(
                s.n, by_uid[s.chunk_uid],
                [by_uid[u] for u in (s.chunk_uids or (s.chunk_uid,)) if u in by_uid] or [by_uid[s.chunk_uid]],
                s.n in {c.n for c in cited}, s.agenda,
            )  # fmt: skip
            for s in visible
        ],
        "citations": [
            {
                "n": c.n,
                "chunk_uid": c.chunk_uid,
                "title": by_uid[c.chunk_uid].title,
                "url": by_uid[c.chunk_uid].url,
                "date": by_uid[c.chunk_uid].date.isoformat() if by_uid[c.chunk_uid].date else None,
            }
            for c in cited
        ],
        "count": filters.get("count"),
        "judgments": {
            uid: label for uid, label in (getattr(row, "source_judgments", None) or {}).items() if uid in by_uid
        },
    }
    # Written by the query analysis when it runs; absent on older turns and older branches.
    for key in ("searched_query", "analysis_filters"):
        value = stored.get(key, filters.get(key))
        if value is not None:
            turn[key] = value
    return turn


def conversation_detail(*, user, conversation_id: str, scope: Scope | None = None) -> dict:
    """One of the caller's conversations with its turns, oldest first."""
    row = _get(user=user, conversation_id=conversation_id)
    scope = scope or Scope.for_user(user)
    interactions = conversation_turns(user=user, conversation_id=row.pk, limit=MAX_TURNS)
    return {
        "id": row.pk,
        "title": row.title,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "turns": [_turn(i, scope) for i in interactions],
    }


# -- services ----------------------------------------------------------------------------------


def conversation_touch(*, user, conversation_id: str, question: str) -> Conversation | None:
    """Create the caller's conversation on its first turn (titled by the question), or mark it
    continued. Anonymous asks (commands, evaluation) keep no conversation row."""
    if not _owned(user):
        return None
    now = timezone.now()
    try:
        with transaction.atomic():
            row, created = Conversation.objects.get_or_create(
                pk=conversation_id, defaults={"user": user, "title": _title_from(question) or "Untitled"}
            )
    except IntegrityError:  # two first turns raced: the other one created it
        row, created = Conversation.objects.get(pk=conversation_id), False
    if row.user_id != user.pk:
        return None
    if not created:
        Conversation.objects.filter(pk=row.pk).update(updated_at=now)
    return row


def conversation_rename(*, user, conversation_id: str, title: str) -> Conversation:
    title = " ".join((title or "").split())
    if not title:
        raise ValueError("The title is empty.")
    if len(title) > TITLE_MAX:
        raise ValueError(f"The title is longer than {TITLE_MAX} characters.")
    row = _get(user=user, conversation_id=conversation_id)
    # update(), not save(): renaming must not move the conversation to the top of the history.
    Conversation.objects.filter(pk=row.pk).update(title=title)
    row.title = title
    return row


def conversation_delete(*, user, conversation_id: str) -> None:
    """Hide the conversation from its owner for good; its interactions stay for the feedback loop."""
    row = _get(user=user, conversation_id=conversation_id)
    row.deleted_at = timezone.now()
    row.save(update_fields=["deleted_at"])
