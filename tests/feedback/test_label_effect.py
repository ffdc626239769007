"""The direct effect of a label on ranking, with the real model: a negative sinks its chunk for the
query and paraphrases of it, a positive lifts it, unrelated queries are untouched, and it is bounded."""

from __future__ import annotations

import pytest
from django.test import override_settings

from feedback.models import RankingConfig
from feedback.ranking import RankingWeights, label_strength
from feedback.services import feedback_submit, ranking_config_record

from .conftest import record, search, uid

pytestmark = pytest.mark.django_db

QUERY = "how do closures work in javascript"
PARAPHRASE = "explain closures in JavaScript"
UNRELATED = "how do I bake sourdough bread"


def order(query, embedder, **kw):
    return [h.chunk_uid for h in search(query, embedder, **kw).hits]


def scores(query, embedder):
    return {h.chunk_uid: h.score for h in search(query, embedder).hits}


def label(interaction, user, chunk_uid, value, embedder):
    feedback_submit(
        user=user,
        interaction_id=interaction.pk,
        judgments=[{"chunk_uid": chunk_uid, "label": value}],
        embedder=embedder,
    )


def test_a_negative_label_sinks_the_chunk_for_the_query_and_a_paraphrase(real_corpus, user):
    before = order(QUERY, real_corpus)
    before_para = order(PARAPHRASE, real_corpus)
    top = before[0]
    assert before_para[0] == top  # the paraphrase retrieves the same best chunk
    unrelated_before = scores(UNRELATED, real_corpus)

    interaction = record(QUERY, real_corpus, user=user)
    label(interaction, user, top, "negative", real_corpus)

    after = order(QUERY, real_corpus)
    after_para = order(PARAPHRASE, real_corpus)
    assert after.index(top) >= 2 and after[0] != top
    assert after_para.index(top) >= 2
    # everything else keeps its relative order
    assert [u for u in after if u != top] == [u for u in before if u != top]
    # an unrelated query does not move at all
    assert scores(UNRELATED, real_corpus) == unrelated_before


def test_a_positive_label_lifts_the_chunk_but_only_by_the_bounded_boost(real_corpus, user):
    hits = search(QUERY, real_corpus).hits
    target = hits[1]  # the FAQ, a close second: the boost (≤ 0.1) is enough to pass the guide
    assert hits[0].score - target.score < 0.1
    interaction = record(QUERY, real_corpus, user=user)
    label(interaction, user, target.chunk_uid, "positive", real_corpus)
    after = {h.chunk_uid: h for h in search(QUERY, real_corpus).hits}
    lifted = after[target.chunk_uid]
    assert lifted.rank == 1
    delta = lifted.score - target.score
    assert 0 < delta <= 0.1 + 1e-6  # KNOWHUB_FEEDBACK_LABEL_BOOST


def test_no_label_pulls_an_unrelated_chunk_to_the_top(real_corpus, user, staff_user):
    """Many positive labels on the sourdough chunk for a JavaScript question lift it by at most
    the boost: it stays out of the top for that question and does not move for others."""
    before = {h.chunk_uid: h for h in search(QUERY, real_corpus, top_k=10).hits}
    bread = uid("sourdough")
    assert before[bread].rank >= 8
    for who in (user, staff_user):
        interaction = record(QUERY, real_corpus, user=who)
        label(interaction, who, bread, "positive", real_corpus)
    after = {h.chunk_uid: h for h in search(QUERY, real_corpus, top_k=10).hits}
    assert after[bread].score - before[bread].score <= 0.1 + 1e-6
    assert after[bread].rank > 3
    assert order("css grid columns", real_corpus)[0] == uid("css-grid")


def test_labels_only_move_chunks_among_the_candidates(real_corpus, user):
    # the sourdough chunk is outside this filtered search's candidates: labels cannot bring it in
    interaction = record(QUERY, real_corpus, user=user)
    label(interaction, user, uid("sourdough"), "positive", real_corpus)
    from rag.acl import Scope
    from rag.search import SearchFilters, chunk_search

    result = chunk_search(
        query=QUERY, scope=Scope.everything(),
        filters=SearchFilters(collections=["fbtest"], source_ids=["closures-guide", "scope-chain"]),
        top_k=5, query_vector=real_corpus.embed_query(QUERY), embedder=real_corpus,
    )  # fmt: skip
    assert {h.source_id for h in result.hits} == {"closures-guide", "scope-chain"}


def test_the_label_effect_can_be_switched_off(real_corpus, user):
    before = order(QUERY, real_corpus)
    interaction = record(QUERY, real_corpus, user=user)
    label(interaction, user, before[0], "negative", real_corpus)
    with override_settings(KNOWHUB_FEEDBACK_LABEL_EFFECT=False):
        assert order(QUERY, real_corpus) == before
    assert order(QUERY, real_corpus) != before


