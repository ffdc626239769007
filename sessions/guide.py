"""The session guide: a deterministic state machine, optionally voiced by an LLM.

The structure of a session is always the same and always deterministic: the learner maps each
entity of the topic onto a symbol of the realm, sees the topic's truths become the rules of that
world, judges the misconceptions, then answers the tests, which are scored against the expected
answers with the local embedding model plus a keyword check. The state lives in
``LearningSession.state`` (a JSON dict) and the legend in ``LearningSession.legend``.

Offline, the guide's reply is the text the state machine writes. With an LLM configured
(``LLMGuide``), the same step is taken and the model turns it into a conversational reply
grounded in retrieved course content of the topic's domain, with ``[n]`` citations. Keeping the
structure out of the model's hands means the legend, the score and the artifact never depend on
what the model felt like saying.
"""

from __future__ import annotations

import copy
import logging
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.conf import settings

logger = logging.getLogger(__name__)

PHASES = ("entities", "rules", "misconceptions", "tests", "done")

_SKIP = re.compile(r"^\s*(skip|next|pass|suggest|you choose|you pick|any|idk|i don'?t know|no idea)\b[\s.!]*$", re.I)
_SUGGEST = re.compile(r"^\s*(suggest|you choose|you pick|any|pick one|choose for me)\b", re.I)
_QUESTION = re.compile(
    r"^\s*(what|why|how|when|where|who|which|can|could|does|do|is|are|should|would|explain|tell me)\b.*\?\s*$",
    re.I | re.S,
)
_CUSTOM = re.compile(r"^\s*(?:(?:i(?:'d| would)? (?:choose|pick|take|use)|it'?s|the|a|an)\s+)*(?P<symbol>[^\W\d_][\w' ]{0,40}?)\s*(?:—|–|-|:|,|=|\bbecause\b|\bsince\b|\bas\b)\s*(?P<why>.+)$", re.I | re.S)
_FILLER = re.compile(r"\b(i|i'd|i'll|choose|pick|take|use|the|a|an|it's|its|is|for|this|that|my|symbol|would|will)\b", re.I)
_FALSE = re.compile(r"\b(false|wrong|myth|incorrect|untrue|nope|misconception|not true|not correct|that's not|isn't true|disagree)\b", re.I)
_TRUE = re.compile(r"\b(true|correct|right|agree|yes|yep|indeed)\b", re.I)
_LEADING_FALSE = re.compile(r"^\W*(no|false|wrong|nope|not really|incorrect|myth)\b", re.I)
_LEADING_TRUE = re.compile(r"^\W*(yes|true|correct|right|yep)\b", re.I)


