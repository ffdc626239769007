"""Meeting questions: the sources span several documents (one long transcript does not fill
every slot), a meeting is weighed by its whole agenda, and a question that names a speaker quotes
that speaker (real all-MiniLM-L6-v2)."""

from __future__ import annotations

import pytest

from rag.acl import Scope
from rag.answering.selectors import document_topics
from rag.answering.sources import DocumentEvidence, group_hits, rank_documents, select_hits
from rag.llm.candidates import Sentence, centrality
from rag.llm.context import ContextSource
from rag.llm.extractive import ExtractiveLLM
from rag.llm.transcripts import gives_task, lines_said_by, names_speaker, says_something
from rag.models import Project
from rag.search import Hit
from rag.services import source_soft_delete
from rag.units import SourceDocument, Unit
from rag.words import content_terms
from tests.rag.factories import load


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
    topics = ["Budget review", "Functional design"]
    closeness = {
        t: sum(a * b for a, b in zip(q_vec, v, strict=True))
        for t, v in zip(topics, local_embedder.embed_documents(topics), strict=True)
    }

    words_only = DocumentEvidence(topic_weight=0.4)
    assert [g[0].source_id for g in rank_documents(hits, question=question, evidence=words_only)] == [
        "other", "meeting"
    ]
    evidence = DocumentEvidence(topic_weight=0.4, topic_similarity_weight=0.8)
    ranked = rank_documents(hits, question=question, evidence=evidence, closeness=closeness)
    assert [g[0].source_id for g in ranked] == ["meeting", "other"]


def test_a_meeting_whose_agenda_names_the_question_leads_though_no_retrieved_turn_is_filed_there():
    """The search found one turn of each meeting, filed under other items; the agenda says more."""
    question = "Summarize the discussion about product quotation."
    hits = [hit("a", 0, 0.60, ["Kick-off"]), hit("d", 0, 0.55, ["Prototype presentation"])]
    evidence = DocumentEvidence(topic_weight=0.4)
    assert [g[0].source_id for g in rank_documents(hits, question=question, evidence=evidence)] == ["a", "d"]
    agenda = {("meetings", "transcript", "d"): ["Prototype presentation", "Product quotation"]}
    ranked = rank_documents(hits, question=question, evidence=evidence, agenda=agenda)
    assert [g[0].source_id for g in ranked] == ["d", "a"]


def _meeting(source_id: str, topics: list[list[str]], **kw) -> SourceDocument:
    return SourceDocument(
        collection="meetings", source_type="transcript", source_id=source_id,
        units=[
            Unit(unit_anchor=f"t-{i}", title=f"Meeting {source_id}", content=f"Chair: item {i} of {source_id}.",
                 metadata={"topics": filed})
            for i, filed in enumerate(topics)
        ],
        **kw,
    )  # fmt: skip


@pytest.mark.django_db
def test_the_agenda_of_a_document_is_read_under_the_callers_scope(local_embedder, user, other_user):
    Project.objects.create(slug="board", name="Board").members.add(user)
    load(
        [
            _meeting("open", [["Budget", "Kick-off"], ["Budget"], [], ["Product quotation"]]),
            _meeting("board", [["Salaries"]], visibility="restricted", project="board"),
            _meeting("gone", [["Old business"]]),
        ],
        local_embedder,
    )
    source_soft_delete(collection="meetings", source_type="transcript", source_ids=["gone"])
    keys = [("meetings", "transcript", sid) for sid in ("open", "board", "gone", "absent")]

    member = document_topics(scope=Scope.for_user(user), docs=keys)
    assert member == {
        ("meetings", "transcript", "open"): ["Budget", "Kick-off", "Product quotation"],
        ("meetings", "transcript", "board"): ["Salaries"],
    }
    outsider = document_topics(scope=Scope.for_user(other_user), docs=keys)
    assert outsider == {("meetings", "transcript", "open"): ["Budget", "Kick-off", "Product quotation"]}
    assert document_topics(scope=Scope.for_user(user), docs=[]) == {}


