"""The extractive answerer (real all-MiniLM-L6-v2): quotes the right sentences, cites them, and
says so when nothing is relevant."""

from __future__ import annotations

import re

import pytest

from rag.llm import Completion, get_chat_llm, get_llm
from rag.llm.candidates import Sentence, leans_on_before, of_the_names, unsaid_sentences
from rag.llm.context import ContextSource, format_user_prompt, parse_user_prompt
from rag.llm.extractive import ExtractiveLLM
from rag.llm.prose import answers_otherwise
from rag.llm.sentences import split_sentences, split_turns
from rag.llm.transcripts import tidy_speech
from tests.rag.answering.conftest import COURSE, MEETINGS

SOURCES = [ContextSource(n=i, title=t, text=txt) for i, (_, t, _, txt) in enumerate(COURSE, start=1)] + [
    ContextSource(n=len(COURSE) + i, title=e, text=txt, date="2025-03-01")
    for i, (_, _, e, txt) in enumerate(MEETINGS, start=1)
]


def run(question, sources=SOURCES, history=None, topic=""):
    llm = ExtractiveLLM()
    messages = [{"role": "system", "content": "x"}, *(history or [])]
    messages.append({"role": "user", "content": format_user_prompt(question=question, sources=sources, focus=topic)})
    parts = list(llm.stream(messages=messages))
    assert isinstance(parts[-1], Completion)
    deltas = parts[:-1]
    assert all(isinstance(d, str) for d in deltas)
    return deltas, parts[-1].text


def sentences_with_citations(text):
    return re.findall(r"([^.\n]+?) \[(\d+)\][.!?]?", text)


def test_default_llm_is_the_extractive_one_and_offline_there_is_no_chat_llm():
    assert get_llm().name == "extractive" and get_llm().generative is False
    assert get_chat_llm() is None


def test_prompt_layout_round_trips():
    prompt = format_user_prompt(question='What is <b>"it"</b>?', sources=SOURCES[:2], focus="closures")
    question, sources, topic = parse_user_prompt(prompt)
    assert question == 'What is <b>"it"</b>?' and topic == "closures"
    assert [(s.n, s.title, s.text) for s in sources] == [(s.n, s.title, s.text) for s in SOURCES[:2]]


def test_quotes_the_answering_sentences_each_with_its_source(local_embedder):
    deltas, text = run("What is a closure in JavaScript?")
    assert len(deltas) > 1  # streamed sentence by sentence
    cited = sentences_with_citations(text)
    assert cited and {n for _, n in cited} == {"1"}  # only the Closures page
    assert text.startswith("A closure is a function bundled together")
    for sentence, n in cited:
        assert sentence.strip() in SOURCES[int(n) - 1].text


def test_groups_by_source_and_keeps_document_order(local_embedder):
    _, text = run("What does a promise represent and what are its states?")
    cited = sentences_with_citations(text)
    assert {n for _, n in cited} == {"2"}
    positions = [SOURCES[1].text.index(s.strip()) for s, _ in cited]
    assert positions == sorted(positions)


def test_says_plainly_when_nothing_is_relevant(local_embedder):
    _, text = run("What is the capital of Peru?")
    assert text == "I found nothing relevant to “What is the capital of Peru?” in the sources you can see."
    _, empty = run("What is a closure?", sources=[])
    assert empty.startswith("I found nothing relevant")


ARTICLE = [
    ContextSource(
        n=1, title="Sanctions",
        text=(
            "The United States imposed sanctions on Iran in 1979 after the hostage crisis. "
            "The US sanctions banned most trade and froze Iranian assets held in American banks."
        ),
    ),
    ContextSource(n=2, title="Cities", text="Toronto is the largest city of Canada, home to six million people."),
]  # fmt: skip


