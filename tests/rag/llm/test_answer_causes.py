"""Causes of answers that missed their fact (issue 26's scenario suite), each reproduced on its
own: a code fence under a bullet, "use" taken for a stop word, a price stated without the word
"cost", a count of something else, a sentence that only points to another page, the headings a
note's sentence sits under, steps quoted without their first one."""

from __future__ import annotations

from rag.llm.candidates import Sentence, embedded_text, leans_on_before, score_overlap
from rag.llm.context import ContextSource
from rag.llm.counts import answers_count, counted_target, counted_thing, counts_thing, examples_of, one_a_source
from rag.llm.prose import only_points_elsewhere
from rag.llm.sentences import split_sections, split_sentences
from rag.words import (
    COMMON_WORDS,
    asks_amount_of_money,
    asks_how_to,
    content_terms,
    implied_terms,
    states_money,
    stem,
)
from tests.rag.llm.test_extractive import run

OUTLINE = """- Creating a thing
  - Open the settings file.
  - ```edn
    :things {
    "foo" "bar"
    }
    ```
  - For readability, put each thing on its own line.
- Using a thing
  - Type the thing's name wrapped in curly braces in any block.
"""


def test_a_code_fence_that_opens_a_list_item_is_closed_by_its_own_fence():
    sentences = split_sentences(OUTLINE)
    assert "Type the thing's name wrapped in curly braces in any block." in sentences
    assert "For readability, put each thing on its own line." in sentences
    assert not any("foo" in s for s in sentences)


def test_use_is_a_content_word_that_is_never_corrected():
    assert content_terms("and how do i use it") == {"use"}
    assert content_terms("using macros") == content_terms("macros used") | {"use"} == {"use", "macro"}
    assert "use" in COMMON_WORDS


def test_a_sum_of_money_states_a_price():
    assert {stem("cost"), stem("price")} <= implied_terms("Open to contributors ($5 or $15 per month).")
    assert stem("cost") in implied_terms("a budget of 412,000 euros")
    assert not implied_terms("It ran 340 times in five weeks.")


def test_a_question_on_what_something_costs_asks_for_a_sum_of_money():
    for question in ["how much did we spend on hosting", "what does the pilot cost", "whats the budget for 2027",
                     "what is the price of the license?", "how much money did acme pay"]:  # fmt: skip
        assert asks_amount_of_money(question), question
    for question in ["how much time did it take", "how many servers do we run", "what is the main cost driver",
                     "what is the price elasticity of oil"]:  # fmt: skip
        assert not asks_amount_of_money(question), question
    assert states_money("The budget for 2027 is 412,000 euros.")
    assert states_money("prices reached nearly $40 per barrel")
    assert states_money("a grant of three million euros")
    assert states_money("The workshop is free of charge.")
    assert not states_money("Hosting stays on the two existing servers.")
    assert not states_money("It ran 340 times in five weeks.")


def test_a_time_taken_states_how_fast():
    assert {"fast", "slow", "speed"} <= implied_terms("p95 search latency is 24 ms at 100k chunks")
    assert "fast" in implied_terms("The build took 9.5 minutes.")
    assert "fast" not in implied_terms("It ran 340 times in five weeks.")


def test_a_decision_or_a_task_taken_on_states_a_fix():
    assert {"fix", "address"} <= implied_terms("Decision: add recency as a ranking feature.")
    assert "fix" in implied_terms("We agreed to run OCR on scanned memos.")
    assert "fix" in implied_terms("I will hand the release checklist to Sam.")
    assert "fix" not in implied_terms("Two complaints: old memos ranked above recent ones.")


def test_who_was_at_a_meeting_states_who_joined_it():
    assert {"join", "attend"} <= implied_terms("**Acme Capital kickoff** (2026-08-02) was with Leo Martin.")
    assert "join" in implied_terms("Leo Martin took part in **1:1 with Leo** (2026-11-27).")
    assert "join" not in implied_terms("The problem was with the index.")


def test_retuning_or_editing_something_states_a_change():
    assert stem("change") in implied_terms("Relevance judgments can retune these weights.")
    assert stem("change") in implied_terms("Maya adjusted the thresholds and edited the prompt.")
    assert stem("change") in implied_terms("The admin modifies the schedule.")
    assert stem("change") not in implied_terms("A quick update: the editor is open.")


