"""Writes of the feedback app: interactions, judgments (with their history), clicks, ranking configs."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import JSONField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from feedback.models import ClickEvent, GradeContest, Interaction, Judgment, JudgmentLog, RankingConfig
from feedback.ranking import RankingWeights
from rag.acl import Scope
from rag.selectors import chunk_collections, chunk_document_keys

logger = logging.getLogger(__name__)

MAX_JUDGMENTS = 200
MAX_REASON_CHARS = 2000


class FeedbackError(ValueError):
    """Feedback that cannot be stored as given (unknown chunk, bad label…): a 400."""


class NotAResult(FeedbackError):
    """Feedback on a chunk the interaction did not show (nor one the caller can see): a 409."""


class UnknownChunks(FeedbackError):
    """A logged interaction naming chunks that do not exist for the caller: a 404."""


class FeedbackPermissionError(PermissionError):
    """The caller is neither the interaction's user nor staff: a 403."""


class InteractionNotFound(LookupError):
    """No interaction with that id: a 404."""


@dataclass
class FeedbackResult:
    interaction: Interaction
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    judgments: list[Judgment] = field(default_factory=list)


def interaction_record(
    *,
    user,
    kind: str,
    query: str,
    filters: dict,
    hits: list,
    answer: str = "",
    strategy: str = "",
    model: str = "",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    cost_usd: float = 0.0,
    latency_ms: float = 0.0,
    selected: list[str] | None = None,
) -> Interaction:
    """Log one query or ask with what it retrieved (uids, ranks and scores) and answered."""
    retrieved = [
        {
            "chunk_uid": h.chunk_uid,
            "rank": h.rank,
            "score": h.score,
            "vec_score": h.vec_score,
            "txt_score": h.txt_score,
            "collection": h.collection,
        }
        for h in hits
    ]
    domains = {h.domain for h in hits if h.domain}
    return Interaction.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        kind=kind,
        query=query,
        filters=filters,
        retrieved=retrieved,
        selected=selected or [],
        answer=answer,
        strategy=strategy,
        domain=filters.get("domain") or (domains.pop() if len(domains) == 1 else ""),
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd,
        latency_ms=int(latency_ms),
    )


def interactions_delete_of_user(*, user_id: int) -> int:
    """Delete every interaction logged for user ``user_id`` (and, by cascade, its judgments and
    clicks); the number of interactions deleted."""
    _, per_model = Interaction.objects.filter(user_id=user_id).delete()
    return per_model.get(Interaction._meta.label, 0)


# --- permissions and validation ---------------------------------------------------------------


def _is_staff(user) -> bool:
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and (user.is_staff or user.is_superuser)
    )


def interaction_for_feedback(*, user, interaction_id: int, lock: bool = False) -> Interaction:
    """The interaction ``user`` may give feedback on: their own, or any for staff."""
    qs = Interaction.objects.select_for_update() if lock else Interaction.objects.all()
    interaction = qs.filter(pk=interaction_id).first()
    if interaction is None:
        raise InteractionNotFound(f"interaction {interaction_id} does not exist")
    if not _is_staff(user) and (
        interaction.user_id is None or interaction.user_id != getattr(user, "pk", None)
    ):
        raise FeedbackPermissionError(
            "only the interaction's user or staff may give feedback on it"
        )
    return interaction


def visible_chunks(*, user, chunk_uids: set[str]) -> dict[str, str]:
    """``{chunk_uid: document_key}`` of the live chunks among ``chunk_uids`` that ``user`` may see.

    Going through ``Scope`` keeps the existence of a chunk the caller may not see undisclosed.
    """
    if not chunk_uids:
        return {}
    scope = Scope.everything() if user is None else Scope.for_user(user)
    return chunk_document_keys(scope=scope, chunk_uids=chunk_uids)


def _document_keys(chunk_uids: set[str]) -> dict[str, str]:
    return visible_chunks(user=None, chunk_uids=chunk_uids)