def test_a_question_about_an_agenda_item_is_answered_from_that_meeting(local_embedder):
    """No turn is close to the question on its own, which alone would be refused; the meeting's
    agenda item is, so its turns are quoted."""
    transcript = "\n".join([
        "Grad A: So we ran the nets on the new set and the numbers came back this morning.",
        "Professor C: We should cluster them first, then look at which ones hold up across speakers.",
    ])  # fmt: skip
    question = "Summarize the discussion on detecting important linguistic features"
    llm = ExtractiveLLM(embedder=local_embedder)
    plain = ContextSource(n=1, title="Meeting Bro011", text=transcript)
    assert llm.select(question=question, sources=[plain])[0] == []
    on_agenda = ContextSource(
        n=1, title="Meeting Bro011", text=transcript, agenda="Detecting important linguistic features"
    )
    chosen, _ = llm.select(question=question, sources=[on_agenda])
    assert chosen and {c.source.n for c in chosen} == {1}
    # The answer says which part of the meeting its quotes come from before quoting it.
    answer = "".join(llm.answer_parts(question=question, sources=[on_agenda]))
    lead, quoted = answer.split("\n\n", 1)
    assert lead == "The meeting discussed “Detecting important linguistic features”:"
    assert quoted.startswith(("Grad A: “", "Professor C: “")) and quoted.endswith("[1]")


def _quoted(embedder, hearing: list[str], question: str, **weights) -> list:
    """The one sentence the extractive answerer quotes from a hearing's transcript lines."""
    source = ContextSource(n=1, title="Higher education finance", text="\n".join(hearing))
    llm = ExtractiveLLM(embedder=embedder, max_sentences=1, **weights)
    return llm.select(question=question, sources=[source])[0]


def test_a_question_asked_in_the_meeting_is_not_its_answer(local_embedder):
    """The turn that asks what the person asks is closest in words; the reply answers it."""
    hearing = [
        "Hefin David AM: What about risk appetite? Do you feel that any governing bodies are exhibiting "
        "an imprudent risk appetite?",
        "Dr David Blaney: No, governing bodies would see the risks coming through in forecasts and in "
        "requests for borrowing, so we would step in early.",
        "Hefin David AM: Thank you, that is helpful.",
    ]  # fmt: skip
    question = "What was said about the risk appetite of governing bodies?"
    assert [c.speaker for c in _quoted(local_embedder, hearing, question)] == ["Dr David Blaney"]
    unpenalised = _quoted(local_embedder, hearing, question, question_penalty=0.0)
    assert [c.speaker for c in unpenalised] == ["Hefin David AM"]


def test_the_reply_to_a_question_asked_in_the_meeting_is_quoted(local_embedder):
    """A question the meeting asked lends its relevance to the next speaker's reply, which
    answers it in other words."""
    hearing = [
        "Sian Gwenllian AM: Has HEFCW done any assessment of the effect of underfunding research?",
        "Dr David Blaney: Not in any formal sense; we have relied on the independent review by Graeme Reid.",
        "Dr David Blaney: Research funding is set by the government each spring.",
    ]  # fmt: skip
    question = "Had HEFCW done any assessment of the effect of underfunding research?"
    assert [c.text[:19] for c in _quoted(local_embedder, hearing, question)] == ["Not in any formal s"]
    unlent = _quoted(local_embedder, hearing, question, reply_weight=0.0)
    assert [c.text[:19] for c in unlent] != ["Not in any formal s"]


def test_a_reply_that_says_nothing_is_not_quoted(local_embedder):
    """"Guess you could, yeah." inherits the relevance of the question before it, but quoting
    it tells the reader nothing: the sentence that has something to say is quoted instead."""
    hearing = [
        "Grad B: Could we cluster the linguistic features to make recognition more robust?",
        "Professor A: Guess you could, yeah.",
        "Professor A: Clustering the features would add robustness, but we lack the labelled data.",
    ]  # fmt: skip
    question = "Could the linguistic features be clustered to make recognition more robust?"
    assert [c.text[:22] for c in _quoted(local_embedder, hearing, question)] == ["Clustering the feature"]
    assert not says_something("Guess you could, yeah.") and says_something("We lack the labelled data.")


def test_centrality_is_the_mean_cosine_to_the_other_sentences():
    vecs = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]
    assert [round(c, 6) for c in centrality(vecs)] == [0.3, 0.7, 0.4]
    assert centrality([[1.0, 0.0]]) == [0.0]


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
    assert names_speaker("What did the professor think about clustering?", "Professor A")  # a role and a letter
    assert not names_speaker("What did the professor think about clustering?", "PhD B")
    assert not names_speaker("Summarize the marketing strategy.", "Marketing")  # a topic, not a person
    assert not names_speaker("A plan for the budget?", "Grad A")  # a capital at the start of a sentence
    assert not names_speaker("What did the Chair rule?", "Mr. Paul Manly (NanaimoLadysmith, GP)")


