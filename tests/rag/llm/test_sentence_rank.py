"""The written-sentence ranker: the sentence that restates the question's words, in its order,
around the fact asked for, outranks one that merely shares the words."""

from __future__ import annotations

from rag.llm.context import ContextSource
from rag.llm.extractive import ExtractiveLLM
from rag.llm.sentence_rank import word_fit

ANSWERS = "The Warsaw stock exchange was founded by Jan Kowalski in 1817."
SHARES_WORDS = "Stock prices in Warsaw rose after an exchange of letters founded on trust."


class SameVectorEmbedder:
    """Every text the same vector: closeness cannot tell the sentences apart, only their words."""

    def embed_query(self, text):
        return [1.0, 0.0, 0.0]

    def embed_documents(self, texts):
        return [[1.0, 0.0, 0.0] for _ in texts]


def test_word_pairs_in_the_questions_order_and_rare_words_count():
    question = "What was the price of oil in March 1974?"
    said, scattered, other = word_fit(
        question,
        [
            "The price of oil reached nearly $12 in March 1974.",
            "Oil exporters met in March to discuss the price they set.",
            "The embargo was lifted after talks in Washington.",
        ],
    )
    assert said.pairs > scattered.pairs == 0.0
    assert said.rare > scattered.rare > other.rare == 0.0


def test_prose_quotes_first_the_sentence_that_restates_the_question():
    # The sentence that merely shares the words comes first in the page, so a tie would quote it.
    source = ContextSource(n=1, title="Economy", text=f"{SHARES_WORDS} {ANSWERS}")
    llm = ExtractiveLLM(embedder=SameVectorEmbedder())
    chosen, _ = llm.select(question="Who founded the Warsaw stock exchange?", sources=[source])
    assert chosen
    best = max(llm.last_candidates, key=lambda c: c.score)
    assert best.text == ANSWERS
    assert best.score > min(c.score for c in llm.last_candidates)
