"""The interaction log behind search and ask, as rag sees it: a hook a higher app fills.

Every query and ask is logged with what it retrieved and answered, and an ask's conversation is
read back from its logged turns (``filters["conversation_id"]``). The log is the feedback app's
``Interaction`` table, but rag never imports feedback: feedback registers its implementation in
``FeedbackConfig.ready`` (``register_interaction_log``), as it registers its rescorer with
``rag.search``.

A logged turn is any object with the attributes of ``LoggedTurn``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class LoggedTurn(Protocol):
    """What rag reads of a logged ask."""

    pk: int
    query: str
    filters: dict
    retrieved: list[dict]
    selected: list[str]
    answer: str
    strategy: str
    model: str
    outcome: int | None
    created_at: dt.datetime
    # {chunk_uid: "positive" | "negative"}: the thumbs given to the turn's sources.
    source_judgments: dict[str, str]


@dataclass(frozen=True)
class InteractionLog:
    """The operations rag needs of the log.

    - ``record(*, user, kind, query, filters, hits, answer, strategy, model, prompt_tokens,
      completion_tokens, cost_usd, latency_ms, selected)``: log one query or ask; returns the
      logged row (its ``pk`` is the ``interaction_id`` the client sends feedback with);
    - ``turns(*, user, conversation_id, newest_first, limit)``: the logged asks of ``user``'s
      conversation (anonymous: the asks logged without a user), oldest or newest first;
    - ``turn_counts(*, user, conversation_ids)``: how many asks each conversation has;
    - ``delete_of_user(*, user_id)``: delete everything logged for a user (a bench's own user).
    """

    record: Callable[..., Any]
    turns: Callable[..., list[LoggedTurn]]
    turn_counts: Callable[..., dict[str, int]]
    delete_of_user: Callable[..., Any]


_log: list[InteractionLog] = []


def register_interaction_log(log: InteractionLog) -> None:
    """Set the log (the app that holds it calls this in its ``AppConfig.ready``; idempotent)."""
    _log[:] = [log]


def _registered() -> InteractionLog:
    if not _log:
        raise RuntimeError("No interaction log is registered (is the feedback app installed?).")
    return _log[0]


def interaction_record(**fields) -> Any:
    """Log one query or ask (see ``InteractionLog.record``); returns the logged row."""
    return _registered().record(**fields)


def conversation_turns(*, user, conversation_id: str, newest_first: bool = False, limit: int) -> list[LoggedTurn]:
    """The logged asks of ``user``'s conversation ``conversation_id``, at most ``limit``."""
    return _registered().turns(user=user, conversation_id=conversation_id, newest_first=newest_first, limit=limit)


def conversation_turn_counts(*, user, conversation_ids: list[str]) -> dict[str, int]:
    """``{conversation_id: number of logged asks}`` of ``user``'s conversations (absent: none)."""
    return _registered().turn_counts(user=user, conversation_ids=conversation_ids)


def interactions_delete_of_user(*, user_id: int) -> None:
    """Delete what was logged for user ``user_id`` (a bench's queries are not feedback)."""
    _registered().delete_of_user(user_id=user_id)