def _clean_judgments(judgments: list[dict], *, known: set[str], user) -> list[dict]:
    """Validate every judgment before anything is written; raise ``FeedbackError`` on the first bad one."""
    if len(judgments) > MAX_JUDGMENTS:
        raise FeedbackError(f"at most {MAX_JUDGMENTS} judgments per request")
    cleaned, seen = [], set()
    for i, j in enumerate(judgments):
        uid = (j.get("chunk_uid") or "").strip()
        other = (j.get("preferred_over") or "").strip()
        label = j.get("label") or (Judgment.Label.POSITIVE if other else "")
        reason = j.get("reason") or ""
        if not uid:
            raise FeedbackError(f"judgments[{i}]: chunk_uid is required")
        if label not in Judgment.Label.values:
            raise FeedbackError(
                f"judgments[{i}]: label must be one of {', '.join(Judgment.Label.values)}"
            )
        if other and other == uid:
            raise FeedbackError(f"judgments[{i}]: a chunk cannot be preferred over itself")
        if len(reason) > MAX_REASON_CHARS:
            raise FeedbackError(
                f"judgments[{i}]: reason is longer than {MAX_REASON_CHARS} characters"
            )
        if (uid, other) in seen:
            raise FeedbackError(f"judgments[{i}]: the same chunk is judged twice in one request")
        seen.add((uid, other))
        cleaned.append(
            {"chunk_uid": uid, "preferred_over": other, "label": label, "reason": reason}
        )
    mentioned = {j["chunk_uid"] for j in cleaned} | {
        j["preferred_over"] for j in cleaned if j["preferred_over"]
    }
    unknown = mentioned - known
    if unknown:
        unknown -= set(visible_chunks(user=user, chunk_uids=unknown))
    if unknown:
        raise NotAResult(f"not among the interaction's results: {', '.join(sorted(unknown)[:5])}")
    return cleaned


# --- judgments --------------------------------------------------------------------------------


def judgment_set(
    *,
    interaction: Interaction,
    chunk_uid: str,
    label: str,
    preferred_over: str = "",
    reason: str = "",
    actor=None,
    source: str = "api",
    document_key: str | None = None,
) -> tuple[Judgment, str]:
    """Create or update one judgment (one per interaction, chunk and pair); log what changed.

    Returns the judgment and ``"created"``, ``"updated"`` or ``"unchanged"``.
    """
    if label not in Judgment.Label.values:
        raise FeedbackError(f"label must be one of {', '.join(Judgment.Label.values)}")
    actor = actor if getattr(actor, "is_authenticated", False) else None
    if document_key is None:
        document_key = _document_keys({chunk_uid}).get(chunk_uid, "")
    judgment = (
        Judgment.objects.select_for_update()
        .filter(interaction=interaction, chunk_uid=chunk_uid, preferred_over=preferred_over)
        .first()
    )
    if judgment is None:
        judgment = Judgment.objects.create(
            interaction=interaction,
            chunk_uid=chunk_uid,
            preferred_over=preferred_over,
            label=label,
            reason=reason,
            labelled_by=actor,
            document_key=document_key,
        )
        _log(judgment, JudgmentLog.Action.CREATED, actor=actor, source=source)
        return judgment, "created"
    if judgment.label == label and judgment.reason == reason:
        return judgment, "unchanged"
    previous = judgment.label
    judgment.label = label
    judgment.reason = reason
    judgment.labelled_by = actor
    if document_key:
        judgment.document_key = document_key
    judgment.save(update_fields=["label", "reason", "labelled_by", "document_key", "updated_at"])
    _log(judgment, JudgmentLog.Action.UPDATED, actor=actor, source=source, previous_label=previous)
    return judgment, "updated"


def judgment_delete(*, judgment: Judgment, actor=None, source: str = "admin") -> None:
    """Delete a judgment, keeping a record of who removed which label."""
    actor = actor if getattr(actor, "is_authenticated", False) else None
    _log(
        judgment,
        JudgmentLog.Action.DELETED,
        actor=actor,
        source=source,
        previous_label=judgment.label,
    )
    judgment.delete()


