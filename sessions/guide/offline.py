"""The deterministic guide: one learner message in, the reply and the new state out."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from rag.metrics import cosine
from sessions.grading import SKIP, score_answer
from sessions.guide.progress import session_score
from sessions.guide.prompts import (
    PART_BREAK,
    candidates,
    current_prompt,
    entity_prompt,
    mapping_feedback,
    misconception_prompt,
    opening,
    rules_for,
    rules_prompt,
    test_prompt,
)
from sessions.guide.reading import QUESTION, SUGGEST, meaningful, parse_symbol, stated_verdict
from sessions.guide.roles import shared_role

# How close (cosine) a learner's rule must be to a topic rule it shares a word with to restate it.
RULE_MATCH_MIN = 0.35
# Each word the learner's rule shares with a topic rule (beyond the topic's own names) adds this.
RULE_WORD_BONUS = 0.1
_STOPWORDS = (
    "a an the and or but not no of to in on at by for with from as is are was be been it its this that these "
    "those when then than so if do does did can could will would only just also every each all any some one "
    "two more most very still even before after into onto over under about what which who whom how why there "
    "their they them you your we our i my me he she his her"
)
_STOP = frozenset(_STOPWORDS.split(" "))


def in_plain_words(message: str, legend: list[dict]) -> str:
    """The learner's rule with each legend symbol replaced by the idea it stands for ("The
    Lantern sees the live value" → "Closure sees the live value"), so it compares with the rules."""
    out = message
    for row in sorted(legend, key=lambda r: -len(r["symbol"])):
        out = re.sub(rf"\b(?:the\s+)?{re.escape(row['symbol'])}s?\b", row["entity"], out, flags=re.I)
    return out


def _stems(text: str, ignore: frozenset[str] = frozenset()) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower())
    stems = {(w[:-1] if w.endswith("s") and len(w) > 3 else w)[:5] for w in words if w not in _STOP and len(w) > 2}
    return stems - ignore


def match_rule(message: str, topic: dict, legend: list[dict], embedder) -> int | None:
    """The index of the topic's rule (truth) the learner's rule restates, or None.

    Meaning decides among the rules that share a word with the learner's (beyond the topic's
    own names): an embedding finds "decorators make functions faster" close to any rule about
    decorators, but a restatement also says something the rule says.
    """
    truths = topic.get("truths", [])
    if not truths:
        return None
    plain = in_plain_words(message, legend)
    names = " ".join([topic.get("title", ""), *(e["name"] for e in topic.get("entities", []))])
    ignore = frozenset(_stems(names))
    mine = _stems(plain, ignore)
    shared = [len(mine & _stems(t, ignore)) for t in truths]
    sharing = [i for i in range(len(truths)) if shared[i]]
    if not sharing:
        return None
    vecs = embedder.embed_documents([plain, *truths])
    sims = [cosine(vecs[0], v) for v in vecs[1:]]
    best = max(sharing, key=lambda i: sims[i] + RULE_WORD_BONUS * shared[i])
    return best if sims[best] >= RULE_MATCH_MIN else None


