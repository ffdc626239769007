"""The scenario suite: dialogues typed the way people type, asked through ``POST /rag/ask``.

The dialogues and what each answer must hold live apart from this code, in
``scenarios/ask_scenarios.yaml``. Two corpora: the demo (``rag.demo``) and pages of the Logseq
documentation graph (``../shared/data/logseq-docs``; skipped without it). Real PostgreSQL, the
real local model, the offline (extractive) answerer. The clock is pinned to the day the demo's
relative dates were written for, so "last month" and "in september" land on the same meetings
whatever day the suite runs.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path

import pytest
import yaml

from rag.demo import DEMO_PROJECT, demo_documents
from rag.models import Project
from rag.services import chunk_upsert
from tests.conftest import shared_data

pytestmark = pytest.mark.django_db(transaction=False)

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios" / "ask_scenarios.yaml").read_text(encoding="utf-8"))
DEMO_TODAY = dt.date(2026, 11, 23)
# The pages of the Logseq documentation graph the logseq dialogues ask about, and a few beside
# them that share their words.
LOGSEQ_PAGES = [
    "Flashcards.md", "Macros.md", "Aliases and external links.md", "Logseq Sync.md", "Math Block.md",
    "Keyboard shortcuts.md", "Global config.edn.md", "Cloze.md", "Code block.md", "Headings.md", "Queries.md",
    "Tasks.md", "tutorial.md", "changelog_06.md", "Export.md", "Filename format.md", "faq.org",
]  # fmt: skip


@pytest.fixture
def pinned_today(monkeypatch):
    from django.utils import timezone

    monkeypatch.setattr(timezone, "localdate", lambda *a, **k: DEMO_TODAY)
    return DEMO_TODAY


@pytest.fixture
def users(db, django_user_model):
    from django.core.cache import cache

    cache.clear()
    project = Project.objects.create(slug=DEMO_PROJECT[0], name=DEMO_PROJECT[1])
    member = django_user_model.objects.create_user(username="member", password="pw-member-123")
    outsider = django_user_model.objects.create_user(username="outsider", password="pw-outsider-123")
    project.members.add(member)
    return {"member": member, "outsider": outsider}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\[\d+\]", "", text or "")).strip()


def check_turn(turn: dict, body: dict) -> list[str]:
    """What is wrong with ``body`` (the ask response) for ``turn``; empty when it passes."""
    answer = _norm(body.get("answer") or "")
    refused = not body.get("citations")
    problems = []
    if turn.get("refuse"):
        if not refused:
            problems.append(f"expected a refusal, got {answer[:200]!r}")
    elif refused:
        problems.append(f"refused: {answer[:200]!r}")
    problems += _fact_problems(turn, answer, opening=_norm((body.get("answer") or "").split("\n")[0]))
    searched = (body.get("searched_query") or "").lower()
    for word in turn.get("searched_excludes", []):
        if re.search(rf"\b{re.escape(word.lower())}\b", searched):
            problems.append(f"searched for {body.get('searched_query')!r}, which carries {word!r}")
    if want := turn.get("chip"):
        chips = [c for c in body.get("analysis_filters") or [] if c["field"] == want["field"]]
        if not any(
            c.get("effect") == want.get("effect", c.get("effect"))
            and want.get("label_contains", "") in c.get("label", "")
            for c in chips
        ):
            problems.append(f"no chip like {want}: {chips}")
    return problems


def _fact_problems(turn: dict, answer: str, *, opening: str) -> list[str]:
    """What the answer's text (``opening``: its first paragraph) misses or wrongly says."""
    problems = []
    for fact in turn.get("contains", []):
        if fact.lower() not in answer.lower():
            problems.append(f"missing {fact!r} in {answer[:300]!r}")
    if (any_of := turn.get("contains_any")) and not any(fact.lower() in answer.lower() for fact in any_of):
        problems.append(f"none of {any_of!r} in {answer[:300]!r}")
    if (first := turn.get("opens_with")) and first.lower() not in opening.lower():
        problems.append(f"the first paragraph does not hold {first!r}: {answer[:200]!r}")
    for fact in turn.get("verbatim", []):
        if fact not in answer:
            problems.append(f"missing verbatim {fact!r} in {answer[:300]!r}")
    for fact in turn.get("not_contains", []):
        if fact.lower() in answer.lower():
            problems.append(f"should not say {fact!r}: {answer[:300]!r}")
    return problems


def run_dialogues(client, users: dict, dialogues: list[dict]) -> tuple[int, int, list[str], list[str]]:
    """Every turn asked: (turns passed, turns, failures not known, known failures and fixed ones)."""
    passed = total = 0
    failures: list[str] = []
    known: list[str] = []
    for dialogue in dialogues:
        user = users[dialogue.get("user", "member")]
        client.force_login(user)
        conversation_id = None
        for i, turn in enumerate(dialogue["turns"]):
            payload = {"query": turn["ask"], **(turn.get("filters") or {})}
            if conversation_id:
                payload["conversation_id"] = conversation_id
            response = client.post("/rag/ask", payload, content_type="application/json")
            assert response.status_code == 200, response.content
            body = response.json()
            conversation_id = body.get("conversation_id")
            problems = check_turn(turn, body)
            total += 1
            name = f"{dialogue['id']}[{i}] {turn['ask']!r}"
            if problems:
                (known if turn.get("known_failure") else failures).append(f"{name}: " + "; ".join(problems))
            else:
                passed += 1
                if turn.get("known_failure"):
                    known.append(f"{name}: passes now (known failure: {turn['known_failure']})")
    return passed, total, failures, known


def _report(name: str, passed: int, total: int, failures: list[str], known: list[str]) -> None:
    print(f"\nscenarios {name}: {passed}/{total} turns passed")
    for line in failures:
        print("  FAIL", line)
    for line in known:
        print("  KNOWN", line)


def test_demo_scenarios(client, users, local_embedder, pinned_today):
    from ingestion.demo import load_demo_content

    result = chunk_upsert(documents=demo_documents(DEMO_TODAY), embedder=local_embedder)
    assert not result.errors
    load_demo_content()  # the course pages `make demo` indexes beside the meetings
    passed, total, failures, known = run_dialogues(client, users, SCENARIOS["demo"])
    _report("demo", passed, total, failures, known)
    assert not failures, "\n".join(failures)


def test_logseq_scenarios(client, users, local_embedder, pinned_today, tmp_path):
    from ingestion.services import sync_markdown

    root = shared_data("logseq-docs")
    graph = tmp_path / "graph"
    (graph / "pages").mkdir(parents=True)
    for name in LOGSEQ_PAGES:
        shutil.copy(root / "pages" / name, graph / "pages" / name)
    run = sync_markdown(path=graph, fmt="logseq", collection="logseq-docs", embedder=local_embedder)
    assert run.status == "done", run
    passed, total, failures, known = run_dialogues(client, users, SCENARIOS["logseq"])
    _report("logseq", passed, total, failures, known)
    assert not failures, "\n".join(failures)


def test_a_turn_several_sentences_answer_passes_on_any_of_them():
    turn = {"ask": "is logseq sync encrypted", "contains_any": ["password", "end-to-end"]}

    def body(answer: str) -> dict:
        return {"answer": answer, "citations": [{"n": 1}]}

    assert check_turn(turn, body("Yes, your graph is end-to-end encrypted [1].")) == []
    assert check_turn(turn, body("Each graph is encrypted with a password [1].")) == []
    assert check_turn(turn, body("Your encrypted data is stored on AWS [1].")) != []
