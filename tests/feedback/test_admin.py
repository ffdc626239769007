"""The review queue in the Django admin: renders, orders, filters, saves labels, bulk actions, restore.

Corpus embedded with the hashing stand-in: these tests are about the admin, not ranking quality.
"""

from __future__ import annotations

import json

import pytest

from feedback.models import Interaction, Judgment, JudgmentLog, RankingConfig
from feedback.ranking import RankingWeights
from feedback.services import feedback_submit, ranking_config_record

from .conftest import record

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/feedback/interaction/"


@pytest.fixture
def staff_client(client, staff_user):
    staff_user.is_superuser = True  # model permissions for the admin
    staff_user.save()
    client.force_login(staff_user)
    return client


@pytest.fixture
def interactions(hashed_corpus, user):
    fine = record("css grid columns", hashed_corpus, user=user)
    bad = record("javascript closures scope", hashed_corpus, user=user, kind="ask")
    feedback_submit(user=user, interaction_id=bad.pk, outcome=-1, embedder=hashed_corpus)
    done = record("sourdough bread", hashed_corpus, user=user)
    feedback_submit(
        user=user, interaction_id=done.pk, outcome=1, embedder=hashed_corpus,
        judgments=[{"chunk_uid": r["chunk_uid"], "label": "positive"} for r in done.retrieved],
    )  # fmt: skip
    for i in (fine, bad, done):
        i.refresh_from_db()
    return {"fine": fine, "bad": bad, "done": done}


def listed(response) -> list[str]:
    return [i.query for i in response.context["cl"].result_list]


def test_queue_puts_negative_outcomes_then_unlabelled_first(staff_client, interactions):
    response = staff_client.get(CHANGELIST)
    assert response.status_code == 200
    assert listed(response) == ["javascript closures scope", "css grid columns", "sourdough bread"]
    assert "5/5" in response.content.decode()  # labelled/retrieved of the fully labelled one


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"outcome__exact": "-1"}, ["javascript closures scope"]),
        ({"labelled": "no"}, ["javascript closures scope", "css grid columns"]),
        ({"labelled": "yes"}, ["sourdough bread"]),
        (
            {"collection": "fbtest"},
            ["javascript closures scope", "css grid columns", "sourdough bread"],
        ),
        ({"collection": "elsewhere"}, []),
        ({"kind__exact": "ask"}, ["javascript closures scope"]),
    ],
)
def test_queue_filters(staff_client, interactions, params, expected):
    response = staff_client.get(CHANGELIST, params)
    assert response.status_code == 200
    assert listed(response) == expected


def test_reviewer_and_date_filters(staff_client, staff_user, interactions):
    bad = interactions["bad"]
    feedback_submit(
        user=staff_user,
        interaction_id=bad.pk,
        judgments=[{"chunk_uid": bad.retrieved[0]["chunk_uid"], "label": "negative"}],
    )
    assert listed(staff_client.get(CHANGELIST, {"reviewer": staff_user.pk})) == [bad.query]
    assert (
        len(listed(staff_client.get(CHANGELIST, {"created_at__gte": "2000-01-01 00:00:00+00:00"})))
        == 3
    )


