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

from feedback.fitting import (
    Candidate,
    LabelledQuery,
    click_mass,
    click_vote_weight,
    click_weights,
)
from feedback.models import ClickEvent, Interaction, Judgment, RankingConfig
from feedback.ranking import (
    LabelVote,
    RankingWeights,
    balance,
    document_key,
    feedback_disabled,
    label_deltas,
    label_settings,
    query_terms,
    recency,
    title_match,
)

logger = logging.getLogger(__name__)


# --- conversations (the interaction log rag reads through rag.interactions) --------------------


def conversation_turns(*, user, conversation_id: str, newest_first: bool = False, limit: int) -> list[Interaction]:
    """The asks logged under ``conversation_id`` by ``user`` (anonymous: by no user), at most
    ``limit``, oldest or newest first."""
    qs = Interaction.objects.filter(kind=Interaction.Kind.ASK, filters__conversation_id=conversation_id)
    qs = qs.filter(user=user) if getattr(user, "is_authenticated", False) else qs.filter(user__isnull=True)
    order = ("-created_at", "-id") if newest_first else ("created_at", "id")
    rows = list(qs.order_by(*order)[:limit])
    # The thumbs given to each source of a turn, so a reloaded page shows them as they were left.
    labels: dict[int, dict[str, str]] = {}
    for interaction_id, chunk_uid, label in (
        Judgment.objects.filter(interaction__in=rows, preferred_over="")
        .order_by("updated_at")
        .values_list("interaction_id", "chunk_uid", "label")
    ):
        labels.setdefault(interaction_id, {})[chunk_uid] = label
    for row in rows:
        row.source_judgments = labels.get(row.pk, {})
    return rows


def conversation_turn_counts(*, user, conversation_ids: list[str]) -> dict[str, int]:
    """``{conversation_id: asks logged}`` of ``user``'s conversations among ``conversation_ids``."""
    counts: dict[str, int] = {}
    for cid in Interaction.objects.filter(
        user=user, kind=Interaction.Kind.ASK, filters__conversation_id__in=conversation_ids
    ).values_list("filters__conversation_id", flat=True):
        counts[cid] = counts.get(cid, 0) + 1
    return counts


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
    counts = {r["document_key"]: [float(r["pos"]), float(r["neg"])] for r in rows}
    for key, mass in _click_masses(keys).items():
        counts.setdefault(key, [0.0, 0.0])[0] += mass
    return {key: balance(pos, neg) for key, (pos, neg) in counts.items()}


def _click_masses(doc_keys: list[str]) -> dict[str, float]:
    """Clicks on the documents' chunks as weak positives (``feedback.fitting.click_mass``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.collection || ':' || c.source_type || ':' || c.source_id, e.rank
            FROM feedback_clickevent e JOIN rag_chunk c ON c.chunk_uid = e.chunk_uid
            WHERE c.collection || ':' || c.source_type || ':' || c.source_id = ANY(%s)
            """,
            [doc_keys],
        )
        return click_mass(cursor.fetchall())