def test_a_day_something_is_due_by_states_a_deadline():
    assert stem("deadline") in implied_terms("Decision: send a proposal with project-level access control by Friday.")
    assert stem("deadline") in implied_terms("Reports are due on 2026-12-01.")
    assert stem("deadline") in implied_terms("Finish it before the end of the month.")
    assert not implied_terms("The memos were stored by 2 workers.")
    assert not implied_terms("Founded by 1998 law.")


def test_a_sentence_holds_the_question_words_it_writes_in_another_shape():
    src = ContextSource(n=1, title="Notes", text="")

    def matched(question: str, *texts: str) -> list[int]:
        sentences = [Sentence(source=src, position=i, text=t) for i, t in enumerate(texts)]
        score_overlap(sentences, content_terms(question))
        return [s.matched for s in sentences]

    # A compound the question joined with a hyphen ("rate-limit", as another source writes it).
    assert matched("what was said about rate-limits", "The sync hit rate limits twice.", "The rate went up.") == [1, 0]
    # A dotted setting holds its parts: the question "ef_search" splits them.
    assert matched("what is ef_search", "At query time hnsw.ef_search sets the width.", "Search is hybrid.") == [2, 1]


def test_what_something_costs_is_answered_by_the_sentence_with_the_sum(local_embedder):
    sources = [
        ContextSource(
            n=1,
            title="Logseq Sync",
            text=(
                "- Syncs up to 10 graphs between Logseq Desktop, Android, and iOS.\n"
                "- Syncing is a choice that is made per graph and thus allows for some graphs to be local only.\n"
                "- Each graph is encrypted with a password.\n"
                "- Sync automatically happens in the background.\n"
                "- Click on the cloud icon and the `Sync now` button to force a sync.\n"
                "- See this tutorial for setting up and using sync.\n"
                "- It's currently available for all *active* Open Collective contributors ($5 or $15 per month).\n"
                "- Do not use this feature with any other third party sync service like iCloud or Dropbox.\n"
                "- If you experience issues, check This FAQ.\n"
                "- This feature is in BETA.\n"
            ),
        )
    ]
    _, text = run("what does sync cost", sources=sources)
    assert "$5" in text


def test_how_many_wants_a_number_of_the_thing_counted():
    thing = counted_thing("how many analysts are in the acme pilot")
    assert thing == "analyst"
    assert counts_thing(thing, "Decision: pilot with five analysts, review after six weeks.")
    assert counts_thing(thing, "We hired 12 senior analysts.")
    assert not counts_thing(thing, "Analysts used the pilot 340 times.")
    assert counted_thing("what did the analysts say") == ""


def test_how_many_people_is_answered_by_a_number_of_any_people_with_another_word_of_the_question():
    people = counted_thing("how many people joined the pilot")
    assert counts_thing(people, "Decision: pilot with five analysts, review after six weeks.")
    assert counts_thing(people, "The colonies had roughly 60,000 European settlers.")
    assert not counts_thing(people, "Analysts used the pilot 340 times.")
    assert not counts_thing(counted_thing("how many memos are in the pilot"), "a pilot with five analysts")
    assert answers_count("how many people joined the pilot", "Decision: pilot with five analysts.")
    # A number of people, but of nothing else the question names: no answer to it.
    assert not answers_count("how many people live on the moon base", "Decision: pilot with five analysts.")


def test_the_examples_of_a_count_are_the_lines_said_by_or_naming_what_it_counted():
    review = ContextSource(n=1, title="Acme Capital pilot review", text="")
    weekly = ContextSource(n=2, title="Platform weekly", text="")

    def line(src, speaker, text, score):
        s = Sentence(source=src, position=int(score * 10), text=text, speaker=speaker)
        s.score = score
        return s

    used = line(review, "Sam Okafor", "Analysts used the pilot 340 times.", 0.9)
    extend = line(review, "Sam Okafor", "Acme Capital will extend the pilot.", 0.5)
    hand = line(weekly, "Leo Martin", "I will hand the release checklist to Sam's team.", 0.4)
    other = line(weekly, "Maya Chen", "p95 search latency is 24 ms.", 0.95)
    assert counted_target(["date: last month", "count: Sam Okafor"], "count: ") == "Sam Okafor"
    assert counted_target(["date: last month"], "count: ") == ""
    # Said by Sam, or naming him (a possessive too); never Maya's line on latency.
    assert examples_of("Sam Okafor", [used, extend, hand, other]) == [used, extend, hand]
    assert examples_of("acme", [used, extend, hand, other]) == [extend]
    assert examples_of("zorblax", [used, other]) is None
    # One example a document, the best-scored, oldest document first.
    review.date, weekly.date = "2026-09-15", "2026-11-20"
    assert one_a_source([hand, extend, used], limit=4) == [used, hand]
    assert one_a_source([hand, extend, used], limit=1) == [used]