SUGGESTIONS_KEPT = 8  # ranked symbols kept per entity; enough that three stay free as the legend fills


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

    # What the guide says is in ``prompts``; these stay reachable from the guide.
    candidates = staticmethod(candidates)
    rules_for = staticmethod(rules_for)

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
            "rules": rules_for(topic, []),
            "own_rule": None,
            "misconception_idx": 0,
            "misconception_results": [],
            "test_idx": 0,
            "test_results": [],
            "turns": 0,
        }

    def _suggestions(self, topic: dict, realm: dict) -> dict[str, list[str]]:
        """Per entity, the realm's symbols best first by fit: how close a symbol's meaning is to
        the entity's gist (its behaviour in everyday words, which compares better with a
        symbol's meaning than the technical description does). Each prompt offers the best
        three not yet in the legend, in this order, so the first candidate is always the best
        fit still free."""
        symbols = realm.get("symbols") or []
        entities = topic.get("entities") or []
        if not symbols or not entities:
            return {}
        sym_vecs = self.embedder.embed_documents([s["meaning"] for s in symbols])
        ent_vecs = self.embedder.embed_documents([e.get("gist") or e["description"] for e in entities])
        out: dict[str, list[str]] = {}
        for entity, ev in zip(entities, ent_vecs, strict=True):
            sims = [cosine(ev, sv) for sv in sym_vecs]
            # Symbols that play the concept's role come first (a captured variable is kept and
            # carried, so a Lantern before a Gatekeeper); meaning orders within and after them.
            ranked = sorted(range(len(symbols)), key=lambda si: (shared_role(entity, symbols[si]) is None, -sims[si]))
            out[entity["name"]] = [symbols[si]["name"] for si in ranked[: SUGGESTIONS_KEPT]]
        return out

    def opening(self, *, topic: dict, realm: dict, state: dict) -> str:
        return opening(topic=topic, realm=realm, state=state)

    # --- one turn ------------------------------------------------------------------------

    def step(self, *, topic: dict, realm: dict, state: dict, legend: list[dict], message: str) -> Step:
        """Apply one learner message; return the reply and the new state (inputs are untouched)."""
        state = copy.deepcopy(state)
        legend = copy.deepcopy(legend)
        state["turns"] = state.get("turns", 0) + 1
        phase = state.get("phase", "entities")
        if QUESTION.match(message) and not state.get("pending_symbol"):
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
        text += PART_BREAK + current_prompt(topic, realm, state, legend)
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
        return current_prompt(topic, realm, state, legend)

    # --- entities ------------------------------------------------------------------------

    def _on_entities(self, topic, realm, state, legend, message) -> Step:
        entity = topic["entities"][state["entity_idx"]]
        used = {row["symbol"].lower(): row["entity"] for row in legend}
        pending = state.get("pending_symbol")
        symbol, why = parse_symbol(realm, message)
        meanings = {s["name"]: s["meaning"] for s in realm.get("symbols", [])}
        proposed = candidates(state, entity, legend)

        if pending and (symbol is None or symbol == pending):
            symbol, why = pending, why if symbol == pending else message.strip()
        if symbol is None and SUGGEST.match(message):
            options = proposed or [s["name"] for s in realm.get("symbols", []) if s["name"].lower() not in used]
            if options:
                symbol, why = options[0], meanings.get(options[0], "")
                proposed = [symbol]  # the guide's own pick, whether or not it was on the list
        if symbol is None:
            text = (
                "I didn't catch a symbol there. Name one (from my suggestions or your own) and say why it fits."
                + PART_BREAK
                + entity_prompt(topic, realm, state, legend)
            )
            return Step(text, {"phase": "entities", "kind": "no_symbol"}, state, legend)
        if symbol.lower() in used:
            text = (
                f"The {symbol} already stands for {used[symbol.lower()]}; one symbol per idea keeps the legend clear. "
                "Pick another one." + PART_BREAK + entity_prompt(topic, realm, state, legend)
            )
            return Step(text, {"phase": "entities", "kind": "symbol_taken"}, state, legend)
        if not meaningful(why):
            state["pending_symbol"] = symbol
            text = f"The {symbol} for {entity['name']} — nice. Why does it fit? One sentence is enough."
            return Step(text, {"phase": "entities", "kind": "need_reason", "symbol": symbol}, state, legend)

        state["pending_symbol"] = None
        row = {"entity": entity["name"], "symbol": symbol, "meaning": why.strip()}
        if symbol in proposed:
            source = "suggested"
        elif symbol in meanings:
            source = "realm"
        else:
            source = "own"
        legend.append(row)
        fit = self._fit(entity, why)
        feedback = mapping_feedback(
            entity=entity, symbol=symbol, why=why, source=source, fit=fit, meaning=meanings.get(symbol, ""),
            symbol_info=next((s for s in realm.get("symbols", []) if s["name"] == symbol), None),
        )
        state["entity_idx"] += 1
        head = f"Legend: {entity['name']} = {symbol}. {feedback}"
        if state["entity_idx"] < len(topic["entities"]):
            text = head + PART_BREAK + entity_prompt(topic, realm, state, legend)
        else:
            state["phase"] = "rules"
            state["rules"] = rules_for(topic, legend)
            text = head + PART_BREAK + "Every idea has its symbol. " + rules_prompt(topic, realm, state)
        data = {"phase": "entities", "kind": "mapped", "mapping": row, "fit": round(fit, 4), "source": source}
        return Step(text, data, state, legend)

    def _fit(self, entity: dict, why: str) -> float:
        a, b = self.embedder.embed_documents([why, f"{entity['name']}: {entity['description']}"])
        return cosine(a, b)

    # --- rules ---------------------------------------------------------------------------

    def _on_rules(self, topic, realm, state, legend, message) -> Step:
        data: dict = {"phase": "rules", "kind": "rule"}
        if SKIP.match(message):
            head = "Fine — the rules stay in your artifact."
        else:
            best = match_rule(message, topic, legend, self.embedder)
            state["own_rule"] = {"text": message.strip(), "matches": None if best is None else best + 1}
            data["own_rule"] = state["own_rule"]
            if best is not None:
                head = (
                    f"That restates rule {best + 1} (“{state['rules'][best]}”) in your own words: "
                    "your version takes its place in your artifact."
                )
            else:
                head = (
                    "I can't match that to one of the rules above, so check it against them; "
                    "it is kept in your artifact as a rule of your own."
                )
        state["phase"] = "misconceptions"
        if not topic.get("misconceptions"):
            state["phase"] = "tests"
            return Step(head + PART_BREAK + test_prompt(topic, state), data, state, legend)
        return Step(head + PART_BREAK + misconception_prompt(topic, realm, state), data, state, legend)

    # --- misconceptions ------------------------------------------------------------------

    def verdict(self, message: str, claim: str, correction: str) -> str:
        """'false' when the learner rejects the claim, 'true' when they accept it, else 'unsure'."""
        stated = stated_verdict(message)
        if stated:
            return stated
        a, c, k = self.embedder.embed_documents([message, claim, correction])
        margin = cosine(a, k) - cosine(a, c)
        return "false" if margin > 0.05 else "unsure"

    def _on_misconception(self, topic, realm, state, legend, message) -> Step:
        item = topic["misconceptions"][state["misconception_idx"]]
        verdict = "unsure" if SKIP.match(message) else self.verdict(message, item["claim"], item["correction"])
        caught = verdict == "false"
        state["misconception_results"].append(
            {"claim": item["claim"], "answer": message.strip(), "verdict": verdict, "caught": caught}
        )
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
            return Step(head + PART_BREAK + misconception_prompt(topic, realm, state), data, state, legend)
        state["phase"] = "tests"
        return Step(head + PART_BREAK + "Now the test. " + test_prompt(topic, state), data, state, legend)

    # --- tests ---------------------------------------------------------------------------

    def _on_test(self, topic, realm, state, legend, message) -> Step:
        test = topic["tests"][state["test_idx"]]
        result = score_answer(
            message,
            test["expected"],
            test.get("keywords"),
            self.embedder,
            value=test.get("value"),
            misconceptions=topic.get("misconceptions"),
            parts=test.get("parts"),
            refuted_by=test.get("refuted_by"),
        )
        row = {
            "question": test["question"],
            "code": test.get("code", ""),
            "answer": message.strip(),
            "expected": test["expected"],
            "similarity": result.similarity,
            "keyword_coverage": result.keyword_coverage,
            "score": result.score,
            "passed": result.passed,
            "method": result.method,
            "missing": result.missing_parts or result.missing_keywords,
            "explanation": result.explanation,
        }
        state["test_results"].append(row)
        if result.passed:
            head = f"✓ Correct ({result.score:.0%}). {result.explanation}"
        elif result.method == "partial":
            head = f"◐ Half right ({result.score:.0%}). {result.explanation}"
        else:
            head = f"✗ Not quite ({result.score:.0%}). {result.explanation}"
        if not result.passed or result.missing_keywords:
            head += f"\nThe expected answer: {test['expected']}"
        if not result.passed:
            head += "\nThink the grade is unfair? You can contest it on the summary page."
        state["test_idx"] += 1
        data = {"phase": "tests", "kind": "test", "result": row}
        if state["test_idx"] < len(topic["tests"]):
            return Step(head + PART_BREAK + test_prompt(topic, state), data, state, legend)
        state["phase"] = "done"
        score = session_score(state)
        passed = sum(1 for r in state["test_results"] if r["passed"])
        text = (
            f"{head}{PART_BREAK}That's the whole map! You passed {passed} of {len(state['test_results'])} questions "
            f"(score {score:.0%}). Press Finish to get your legend, rules, script and red flags."
        )
        return Step(text, data, state, legend)
