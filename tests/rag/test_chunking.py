from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import split_text

PROSE = (
    "Closures capture variables, not values. A function created inside another keeps a reference "
    "to the outer scope. That is why a loop with var shares one binding.\n\n"
) * 20


def test_short_text_is_one_chunk():
    assert split_text("Hello world.") == ["Hello world."]


def test_empty_text_has_no_chunks():
    assert split_text("   \n\n ") == []


def test_chunks_respect_size_and_overlap():
    chunks = split_text(PROSE, size=300, overlap=80)
    assert len(chunks) > 5
    assert all(len(c) <= 300 for c in chunks)
    # consecutive chunks share text (the overlap)
    shared = sum(1 for a, b in zip(chunks, chunks[1:], strict=False) if b.split("\n\n")[0] in a)
    assert shared >= len(chunks) // 2


def test_never_cuts_mid_word():
    text = " ".join(["supercalifragilistic"] * 200)
    for chunk in split_text(text, size=100, overlap=20):
        assert all(word == "supercalifragilistic" for word in chunk.split())


def test_bad_settings_are_refused():
    import pytest

    with pytest.raises(ValueError):
        split_text("x", size=100, overlap=100)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh .\n", min_size=1, max_size=80), min_size=1, max_size=40))
def test_every_word_survives(parts):
    text = " ".join(parts)
    chunks = split_text(text, size=120, overlap=30)
    assert set(text.split()) == set(" ".join(chunks).split())


def test_a_sentence_is_not_cut_after_an_abbreviation():
    # A paragraph longer than a chunk is cut between sentences; "St." and "U.S." end no sentence.
    para = " ".join(
        ["Johnson was seen as the larger threat, so Vaudreuil sent Dieskau to Fort St. Frédéric to meet it."] * 3
        + ["The U.S. National Science Foundation funded the network for years."] * 3
    )
    chunks = split_text(para, size=120, overlap=0)
    assert not any(c.rstrip().endswith(("St.", "U.S.")) for c in chunks)
    assert sum("Fort St. Frédéric" in c for c in chunks) == 3