def _log(judgment: Judgment, action: str, *, actor, source: str, previous_label: str = "") -> None:
    JudgmentLog.objects.create(
        interaction_id=judgment.interaction_id,
        judgment=judgment if action != JudgmentLog.Action.DELETED else None,
        chunk_uid=judgment.chunk_uid,
        preferred_over=judgment.preferred_over,
        action=action,
        label=judgment.label if action != JudgmentLog.Action.DELETED else "",
        previous_label=previous_label,
        reason=judgment.reason,
        source=source,
        actor=actor,
    )


def interaction_mark_reviewed(*, interaction: Interaction, reviewer) -> None:
    if _is_staff(reviewer):
        Interaction.objects.filter(pk=interaction.pk).update(
            reviewed_by=reviewer, reviewed_at=timezone.now()
        )


@transaction.atomic
def judgments_apply(
    *, interaction: Interaction, judgments: list[dict], actor, source: str
) -> FeedbackResult:
    """Validate then write a list of judgments on one interaction: all of them or none."""
    known = {r.get("chunk_uid") for r in interaction.retrieved or []} | set(
        interaction.selected or []
    )
    cleaned = _clean_judgments(judgments, known=known, user=actor)
    doc_keys = _document_keys({j["chunk_uid"] for j in cleaned})
    result = FeedbackResult(interaction=interaction)
    for j in cleaned:
        judgment, what = judgment_set(
            interaction=interaction,
            actor=actor,
            source=source,
            document_key=doc_keys.get(j["chunk_uid"], ""),
            **j,
        )
        setattr(result, what, getattr(result, what) + 1)
        result.judgments.append(judgment)
    if cleaned and _is_staff(actor) and actor.pk != interaction.user_id:
        interaction_mark_reviewed(interaction=interaction, reviewer=actor)
    return result


def feedback_submit(
    *,
    user,
    outcome: int | None = None,
    comment: str | None = None,
    judgments: list[dict] | None = None,
    interaction_id: int | None = None,
    interaction: dict | None = None,
    embedder=None,
) -> FeedbackResult:
    """Record an outcome, a comment and judgments on an interaction (an existing one, or one
    described in full by a client that logged its own query).

    Everything is validated before anything is written. Repeating a judgment updates it. An
    outcome of 0 never erases an earlier explicit thumbs up/down (the page sends 0 together with
    per-source labels).
    """
    judgments = judgments or []
    if outcome not in (None, -1, 0, 1):
        raise FeedbackError("outcome must be -1, 0 or 1")
    if (interaction_id is None) == (interaction is None):
        raise FeedbackError("give either interaction_id or interaction")
    with transaction.atomic():
        if interaction_id is not None:
            target = interaction_for_feedback(user=user, interaction_id=interaction_id, lock=True)
        else:
            target = _interaction_from_client(user=user, data=interaction)
        result = judgments_apply(interaction=target, judgments=judgments, actor=user, source="api")
        changed = []
        if (
            outcome is not None
            and (outcome != 0 or target.outcome is None)
            and target.outcome != outcome
        ):
            target.outcome = outcome
            changed.append("outcome")
        if comment is not None and comment != target.comment:
            target.comment = comment
            changed.append("comment")
        if changed:
            target.save(update_fields=[*changed, "updated_at"])
    if judgments:
        interaction_embed_queries(interactions=[target], embedder=embedder)
    return result


def _interaction_from_client(*, user, data: dict) -> Interaction:
    query = (data.get("query") or "").strip()
    if not query:
        raise FeedbackError("interaction.query is required")
    retrieved_uids = [str(u) for u in data.get("retrieved") or []]
    selected = [str(u) for u in data.get("selected") or []]
    mentioned = set(retrieved_uids) | set(selected)
    unknown = mentioned - set(visible_chunks(user=user, chunk_uids=mentioned))
    if unknown:
        raise UnknownChunks(f"unknown chunk_uid(s): {', '.join(sorted(unknown)[:5])}")
    collections = chunk_collections(chunk_uids=mentioned)
    return Interaction.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        kind=data.get("kind") or Interaction.Kind.QUERY,
        query=query,
        answer=data.get("answer") or "",
        retrieved=[
            {"chunk_uid": uid, "rank": i, "collection": collections.get(uid, "")}
            for i, uid in enumerate(retrieved_uids, 1)
        ],
        selected=selected,
        domain=data.get("domain") or "",
        filters=data.get("filters") or {},
    )


