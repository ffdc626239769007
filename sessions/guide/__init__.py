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

The package, along its seams: ``offline`` (the state machine), ``prompts`` (what it says),
``reading`` (what it reads in a learner's message), ``progress`` (phases and score) and ``llm``
(the model's voice). Grading lives in ``sessions.grading``. Import from here.
"""

from __future__ import annotations

from sessions.grading import TestScore, cosine, keyword_hit, score_answer, words
from sessions.guide.llm import LLMGuide
from sessions.guide.offline import OfflineGuide, Step
from sessions.guide.progress import PHASES, progress, session_score
from sessions.guide.prompts import PART_BREAK

# Grading lives in sessions.grading; these names stay importable from the guide.
__all__ = [
    "PART_BREAK", "PHASES", "LLMGuide", "OfflineGuide", "Step", "TestScore", "cosine", "keyword_hit", "progress",
    "score_answer", "session_score", "words",
]  # fmt: skip