def test_prose_refuses_a_quote_about_another_subject_or_the_opposite(local_embedder):
    _, text = run("What sanctions did the United States impose on Iran?", sources=ARTICLE)
    assert "[1]" in text and "banned most trade" in text
    # the sources name Canada, but not where they speak of sanctions
    _, text = run("What sanctions has Canada directed at Iran?", sources=ARTICLE)
    assert "[1]" not in text and text.startswith("I found nothing relevant")
    # the sources say what the US did, never what it did not
    _, text = run("What sanctions did the United States not impose on Iran?", sources=ARTICLE)
    assert "[1]" not in text and text.startswith("I found nothing relevant")


def test_prose_refuses_a_quote_about_another_year_of_the_same_page():
    page = ContextSource(
        n=1, title="Networks",
        text=(
            "The Computer Science Network began operation in 1981. It linked university departments. "
            "The founders wrote a history of the project in 1982."
        ),
    )  # fmt: skip
    quoted = [Sentence(source=page, position=0, text="The Computer Science Network began operation in 1981.")]
    assert not answers_otherwise("What network began operation in 1981?", quoted)
    # 1982 is on the page, but not where it speaks of beginning operation
    assert answers_otherwise("What network began operation in 1982?", quoted)


def test_the_page_title_spelt_another_way_is_the_pages_subject(local_embedder):
    city = [
        ContextSource(
            n=1, title="Warsaw",
            text=(
                "In the 14th century it became one of the seats of the Dukes of Masovia, becoming the official "
                "capital of the Masovian Duchy in 1413. The city has many parks."
            ),
        ),
        ContextSource(n=2, title="Names", text="The city's historic names include Warszewa and Warszowa."),
    ]  # fmt: skip
    _, text = run("In what year did Warszowa become the official capital of the Masovian Duchy?", sources=city)
    assert "1413 [1]" in text, text


def test_a_piece_of_a_sentence_cut_by_a_chunk_is_not_quoted_for_the_whole(local_embedder):
    chunks = [
        ContextSource(
            n=1, title="Health",
            text=(
                "beds, 10 operating theatres, an intensive care unit and an outpatient clinic. "
                "The Institute of Oncology is one of the largest oncological institutions in Europe."
            ),
        ),
        ContextSource(
            n=2, title="Health",
            text=(
                "The Institute's clinical section is a 10-floor building with 700 beds, 10 operating theatres, "
                "an intensive care unit and an outpatient clinic."
            ),
        ),
    ]  # fmt: skip
    llm = ExtractiveLLM()
    chosen, _ = llm.select(question="How many beds does the Institute of Oncology have?", sources=chunks)
    assert not any(c.text.startswith("beds") for c in llm.last_candidates)
    assert any("700 beds" in c.text for c in chosen), [c.text for c in chosen]


def test_a_when_question_is_answered_by_the_sentence_with_a_date(local_embedder):
    llm = ExtractiveLLM()
    chosen, _ = llm.select(question="When did the United States impose sanctions on Iran?", sources=ARTICLE)
    assert chosen and "1979" in chosen[0].text


def test_tell_me_more_does_not_repeat_what_was_said(local_embedder):
    _, first = run("What is a closure in JavaScript?")
    history = [{"role": "user", "content": "What is a closure in JavaScript?"}, {"role": "assistant", "content": first}]
    _, more = run("tell me more", history=history, topic="What is a closure in JavaScript?")
    first_sentences = {s.strip() for s, _ in sentences_with_citations(first)}
    more_sentences = {s.strip() for s, _ in sentences_with_citations(more)}
    assert more_sentences and not (first_sentences & more_sentences)


def test_cannot_do_structured_output():
    from rag.llm import LLMError

    with pytest.raises(LLMError):
        ExtractiveLLM().complete(messages=[{"role": "user", "content": "x"}], json_schema={"type": "object"})


def test_sentence_splitting_reads_notes_as_prose():
    text = (
        "type:: [[Feature]]\ndescription:: Cards are blocks that are meant for memorization\n- ## Usage\n"
        "\t- Add `#card` to a [[block]] to make it a card. See ((6103e488-22d4-4751-b27a-69b278067c26)) too.\n"
        "```js\nconst x = 1; // code is never quoted\n```"
    )
    assert split_sentences(text) == [
        "Cards are blocks that are meant for memorization",
        "Add `#card` to a block to make it a card.",
    ]


