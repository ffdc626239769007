"""Meeting questions: the sources span several documents (one long transcript does not fill
every slot), and a question that names a speaker quotes that speaker (real all-MiniLM-L6-v2)."""

from __future__ import annotations

from rag.answering.sources import DocumentEvidence, group_hits, rank_documents, select_hits
from rag.llm.context import ContextSource
from rag.llm.extractive import ExtractiveLLM, names_speaker
from rag.search import Hit


def hit(source_id: str, i: int, score: float, topics: list[str] | None = None) -> Hit:
    return Hit(
        chunk_uid=f"{source_id}-{i}", title=source_id, content=f"turn {i}", url="", collection="meetings",
        source_type="transcript", source_id=source_id, breadcrumb="", domain="", concepts=[], mnemonic_tags=[],
        code_languages=[], has_image=False, date=None, metadata={"topics": topics} if topics else {}, vec_score=score,
        txt_score=0.0, score=score,
    )  # fmt: skip


def test_one_long_transcript_does_not_crowd_out_the_other_meetings():
    # Twelve chunks of one meeting score above everything else, as a long transcript does.
    hits = [hit("long", i, 0.9 - i * 0.01) for i in range(12)]
    hits += [hit("second", 0, 0.7), hit("third", 0, 0.65), hit("second", 1, 0.6), hit("fourth", 0, 0.5)]
    kept = select_hits(hits, budget=8, max_docs=3, per_doc=3)
    docs = group_hits(kept)
    assert [d.best.source_id for d in docs] == ["long", "second", "third"]
    assert len(kept) <= 8
    by_doc = {d.best.source_id: len(d.hits) for d in docs}
    assert by_doc["long"] == 3 and by_doc["second"] == 2  # next-best chunks fill the budget, 3 a document at most
    # Grouped by document in the order the documents were chosen, each document's best chunk first.
    assert [h.source_id for h in kept] == ["long"] * 3 + ["second"] * 2 + ["third"]
    assert [h.score for h in kept if h.source_id == "long"] == [0.9, 0.89, 0.88]


def test_budget_smaller_than_the_documents_keeps_the_best_ones():
    hits = [hit(f"m{i}", 0, 0.9 - i * 0.1) for i in range(5)]
    assert [h.source_id for h in select_hits(hits, budget=2, max_docs=6, per_doc=3)] == ["m0", "m1"]


def test_a_document_that_answers_in_several_places_leads():
    # "once" has the single best chunk; "often" matches the question in four places.
    hits = [
        hit("once", 0, 0.80), hit("often", 0, 0.78), hit("often", 1, 0.77), hit("often", 2, 0.75), hit("often", 3, 0.7)
    ]
    assert [g[0].source_id for g in rank_documents(hits)] == ["once", "often"]  # by best chunk
    evidence = DocumentEvidence(chunk_weights=(0.5, 0.25))
    assert [g[0].source_id for g in rank_documents(hits, evidence=evidence)] == ["often", "once"]
    kept = select_hits(hits, budget=4, max_docs=4, per_doc=3, evidence=evidence)
    assert [h.source_id for h in kept] == ["often", "often", "often", "once"]


def test_a_document_whose_topics_the_question_names_leads():
    hits = [hit("other", 0, 0.60, ["Budget review"]), hit("meeting", 0, 0.55, ["Setting up the recording equipment"])]
    evidence = DocumentEvidence(topic_weight=0.2)
    ranked = rank_documents(hits, question="Summarize the discussion about the recording equipment", evidence=evidence)
    assert [g[0].source_id for g in ranked] == ["meeting", "other"]


def test_a_document_filed_under_a_paraphrase_of_the_question_leads(local_embedder):
    """No topic word is in the question ("functions" is not "Functional"): the meaning is."""
    question = "What did the group discuss about the functions of the remote control?"
    hits = [
        hit("other", 0, 0.60, ["Budget review"]),
        hit("meeting", 0, 0.55, ["Functional design"]),
    ]
    q_vec = local_embedder.embed_query(question)

    def similarity(topics):
        return [sum(a * b for a, b in zip(q_vec, v, strict=True)) for v in local_embedder.embed_documents(topics)]

    words_only = DocumentEvidence(topic_weight=0.4)
    assert [g[0].source_id for g in rank_documents(hits, question=question, evidence=words_only)] == [
        "other", "meeting"
    ]
    evidence = DocumentEvidence(topic_weight=0.4, topic_similarity_weight=0.8)
    ranked = rank_documents(hits, question=question, evidence=evidence, topic_similarity=similarity)
    assert [g[0].source_id for g in ranked] == ["meeting", "other"]


def test_extra_documents_need_to_be_close_to_the_leader_and_the_leader_gives_more_chunks():
    hits = [hit("lead", i, 0.9 - i * 0.01) for i in range(6)] + [hit("close", 0, 0.8), hit("far", 0, 0.3)]
    evidence = DocumentEvidence(extra_floor=0.5, lead_chunks=5)
    kept = select_hits(hits, budget=7, max_docs=8, per_doc=2, evidence=evidence)
    assert [h.source_id for h in kept] == ["lead"] * 5 + ["close"]  # "far" is below half the leader
    assert [h.source_id for h in select_hits(hits, budget=7, max_docs=8, per_doc=2)].count("far") == 1


def test_which_questions_name_a_speaker():
    assert names_speaker("What did C think about the recording setup?", "Professor C")
    assert names_speaker("What did the industrial designer recommend?", "Industrial Designer")
    assert names_speaker("Why did Marketing want an LCD?", "Marketing")
    assert not names_speaker("Summarize the marketing strategy.", "Marketing")  # a topic, not a person
    assert not names_speaker("A plan for the budget?", "Grad A")  # a capital at the start of a sentence
    assert not names_speaker("What did the Chair rule?", "Mr. Paul Manly (NanaimoLadysmith, GP)")


def test_a_question_naming_a_speaker_quotes_that_speaker(local_embedder):
    transcript = "\n".join([
        "Grad A: I think the recording equipment should be set up in the small room before Friday.",
        "Professor C: I think the recording equipment should stay in the big room, it has better acoustics.",
        "Grad B: We also need to order new batteries for the wireless microphones.",
    ])  # fmt: skip
    source = ContextSource(n=1, title="Meeting Bed002", text=transcript)
    llm = ExtractiveLLM(embedder=local_embedder, max_sentences=1)
    chosen, _ = llm.select(question="What did C think about setting up the recording equipment?", sources=[source])
    assert chosen and chosen[0].speaker == "Professor C"
    chosen, _ = llm.select(question="What did A think about setting up the recording equipment?", sources=[source])
    assert chosen and chosen[0].speaker == "Grad A"