def test_a_name_typed_in_lower_case_names_a_speaker_where_a_person_stands():
    # People type names as they come: "sam" before "say" is Sam Okafor.
    assert names_speaker("what did sam say about notion", "Sam Okafor")
    assert names_speaker("what maya decided on the sync", "Maya Chen")
    assert names_speaker("why did marketing want an lcd", "Marketing")
    # The same word as a topic names no one; a pronoun is no speaker's name.
    assert not names_speaker("summarize the marketing strategy", "Marketing")
    assert not names_speaker("what did the team say about notion", "Sam Okafor")
    assert not names_speaker("what did we decide", "We")
    assert not names_speaker("what did a say", "Grad A")


def _lines(source: ContextSource) -> list[Sentence]:
    lines = []
    for i, line in enumerate(source.text.splitlines()):
        speaker, text = line.split(": ", 1)
        lines.append(Sentence(source=source, position=i, text=text, speaker=speaker))
    return lines


def test_what_a_person_asked_for_is_also_what_others_report_they_asked():
    weekly = ContextSource(n=1, title="Platform weekly", text=(
        "Maya Chen: Decision: move the Logseq sync to every fifteen minutes.\n"
        "Sam Okafor: Leo Martin asked for a monthly report of unanswered questions."
    ))  # fmt: skip
    one_on_one = ContextSource(n=2, title="1:1", text="Leo Martin: I will hand the release checklist to Sam.")
    lines = _lines(weekly) + _lines(one_on_one)
    question = "what did leo ask for"
    said = lines_said_by(question, content_terms(question), lines)
    assert [(c.speaker, c.text) for c in said] == [
        ("Sam Okafor", "Leo Martin asked for a monthly report of unanswered questions.")
    ]
    # A line that names him doing nothing reports nothing he said.
    assert not lines_said_by(question, content_terms(question), [
        Sentence(source=weekly, position=0, text="Ask Leo Martin for the report.", speaker="Maya Chen")
    ])  # fmt: skip


def test_a_task_given_to_a_speaker_of_the_meeting_is_a_task():
    minutes = (
        "Maya Chen: The nightly sync failed twice.\n"
        "Maya Chen: Sam will send the incident report by Monday.\n"
        "Sam Okafor: Acme Capital will extend the pilot."
    )
    assert gives_task("Sam will send the incident report by Monday.", minutes)
    assert gives_task("Sam Okafor is going to rerun the import.", minutes)
    # A client's plan, a passive, a page's "X will…": nobody of the meeting takes anything on.
    assert not gives_task("Acme Capital will extend the pilot.", minutes)
    assert not gives_task("Sam will be away in March.", minutes)
    assert not gives_task("React will re-render the component.", "React will re-render the component.")


def test_what_a_person_decided_is_every_line_of_theirs_that_states_a_decision():
    kickoff = ContextSource(n=1, title="Kickoff", text=(
        "Maya Chen: They care most about citations.\nMaya Chen: Decision: pilot with five analysts."
    ))  # fmt: skip
    one_on_one = ContextSource(n=2, title="1:1", text=(
        "Maya Chen: Leo wants to spend more time with clients.\n"
        "Maya Chen: We agreed to revisit the Northwind proposal."
    ))  # fmt: skip
    question = "what did maya decide"
    said = lines_said_by(question, content_terms(question), _lines(kickoff) + _lines(one_on_one))
    assert [c.text for c in said] == [
        "Decision: pilot with five analysts.",
        "We agreed to revisit the Northwind proposal.",
    ]
    promised = Sentence(source=one_on_one, position=2, text="I promised the report by Friday.", speaker="Maya Chen")
    question = "what did maya promise"
    assert lines_said_by(question, content_terms(question), [*_lines(kickoff), promised]) == [promised]
    # Asked what she said, with no subject: every line of hers, not a line of another speaker's
    # that names her.
    question = "what did maya say"
    leo = Sentence(source=one_on_one, position=3, text="I will send Maya the notes.", speaker="Leo Martin")
    said = lines_said_by(question, content_terms(question), [*_lines(kickoff), *_lines(one_on_one), leo])
    assert [c.speaker for c in said] == ["Maya Chen"] * 4


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