def interaction_embed_queries(*, interactions, embedder=None) -> int:
    """Store the query embedding of interactions that lack one (what paraphrase matching needs).

    Best effort: an embedding provider that is down only delays the direct label effect.
    """
    missing = [i for i in interactions if i.query_embedding is None]
    if not missing:
        return 0
    try:
        if embedder is None:
            from rag.embeddings import get_embedder

            embedder = get_embedder()
        vectors = (
            embedder.embed_documents([i.query for i in missing])
            if len(missing) > 1
            else [embedder.embed_query(missing[0].query)]
        )
    except Exception:
        logger.exception(
            "could not embed %s interaction queries; label effects wait for the next try",
            len(missing),
        )
        return 0
    for interaction, vector in zip(missing, vectors, strict=True):
        interaction.query_embedding = vector
        interaction.query_embedding_model = embedder.name
        Interaction.objects.filter(pk=interaction.pk).update(
            query_embedding=vector, query_embedding_model=embedder.name
        )
    return len(missing)


# --- clicks -----------------------------------------------------------------------------------

MAX_RANK = 1000


def click_record(
    *, user, interaction_id: int, chunk_uid: str, rank: int, embedder=None
) -> ClickEvent:
    """Record that ``user`` opened result ``chunk_uid`` shown at ``rank`` of an interaction.

    The interaction's query is embedded (once, best effort) so the click can act as a weak label
    for neighbouring queries.
    """
    with transaction.atomic():
        interaction = interaction_for_feedback(user=user, interaction_id=interaction_id, lock=True)
        retrieved = {r.get("chunk_uid") for r in interaction.retrieved or []}
        if chunk_uid not in retrieved:
            raise NotAResult("chunk_uid was not among this interaction's results")
        if not 1 <= rank <= MAX_RANK:
            raise FeedbackError(f"rank must be between 1 and {MAX_RANK}")
        click = ClickEvent.objects.create(
            interaction=interaction,
            chunk_uid=chunk_uid,
            rank=rank,
            user=user if getattr(user, "is_authenticated", False) else None,
        )
        if chunk_uid not in (interaction.selected or []):
            interaction.selected = [*(interaction.selected or []), chunk_uid]
            interaction.save(update_fields=["selected", "updated_at"])
    interaction_embed_queries(interactions=[interaction], embedder=embedder)
    return click


# --- ranking configurations -------------------------------------------------------------------


@transaction.atomic
def ranking_config_activate(*, config: RankingConfig, user=None) -> RankingConfig:
    """Make ``config`` the one active configuration; the others stay recorded, inactive."""
    RankingWeights.from_dict(config.weights)  # refuse to activate something search cannot use
    list(RankingConfig.objects.select_for_update().filter(active=True))
    RankingConfig.objects.filter(active=True).exclude(pk=config.pk).update(active=False)
    config.active = True
    config.activated_at = timezone.now()
    config.save(update_fields=["active", "activated_at", "updated_at"])
    logger.info(
        "ranking config %s activated by %s: %s",
        config.pk,
        getattr(user, "pk", None),
        config.weights,
    )
    return config


