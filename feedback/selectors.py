"""Reads of the feedback app: the review queue, exports, the active ranking and label effects."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, IntegerField, Q, QuerySet, Value, When
from django.db.models.expressions import RawSQL

from feedback.models import Interaction, Judgment, RankingConfig
from feedback.ranking import (
    Candidate,
    LabelledQuery,
    RankingWeights,
    balance,
    document_key,
    feedback_disabled,
    query_terms,
    recency,
    title_match,
)

logger = logging.getLogger(__name__)


# --- ranking ----------------------------------------------------------------------------------


def active_ranking_config() -> RankingConfig | None:
    return RankingConfig.objects.filter(active=True).first()


def active_ranking_weights() -> RankingWeights | None:
    """Weights of the active configuration, or ``None`` for the static hybrid of settings."""
    config = active_ranking_config()
    if config is None:
        return None
    try:
        return RankingWeights.from_dict(config.weights)
    except (TypeError, ValueError):
        logger.error(
            "active ranking config %s has unusable weights %r; ignoring it",
            config.pk,
            config.weights,
        )
        return None


def document_balances(doc_keys: Iterable[str]) -> dict[str, float]:
    """``{document_key: balance}`` over every pointwise judgment on the documents' chunks."""
    keys = [k for k in set(doc_keys) if k]
    if not keys:
        return {}
    rows = (
        Judgment.objects.filter(document_key__in=keys, preferred_over="")
        .values("document_key")
        .annotate(
            pos=Count("id", filter=Q(label=Judgment.Label.POSITIVE)),
            neg=Count("id", filter=Q(label=Judgment.Label.NEGATIVE)),
        )
    )
    return {r["document_key"]: balance(r["pos"], r["neg"]) for r in rows}


def judgment_adjustments(
    *, query_vector: Sequence[float], chunk_uids: Sequence[str], embedding_model: str | None = None
) -> dict[str, float]:
    """Score deltas for candidate chunks labelled on this query or a close paraphrase of it.

    Each judgment on a query with cosine similarity ``s ≥ KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY``
    votes ``±s`` for its chunk (a pair votes + for the preferred chunk, − for the other). A chunk's
    delta is ``vote_balance · max_s`` times ``KNOWHUB_FEEDBACK_LABEL_BOOST`` (when positive) or
    ``KNOWHUB_FEEDBACK_LABEL_PENALTY`` (when negative): bounded whatever the number of labels.

    Plan: the judgment indexes on ``chunk_uid`` / ``preferred_over`` narrow to the candidates'
    labels first; the cosine is then computed on those few interactions only.
    """
    if not chunk_uids:
        return {}
    if embedding_model is None:
        from rag.embeddings import get_embedder

        embedding_model = get_embedder().name
    threshold = settings.KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY
    uids = list(chunk_uids)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT j.chunk_uid, j.preferred_over, j.label, 1 - (i.query_embedding <=> %(q)s::vector) AS sim
            FROM feedback_judgment j JOIN feedback_interaction i ON i.id = j.interaction_id
            WHERE (j.chunk_uid = ANY(%(uids)s) OR (j.preferred_over <> '' AND j.preferred_over = ANY(%(uids)s)))
              AND i.query_embedding IS NOT NULL AND i.query_embedding_model = %(model)s
              AND (i.query_embedding <=> %(q)s::vector) <= %(dist)s
            """,
            {
                "q": str(list(query_vector)),
                "uids": uids,
                "model": embedding_model,
                "dist": 1.0 - threshold,
            },
        )
        rows = cursor.fetchall()
    votes: dict[str, list[float]] = defaultdict(
        lambda: [0.0, 0.0, 0.0]
    )  # signed sum, weight sum, max sim
    candidates = set(uids)

    def vote(uid: str, sign: float, sim: float) -> None:
        if uid not in candidates:
            return
        v = votes[uid]
        v[0] += sign * sim
        v[1] += sim
        v[2] = max(v[2], sim)

    for uid, other, label, sim in rows:
        sim = max(0.0, min(1.0, float(sim)))
        sign = 1.0 if label == Judgment.Label.POSITIVE else -1.0
        if other:
            vote(uid, sign, sim)
            vote(other, -sign, sim)
        else:
            vote(uid, sign, sim)
    deltas = {}
    boost, penalty = settings.KNOWHUB_FEEDBACK_LABEL_BOOST, settings.KNOWHUB_FEEDBACK_LABEL_PENALTY
    for uid, (signed, weight, strength) in votes.items():
        if not weight:
            continue
        net = signed / weight  # −1 … 1
        deltas[uid] = round(net * strength * (boost if net > 0 else penalty), 6)
    return {k: v for k, v in deltas.items() if v}


def _filters_from_dict(data: dict):
    """Rebuild ``SearchFilters`` from an interaction's stored ``filters`` (unknown keys dropped)."""
    from dataclasses import fields

    from rag.search import SearchFilters

    names = {f.name for f in fields(SearchFilters)}
    values = {}
    for key, value in (data or {}).items():
        if key not in names or value in (None, "", []):
            continue
        if key in ("date_from", "date_to") and isinstance(value, str):
            try:
                value = dt.date.fromisoformat(value[:10])
            except ValueError:
                continue
        values[key] = value
    return SearchFilters(**values)


