"""Where a learner is in a session: the phases, the progress bar, the test score."""

from __future__ import annotations

PHASES = ("entities", "rules", "misconceptions", "tests", "done")


def session_score(state: dict) -> float:
    """The mean test score (0–1) of the answered tests; 0 when none were answered."""
    results = state.get("test_results") or []
    if not results:
        return 0.0
    return round(sum(r["score"] for r in results) / len(results), 4)


def progress(state: dict, topic: dict) -> dict:
    """Where the learner is, for the page's progress bar and the API."""
    phase = state.get("phase", "entities")
    return {
        "phase": phase,
        "phase_index": PHASES.index(phase) if phase in PHASES else 0,
        "entities_mapped": min(state.get("entity_idx", 0), len(topic.get("entities", []))),
        "entities_total": len(topic.get("entities", [])),
        "misconceptions_done": state.get("misconception_idx", 0),
        "misconceptions_total": len(topic.get("misconceptions", [])),
        "tests_answered": len(state.get("test_results", [])),
        "tests_total": len(topic.get("tests", [])),
    }
