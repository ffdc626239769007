"""The rescorer reads the active ranking weights once per TTL per process, never inside a transaction."""

from __future__ import annotations

import pytest
from django.db import transaction

from feedback import ranking, selectors
from feedback.ranking import RankingWeights


@pytest.mark.django_db(transaction=True)  # autocommit outside ``atomic``, as a request runs
def test_active_weights_are_cached_outside_transactions_only(monkeypatch):
    reads = []

    def read():
        reads.append(1)
        return RankingWeights(w_vec=0.5, w_txt=0.5)

    monkeypatch.setattr(selectors, "active_ranking_weights", read)
    ranking._active_cache.clear()
    with transaction.atomic():  # a configuration written here may be rolled back: read every time
        assert ranking._active_weights() == ranking._active_weights() == RankingWeights(w_vec=0.5, w_txt=0.5)
    assert len(reads) == 2
    ranking._active_weights()
    ranking._active_weights()
    assert len(reads) == 3
    ranking.forget_active_weights()  # a configuration was saved
    ranking._active_weights()
    assert len(reads) == 4
    monkeypatch.setattr(ranking, "ACTIVE_WEIGHTS_SECONDS", 0.0)  # the TTL ran out
    ranking._active_weights()
    assert len(reads) == 5
    ranking._active_cache.clear()