def test_an_abbreviation_does_not_end_a_sentence():
    text = (
        "Gates called for the defunct U.S. Information Agency, which was charged with it. Dr. Ng agreed with him. "
        "Some were razed in the 1950s (e.g. Kronenberg Palace) anyway. "
        "Splinter groups inspired by his manifesto (Signposts, a.k.a. Ma'alim) pursued a harder line. "
        "In 1939, c. 1,300,000 people lived in the city."
    )
    assert split_sentences(text) == [
        "Gates called for the defunct U.S. Information Agency, which was charged with it.",
        "Dr. Ng agreed with him.",
        "Some were razed in the 1950s (e.g. Kronenberg Palace) anyway.",
        "Splinter groups inspired by his manifesto (Signposts, a.k.a. Ma'alim) pursued a harder line.",
        "In 1939, c. 1,300,000 people lived in the city.",
    ]


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        (
            "Um, build a system that, uh, classifies these, um these intermediate categories.",
            "Build a system that classifies these intermediate categories.",
        ),
        ("Yeah, so I I think the the remote should be yellow.", "I think the remote should be yellow."),
        ("We were we were talking about the, mm-hmm, budget.", "We were talking about the budget."),
        ("He had had enough of the 10 10 split.", "He had had enough of the 10 10 split."),  # grammar and numbers stay
        ("The humdrum summer was a hit.", "The humdrum summer was a hit."),
        # False starts go; a real short word before a longer one stays.
        ("It is agai again a contradiction, so w what now?", "It is again a contradiction, so what now?"),
        ("Go in into the room to today's meeting.", "Go in into the room to today's meeting."),
        ("Why we're recording it, and we'd deliver it.", "Why we're recording it, and we'd deliver it."),
        ("That's basic, guys. Um, it sends, e.g. a number.", "That's basic, guys. It sends, e.g. a number."),
        ("Um. It is called Meeting Recorder. Um. And so on...", "It is called Meeting Recorder. And so on..."),
        # A sentence broken off and begun again keeps only the new one; a name is not a new start.
        ("So this is The project is called Meeting Recorder.", "The project is called Meeting Recorder."),
        ("We m We may wind up with ver We we may need versions.", "We may need versions."),
        ("We could use Matlab for the features.", "We could use Matlab for the features."),
    ],
)
def test_quotes_of_speech_drop_hesitations_but_keep_every_word_said(said, quoted):
    assert tidy_speech(said) == quoted


def test_a_page_with_an_image_and_a_video_is_no_transcript():
    # A course page renders its media as labelled lines: the labels are no speakers.
    text = (
        "JavaScript runs your code on a single thread with one call stack.\n"
        "Image: Call stack, microtask queue and task queue.\n"
        "Video: Philip Roberts, JSConf EU (https://www.youtube.com/watch?v=8aGhZQkoFbQ)"
    )
    assert all(speaker == "" for speaker, _ in split_turns(text)), split_turns(text)
    meeting = "Maya Chen: We ship the release on Friday.\nSam Ortiz: I will write the release notes."
    assert [speaker for speaker, _ in split_turns(meeting)] == ["Maya Chen", "Sam Ortiz"]


def test_a_transcript_turn_of_hesitations_only_is_not_a_sentence():
    text = "Maya Chen: Um, uh, yeah.\nSam Ortiz: So the the pilot, uh, starts on Monday with Acme."
    assert split_turns(text) == [("Sam Ortiz", "The pilot starts on Monday with Acme.")]