@transaction.atomic
def ranking_config_record(
    *, weights: RankingWeights, metrics: dict, activate: bool, user=None, note: str = ""
) -> RankingConfig:
    """Store a configuration (and make it the active one if ``activate``)."""
    config = RankingConfig.objects.create(
        weights=weights.as_dict(),
        metrics=metrics,
        note=note[:200],
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if activate:
        ranking_config_activate(config=config, user=user)
    return config


@transaction.atomic
def ranking_config_deactivate_all(*, user=None) -> int:
    """Back to the static hybrid of settings (no configuration active)."""
    return RankingConfig.objects.filter(active=True).update(active=False)


# --- personal data (rag.privacy calls this when it forgets a user) ----------------------------


# What a forgotten user's interaction keeps of its filters: which collections were searched and
# how the results were ordered. The rest (conversation id, the question's analysis, tags they
# typed) is theirs.
KEPT_FILTER_KEYS = ("collections", "rerank", "stopped")


def personal_data_forget(*, user, hashes: set[str], chunk_uids: set[str], sources: set) -> dict[str, int]:
    """Forget ``user`` in the feedback data (inside ``rag.privacy.user_forget``'s transaction).

    What they typed goes: the text of their questions and its embedding (an embedding can be
    inverted to much of its text), their comments, the answers given to them, and the parts of
    the filters that came from their question. What is kept is what the learning loop counts
    without knowing who or what was asked: the interaction's kind, time, outcome (thumbs),
    latency, cost and retrieved/selected chunk ids; clicks (chunk and rank); the labels of
    judgments on those chunks (a document's balance of positive and negative labels). A query
    with no text is not re-searched by tuning (``labelled_queries``) nor used as a neighbour by
    the label effect (no embedding).

    Judgments of the user's own chunks (``chunk_uids``, deleted) are deleted; their judgments
    elsewhere keep the label but lose the labeller and the reason.
    """
    judgments_deleted, _ = Judgment.objects.filter(
        Q(chunk_uid__in=chunk_uids) | Q(preferred_over__in=chunk_uids)
    ).delete()
    JudgmentLog.objects.filter(Q(chunk_uid__in=chunk_uids) | Q(preferred_over__in=chunk_uids)).delete()
    theirs = Interaction.objects.filter(user=user)
    # The reason a labeller wrote on the user's own query may quote it.
    Judgment.objects.filter(interaction__in=theirs).update(reason="")
    JudgmentLog.objects.filter(interaction__in=theirs).update(reason="")
    judgments_anonymised = Judgment.objects.filter(labelled_by=user).update(labelled_by=None, reason="")
    JudgmentLog.objects.filter(actor=user).update(actor=None, reason="")
    # Answers may quote the user's private chunks (the ones deleted above) and their question.
    ids = list(theirs.values_list("pk", flat=True))
    interactions = Interaction.objects.filter(pk__in=ids).update(
        user=None, query="", query_embedding=None, query_embedding_model="", comment="", answer="",
        domain="", filters=RawSQL(
            "(SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(filters)"
            " WHERE key = ANY(%s))", (list(KEPT_FILTER_KEYS),), output_field=JSONField(),
        ),
    )  # fmt: skip
    Interaction.objects.filter(reviewed_by=user).update(reviewed_by=None)
    ClickEvent.objects.filter(user=user).update(user=None)
    GradeContest.objects.filter(learner=user).update(learner=None, question="", answer="", reason="")
    GradeContest.objects.filter(reviewed_by=user).update(reviewed_by=None, review_note="")
    return {
        "judgments_deleted": judgments_deleted,
        "judgments_anonymised": judgments_anonymised,
        "interactions": interactions,
    }


def personal_data_export(*, user, hashes: set[str]) -> dict:
    """What the feedback app holds about ``user`` (``manage.py export_user``): their questions
    and answers, feedback, clicks, the judgments they made and their grade contests."""
    return {
        "interactions": list(
            Interaction.objects.filter(user=user).order_by("created_at", "id").values(
                "id", "kind", "created_at", "query", "answer", "filters", "model", "outcome", "comment",
                "selected",
            )
        ),
        "clicks": list(ClickEvent.objects.filter(user=user).order_by("created_at").values(
            "interaction_id", "chunk_uid", "rank", "created_at"
        )),
        "judgments_made": list(Judgment.objects.filter(labelled_by=user).order_by("created_at").values(
            "interaction_id", "chunk_uid", "label", "preferred_over", "reason", "created_at"
        )),
        "grade_contests": list(GradeContest.objects.filter(learner=user).order_by("created_at").values(
            "session_id", "test_index", "question", "answer", "reason", "status", "review_note", "created_at"
        )),
    }  # fmt: skip