def test_a_count_of_the_thing_asked_beats_a_better_ranked_count_of_something_else(local_embedder):
    review = ContextSource(
        n=1,
        title="Acme pilot review",
        text=(
            "Sam Okafor: Analysts used the pilot 340 times; most questions were about fund performance.\n"
            "Maya Chen: Two complaints: old memos ranked above recent ones, and scanned PDFs had no text.\n"
            "Leo Martin: Decision: add recency as a ranking feature and run OCR on scanned memos.\n"
            "Sam Okafor: Acme will extend the pilot to the whole research team.\n"
        ),
    )
    kickoff = ContextSource(
        n=2,
        title="Acme kickoff",
        text=(
            "Leo Martin: Acme wants a search over ten years of investment memos.\n"
            "Maya Chen: They care most about citations; analysts must be able to open the source memo.\n"
            "Leo Martin: We agreed to start with the 2019 to 2024 memos and a weekly sync.\n"
            "Maya Chen: Decision: pilot with five analysts, review after six weeks.\n"
        ),
    )
    _, text = run("how many analysts are in the acme pilot", sources=[review, kickoff])
    assert "five analysts" in text


def test_a_sentence_that_only_points_elsewhere_is_not_an_answer():
    assert only_points_elsewhere("See Logseq Sync Encryption.")
    assert only_points_elsewhere("Check out this forum post to see an example.")
    assert not only_points_elsewhere("Each graph is encrypted with a password.")
    assert not only_points_elsewhere(
        "See the sync settings, where each graph is given its own password and its own key for encryption."
    )


def test_a_sentence_knows_the_headings_it_sits_under():
    sections = dict((s, h) for h, s in split_sections("Usage\n" + OUTLINE + "# Notes\nA plain paragraph is here.\n"))
    assert sections["Open the settings file."] == "Usage Creating a thing"
    assert sections["Type the thing's name wrapped in curly braces in any block."] == "Usage Using a thing"
    assert sections["A plain paragraph is here."] == "Notes"


def test_the_headings_give_a_sentence_its_subject():
    src = ContextSource(n=1, title="Things", text="")
    under = Sentence(source=src, position=0, text="Type the name in curly braces.", section="Using a thing")
    assert embedded_text(under) == "Things Using a thing: Type the name in curly braces."
    assert embedded_text(Sentence(source=ContextSource(n=2, title="", text=""), position=0, text="x y")) == "x y"


STEPS = ContextSource(
    n=1,
    title="Widgets",
    text=(
        "Usage\n"
        "- Creating a widget\n"
        "  - Open the settings file.\n"
        "  - Scroll down to the `:widgets` section of the settings and add your widget's name in quotation marks.\n"
        "  - Separate the widget's name and its template with a space, both in quotation marks.\n"
        "  - Variables such as `$1` and `$2` can be used to place parameters in the widget template.\n"
        "  - For readability, use a line break to separate each widget in the settings.\n"
        "- Showing a widget\n"
        "  - Type the widget name wrapped in curly braces in any block.\n"
    ),
)


def test_how_to_steps_are_quoted_from_the_first(local_embedder):
    assert asks_how_to("how do i create a widget") and asks_how_to("and how do I use it?")
    assert not asks_how_to("what is a widget")
    _, text = run("how do i create a widget", sources=[STEPS])
    assert "Open the settings file" in text
    assert text.index("Open the settings file") < text.index("Scroll down")


def test_the_headings_words_count_for_the_sentence_as_its_title_does():
    src = ContextSource(n=1, title="Things", text="")
    under = Sentence(source=src, position=0, text="Type the name in curly braces.", section="Using a thing")
    other = Sentence(source=src, position=1, text="Open the settings file first.", section="Creating a thing")
    score_overlap([under, other], content_terms("how do i use it"))
    assert under.matched == 1 and other.matched == 0


