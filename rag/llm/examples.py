"""A request for an example ("give me an example", "show me some code") answered with one the
sources show: a fenced code block is an example no sentence of theirs can quote, and quoting the
prose around it again says nothing new."""

from __future__ import annotations

import re

from rag.llm.context import ContextSource
from rag.words import SHOW_ME_ONE, content_terms

# "What does the code do" asks about code, not for it.
_EXAMPLE_RE = re.compile(
    rf"\b(?:examples?|for instance|code (?:samples?|snippets?))\b|\bshow me (?:the |some |any )?code\b|{SHOW_ME_ONE}",
    re.I,
)
# A fenced block on lines of its own: ```lang … ```.
_FENCE_RE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[ \t]*\n(.*?)\n[ \t]*```[ \t]*$", re.M | re.S)
MAX_EXAMPLE_CHARS = 1200  # a page's worth of code is no example to read in an answer


def asks_example(question: str) -> bool:
    """The question asks to be shown an example, or code."""
    return bool(_EXAMPLE_RE.search(question))


def code_example(sources: list[ContextSource], terms: set[str], already_said: str = "") -> str:
    """The code block the sources hold that shares most of ``terms`` (the question and the
    conversation's subject; among equals, the best-ranked source's first), cited and fenced as
    the source writes it; "" when none does or each was shown already."""
    best = None
    for rank, src in enumerate(sources):
        for i, m in enumerate(_FENCE_RE.finditer(src.text)):
            code = m[2].rstrip()
            if not code.strip() or len(code) > MAX_EXAMPLE_CHARS or code.strip() in already_said:
                continue
            key = (len(terms & content_terms(code)), -rank, -i)
            if best is None or key > best[0]:
                best = (key, src.n, m[1], code)
    if best is None:
        return ""
    _, n, lang, code = best
    return f"An example from [{n}]:\n\n```{lang}\n{code}\n```"