def test_a_written_sentence_beside_a_meeting_keeps_the_sentence_it_goes_on_from():
    page = ContextSource(n=1, title="How search ranks", text=(
        "The query is compared with every chunk through an HNSW index. At the same time full-text search finds "
        "chunks that contain the query's words."
    ))  # fmt: skip
    meeting = ContextSource(n=2, title="Platform weekly", text=(
        "Maya Chen: We measured search latency on the staging cluster last week.\n"
        "Sam Okafor: It stays under thirty milliseconds with the hybrid mode."
    ))  # fmt: skip
    by_text = {c.text: c for c in unsaid_sentences([page, meeting], "")}
    going_on = by_text["At the same time full-text search finds chunks that contain the query's words."]
    assert leans_on_before(going_on.text)
    assert going_on.before == "The query is compared with every chunk through an HNSW index."
    # In a meeting "it" points anywhere in what was said, not to the line before.
    assert by_text["It stays under thirty milliseconds with the hybrid mode."].before == ""


def test_labels_that_introduced_code_are_no_sentence_to_quote():
    page = ContextSource(n=1, title="Closures in practice", text=(
        "Each call to makeCounter creates a fresh count; the two counters never share it.\n"
        "File counter.js:\n```js\nlet count = 0;\n```\nFile main.js:\n```js\nmakeCounter();\n```"
    ))  # fmt: skip
    texts = [c.text for c in unsaid_sentences([page], "")]
    assert texts == ["Each call to makeCounter creates a fresh count; the two counters never share it."], texts


def test_a_web_address_alone_on_its_line_is_no_sentence_to_quote():
    page = ContextSource(n=1, title="Changelog", text=(
        "Youtube timestamp support\n"
        "https://user-images.githubusercontent.com/9002575/133096658-67e3d6da.gif\n"
        "Embed a youtube video using /Embed Youtube Video, then see https://docs.logseq.com/ for more."
    ))  # fmt: skip
    texts = [c.text for c in unsaid_sentences([page], "")]
    assert not any(t.startswith("https://") for t in texts), texts
    assert "Embed a youtube video using /Embed Youtube Video, then see https://docs.logseq.com/ for more." in texts


def test_an_alternative_that_says_not_to_what_goes_on_from_the_sentence_before():
    assert leans_on_before("Reciprocal rank fusion is available as an alternative.")
    assert leans_on_before("The old parser can be used instead.")
    assert not leans_on_before("Reciprocal rank fusion is an alternative to the weighted sum.")
    assert not leans_on_before("Use BM25 instead of the vector side.")


def test_a_line_on_the_same_thing_of_another_name_is_no_answer():
    weekly = ContextSource(n=1, title="Platform weekly", text=(
        "Sam Okafor: The nightly Notion sync hit rate limits twice.\n"
        "Maya Chen: Decision: move the Logseq sync to every fifteen minutes."
    ))  # fmt: skip
    page = ContextSource(n=2, title="Sync", text="The Notion sync and the Logseq sync share a queue.")
    lines = unsaid_sentences([weekly, page], "")
    kept = [c.text for c in of_the_names("how often does logseq sync run", lines)]
    assert "The nightly Notion sync hit rate limits twice." not in kept
    assert "Decision: move the Logseq sync to every fifteen minutes." in kept
    # A written sentence stays (an article names its subject in many ways), as does a question
    # that names no such pair.
    assert "The Notion sync and the Logseq sync share a queue." in kept
    assert len(of_the_names("how often does the sync run", lines)) == len(lines)


def test_the_names_of_a_few_kept_lines_are_read_in_all_the_lines(local_embedder):
    weekly = ContextSource(n=1, title="Platform weekly", text=(
        "Sam Okafor: The nightly Notion sync hit rate limits twice.\n"
        "Maya Chen: Decision: move the Logseq sync to every fifteen minutes."
    ))  # fmt: skip
    lines = unsaid_sentences([weekly], "")
    decision = [c for c in lines if c.text.startswith("Decision")]
    # Kept alone, the decision's "Logseq" is the one name in sight; all the lines also write "Notion".
    assert of_the_names("who owns the notion sync", decision) == decision
    assert of_the_names("who owns the notion sync", decision, sources=lines) == []
    llm = ExtractiveLLM(embedder=local_embedder)
    chosen, _ = llm.select(question="who owns the notion sync", sources=[weekly])
    assert [c.text for c in chosen] == ["The nightly Notion sync hit rate limits twice."]