def _clean_reason(text: str) -> str:
    text = re.sub(r"^[\s—–\-:,;=.]+|[\s—–\-:,;=]+$", "", text)
    text = re.sub(r"^(because|since|as|for)\s+", "", text, flags=re.I)
    return re.sub(r"[\s,]*\b(like|as)\s+(a|an|the)\s*$", "", text, flags=re.I).strip()


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters, digits, dots kept inside names like Promise.all)."""
    return re.findall(r"[a-z0-9]+(?:[.'][a-z0-9]+)*", text.lower())


def keyword_hit(answer: str, keyword: str) -> bool:
    """Whether any ``|``-separated alternative of ``keyword`` occurs in ``answer`` as whole words.

    Alternatives are compared as word sequences, so "a c b" matches "A, C, B" and "0 1 4"
    matches "[0, 1, 4]"; a word also matches its plural/verb forms ("reject" ⊂ "rejects").
    """
    tokens = words(answer.replace(".", " "))  # "functools.wraps" also counts as "wraps"
    joined = " " + " ".join(tokens) + " "
    for alt in keyword.split("|"):
        alt_tokens = words(alt.replace(".", " "))
        if not alt_tokens:
            continue
        if " " + " ".join(alt_tokens) + " " in joined:
            return True
        if len(alt_tokens) == 1 and len(alt_tokens[0]) >= 4 and any(t.startswith(alt_tokens[0]) for t in tokens):
            return True
    return False


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(y * y for y in b)) or 1.0
    return dot / (na * nb)


@dataclass
class TestScore:
    """How well an answer matches the expected one."""

    similarity: float
    keyword_coverage: float | None
    score: float
    passed: bool
    missing_keywords: list[str] = field(default_factory=list)


def score_answer(answer: str, expected: str, keywords: list[str] | None, embedder) -> TestScore:
    """Score a test answer: cosine similarity to the expected answer, plus key terms.

    The similarity of all-MiniLM-L6-v2 sits around 0.1–0.3 for unrelated sentences and 0.6–0.9
    for paraphrases, so it is rescaled linearly from [SIM_FLOOR, SIM_CEIL] onto [0, 1]. When the
    test lists keywords (each a ``|``-separated set of alternatives), the similarity is scaled by
    0.4 + 0.6·keyword coverage: similarity alone rewards answers that merely sound like the
    expected one ("it logs 3 because they share n" is 0.78 similar to "it logs 1 because each
    has its own n"), while the key facts decide whether it is right.
    """
    floor = settings.KNOWHUB_SESSIONS_SIM_FLOOR
    ceil = settings.KNOWHUB_SESSIONS_SIM_CEIL
    answer = answer.strip()
    if not answer or _SKIP.match(answer):
        return TestScore(0.0, 0.0 if keywords else None, 0.0, False, list(keywords or []))
    vec_a, vec_e = embedder.embed_documents([answer, expected])
    sim = cosine(vec_a, vec_e)
    sim_score = min(1.0, max(0.0, (sim - floor) / (ceil - floor)))
    if keywords:
        missing = [k for k in keywords if not keyword_hit(answer, k)]
        coverage = 1 - len(missing) / len(keywords)
        score = sim_score * (0.4 + 0.6 * coverage)
    else:
        missing, coverage, score = [], None, sim_score
    return TestScore(round(sim, 4), None if coverage is None else round(coverage, 4), round(score, 4), score >= settings.KNOWHUB_SESSIONS_PASS_SCORE, missing)


@dataclass
class Step:
    """What one learner message did: the reply text, and what changed, for the event log."""

    text: str
    data: dict
    state: dict
    legend: list[dict]
    grounding_query: str = ""  # set when the learner asked a question the guide should look up


class OfflineGuide:
    """The deterministic guide. Pure with respect to the database: it returns new state."""

    def __init__(self, *, embedder=None):
        self._embedder = embedder

    @property
    def embedder(self):
        if self._embedder is None:
            from rag.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    # --- start ---------------------------------------------------------------------------

    def initial_state(self, *, topic: dict, realm: dict) -> dict:
        """The state of a new session, with symbol suggestions ranked per entity by meaning."""
        return {
            "phase": "entities",
            "entity_idx": 0,
            "pending_symbol": None,
            "suggestions": self._suggestions(topic, realm),
            "rules": self.rules_for(topic, []),
            "own_rule": None,
            "misconception_idx": 0,
            "misconception_results": [],
            "test_idx": 0,
            "test_results": [],
            "turns": 0,
        }

    def _suggestions(self, topic: dict, realm: dict) -> dict[str, list[str]]:
        """Three candidate symbols per entity, ranked by how close their meaning is to the
        entity's gist (its behaviour in everyday words, which compares better with a symbol's
        meaning than the technical description does). Top picks are assigned greedily over all
        pairs so no two entities are offered the same first candidate."""
        symbols = realm.get("symbols") or []
        entities = topic.get("entities") or []
        if not symbols or not entities:
            return {}
        sym_vecs = self.embedder.embed_documents([s["meaning"] for s in symbols])
        ent_vecs = self.embedder.embed_documents([e.get("gist") or e["description"] for e in entities])
        sims = [[cosine(ev, sv) for sv in sym_vecs] for ev in ent_vecs]
        first: dict[int, int] = {}
        for _, ei, si in sorted((-sims[ei][si], ei, si) for ei in range(len(entities)) for si in range(len(symbols))):
            if ei not in first and si not in first.values():
                first[ei] = si
        out: dict[str, list[str]] = {}
        for ei, entity in enumerate(entities):
            ranked = sorted(range(len(symbols)), key=lambda si: -sims[ei][si])
            order = [first[ei]] + [si for si in ranked if si != first[ei] and si not in first.values()]
            out[entity["name"]] = [symbols[si]["name"] for si in order[:3]]
        return out

    def opening(self, *, topic: dict, realm: dict, state: dict) -> str:
        hints = realm.get("hints") or []
        hint = f"\n\nTip: {hints[0]}" if hints else ""
        n = len(topic.get("entities") or [])
        return (
            f"Welcome to {realm['name']}! Today's topic is {topic['title']}.\n"
            f"{topic.get('summary', '')}\n\n"
            f"We'll do it in four steps: map the {n} key ideas onto symbols of {realm['name']}, turn the "
            f"facts into the rules of that world, unmask a few misconceptions, then a short test.{hint}\n\n"
            + self._entity_prompt(topic, realm, state, [])
        ).strip()

    # --- one turn ------------------------------------------------------------------------

    def step(self, *, topic: dict, realm: dict, state: dict, legend: list[dict], message: str) -> Step:
        """Apply one learner message; return the reply and the new state (inputs are untouched)."""
        state = copy.deepcopy(state)
        legend = copy.deepcopy(legend)
        state["turns"] = state.get("turns", 0) + 1
        phase = state.get("phase", "entities")
        if _QUESTION.match(message) and not state.get("pending_symbol"):
            return self._question(topic, realm, state, legend, message)
        handler = {
            "entities": self._on_entities,
            "rules": self._on_rules,
            "misconceptions": self._on_misconception,
            "tests": self._on_test,
        }.get(phase)
        if handler is None:
            score = session_score(state)
            text = (
                f"Your map of {topic['title']} is complete (test score {score:.0%}). "
                "Press Finish to get your legend, rules, script and red flags."
            )
            return Step(text, {"phase": "done", "kind": "done"}, state, legend)
        return handler(topic, realm, state, legend, message)

    def _question(self, topic, realm, state, legend, message) -> Step:
        """A question from the learner: answered from the topic notes; the step is then repeated."""
        best = self._closest_note(topic, message)
        text = f"Good question. From the notes on {topic['title']}: {best}" if best else "Good question."
        text += "\n\n" + self.current_prompt(topic, realm, state, legend)
        return Step(text, {"phase": state["phase"], "kind": "question"}, state, legend, grounding_query=message)

    def _closest_note(self, topic: dict, message: str) -> str:
        notes = [f"{e['name']}: {e['description']}" for e in topic.get("entities", [])]
        notes += list(topic.get("truths", []))
        notes += [f"Not \"{m['claim']}\" but: {m['correction']}" for m in topic.get("misconceptions", [])]
        if not notes:
            return ""
        vecs = self.embedder.embed_documents([message, *notes])
        best = max(range(len(notes)), key=lambda i: cosine(vecs[0], vecs[i + 1]))
        return notes[best]

    def current_prompt(self, topic: dict, realm: dict, state: dict, legend: list[dict]) -> str:
        """The question the learner is expected to answer now (repeated after a digression)."""
        phase = state.get("phase")
        if phase == "entities":
            if state.get("pending_symbol"):
                entity = topic["entities"][state["entity_idx"]]
                return f"Why does the {state['pending_symbol']} fit {entity['name']}? One sentence is enough."
            return self._entity_prompt(topic, realm, state, legend)
        if phase == "rules":
            return self._rules_prompt(topic, realm, state)
        if phase == "misconceptions":
            return self._misconception_prompt(topic, realm, state)
        if phase == "tests":
            return self._test_prompt(topic, state)
        return "Everything is mapped. Press Finish to collect your artifact."

    # --- entities ------------------------------------------------------------------------

    def _entity_prompt(self, topic, realm, state, legend) -> str:
        entities = topic["entities"]
        idx = state["entity_idx"]
        entity = entities[idx]
        used = {row["symbol"].lower() for row in legend}
        meanings = {s["name"]: s["meaning"] for s in realm.get("symbols", [])}
        suggestions = [s for s in state.get("suggestions", {}).get(entity["name"], []) if s.lower() not in used]
        lines = [f"Idea {idx + 1} of {len(entities)}: {entity['name']}", entity["description"]]
        if entity.get("gist"):
            lines.append(f"In everyday words: {entity['gist']}.")
        lines.append("")
        lines.append(f"Which symbol of {realm['name']} fits it best?")
        if suggestions:
            lines.append("Candidates: " + "; ".join(f"{s} ({meanings.get(s, '')})" for s in suggestions))
        lines.append("Answer with a symbol and why, e.g. \"" + (suggestions[0] if suggestions else "Lantern") + " — because …\", or say \"suggest\" to take the first candidate.")
        return "\n".join(lines)

    def _parse_symbol(self, realm: dict, message: str) -> tuple[str | None, str]:
        """Find the symbol a learner chose and the reason they gave.

        A realm symbol named anywhere wins (the earliest one); otherwise "X — because Y" /
        "X: Y" names a symbol of the learner's own.
        """
        found: list[tuple[int, str, int]] = []
        for sym in realm.get("symbols", []):
            m = re.search(rf"\b{re.escape(sym['name'])}s?\b", message, re.I)
            if m:
                found.append((m.start(), sym["name"], m.end()))
        if found:
            found.sort()
            start, name, end = found[0]
            # The reason usually follows the symbol ("Lantern — because …"), sometimes precedes it
            # ("it remembers where it came from, like a lantern").
            after = _clean_reason(message[end:])
            before = _clean_reason(message[:start])
            why = after if self._meaningful(after) or not self._meaningful(before) else before
            return name, why
        m = _CUSTOM.match(message)
        if m and len(m.group("symbol").split()) <= 4:
            return m.group("symbol").strip().title(), m.group("why").strip()
        return None, ""

    @staticmethod
    def _meaningful(why: str) -> bool:
        return len([w for w in words(_FILLER.sub(" ", why)) if len(w) > 1]) >= 3

    def _on_entities(self, topic, realm, state, legend, message) -> Step:
        entity = topic["entities"][state["entity_idx"]]
        used = {row["symbol"].lower(): row["entity"] for row in legend}
        pending = state.get("pending_symbol")
        symbol, why = self._parse_symbol(realm, message)
        meanings = {s["name"]: s["meaning"] for s in realm.get("symbols", [])}

        if pending and (symbol is None or symbol == pending):
            symbol, why = pending, why if symbol == pending else message.strip()
        if symbol is None and _SUGGEST.match(message):
            options = [s for s in state.get("suggestions", {}).get(entity["name"], []) if s.lower() not in used]
            options = options or [s["name"] for s in realm.get("symbols", []) if s["name"].lower() not in used]
            if options:
                symbol, why = options[0], meanings.get(options[0], "")
        if symbol is None:
            text = (
                "I didn't catch a symbol there. Name one (from the candidates or your own) and say why it fits.\n\n"
                + self._entity_prompt(topic, realm, state, legend)
            )
            return Step(text, {"phase": "entities", "kind": "no_symbol"}, state, legend)
        if symbol.lower() in used:
            text = (
                f"The {symbol} already stands for {used[symbol.lower()]}; one symbol per idea keeps the legend clear. "
                "Pick another one.\n\n" + self._entity_prompt(topic, realm, state, legend)
            )
            return Step(text, {"phase": "entities", "kind": "symbol_taken"}, state, legend)
        if not self._meaningful(why):
            state["pending_symbol"] = symbol
            text = f"The {symbol} for {entity['name']} — nice. Why does it fit? One sentence is enough."
            return Step(text, {"phase": "entities", "kind": "need_reason", "symbol": symbol}, state, legend)

        state["pending_symbol"] = None
        row = {"entity": entity["name"], "symbol": symbol, "meaning": why.strip()}
        legend.append(row)
        fit = self._fit(entity, why)
        if fit >= 0.45:
            feedback = "That captures it well."
        elif fit >= 0.25:
            feedback = f"Good. Keep in mind what it has to carry: {entity['description']}"
        else:
            feedback = f"An unusual link — make sure the image reminds you that: {entity['description']}"
        state["entity_idx"] += 1
        head = f"Legend: {entity['name']} = {symbol}. {feedback}"
        if state["entity_idx"] < len(topic["entities"]):
            text = head + "\n\n" + self._entity_prompt(topic, realm, state, legend)
        else:
            state["phase"] = "rules"
            state["rules"] = self.rules_for(topic, legend)
            text = head + "\n\nEvery idea has its symbol. " + self._rules_prompt(topic, realm, state)
        return Step(text, {"phase": "entities", "kind": "mapped", "mapping": row, "fit": round(fit, 4)}, state, legend)

    def _fit(self, entity: dict, why: str) -> float:
        a, b = self.embedder.embed_documents([why, f"{entity['name']}: {entity['description']}"])
        return cosine(a, b)

    # --- rules ---------------------------------------------------------------------------

    @staticmethod
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
            r"(?<![\w.])(" + "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True)) + r")(?:s|es)?(?![\w])",
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

    def _rules_prompt(self, topic, realm, state) -> str:
        lines = [f"Here are the laws of {realm['name']} for {topic['title']}:"]
        lines += [f"{i}. {rule}" for i, rule in enumerate(state["rules"], 1)]
        lines.append("")
        lines.append("Pick the rule you most want to remember and say it in your own words, with your symbols (or say \"next\").")
        return "\n".join(lines)

    def _on_rules(self, topic, realm, state, legend, message) -> Step:
        data: dict = {"phase": "rules", "kind": "rule"}
        if _SKIP.match(message):
            head = "Fine — the rules stay in your artifact."
        else:
            truths = topic.get("truths", [])
            vecs = self.embedder.embed_documents([message, *truths])
            sims = [cosine(vecs[0], v) for v in vecs[1:]]
            best = max(range(len(sims)), key=sims.__getitem__)
            state["own_rule"] = {"text": message.strip(), "matches": best + 1, "similarity": round(sims[best], 4)}
            data["own_rule"] = state["own_rule"]
            if sims[best] >= 0.45:
                head = f"That's rule {best + 1}, in your words. It goes into your artifact."
            else:
                head = f"Closest is rule {best + 1}: \"{state['rules'][best]}\". Your version is kept too."
        state["phase"] = "misconceptions"
        if not topic.get("misconceptions"):
            state["phase"] = "tests"
            return Step(head + "\n\n" + self._test_prompt(topic, state), data, state, legend)
        return Step(head + "\n\n" + self._misconception_prompt(topic, realm, state), data, state, legend)

    # --- misconceptions ------------------------------------------------------------------

    def _misconception_prompt(self, topic, realm, state) -> str:
        items = topic["misconceptions"]
        idx = state["misconception_idx"]
        return (
            f"Rumour {idx + 1} of {len(items)}: a traveller in {realm['name']} claims:\n"
            f"\"{items[idx]['claim']}\"\nTrue or false? Say why."
        )

    def verdict(self, message: str, claim: str, correction: str) -> str:
        """'false' when the learner rejects the claim, 'true' when they accept it, else 'unsure'."""
        if _LEADING_FALSE.match(message):
            return "false"
        if _LEADING_TRUE.match(message):
            return "true"
        if _FALSE.search(message):
            return "false"
        if _TRUE.search(message):
            return "true"
        a, c, k = self.embedder.embed_documents([message, claim, correction])
        margin = cosine(a, k) - cosine(a, c)
        return "false" if margin > 0.05 else "unsure"

    def _on_misconception(self, topic, realm, state, legend, message) -> Step:
        item = topic["misconceptions"][state["misconception_idx"]]
        verdict = "unsure" if _SKIP.match(message) else self.verdict(message, item["claim"], item["correction"])
        caught = verdict == "false"
        state["misconception_results"].append({"claim": item["claim"], "answer": message.strip(), "verdict": verdict, "caught": caught})
        if caught:
            head = f"Right, it's a myth. {item['correction']}"
        elif verdict == "true":
            head = f"Careful — that one is a misconception. {item['correction']}"
        else:
            head = f"It's a misconception: {item['correction']}"
        head += "\nAdded to your red flags."
        state["misconception_idx"] += 1
        data = {"phase": "misconceptions", "kind": "misconception", "verdict": verdict, "caught": caught}
        if state["misconception_idx"] < len(topic["misconceptions"]):
            return Step(head + "\n\n" + self._misconception_prompt(topic, realm, state), data, state, legend)
        state["phase"] = "tests"
        return Step(head + "\n\nNow the test. " + self._test_prompt(topic, state), data, state, legend)

    # --- tests ---------------------------------------------------------------------------

    def _test_prompt(self, topic, state) -> str:
        tests = topic["tests"]
        idx = state["test_idx"]
        return f"Question {idx + 1} of {len(tests)}:\n{tests[idx]['question']}"

    def _on_test(self, topic, realm, state, legend, message) -> Step:
        test = topic["tests"][state["test_idx"]]
        result = score_answer(message, test["expected"], test.get("keywords"), self.embedder)
        row = {
            "question": test["question"],
            "answer": message.strip(),
            "expected": test["expected"],
            "similarity": result.similarity,
            "keyword_coverage": result.keyword_coverage,
            "score": result.score,
            "passed": result.passed,
        }
        state["test_results"].append(row)
        if result.score >= 0.75:
            head = f"Well done ({result.score:.0%})."
        elif result.passed:
            head = f"Mostly there ({result.score:.0%})."
        else:
            head = f"Not quite ({result.score:.0%})."
        head += f" The expected answer: {test['expected']}"
        state["test_idx"] += 1
        data = {"phase": "tests", "kind": "test", "result": row}
        if state["test_idx"] < len(topic["tests"]):
            return Step(head + "\n\n" + self._test_prompt(topic, state), data, state, legend)
        state["phase"] = "done"
        score = session_score(state)
        passed = sum(1 for r in state["test_results"] if r["passed"])
        text = (
            f"{head}\n\nThat's the whole map! You passed {passed} of {len(state['test_results'])} questions "
            f"(score {score:.0%}). Press Finish to get your legend, rules, script and red flags."
        )
        return Step(text, data, state, legend)


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


# --- the LLM voice -------------------------------------------------------------------------

GUIDE_SYSTEM = """You are the guide of a learning session in the realm "{realm}". The learner is \
learning "{topic}" ({domain}) by mapping its ideas onto symbols of the realm, so that the \
metaphor helps them remember. Be warm, concise (under 180 words) and precise about the \
technical facts; never contradict the topic notes.