def meeting(source_id: str, title: str, topic: str, *said: tuple[str, str]):
    """A transcript whose turns are all filed under one agenda item."""
    from ingestion.sources.documents import transcript_to_document

    return transcript_to_document(
        source_id=source_id, title=title, collection="meetings",
        turns=[{"speaker": speaker, "text": text} for speaker, text in said],
        topics=[{"topic": topic, "turn_start": 0, "turn_end": len(said) - 1}],
    )  # fmt: skip


DESIGN_ITEM = "Decision making on screen, color, material, button, company logo, etc."
GARDEN_TURNS = (
    ("Chair", "The tomato beds need watering twice a day in July."),
    ("Ben", "I will order the drip irrigation kit and install it in June."),
)


@pytest.mark.django_db
def test_ask_answers_a_question_naming_an_agenda_item_and_still_refuses_an_unrelated_one(local_embedder, user):
    """Through the whole pipeline: two meetings filed under agenda items; the question names one
    item of the second meeting in words none of its turns use."""
    from rag.answering.history import conversation_detail
    from rag.answering.services import ask_collect
    from rag.search import SearchFilters

    load(
        [
            meeting("garden", "Garden committee", "Watering the vegetable beds", *GARDEN_TURNS),
            meeting("speech", "Speech group", "Detecting important linguistic features",
                    ("Grad A", "So we ran the nets on the new set and the numbers came back this morning."),
                    ("Professor C", "We should cluster them first, then see which hold up across speakers.")),
        ],
        local_embedder,
    )  # fmt: skip

    def ask(query):
        return ask_collect(
            user=None, scope=Scope.everything(), query=query, filters=SearchFilters(collections=["meetings"]),
            embedder=local_embedder, log=False,
        )  # fmt: skip

    result = ask("Summarize the discussion on detecting important linguistic features")
    assert result["citations"], result["answer"]
    assert {s["source_id"] for s in result["sources"] if s["cited"]} == {"speech"}
    # The source row says which part of the meeting the question is about.
    assert [s["agenda"] for s in result["sources"] if s["cited"]] == ["Detecting important linguistic features"]
    assert result["answer"].startswith("The meeting discussed “Detecting important linguistic features”:")
    assert not ask("What is the boiling point of mercury in degrees Celsius?")["citations"]

    # A stored conversation shows the same row after a reload.
    kept = ask_collect(
        user=user, query="Summarize the discussion on detecting important linguistic features",
        filters=SearchFilters(collections=["meetings"]), embedder=local_embedder,
    )  # fmt: skip
    (turn,) = conversation_detail(user=user, conversation_id=kept["conversation_id"])["turns"]
    assert [s["agenda"] for s in turn["sources"] if s["cited"]] == ["Detecting important linguistic features"]


@pytest.mark.django_db
def test_an_agenda_item_naming_three_of_the_questions_subject_words_is_its_topic_whatever_the_score(local_embedder):
    """"which screen, color and material did the team go for" is about the item "Decision making on
    screen, color, material, button, company logo", though the model puts the two far apart in
    meaning (0.40 against a threshold of 0.5): the item names three of its four subject words."""
    from rag.answering.services import ask_collect
    from rag.search import SearchFilters

    load(
        [
            meeting("design", "Detailed design", DESIGN_ITEM,
                    ("Industrial Designer", "The chips made of silicon, I guess."),
                    ("Marketing", "Young and dynamic people like soft things in primary tones."),
                    ("Project Manager", "Fine, then we go with the rubber one in yellow.")),
            meeting("garden", "Garden committee", "Watering the vegetable beds", *GARDEN_TURNS),
        ],
        local_embedder,
    )  # fmt: skip
    result = ask_collect(
        user=None, scope=Scope.everything(), query="which screen, color and material did the team go for",
        filters=SearchFilters(collections=["meetings"]), embedder=local_embedder, log=False,
    )  # fmt: skip
    assert [s["source_id"] for s in result["sources"] if s["cited"]] == ["design"], result["answer"]
    assert [s["agenda"] for s in result["sources"] if s["cited"]] == [DESIGN_ITEM]
