"""What the guide says at each step: the opening, the prompt of each phase, the feedback on a
mapping, the rules with their symbols. Text from the topic, the realm and the state only."""

from __future__ import annotations

import re

from sessions.guide.roles import why_it_fits

# A guide message is shown as several bubbles, split at this marker (readable parts, not a wall).
PART_BREAK = "\n\n"


def candidates(state: dict, entity: dict, legend: list[dict], n: int = 3) -> list[str]:
    """The best ``n`` suggested symbols for ``entity`` that the legend does not use yet."""
    used = {row["symbol"].lower() for row in legend}
    return [s for s in state.get("suggestions", {}).get(entity["name"], []) if s.lower() not in used][:n]


def opening(*, topic: dict, realm: dict, state: dict) -> str:
    """The guide's first message: the topic, the four steps, the first idea to map."""
    hints = realm.get("hints") or []
    hint = f"\nTip: {hints[0]}" if hints else ""
    n = len(topic.get("entities") or [])
    return (
        f"Welcome to {realm['name']}! Today's topic is {topic['title']}.\n"
        f"{topic.get('summary', '')}".strip()
        + PART_BREAK
        + f"We'll do it in four steps: map the {n} key ideas onto symbols of {realm['name']}, turn the "
        f"facts into the rules of that world, unmask a few misconceptions, then a short test.{hint}"
        + PART_BREAK
        + entity_prompt(topic, realm, state, [])
    ).strip()


def current_prompt(topic: dict, realm: dict, state: dict, legend: list[dict]) -> str:
    """The question the learner is expected to answer now (repeated after a digression)."""
    phase = state.get("phase")
    if phase == "entities":
        if state.get("pending_symbol"):
            entity = topic["entities"][state["entity_idx"]]
            return f"Why does the {state['pending_symbol']} fit {entity['name']}? One sentence is enough."
        return entity_prompt(topic, realm, state, legend)
    if phase == "rules":
        return rules_prompt(topic, realm, state)
    if phase == "misconceptions":
        return misconception_prompt(topic, realm, state)
    if phase == "tests":
        return test_prompt(topic, state)
    return "Everything is mapped. Press Finish to collect your artifact."


def entity_prompt(topic: dict, realm: dict, state: dict, legend: list[dict]) -> str:
    """The idea to map next, with the best free symbols suggested."""
    entities = topic["entities"]
    idx = state["entity_idx"]
    entity = entities[idx]
    meanings = {s["name"]: s["meaning"] for s in realm.get("symbols", [])}
    suggestions = candidates(state, entity, legend)
    idea = [f"Idea {idx + 1} of {len(entities)}: {entity['name']}", entity["description"]]
    if entity.get("gist"):
        idea.append(f"In everyday words: {entity['gist']}.")
    ask = [f"Which symbol of {realm['name']} fits it best?"]
    if suggestions:
        ask[0] += " My suggestions, best fit first:"
        ask += [f"{i}. {s} — {meanings.get(s, '')}" for i, s in enumerate(suggestions, 1)]
    example = suggestions[0] if suggestions else "Lantern"
    how = (
        f"Answer with a symbol and why, e.g. \"{example} — because …\". Your own symbol is welcome too, "
        "or say \"suggest\" to take my first pick."
    )
    return "\n".join(idea) + PART_BREAK + "\n".join(ask) + PART_BREAK + how


def mapping_feedback(
    *, entity: dict, symbol: str, why: str, source: str, fit: float, meaning: str, symbol_info: dict | None = None
) -> str:
    """Why the mapping works, never a verdict against it.

    A symbol the guide proposed is explained with the link it was chosen for (criticising
    its own pick would contradict it); a symbol of the learner's own, or another symbol of
    the realm, is accepted and tied to what it has to carry, since the best image is the one
    the learner remembers.
    """
    if source == "suggested":
        return why_it_fits(entity=entity, symbol=symbol_info or {"name": symbol, "meaning": meaning})
    if source == "own":
        lead = "Your own symbol: a good choice, since images you invent yourself tend to stick best."
    else:
        lead = "Your pick, and a fine one."
    if fit >= 0.45:
        return f"{lead} Your reason captures it well."
    return f"{lead} Let the image carry the key point: {entity['description']}"


def rules_for(topic: dict, legend: list[dict]) -> list[str]:
    """Each truth, with the first mention of each mapped entity followed by its symbol.

    One pass over an alternation of names (longest first, plurals allowed), so "outer
    function" is never read as the entity "Function" inside "Outer function call".
    """
    symbol_of = {row["entity"].lower(): row["symbol"] for row in legend}
    if not symbol_of:
        return list(topic.get("truths", []))
    variants: dict[str, str] = {}
    for name in symbol_of:
        variants[name] = name
        parts = name.split()
        if len(parts) >= 3:  # "outer function call" is also named "outer function"
            variants.setdefault(" ".join(parts[:-1]), name)
    pattern = re.compile(
        r"(?<![\w.])("
        + "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
        + r")(?:s|es)?(?![\w])",
        re.I,
    )
    rules = []
    for truth in topic.get("truths", []):
        seen: set[str] = set()

        def annotate(m: re.Match, seen=seen) -> str:
            name = variants[m.group(1).lower()]
            if name in seen:
                return m.group(0)
            seen.add(name)
            return f"{m.group(0)} (the {symbol_of[name]})"

        rules.append(pattern.sub(annotate, truth))
    return rules


def rules_prompt(topic: dict, realm: dict, state: dict) -> str:
    lines = [f"Here are the laws of {realm['name']} for {topic['title']}:"]
    lines += [f"{i}. {rule}" for i, rule in enumerate(state["rules"], 1)]
    lines.append("")
    lines.append(
        "Pick the rule you most want to remember and say it in your own words, with your symbols (or say \"next\")."
    )
    return "\n".join(lines)


def misconception_prompt(topic: dict, realm: dict, state: dict) -> str:
    items = topic["misconceptions"]
    idx = state["misconception_idx"]
    return (
        f"Rumour {idx + 1} of {len(items)}: a traveller in {realm['name']} claims:\n"
        f"\"{items[idx]['claim']}\"\nTrue or false? Say why."
    )


def test_prompt(topic: dict, state: dict) -> str:
    tests = topic["tests"]
    idx = state["test_idx"]
    test = tests[idx]
    text = f"Question {idx + 1} of {len(tests)}:\n{test['question']}"
    if test.get("code"):
        # A fenced block: the page shows it as code with its lines kept.
        text += f"\n```\n{test['code']}\n```"
    return text