def test_the_active_ranking_config_drives_hybrid_search(real_corpus):
    plain = search(QUERY, real_corpus).hits
    text_only = [h.chunk_uid for h in search(QUERY, real_corpus, mode="fulltext").hits]
    ranking_config_record(weights=RankingWeights(w_vec=0.0, w_txt=1.0), metrics={}, activate=True)
    tuned = search(QUERY, real_corpus).hits
    assert [h.score for h in tuned] == sorted((h.txt_score for h in tuned), reverse=True)
    assert [h.chunk_uid for h in tuned][:3] == text_only[:3]
    # explicit weights (as evaluate --weights passes) win over the active config
    explicit = search(QUERY, real_corpus, weights=(0.7, 0.3)).hits
    assert [h.chunk_uid for h in explicit] == [h.chunk_uid for h in plain]
    with override_settings(KNOWHUB_FEEDBACK_TUNED_RANKING=False):
        assert [h.score for h in search(QUERY, real_corpus).hits] == [h.score for h in plain]
    RankingConfig.objects.update(active=False)
    assert [h.score for h in search(QUERY, real_corpus).hits] == [h.score for h in plain]


NEIGHBOUR = "what is a closure in programming"  # cosine ≈ 0.66 with QUERY: same topic, other words


def test_label_strength_fades_from_a_paraphrase_to_the_reach():
    assert label_strength(0.9, full=0.85, reach=0.6) == 0.9  # a paraphrase: full strength
    assert label_strength(0.725, full=0.85, reach=0.6) == pytest.approx(0.725 * 0.5)
    assert label_strength(0.59, full=0.85, reach=0.6) == 0.0
    assert label_strength(0.84, full=0.85, reach=0.85) == 0.0  # reach = full: the hard cut
    assert label_strength(0.85, full=0.85, reach=0.85) == 0.85


def test_a_neighbours_label_reaches_as_far_as_the_reach_and_weaker_than_a_paraphrases(
    real_corpus, user
):
    top = order(QUERY, real_corpus)[0]

    def all_scores(q):
        return {h.chunk_uid: h.score for h in search(q, real_corpus, top_k=10).hits}

    before = {q: all_scores(q) for q in (NEIGHBOUR, PARAPHRASE, UNRELATED)}
    label(record(QUERY, real_corpus, user=user), user, top, "negative", real_corpus)

    with override_settings(KNOWHUB_FEEDBACK_LABEL_REACH=0.85):  # paraphrases only
        assert all_scores(NEIGHBOUR) == before[NEIGHBOUR]
    with override_settings(KNOWHUB_FEEDBACK_LABEL_REACH=0.6):
        after = {q: all_scores(q) for q in (NEIGHBOUR, PARAPHRASE, UNRELATED)}
    near = after[NEIGHBOUR][top] - before[NEIGHBOUR][top]
    para = after[PARAPHRASE][top] - before[PARAPHRASE][top]
    assert para < near < 0  # the neighbour's chunk sinks, less than for a paraphrase
    assert near > -0.3 * 0.5  # well within the penalty: a neighbour's label is a hint
    # nothing else moves, and an unrelated query is untouched
    assert {u: s for u, s in after[NEIGHBOUR].items() if u != top} == {
        u: s for u, s in before[NEIGHBOUR].items() if u != top
    }
    assert after[UNRELATED] == before[UNRELATED]


def test_a_click_is_a_weak_label_for_the_query_and_its_paraphrases(real_corpus, user):
    from feedback.services import click_record

    hits = search(PARAPHRASE, real_corpus, top_k=10).hits
    target = hits[2]
    before = {h.chunk_uid: h.score for h in hits}
    unrelated = scores(UNRELATED, real_corpus)
    interaction = record(QUERY, real_corpus, user=user, top_k=10)
    rank = next(r["rank"] for r in interaction.retrieved if r["chunk_uid"] == target.chunk_uid)
    click_record(user=user, interaction_id=interaction.pk, chunk_uid=target.chunk_uid, rank=rank,
                 embedder=real_corpus)  # fmt: skip
    interaction.refresh_from_db()
    assert interaction.query_embedding is not None  # embedded so the click can travel
    after = {h.chunk_uid: h.score for h in search(PARAPHRASE, real_corpus, top_k=10).hits}
    lift = after[target.chunk_uid] - before[target.chunk_uid]
    # a click at rank r counts min(1, 0.3·r) of a positive label: lifted, within the boost
    assert 0 < lift <= 0.1 * min(1.0, 0.3 * rank) + 1e-6
    assert {u: s for u, s in after.items() if u != target.chunk_uid} == {
        u: s for u, s in before.items() if u != target.chunk_uid
    }
    assert scores(UNRELATED, real_corpus) == unrelated
