"""Skipping the rows that cannot reach a keyword top-n, when a selective filter is applied first.

A row's BM25 score is a sum over the query lexemes it holds, and each lexeme's part stays below
``c·s1`` (its part as the term frequency grows without end; ``rag.text_search.PgTextsearch.prepare``
names the weights). So a row holding only the query's commonest lexemes, whose bounds add up to
``rest``, scores less than ``rest``. Scoring only the rows that hold one of the other, essential,
lexemes gives the exact top-n whenever its n-th score is above ``rest``: no skipped row can beat
it. Otherwise the caller scores every row as before (MaxScore, as search engines prune a
document-at-a-time query).

The common lexemes are the ones most rows hold, and scoring a row costs more than reading it, so
the first pass costs far less. Which lexemes to leave out is a guess made before any row is read:
their bounds together must stay below ``fraction`` of the largest lexeme bound (the rarest word's,
or a word the query repeats), a score the rows that answer best reach easily. A larger fraction
skips more rows and falls back more often; either way the result is the same.
"""

from __future__ import annotations

from rag.text_query import tsquery

# A row holding only skipped lexemes scores strictly below their bound; the margin keeps float
# rounding in the database from turning a tie into a wrong answer.
_MARGIN = 1e-9


def essential_split(lexemes: list[str], s1: list[float], c: float, fraction: float) -> tuple[list[str], float]:
    """(the lexemes a scored row must hold, the bound no row without them reaches). Nothing is
    skipped (``rest`` 0) when ``fraction`` is 0 or no lexeme's bound fits under it."""
    if fraction <= 0 or len(lexemes) < 2:
        return list(lexemes), 0.0
    bounds = sorted((c * weight, lex) for lex, weight in zip(lexemes, s1, strict=True))
    cap = fraction * bounds[-1][0]
    rest = 0.0
    skipped: set[str] = set()
    for bound, lex in bounds[:-1]:  # the strongest lexeme is always essential
        if rest + bound >= cap:
            break
        rest += bound
        skipped.add(lex)
    return [lex for lex in lexemes if lex not in skipped], rest


def complete(rows: list[tuple[int, float]], *, n: int, rest: float) -> bool:
    """Whether the top-n of the essential lexemes' rows is the top-n of all rows: the page is full
    and its last score is above what any skipped row can reach."""
    return len(rows) == n and (n == 0 or rows[-1][1] > rest * (1 + _MARGIN))


def first_pass(params: dict, fraction: float) -> tuple[dict, float]:
    """The parameters of the first pass over a selective filter's rows (``tsq``: the essential
    lexemes of the query ``rag.text_search.PgTextsearch.prepare`` made ``params`` for) and the
    bound no row it skips reaches; ({}, 0) when nothing is skipped (the pass is the whole search)."""
    if not params.get("bm25_exact"):
        return {}, 0.0
    essential, rest = essential_split(params["bm25_lexemes"], params["bm25_s1"], params["bm25_c"], fraction)
    return ({"tsq": tsquery(essential)}, rest) if rest > 0 else ({}, 0.0)
