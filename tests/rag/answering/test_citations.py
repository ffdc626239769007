"""Citations are checked against the sources the model was given, also while streaming."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag.answering.citations import CitationFilter, check_citations


def test_invalid_numbers_are_removed_and_used_ones_listed_in_order():
    text, used = check_citations("Closures keep state [2]. Promises settle [9]. Both [2, 1]. Range [1-3].", {1, 2, 3})
    assert text == "Closures keep state [2]. Promises settle. Both [2][1]. Range [1][2][3]."
    assert used == [2, 1, 3]


def test_markdown_links_and_other_brackets_are_left_alone():
    text, used = check_citations("See [the docs](https://x.example) and [note] [1].", {1})
    assert text == "See [the docs](https://x.example) and [note] [1]." and used == [1]


def test_a_citation_split_across_deltas_is_held_until_it_closes():
    f = CitationFilter({1, 2})
    shown = [f.feed(part) for part in ["Hello [", "1", "] world [", "9] end [2", "]"]] + [f.flush()]
    assert shown[0] == "Hello"  # "[" held back
    assert "".join(shown) == "Hello [1] world end [2]"
    assert f.used == [1, 2] and f.removed == [9]


@given(st.lists(st.text(alphabet="ab [],0123456789.", max_size=12), max_size=12))
def test_streaming_gives_the_same_text_as_checking_at_once(parts):
    valid = {1, 2, 3}
    f = CitationFilter(valid)
    streamed = "".join(f.feed(p) for p in parts) + f.flush()
    assert streamed == check_citations("".join(parts), valid)[0]