def test_a_guide_titled_with_the_whole_how_to_is_on_it_in_every_sentence():
    guide = ContextSource(n=1, title="Getting started with the hub", text="")
    lesson = ContextSource(n=2, title="Call stack and tasks", text="")
    opening = Sentence(source=guide, position=0, text="The hub keeps one index of what the team writes.")
    passing = Sentence(source=lesson, position=0, text="Then the next task starts.")
    score_overlap([opening, passing], content_terms("how do i get started"), how_to=True)
    assert opening.overlap == passing.overlap  # the title's word counts as fully as the sentence's own
    # Asked otherwise, or where the guide's own sentences say the word, its title counts half.
    score_overlap([opening, passing], content_terms("who started it"))
    assert opening.overlap < passing.overlap
    repeating = Sentence(source=guide, position=1, text="Start by asking a question.")
    score_overlap([opening, repeating, passing], content_terms("how do i get started"), how_to=True)
    assert opening.overlap < passing.overlap


def test_a_heading_that_repeats_the_title_is_not_embedded_twice():
    src = ContextSource(n=1, title="1973 oil crisis", text="")
    under = Sentence(source=src, position=0, text="The embargo began in October.", section="1973 oil crisis")
    assert embedded_text(under) == "1973 oil crisis: The embargo began in October."


COUNCIL = ContextSource(
    n=1,
    title="Union institutions",
    text=(
        "The European Council gives political direction to the Union and meets at least every six months. "
        "It appoints the Commissioners and the board of the Central Bank. "
        "The Commission is the executive body and proposes new laws."
    ),
)


def test_a_sentence_that_names_its_subject_by_a_pronoun_is_quoted_after_the_sentence_naming_it(local_embedder):
    _, text = run("Who appoints the board of the Central Bank?", sources=[COUNCIL])
    assert "It appoints the Commissioners" in text
    assert "The European Council gives political direction" in text
    assert text.index("The European Council") < text.index("It appoints")


LEAGUE = ContextSource(
    n=1,
    title="Regional parties",
    text=(
        "The Harbour Party governs the coast and won 12 seats in 2019. "
        "The Green League was founded by farmers in 1921. "
        "From 2010 to 2017 it won 54 seats in 14 council elections. "
        "The Mountain Union holds 9 seats and the Free Towns hold 3."
    ),
)


def test_a_pronoun_after_an_opening_phrase_of_time_is_quoted_after_the_sentence_naming_it(local_embedder):
    assert leans_on_before("From 2010 to 2017 it won 54 seats in 14 council elections.")
    assert leans_on_before("In 1990, they moved the office to Lyon.")
    assert not leans_on_before("In 1746, Johnson was made a colonel.")
    assert not leans_on_before("In Warsaw there are many parks.")
    # what the subject was doing, then the subject as a pronoun; "all of this" sums up before it
    assert leans_on_before("Sailing up the coast, she mapped every inlet.")
    assert leans_on_before("All of this set the stage for the merger.")
    assert not leans_on_before("Nothing changed, they said.")
    assert not leans_on_before("Building the dam took six years.")
    # Quoted alone, "it won 54 seats" names no party: the answer would say nothing of the Green League.
    _, text = run("How many seats did the Green League win between 2010 and 2017?", sources=[LEAGUE])
    assert "From 2010 to 2017 it won 54 seats" in text, text
    assert text.index("The Green League was founded") < text.index("From 2010 to 2017")


def test_the_sentence_before_a_pronoun_lends_its_words_as_a_title_does():
    src = ContextSource(n=1, title="Warsaw", text="")
    before = "Warsaw's first stock exchange was established in 1817."
    leaning = Sentence(source=src, position=1, text="It was re-established in April 1991.", before=before)
    plain = Sentence(source=src, position=2, text="A new market opened in April 1991.", before=before)
    score_overlap([leaning, plain], content_terms("when was the stock exchange re-established"))
    assert leaning.matched > plain.matched


def test_a_less_redundant_sentence_below_the_floor_does_not_end_the_answer():
    from rag.llm.extractive import ExtractiveLLM

    src = ContextSource(n=1, title="Page", text="")

    def sentence(pos, relevance):
        s = Sentence(source=src, position=pos, text=f"Sentence number {pos} says something.")
        s.relevance = s.score = relevance
        s.similarity = 0.8
        return s

    best, second, stray, relevant = sentence(0, 1.0), sentence(1, 0.9), sentence(2, 0.6), sentence(3, 0.75)
    vecs = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.6, 0.8, 0.0]]
    chosen = ExtractiveLLM()._choose([best, second, stray, relevant], vecs, floor_ratio=0.7)
    assert relevant in chosen and stray not in chosen