def judgment_adjustments(
    *, query_vector: Sequence[float], chunk_uids: Sequence[str], embedding_model: str | None = None
) -> dict[str, float]:
    """Score deltas for candidate chunks labelled on this query or a neighbour of it.

    Labels on queries at cosine ``≥ KNOWHUB_FEEDBACK_LABEL_REACH`` vote, with a strength that is
    full from ``KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY`` up and fades to 0 at the reach; the delta
    is bounded by ``KNOWHUB_FEEDBACK_LABEL_BOOST`` / ``KNOWHUB_FEEDBACK_LABEL_PENALTY`` (see
    ``feedback.ranking.label_deltas``).

    Plan: the judgment indexes on ``chunk_uid`` / ``preferred_over`` narrow to the candidates'
    labels first; the cosine is then computed on those few interactions only.
    """
    if not chunk_uids:
        return {}
    if embedding_model is None:
        from rag.embeddings import get_embedder

        embedding_model = get_embedder().name
    knobs = label_settings()
    uids = list(chunk_uids)
    params = {
        "q": str(list(query_vector)),
        "uids": uids,
        "model": embedding_model,
        "dist": 1.0 - knobs["reach"],
    }
    with connection.cursor() as cursor:
        # Judgments and clicks (weak positive votes, debiased by the rank they were clicked at)
        # in one statement, the query vector and the candidates passed once: this runs on every
        # hybrid search, and binding a 384-float vector or a few hundred ids costs more than
        # the lookups on a small feedback table.
        cursor.execute(
            """
            WITH p AS MATERIALIZED (SELECT %(q)s::vector AS v, %(uids)s::text[] AS uids)
            SELECT j.chunk_uid, j.preferred_over, j.label, NULL::int AS rank, 1 - (i.query_embedding <=> p.v) AS sim
            FROM p, feedback_judgment j JOIN feedback_interaction i ON i.id = j.interaction_id
            WHERE (j.chunk_uid = ANY((SELECT uids FROM p)::text[])
                   OR (j.preferred_over <> '' AND j.preferred_over = ANY((SELECT uids FROM p)::text[])))
              AND i.query_embedding IS NOT NULL AND i.query_embedding_model = %(model)s
              AND (i.query_embedding <=> p.v) <= %(dist)s
            UNION ALL
            SELECT e.chunk_uid, '', '', e.rank, 1 - (i.query_embedding <=> p.v)
            FROM p, feedback_clickevent e JOIN feedback_interaction i ON i.id = e.interaction_id
            WHERE e.chunk_uid = ANY((SELECT uids FROM p)::text[])
              AND i.query_embedding IS NOT NULL AND i.query_embedding_model = %(model)s
              AND (i.query_embedding <=> p.v) <= %(dist)s
            """,
            params,
        )
        rows = cursor.fetchall()
    votes = [
        LabelVote(
            chunk_uid=uid,
            sign=1.0 if label == Judgment.Label.POSITIVE else -1.0,
            similarity=float(sim),
            preferred_over=other,
        )
        if rank is None
        else LabelVote(chunk_uid=uid, sign=1.0, similarity=float(sim), weight=click_vote_weight(rank))
        for uid, other, label, rank, sim in rows
    ]
    return label_deltas(votes, uids, **knobs)


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
    """Distinct labelled or clicked queries with their current candidates (plain hybrid) and
    features.

    Interactions with the same query text are merged; a chunk counts as relevant when its
    positive labels outnumber its negative ones; ``preferred_over`` judgments become ordered
    pairs; clicks become position-debiased click rates (``feedback.fitting.click_weights``).
    Queries with nothing of that are kept (their labels still feed the per-document balance) but
    have nothing for the fit to find.
    """
    from rag.acl import Scope
    from rag.search import chunk_search

    qs = interactions if interactions is not None else Interaction.objects.all()
    qs = (
        qs.filter(Q(judgments__isnull=False) | Q(clicks__isnull=False))
        .exclude(query="")  # a forgotten user's question: nothing to search again
        .distinct()
        .select_related("user")
        .order_by("created_at", "id")
    )
    groups: dict[str, list[Interaction]] = defaultdict(list)
    for interaction in qs:
        groups[_normalise_query(interaction.query)].append(interaction)
    ids = [i.pk for g in groups.values() for i in g]
    judgments: dict[int, list[Judgment]] = defaultdict(list)
    pair_judgments: dict[int, list[Judgment]] = defaultdict(list)
    for j in Judgment.objects.filter(interaction__in=ids):
        (pair_judgments if j.preferred_over else judgments)[j.interaction_id].append(j)
    clicks: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for interaction_id, chunk_uid, rank in ClickEvent.objects.filter(
        interaction__in=ids
    ).values_list("interaction_id", "chunk_uid", "rank"):
        clicks[interaction_id].append((chunk_uid, rank))

    if embedder is None:
        from rag.embeddings import get_embedder

        embedder = get_embedder()
    depth = depth or settings.KNOWHUB_SEARCH_CANDIDATES
    out: list[LabelledQuery] = []
    for group, members in groups.items():
        latest = members[-1]
        chunk_votes: dict[str, int] = defaultdict(int)
        doc_labels: dict[str, list[float]] = defaultdict(lambda: [0, 0])
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
        pairs = [
            (j.chunk_uid, j.preferred_over)
            if j.label == Judgment.Label.POSITIVE
            else (j.preferred_over, j.chunk_uid)
            for m in members
            for j in pair_judgments[m.pk]
        ]
        # Clicks: only the interactions that showed results count as impressions.
        shown = [m for m in members if m.retrieved]
        group_clicks = click_weights(
            [c for m in shown for c in clicks[m.pk]], impressions=len(shown)
        )
        docs = {c.chunk_uid: c.doc_key for c in candidates} | chunk_docs
        missing = {u for a, b in pairs for u in (a, b)} | set(group_clicks)
        missing -= set(docs)
        if missing:
            from feedback.services import visible_chunks

            docs |= visible_chunks(user=None, chunk_uids=missing)
        # clicks also count, weakly, toward the documents' judgment balance (as search counts them)
        for uid, mass in click_mass([c for m in shown for c in clicks[m.pk]]).items():
            if docs.get(uid):
                doc_labels[docs[uid]][0] += mass
        if granularity == "document":
            positives = {docs.get(uid) or uid for uid in positives}
            pairs = [(docs.get(a) or a, docs.get(b) or b) for a, b in pairs]
            by_doc: dict[str, float] = defaultdict(float)
            for uid, w in group_clicks.items():
                by_doc[docs.get(uid) or uid] += w
            group_clicks = dict(by_doc)
        out.append(
            LabelledQuery(
                group=group,
                query=latest.query,
                candidates=candidates,
                positives=positives,
                interaction_ids=[m.pk for m in members],
                doc_labels={k: (v[0], v[1]) for k, v in doc_labels.items()},
                pairs=[(a, b) for a, b in pairs if a != b],
                clicks=group_clicks,
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
    qs = (
        Judgment.objects.select_related("interaction", "labelled_by")
        .exclude(interaction__query="")  # a forgotten user's question: a label without a query
        .order_by("interaction_id", "chunk_uid", "id")
    )
    if interactions is not None:
        qs = qs.filter(interaction__in=interactions)
    return qs


# Chunks at this PII level or above (reflections, session artifacts: a person's own words) are
# left out of exports unless the operator asks for them (``include_pii``).
EXPORT_PII_LEVEL = 2


def _pii_uids(uids: set[str]) -> set[str]:
    """Which of ``uids`` hold personal text (pii_level >= EXPORT_PII_LEVEL)."""
    from rag.models import Chunk

    return set(
        Chunk.objects.filter(chunk_uid__in=uids, pii_level__gte=EXPORT_PII_LEVEL).values_list("chunk_uid", flat=True)
    )


def judgments_export_jsonl(
    *, interactions: QuerySet | None = None, with_content: bool = True, include_pii: bool = False
) -> Iterator[str]:
    """One JSON line per judgment: query, chunk (uid, title, content), label, who and when.

    Judgments of chunks with personal text (``pii_level`` >= 2) are left out unless
    ``include_pii``.
    """
    from rag.models import Chunk

    judgments = list(_export_judgments(interactions))
    if not include_pii:
        personal = _pii_uids(
            {j.chunk_uid for j in judgments} | {j.preferred_over for j in judgments if j.preferred_over}
        )
        judgments = [j for j in judgments if j.chunk_uid not in personal and j.preferred_over not in personal]
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
    *, interactions: QuerySet | None = None, corpus: str = "judged", include_pii: bool = False
) -> tuple[list[dict], list[tuple[str, str, int]], Iterator[dict]]:
    """The labelled set in BEIR layout: queries, qrels rows and a corpus iterator.

    Query ids are ``q<first interaction id>`` per distinct query text; corpus ids are chunk uids;
    graded 1 for chunks whose positive labels outnumber negative ones, 0 for the others judged.
    ``corpus`` chooses which chunks go into ``corpus.jsonl``: ``judged`` (labelled chunks),
    ``retrieved`` (also every chunk the interactions retrieved, as distractors) or ``none``.
    Chunks with personal text (``pii_level`` >= 2) are in neither qrels nor corpus unless
    ``include_pii``.
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
    if not include_pii:
        personal = _pii_uids(uids)
        qrels = [row for row in qrels if row[1] not in personal]
        uids -= personal

    def corpus_rows() -> Iterator[dict]:
        if corpus == "none":
            return
        rows = Chunk.objects.filter(chunk_uid__in=uids, deleted_at__isnull=True)
        if not include_pii:
            rows = rows.filter(pii_level__lt=EXPORT_PII_LEVEL)
        for c in rows.order_by("chunk_uid").iterator():
            yield {"_id": c.chunk_uid, "title": c.title, "text": c.content}

    return queries, qrels, corpus_rows()