Topic notes:
{notes}

Realm symbols: {symbols}
Legend so far: {legend}

Course excerpts (cite them as [n] when you use them; cite nothing else):
{context}

The session's structured guide has decided the next step. Respond to the learner's last message \
and then carry out this step faithfully, keeping every question it asks (the learner answers it \
next):
---
{step}
---"""


def _format_context(hits) -> str:
    if not hits:
        return "(none found)"
    return "\n".join(f"[{i}] {h.title}: {h.content[:700]}" for i, h in enumerate(hits, 1))


def cited_numbers(text: str, n_hits: int) -> list[int]:
    """The ``[n]`` markers in ``text`` that point at a retrieved excerpt, in order of first use."""
    out: list[int] = []
    for m in re.finditer(r"\[(\d{1,2})\]", text):
        n = int(m.group(1))
        if 1 <= n <= n_hits and n not in out:
            out.append(n)
    return out


class LLMGuide:
    """Voices the deterministic guide's step with a chat model, grounded in course content."""

    def __init__(self, llm):
        self.llm = llm

    def messages(self, *, topic: dict, realm: dict, legend: list[dict], history: list[dict], message: str, step: str, hits) -> list[dict]:
        notes = "\n".join(
            [f"- {e['name']}: {e['description']}" for e in topic.get("entities", [])]
            + [f"- True: {t}" for t in topic.get("truths", [])]
            + [f"- Misconception: {m['claim']} -> {m['correction']}" for m in topic.get("misconceptions", [])]
        )
        system = GUIDE_SYSTEM.format(
            realm=realm.get("name", ""),
            topic=topic.get("title", ""),
            domain=topic.get("domain", ""),
            notes=notes,
            symbols=", ".join(s["name"] for s in realm.get("symbols", [])),
            legend="; ".join(f"{r['entity']} = {r['symbol']}" for r in legend) or "(empty)",
            context=_format_context(hits),
            step=step,
        )
        out = [{"role": "system", "content": system}]
        out += [{"role": h["role"], "content": h["content"]} for h in history[-12:] if h["role"] in ("user", "assistant")]
        out.append({"role": "user", "content": message})
        return out

    def stream(self, **kwargs) -> Iterator[str | object]:
        """Yield text deltas and finally the provider's ``Completion``."""
        yield from self.llm.stream(messages=self.messages(**kwargs), max_tokens=600, temperature=0.4)