def _normalise_query(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def labelled_queries(
    *,
    interactions: QuerySet | None = None,
    granularity: str = "chunk",
    depth: int | None = None,
    embedder=None,
    progress=None,
) -> list[LabelledQuery]:
    """Distinct labelled queries with their current candidates (plain hybrid) and features.

    Interactions with the same query text are merged; a chunk counts as relevant when its
    positive labels outnumber its negative ones. Queries without a relevant chunk are kept (their
    labels still feed the per-document balance) but have nothing for nDCG to find.
    """
    from rag.acl import Scope
    from rag.search import chunk_search

    qs = interactions if interactions is not None else Interaction.objects.all()
    qs = (
        qs.filter(judgments__isnull=False)
        .distinct()
        .select_related("user")
        .order_by("created_at", "id")
    )
    groups: dict[str, list[Interaction]] = defaultdict(list)
    for interaction in qs:
        groups[_normalise_query(interaction.query)].append(interaction)
    judgments: dict[int, list[Judgment]] = defaultdict(list)
    for j in Judgment.objects.filter(
        interaction__in=[i.pk for g in groups.values() for i in g], preferred_over=""
    ):
        judgments[j.interaction_id].append(j)

    if embedder is None:
        from rag.embeddings import get_embedder

        embedder = get_embedder()
    depth = depth or settings.KNOWHUB_SEARCH_CANDIDATES
    out: list[LabelledQuery] = []
    for group, members in groups.items():
        latest = members[-1]
        chunk_votes: dict[str, int] = defaultdict(int)
        doc_labels: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        chunk_docs: dict[str, str] = {}
        for m in members:
            for j in judgments[m.pk]:
                positive = j.label == Judgment.Label.POSITIVE
                chunk_votes[j.chunk_uid] += 1 if positive else -1
                if j.document_key:
                    doc_labels[j.document_key][0 if positive else 1] += 1
                    chunk_docs[j.chunk_uid] = j.document_key
        vector = (
            list(latest.query_embedding)
            if latest.query_embedding is not None
            and (latest.query_embedding_model == embedder.name)
            else None
        )
        with feedback_disabled():
            result = chunk_search(
                query=latest.query,
                scope=Scope.for_user(latest.user) if latest.user else Scope.everything(),
                filters=_filters_from_dict(latest.filters),
                top_k=depth,
                mode="hybrid",
                embedder=embedder,
                query_vector=vector,
            )
        terms = query_terms(latest.query)
        today = dt.date.today()
        candidates = [
            Candidate(
                chunk_uid=h.chunk_uid,
                doc_key=document_key(h.collection, h.source_type, h.source_id),
                features=(
                    h.vec_score,
                    h.txt_score,
                    title_match(terms, h.title),
                    recency(h.date, today),
                    0.0,
                ),
            )
            for h in result.hits
        ]
        positives = {uid for uid, v in chunk_votes.items() if v > 0}
        if granularity == "document":
            positives = {chunk_docs.get(uid) or uid for uid in positives}
        out.append(
            LabelledQuery(
                group=group,
                query=latest.query,
                candidates=candidates,
                positives=positives,
                interaction_ids=[m.pk for m in members],
                doc_labels={k: (v[0], v[1]) for k, v in doc_labels.items()},
            )
        )
        if progress:
            progress(1)
    return out


# --- review queue -----------------------------------------------------------------------------


def review_queue(
    *,
    outcome: int | None = None,
    collection: str | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    reviewer_id: int | None = None,
    labelled: str | None = None,
) -> QuerySet[Interaction]:
    """Interactions to review: negative outcomes first, then those with unlabelled results.

    ``labelled`` is ``"yes"`` (every retrieved chunk has a label), ``"no"`` (none has),
    ``"partly"``, or ``None`` for all.
    """
    qs = Interaction.objects.annotate(
        n_retrieved=RawSQL("jsonb_array_length(feedback_interaction.retrieved)", []),
        n_labelled=Count(
            "judgments__chunk_uid",
            filter=Q(judgments__preferred_over=""),
            distinct=True,
        ),
    ).annotate(
        needs_review=Case(
            When(outcome=-1, then=Value(0)),
            When(
                n_labelled__lt=RawSQL("jsonb_array_length(feedback_interaction.retrieved)", []),
                then=Value(1),
            ),
            default=Value(2),
            output_field=IntegerField(),
        )
    )
    if outcome is not None:
        qs = qs.filter(outcome=outcome)
    if collection:
        qs = qs.filter(retrieved__contains=[{"collection": collection}])
    if date_from:
        qs = qs.filter(created_at__date__gte=date_from)
    if date_to:
        qs = qs.filter(created_at__date__lte=date_to)
    if reviewer_id:
        qs = qs.filter(
            Q(reviewed_by_id=reviewer_id) | Q(judgments__labelled_by_id=reviewer_id)
        ).distinct()
    if labelled == "yes":
        qs = qs.filter(
            n_labelled__gte=RawSQL("jsonb_array_length(feedback_interaction.retrieved)", []),
            n_labelled__gt=0,
        )
    elif labelled == "no":
        qs = qs.filter(n_labelled=0)
    elif labelled == "partly":
        qs = qs.filter(
            n_labelled__gt=0,
            n_labelled__lt=RawSQL("jsonb_array_length(feedback_interaction.retrieved)", []),
        )
    return qs.order_by("needs_review", "-created_at", "-id")


def interaction_review_rows(interaction: Interaction) -> list[dict]:
    """The retrieved chunks of an interaction with scores, text and current label, for review."""
    from rag.models import Chunk

    retrieved = sorted(interaction.retrieved or [], key=lambda r: r.get("rank") or 0)
    uids = [r.get("chunk_uid") for r in retrieved]
    chunks = {
        c.chunk_uid: c
        for c in Chunk.objects.filter(chunk_uid__in=uids).only(
            "chunk_uid", "title", "content", "url", "collection", "breadcrumb", "deleted_at"
        )
    }
    labels = {
        j.chunk_uid: j
        for j in interaction.judgments.filter(preferred_over="").select_related("labelled_by")
    }
    clicks = set(interaction.clicks.values_list("chunk_uid", flat=True))
    rows = []
    for i, r in enumerate(retrieved):
        uid = r.get("chunk_uid")
        chunk = chunks.get(uid)
        judgment = labels.get(uid)
        rows.append(
            {
                "index": i,
                "chunk_uid": uid,
                "rank": r.get("rank"),
                "score": r.get("score"),
                "vec_score": r.get("vec_score"),
                "txt_score": r.get("txt_score"),
                "collection": r.get("collection") or (chunk.collection if chunk else ""),
                "title": chunk.title if chunk else "",
                "breadcrumb": chunk.breadcrumb if chunk else "",
                "url": chunk.url if chunk else "",
                "snippet": (chunk.content[:400] if chunk else "(chunk no longer in the index)"),
                "deleted": bool(chunk is None or chunk.deleted_at),
                "label": judgment.label if judgment else "",
                "reason": judgment.reason if judgment else "",
                "labelled_by": judgment.labelled_by if judgment else None,
                "labelled_at": judgment.updated_at if judgment else None,
                "selected": uid in (interaction.selected or []),
                "clicked": uid in clicks,
            }
        )
    return rows


# --- exports ----------------------------------------------------------------------------------


def _export_judgments(interactions: QuerySet | None) -> QuerySet[Judgment]:
    qs = Judgment.objects.select_related("interaction", "labelled_by").order_by(
        "interaction_id", "chunk_uid", "id"
    )
    if interactions is not None:
        qs = qs.filter(interaction__in=interactions)
    return qs


def judgments_export_jsonl(
    *, interactions: QuerySet | None = None, with_content: bool = True
) -> Iterator[str]:
    """One JSON line per judgment: query, chunk (uid, title, content), label, who and when."""
    from rag.models import Chunk

    judgments = list(_export_judgments(interactions))
    chunks = {}
    if with_content:
        uids = {j.chunk_uid for j in judgments} | {
            j.preferred_over for j in judgments if j.preferred_over
        }
        chunks = {
            c.chunk_uid: c
            for c in Chunk.objects.filter(chunk_uid__in=uids).only("chunk_uid", "title", "content")
        }
    for j in judgments:
        chunk = chunks.get(j.chunk_uid)
        row = {
            "interaction_id": j.interaction_id,
            "query": j.interaction.query,
            "chunk_uid": j.chunk_uid,
            "label": j.label,
            "preferred_over": j.preferred_over or None,
            "reason": j.reason,
            "labelled_by": j.labelled_by.get_username() if j.labelled_by else None,
            "labelled_at": j.updated_at.isoformat(),
            "outcome": j.interaction.outcome,
        }
        if with_content:
            row["chunk_title"] = chunk.title if chunk else None
            row["chunk_content"] = chunk.content if chunk else None
        yield json.dumps(row, ensure_ascii=False)


def judgments_export_qrels(
    *, interactions: QuerySet | None = None, corpus: str = "judged"
) -> tuple[list[dict], list[tuple[str, str, int]], Iterator[dict]]:
    """The labelled set in BEIR layout: queries, qrels rows and a corpus iterator.

    Query ids are ``q<first interaction id>`` per distinct query text; corpus ids are chunk uids;
    graded 1 for chunks whose positive labels outnumber negative ones, 0 for the others judged.
    ``corpus`` chooses which chunks go into ``corpus.jsonl``: ``judged`` (labelled chunks),
    ``retrieved`` (also every chunk the interactions retrieved, as distractors) or ``none``.
    """
    from rag.models import Chunk

    votes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    query_ids: dict[str, tuple[str, str]] = {}
    retrieved: set[str] = set()
    for j in _export_judgments(interactions).filter(preferred_over=""):
        key = _normalise_query(j.interaction.query)
        if key not in query_ids:
            query_ids[key] = (f"q{j.interaction_id}", j.interaction.query)
        votes[key][j.chunk_uid] += 1 if j.label == Judgment.Label.POSITIVE else -1
        if corpus == "retrieved":
            retrieved.update(r.get("chunk_uid") for r in j.interaction.retrieved or [])
    queries = [{"_id": qid, "text": text} for qid, text in query_ids.values()]
    qrels = [
        (query_ids[key][0], uid, 1 if v > 0 else 0)
        for key, chunk_votes in votes.items()
        for uid, v in sorted(chunk_votes.items())
    ]
    uids = {uid for _, uid, _ in qrels} | retrieved

    def corpus_rows() -> Iterator[dict]:
        if corpus == "none":
            return
        for c in (
            Chunk.objects.filter(chunk_uid__in=uids, deleted_at__isnull=True)
            .order_by("chunk_uid")
            .iterator()
        ):
            yield {"_id": c.chunk_uid, "title": c.title, "text": c.content}

    return queries, qrels, corpus_rows()