def test_review_page_shows_query_answer_and_scored_chunks(staff_client, interactions):
    bad = interactions["bad"]
    response = staff_client.get(f"{CHANGELIST}{bad.pk}/change/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "javascript closures scope" in html and "An answer." in html
    for i, row in enumerate(sorted(bad.retrieved, key=lambda r: r["rank"])):
        assert row["chunk_uid"] in html
        assert f'name="label__{i}"' in html
    assert f"{bad.retrieved[0]['score']:.3f}" in html


def change_post(interaction, **extra) -> dict:
    """The change form's POST: editable fields, the judgment inline's management form, panel fields."""
    judgments = list(interaction.judgments.order_by("id"))
    data = {
        "outcome": "" if interaction.outcome is None else str(interaction.outcome),
        "comment": interaction.comment,
        "judgments-TOTAL_FORMS": str(len(judgments)),
        "judgments-INITIAL_FORMS": str(len(judgments)),
        "judgments-MIN_NUM_FORMS": "0",
        "judgments-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for i, j in enumerate(judgments):
        data |= {
            f"judgments-{i}-id": str(j.pk),
            f"judgments-{i}-interaction": str(interaction.pk),
            f"judgments-{i}-label": j.label,
            f"judgments-{i}-reason": j.reason,
        }
    rows = sorted(interaction.retrieved, key=lambda r: r["rank"])
    labels = {j.chunk_uid: j for j in judgments if not j.preferred_over}
    for i, r in enumerate(rows):
        j = labels.get(r["chunk_uid"])
        data |= {
            f"label__{i}": j.label if j else "",
            f"orig_label__{i}": j.label if j else "",
            f"reason__{i}": j.reason if j else "",
            f"orig_reason__{i}": j.reason if j else "",
        }
    data.update(extra)
    return data


def test_saving_labels_from_the_review_panel(staff_client, staff_user, interactions):
    bad = interactions["bad"]
    url = f"{CHANGELIST}{bad.pk}/change/"
    response = staff_client.post(
        url, change_post(bad, label__0="negative", reason__0="off topic", label__1="positive")
    )
    assert response.status_code == 302, (
        response.context["adminform"].form.errors if response.context else response
    )
    labels = {j.chunk_uid: (j.label, j.reason, j.labelled_by) for j in bad.judgments.all()}
    rows = sorted(bad.retrieved, key=lambda r: r["rank"])
    assert labels == {
        rows[0]["chunk_uid"]: ("negative", "off topic", staff_user),
        rows[1]["chunk_uid"]: ("positive", "", staff_user),
    }
    bad.refresh_from_db()
    assert bad.reviewed_by == staff_user and bad.outcome == -1
    assert bad.query_embedding is not None

    # correct one label in the panel, remove the other
    response = staff_client.post(url, change_post(bad, label__0="positive", label__1=""))
    assert response.status_code == 302
    assert {j.chunk_uid: j.label for j in bad.judgments.all()} == {rows[0]["chunk_uid"]: "positive"}
    actions = list(
        JudgmentLog.objects.filter(interaction=bad)
        .order_by("id")
        .values_list("action", "actor__username")
    )
    assert [a for a, _ in actions] == ["created", "created", "updated", "deleted"]
    assert {who for _, who in actions} == {staff_user.username}


def test_correcting_and_deleting_through_the_judgment_inline(staff_client, interactions):
    done = interactions["done"]
    first, second = done.judgments.order_by("id")[:2]
    data = change_post(done)
    index = {j.pk: i for i, j in enumerate(done.judgments.order_by("id"))}
    data[f"judgments-{index[first.pk]}-label"] = "negative"
    data[f"judgments-{index[second.pk]}-DELETE"] = "on"
    response = staff_client.post(f"{CHANGELIST}{done.pk}/change/", data)
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.label == "negative"
    assert not Judgment.objects.filter(pk=second.pk).exists()
    assert JudgmentLog.objects.filter(
        interaction=done, action="deleted", chunk_uid=second.chunk_uid
    ).exists()


def test_bulk_actions_label_and_export(staff_client, interactions):
    bad, fine = interactions["bad"], interactions["fine"]
    response = staff_client.post(
        CHANGELIST, {"action": "label_unlabelled_negative", "_selected_action": [bad.pk, fine.pk]}
    )
    assert response.status_code == 302
    for i in (bad, fine):
        assert i.judgments.filter(label="negative").count() == len(i.retrieved)
    response = staff_client.post(
        CHANGELIST, {"action": "export_jsonl", "_selected_action": [bad.pk]}
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    rows = [json.loads(line) for line in response.content.decode().splitlines()]
    assert len(rows) == len(bad.retrieved)
    assert {r["query"] for r in rows} == {bad.query} and {r["label"] for r in rows} == {"negative"}
    assert all(r["chunk_content"] for r in rows)
    response = staff_client.post(
        CHANGELIST, {"action": "clear_judgments", "_selected_action": [fine.pk]}
    )
    assert not fine.judgments.exists() and bad.judgments.exists()


def test_ranking_config_restore_action(staff_client):
    old = ranking_config_record(
        weights=RankingWeights(w_vec=0.5, w_txt=0.5),
        metrics={"validation": {"before": 0.5, "after": 0.6}},
        activate=True,
    )
    new = ranking_config_record(
        weights=RankingWeights(w_vec=0.8, w_txt=0.2), metrics={}, activate=True
    )
    response = staff_client.get("/admin/feedback/rankingconfig/")
    assert response.status_code == 200 and "0.5 → <b>0.6</b>" in response.content.decode()
    response = staff_client.post(
        "/admin/feedback/rankingconfig/", {"action": "restore", "_selected_action": [old.pk]}
    )
    assert response.status_code == 302
    assert list(RankingConfig.objects.filter(active=True)) == [old]
    new.refresh_from_db()
    assert not new.active
    # two at once is refused
    staff_client.post(
        "/admin/feedback/rankingconfig/",
        {"action": "restore", "_selected_action": [old.pk, new.pk]},
    )
    assert list(RankingConfig.objects.filter(active=True)) == [old]


def test_non_staff_cannot_open_the_queue(client, user, interactions):
    client.force_login(user)
    response = client.get(CHANGELIST)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert Interaction.objects.count() == 3


def test_ranking_config_page_shows_each_weight_with_its_confidence(staff_client, monkeypatch):
    """After tune_ranking, the configuration's page lists every weight next to the default, the
    folds' mean ± sd and how many folds agreed, and the held-out gain per fold."""
    from feedback.tuning import ranking_tune
    from tests.feedback.test_tuning import TITLE_HELPS, query

    # the labelled queries are synthetic here: this test is about what the admin shows
    monkeypatch.setattr(
        "feedback.selectors.labelled_queries",
        lambda **kw: [query(f"g{i}", TITLE_HELPS) for i in range(10)],
    )
    report = ranking_tune(seed=0)
    assert report.status == "activated"
    listing = staff_client.get("/admin/feedback/rankingconfig/").content.decode()
    assert "gain on 5/5" in listing
    page = staff_client.get(f"/admin/feedback/rankingconfig/{report.config_id}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "Weights and confidence" in html and "folds (mean ± sd)" in html
    title_row = html[html.index("<td>title</td>") :].split("</tr>")[0]
    assert f"<b>{report.after['w_title']:g}</b>" in title_row
    assert "high: 100% of folds agree" in title_row
    assert html.count("<tr><td>") >= 5 + 5  # five weights, five folds
