"""The deterministic guide: parsing, phases and scoring with the real local model."""

from __future__ import annotations

import json

import pytest

from sessions.content import DATA_DIR
from sessions.guide import OfflineGuide, keyword_hit, score_answer


@pytest.fixture(scope="module")
def pack():
    topic = json.loads((DATA_DIR / "topics" / "js-closures.json").read_text())
    realm = json.loads((DATA_DIR / "realms" / "fantasy.json").read_text())
    return topic, realm


@pytest.fixture
def guide(local_embedder):
    return OfflineGuide(embedder=local_embedder)


def _start(guide, pack):
    topic, realm = pack
    return guide.initial_state(topic=topic, realm=realm), []


def test_suggestions_offer_distinct_first_candidates_from_the_realm(guide, pack):
    topic, realm = pack
    state, _ = _start(guide, pack)
    names = {s["name"] for s in realm["symbols"]}
    firsts = [state["suggestions"][e["name"]][0] for e in topic["entities"]]
    assert len(set(firsts)) == len(firsts)
    assert all(set(v) <= names and len(v) == 3 for v in state["suggestions"].values())
    # The gist "carries its birthplace along wherever it goes" should find the Lantern.
    assert "Lantern" in state["suggestions"]["Closure"]


def test_symbol_with_reason_is_mapped_and_legend_grows(guide, pack):
    topic, realm = pack
    state, legend = _start(guide, pack)
    step = guide.step(topic=topic, realm=realm, state=state, legend=legend, message="The Wizard, because it does its work every time someone calls it")
    assert step.data["kind"] == "mapped"
    assert step.legend == [{"entity": "Function", "symbol": "Wizard", "meaning": "because it does its work every time someone calls it".removeprefix("because ")}]
    assert step.state["entity_idx"] == 1
    assert "Lexical environment" in step.text
    assert state["entity_idx"] == 0 and legend == []  # inputs untouched


def test_symbol_without_reason_asks_why_then_accepts_the_reason(guide, pack):
    topic, realm = pack
    state, legend = _start(guide, pack)
    first = guide.step(topic=topic, realm=realm, state=state, legend=legend, message="wizard")
    assert first.data["kind"] == "need_reason" and first.legend == []
    second = guide.step(topic=topic, realm=realm, state=first.state, legend=first.legend, message="it casts its spell whenever it is called")
    assert second.legend[0]["symbol"] == "Wizard"
    assert second.legend[0]["meaning"] == "it casts its spell whenever it is called"


def test_own_symbols_and_taken_symbols(guide, pack):
    topic, realm = pack
    state, legend = _start(guide, pack)
    own = guide.step(topic=topic, realm=realm, state=state, legend=legend, message="Snail shell — it carries its home everywhere it goes")
    assert own.legend[0]["symbol"] == "Snail Shell"
    taken = guide.step(topic=topic, realm=realm, state=own.state, legend=own.legend, message="snail shell: same again, it is a home")
    assert taken.data["kind"] == "symbol_taken" and len(taken.legend) == 1
    nothing = guide.step(topic=topic, realm=realm, state=own.state, legend=own.legend, message="hmm")
    assert nothing.data["kind"] == "no_symbol" and nothing.state["entity_idx"] == 1


def test_question_is_answered_from_the_notes_without_advancing(guide, pack):
    topic, realm = pack
    state, legend = _start(guide, pack)
    step = guide.step(topic=topic, realm=realm, state=state, legend=legend, message="Why does var behave differently from let in loops?")
    assert step.data["kind"] == "question"
    assert step.state["entity_idx"] == 0 and step.legend == []
    assert "var creates one binding shared" in step.text
    assert step.grounding_query


def test_rules_name_the_symbols_without_misreading_longer_names(guide, pack):
    topic, _ = pack
    legend = [{"entity": e["name"], "symbol": f"S{i}"} for i, e in enumerate(topic["entities"])]
    rules = OfflineGuide.rules_for(topic, legend)
    assert rules[0].startswith("Every JavaScript function (the S0) closes over")
    assert "outer function (the S4)" in rules[2]  # "Outer function call", not "Function"
    assert "Captured variables (the S3)" in rules[3]


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("False — it keeps a live reference", "false"),
        ("No, the bindings are shared", "false"),
        ("that's a myth", "false"),
        ("True", "true"),
        ("Yes, that's how it works", "true"),
        ("It keeps a live reference to the bindings, so later assignments are visible", "false"),
    ],
)
def test_misconception_verdicts(guide, answer, verdict):
    claim = "A closure copies the values of the outer variables at the moment it is created."
    correction = "A closure keeps a live reference to the bindings, so assignments made later are visible through it."
    assert guide.verdict(answer, claim, correction) == verdict


def test_keyword_alternatives_and_sequences():
    assert keyword_hit("A, C, B — microtasks run after", "a c b")
    assert not keyword_hit("A, B, C", "a c b")
    assert keyword_hit("use functools.wraps(func)", "wraps")
    assert keyword_hit("the promise rejects", "reject|rejected")
    assert not keyword_hit("it logs 2", "1|one")


def test_scoring_separates_right_paraphrased_and_wrong_answers(local_embedder):
    expected = "It logs 1, because each call to makeCounter creates a new environment with its own n, so b has a counter separate from a."
    keywords = ["1|one", "own|separate|new|different"]
    exact = score_answer(expected, expected, keywords, local_embedder)
    paraphrase = score_answer("1 — b got its own fresh n from its own makeCounter call", expected, keywords, local_embedder)
    wrong = score_answer("It logs 3 because a and b share the same counter", expected, keywords, local_embedder)
    unrelated = score_answer("SQL joins pair rows of two tables", expected, keywords, local_embedder)
    blank = score_answer("I don't know", expected, keywords, local_embedder)
    assert exact.passed and exact.score == pytest.approx(1.0)
    assert paraphrase.passed, paraphrase
    assert not wrong.passed, wrong
    assert not unrelated.passed and unrelated.score < 0.2, unrelated
    assert blank.score == 0 and not blank.passed
    assert exact.score > paraphrase.score > wrong.score > unrelated.score


def test_full_walk_reaches_done(guide, pack):
    topic, realm = pack
    state, legend = _start(guide, pack)
    msgs = [f"{state['suggestions'][e['name']][0]} — because it {e['gist']}" for e in topic["entities"]]
    msgs += ["next"] + ["false"] * len(topic["misconceptions"]) + [t["expected"] for t in topic["tests"]]
    phases = []
    for m in msgs:
        step = guide.step(topic=topic, realm=realm, state=state, legend=legend, message=m)
        state, legend = step.state, step.legend
        phases.append(step.data["phase"])
    assert state["phase"] == "done"
    assert [r["entity"] for r in legend] == [e["name"] for e in topic["entities"]]
    assert all(r["caught"] for r in state["misconception_results"])
    assert all(r["passed"] for r in state["test_results"])
    assert phases.index("rules") == len(topic["entities"])
    after = guide.step(topic=topic, realm=realm, state=state, legend=legend, message="anything else?")
    assert "Finish" in after.text
