"""Realm/topic files: the shipped content is complete and self-consistent; imports are idempotent."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from sessions.content import ContentError, load_content
from sessions.guide import keyword_hit, score_answer
from sessions.models import Realm, Topic
from sessions.services import learning_content_import

pytestmark = pytest.mark.django_db


def test_shipped_content_is_substantive():
    realms, topics, _ = load_content()
    assert len(realms) >= 2
    assert len(topics) >= 6
    assert {t["domain"] for t in topics} >= {"javascript", "python", "sql"}
    for realm in realms:
        assert len(realm["symbols"]) >= 12, realm["slug"]
        assert realm["hints"], realm["slug"]
    for topic in topics:
        assert len(topic["entities"]) >= 4, topic["slug"]
        assert all(e.get("gist") for e in topic["entities"]), topic["slug"]
        assert len(topic["truths"]) >= 5, topic["slug"]
        assert len(topic["misconceptions"]) >= 3, topic["slug"]
        assert len(topic["tests"]) >= 4, topic["slug"]


def test_every_expected_answer_meets_its_own_keywords():
    """A test whose expected answer misses its keywords could never be passed in full."""
    _, topics, _ = load_content()
    for topic in topics:
        for test in topic["tests"]:
            for keyword in test.get("keywords", []):
                assert keyword_hit(test["expected"], keyword), (topic["slug"], test["question"][:40], keyword)


def test_expected_answers_score_full_marks(local_embedder):
    _, topics, _ = load_content()
    for topic in topics:
        for test in topic["tests"]:
            result = score_answer(test["expected"], test["expected"], test.get("keywords"), local_embedder)
            assert result.score == pytest.approx(1.0), (topic["slug"], test["question"][:40])


def test_import_is_an_idempotent_upsert_by_slug():
    first = learning_content_import()
    second = learning_content_import()
    assert second.realms_created == second.topics_created == 0
    assert second.realms_updated == second.topics_updated == 0
    assert second.topics_unchanged == first.topics_created + first.topics_updated + first.topics_unchanged
    assert Topic.objects.filter(slug="js-closures").count() == 1

    Topic.objects.filter(slug="sql-joins").update(title="edited in the admin")
    third = learning_content_import()
    assert third.topics_updated == 1
    assert Topic.objects.get(slug="sql-joins").title == "SQL joins"


def test_import_of_a_custom_folder_with_realm_restricted_topic(tmp_path):
    (tmp_path / "realms").mkdir()
    (tmp_path / "topics").mkdir()
    (tmp_path / "realms" / "space.json").write_text(json.dumps({
        "slug": "space", "name": "Space Station",
        "symbols": [{"name": "Airlock", "meaning": "a passage between two pressures"}],
    }))
    (tmp_path / "topics" / "t.json").write_text(json.dumps({
        "slug": "space-only", "title": "Only in space", "domain": "misc", "realms": ["space"],
        "entities": [{"name": "A", "description": "a"}], "truths": ["t"], "misconceptions": [],
        "tests": [{"question": "q", "expected": "e"}],
    }))
    result = learning_content_import(path=tmp_path)
    assert (result.realms_created, result.topics_created) == (1, 1)
    assert list(Topic.objects.get(slug="space-only").realms.values_list("slug", flat=True)) == ["space"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"slug": "x", "title": "X", "domain": "d", "entities": [], "truths": ["t"], "misconceptions": [],
          "tests": [{"question": "q", "expected": "e"}]}, "entities"),
        ({"slug": "x", "title": "X", "domain": "d", "entities": [{"name": "A", "description": "a"}], "truths": ["t"],
          "misconceptions": [], "tests": [{"question": "q"}]}, "expected"),
        ({"slug": "x", "title": "X", "domain": "d", "entities": [{"name": "A", "description": "a"}], "truths": ["t"],
          "misconceptions": [], "tests": [{"question": "q", "expected": "e"}], "realms": ["nowhere"]},
         "unknown realm"),
    ],
)
def test_invalid_files_import_nothing(tmp_path, payload, message):
    good = {"slug": "fine", "title": "Fine", "domain": "d", "entities": [{"name": "A", "description": "a"}],
            "truths": ["t"], "misconceptions": [], "tests": [{"question": "q", "expected": "e"}]}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps(payload))
    with pytest.raises(ContentError, match=message):
        learning_content_import(path=tmp_path)
    assert not Topic.objects.filter(slug__in=["fine", "x"]).exists()


def test_command_reports_json_and_fails_cleanly(tmp_path, capsys):
    call_command("import_learning_content", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["realms_unchanged"] + out["realms_created"] + out["realms_updated"] == Realm.objects.count()
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CommandError, match="invalid JSON"):
        call_command("import_learning_content", str(tmp_path))
