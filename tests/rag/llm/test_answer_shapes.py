"""Answers whose shape the question sets, each reproduced on its own: a process is its steps, a
"why" is answered by the reason after the fact, "what is maya working on" by her own lines, and
"what do we know about acme" by what each source on Acme says."""

from __future__ import annotations

from rag.llm.completing import (
    with_announced_items,
    with_antecedents,
    with_how_it_is_done,
    with_reason,
    with_replies,
)
from rag.llm.context import ContextSource
from rag.llm.listing import asks_overview, says_kind, spread, wants_all
from rag.llm.transcripts import asks_what_busy_with, lines_said_by
from rag.words import asked_terms
from tests.rag.llm.test_extractive import run


def _line(src, position, text, score=0.5, speaker=""):
    from rag.llm.candidates import Sentence

    s = Sentence(source=src, position=position, text=text, speaker=speaker)
    s.score = score
    return s


def test_a_process_is_asked_for_as_its_steps():
    assert wants_all(asked_terms("what is the release process"))
    assert wants_all(asked_terms("whats the onboarding procedure"))
    assert not wants_all(asked_terms("what does the process scheduler do with idle threads on a busy host"))


def test_a_steps_question_hops_to_another_source_for_a_step_not_for_a_decision():
    steps = asked_terms("steps for a release")
    decisions = asked_terms("what did we decide about the release")
    agreed = "We agreed to revisit the Northwind proposal."
    assert not says_kind(agreed, steps)
    assert says_kind(agreed, decisions)
    assert says_kind("The next steps are in the runbook.", steps)


def test_why_is_answered_by_the_reason_after_the_fact():
    page = ContextSource(n=1, title="Platform team budget 2027", text="")
    fact = _line(page, 0, "The platform team budget for 2027 is 412,000 euros, up from 365,000 euros.", 0.9)
    reason = _line(page, 1, "Most of the increase pays for a second on-call engineer from March.", 0.3)
    plans = _line(page, 2, "Hosting stays on the two existing servers.", 0.2)
    pool = [fact, reason, plans]
    assert with_reason("why is the budget going up", [fact], pool, max_sentences=4) == [fact, reason]
    # Not for another question, nor when a chosen sentence gives a reason already.
    assert with_reason("what is the budget", [fact], pool, max_sentences=4) == [fact]
    because = _line(page, 3, "It grew because of the second engineer.", 0.8)
    assert with_reason("why is the budget going up", [fact, because], pool, max_sentences=4) == [fact, because]
    # A full answer gives up its weakest other sentence for the reason.
    assert with_reason("why is the budget going up", [fact, plans], pool, max_sentences=2) == [fact, reason]


def test_a_question_a_page_asks_is_quoted_with_its_reply():
    """A FAQ: the question repeats the asker's words, the reply after it says what they want."""
    faq = ContextSource(n=1, title="faq", text="")
    free = _line(faq, 0, "Is Logseq free?", 0.4)
    pro = _line(faq, 1, "TLDR: Logseq is free but Logseq Pro is not.", 0.3)
    asked = _line(faq, 2, "Can I backup my files to a cloud service such as Dropbox?", 0.9)
    reply = _line(faq, 3, "Yes, you can use the desktop app to open your local folder.", 0.2)
    nxt = _line(faq, 4, "Why was Logseq written in Clojure?", 0.5)
    pool = [free, pro, asked, reply, nxt]
    assert with_replies([asked], pool, max_sentences=4) == [asked, reply]
    # The first question quoted gets its reply; a full answer gives up its weakest other sentence.
    other = _line(ContextSource(n=3, title="Logseq Sync", text=""), 0, "Sync stores files encrypted.", 0.6)
    assert with_replies([asked, other], pool, max_sentences=3) == [asked, reply, other]
    assert with_replies([asked, other], pool, max_sentences=2) == [asked, reply]
    # Another question is no reply, a statement needs none, and a meeting's questions are lent
    # relevance instead.
    assert with_replies([nxt], pool, max_sentences=4) == [nxt]
    assert with_replies([pro], pool, max_sentences=4) == [pro]
    meeting = ContextSource(n=2, title="weekly", text="")
    spoken = _line(meeting, 0, "Can we ship on Friday?", 0.9, speaker="Maya")
    answer = _line(meeting, 1, "Yes, if the tests pass.", 0.2, speaker="Leo")
    assert with_replies([spoken], [spoken, answer], max_sentences=4) == [spoken]


def test_a_quote_reads_as_text_without_bold_marks():
    from rag.llm.sentences import cite

    assert cite("**TLDR: Logseq is free, Pro is not.**", 1) == "TLDR: Logseq is free, Pro is not [1]."
    assert cite("How can I donate money?**", 2) == "How can I donate money [2]?"
    assert cite("Use `**kwargs` to pass **any** options", 3) == "Use `**kwargs` to pass any options [3]"


def test_announced_items_are_quoted_all():
    """ "There are two ways to bring Notion pages in." followed by "Pushed: …" and "Pulled: …":
    one way of two is half an answer."""
    page = ContextSource(n=1, title="Connecting Notion", text="")
    ways = _line(page, 0, "There are two ways to bring Notion pages in.", 0.9)
    pushed = _line(page, 1, "Pushed: an n8n workflow posts each changed page to /notion/ingest.", 0.6)
    pulled = _line(page, 2, "Pulled: set NOTION_TOKEN and run manage.py notion_sync.", 0.3)
    props = _line(page, 3, "Properties are sent as the Notion database names them.", 0.5)
    pool = [ways, pushed, pulled, props]
    assert with_announced_items([ways, pushed, props], pool, max_sentences=4) == [ways, pushed, pulled, props]
    # A full answer gives up its weakest other sentence for the missing item.
    assert with_announced_items([ways, pushed, props], pool, max_sentences=3) == [ways, pushed, pulled]
    # Items the page does not give as labelled sentences, or an announcement of nothing: unchanged.
    plain = _line(page, 2, "The other pulls pages with a token.", 0.3)
    assert with_announced_items([ways, pushed], [ways, pushed, plain], max_sentences=4) == [ways, pushed]
    many = _line(page, 0, "Notion has two databases we read from.", 0.9)
    assert with_announced_items([many, pushed], [many, pushed, pulled], max_sentences=4) == [many, pushed]


def test_how_to_is_answered_with_the_to_do_this_after_the_advice():
    page = ContextSource(n=1, title="Aliases and external links", text="")
    advice = _line(page, 0, "For aliases that you use often it's best to add a page alias.", 0.9)
    example = _line(page, 1, "For example, you might want [[PKM]] to point to Personal Knowledge Management.", 0.4)
    how = _line(page, 2, "To do this, add the following in the first block of the page: `alias:: PKM`", 0.3)
    other = _line(page, 5, "An alias page reference jumps to the source page.", 0.5)
    pool = [advice, example, how, other]
    question = "how do i give a page an alias"
    assert with_how_it_is_done(question, [advice, other], pool, max_sentences=4) == [advice, how, other]
    assert with_how_it_is_done("what is an alias", [advice, other], pool, max_sentences=4) == [advice, other]


def test_how_to_is_answered_with_what_to_do_for_it_right_after_what_is_possible():
    """ "It's also possible to link to websites." says that, not how: the next sentence, "To point
    to a URL, use …", does."""
    page = ContextSource(n=1, title="Aliases and external links", text="")
    possible = _line(page, 0, "It's also possible to link to pages outside of Logseq, i.e. websites.", 0.9)
    how = _line(page, 1, "To point to a URL, either use the trigger menu by typing `/link` or press `Ctrl-l`.", 0.4)
    label = _line(page, 2, "Between the brackets, put the label of the link.", 0.3)
    alias = _line(page, 4, "To link to an internal page, use the alias function.", 0.5)
    pool = [possible, how, label, alias]
    question = "how do i link to a website"
    assert with_how_it_is_done(question, [possible, label], pool, max_sentences=4) == [possible, how, label]
    # Only right after: a purpose two sentences on is another task.
    assert with_how_it_is_done(question, [label], pool, max_sentences=4) == [label]
    assert with_how_it_is_done("what can i link to", [possible], pool, max_sentences=4) == [possible]


def test_a_sentence_naming_the_asked_thing_as_these_brings_the_one_before():
    """ "…can retune these weights" for "what are the default weights": the weights are the
    sentence before's 0.7 and 0.3; and that one's own lead when it leans on it too."""
    page = ContextSource(n=1, title="How knowhub search ranks results", text="")
    score = _line(page, 0, "Each chunk gets 0.7 times its vector similarity plus 0.3 times its text score.")
    rrf = _line(page, 1, "Reciprocal rank fusion is available as an alternative.")
    rrf.before = score.text
    retune = _line(page, 2, "Relevance judgments can retune these weights.")
    retune.before = rrf.text
    pool = [score, rrf, retune]
    assert with_antecedents([retune], pool, asked_terms("default weights")) == [score, rrf, retune]
    assert with_antecedents([retune], pool, asked_terms("who retunes the ranking")) == [retune]


def test_what_someone_is_working_on_is_answered_by_their_own_lines():
    weekly = ContextSource(n=1, title="Platform weekly", text="")
    mine = _line(weekly, 0, "p95 search latency is 24 ms at 100k chunks.", speaker="Maya Chen")
    decided = _line(weekly, 2, "Decision: move the Logseq sync to every fifteen minutes.", speaker="Maya Chen")
    other = _line(weekly, 1, "The nightly Notion sync hit rate limits twice.", speaker="Sam Okafor")
    for question in ("what is maya working on", "what has Maya been doing", "what does maya work on"):
        assert asks_what_busy_with(question)
        terms = asked_terms(question) - {"work"}
        assert lines_said_by(question, terms, [mine, other, decided]) == [mine, decided]
    # "The worker" is a thing, not a person whose lines answer.
    assert not asks_what_busy_with("what is the worker doing")
    assert lines_said_by("what is the worker doing", asked_terms("what is the worker doing"), [mine, other]) == []
    assert not asks_what_busy_with("what did maya say")
    assert not asks_what_busy_with("does knowhub work with notion")


def test_who_someone_is_is_answered_by_their_own_lines():
    weekly = ContextSource(n=1, title="Platform weekly", text="")
    decided = _line(weekly, 2, "Decision: move the Logseq sync to every fifteen minutes.", speaker="Maya Chen")
    other = _line(weekly, 3, "Leo Martin asked for a monthly report of unanswered questions.", speaker="Sam Okafor")
    for question in ("who is maya", "whos Maya?", "who's maya"):
        assert asks_what_busy_with(question)
        assert lines_said_by(question, asked_terms(question), [decided, other]) == [decided]
    # A longer question names a subject beyond the person.
    assert not asks_what_busy_with("who is maya's manager on the pilot")


def test_an_overview_of_a_named_subject_takes_the_lines_of_each_source_on_it():
    kickoff = ContextSource(n=2, title="Acme Capital kickoff", text="", date="2026-08-01")
    review = ContextSource(n=1, title="Acme Capital pilot review", text="", date="2026-09-15")
    one_on_one = ContextSource(n=3, title="1:1 with Leo", text="", date="2026-11-26")
    wants = _line(kickoff, 0, "Acme Capital wants a search over ten years of memos.", 0.9, "Leo Martin")
    pilot = _line(kickoff, 3, "Decision: pilot with five analysts.", 0.6, "Maya Chen")
    used = _line(review, 0, "Analysts used the pilot 340 times.", 0.5, "Sam Okafor")
    extend = _line(review, 3, "Acme Capital will extend the pilot.", 0.8, "Sam Okafor")
    release = _line(one_on_one, 0, "Leo wants less release management.", 0.95, "Maya Chen")
    pool = [wants, pilot, used, extend, release]
    question = "what do we know about acme"
    assert asks_overview(question) and asks_overview("whats the latest on the acme pilot")
    assert not asks_overview("what did acme want")
    # The best of each source in turn, newest source first; the 1:1 names no Acme.
    assert spread(pool, asked_terms(question), limit=4) == [used, extend, wants, pilot]
    assert spread(pool, asked_terms(question), limit=2) == [extend, wants]
    # A word the sources write in lower case is no name: the best page explains it.
    page = ContextSource(n=4, title="Closures", text="")
    other = ContextSource(n=5, title="Loops", text="")
    closures = [_line(page, 0, "A closure keeps its scope."), _line(other, 0, "Every closure in a loop shares it.")]
    assert spread(closures, asked_terms("tell me about closures"), limit=4) == []


def test_an_overview_question_quotes_every_source_on_its_subject(local_embedder):
    sources = [
        ContextSource(
            n=1, title="Acme Capital pilot review", date="2026-09-15",
            text="Sam Okafor: Analysts used the pilot 340 times.\nSam Okafor: Acme Capital will extend the pilot.",
        ),
        ContextSource(
            n=2, title="Acme Capital kickoff", date="2026-08-01",
            text="Leo Martin: Acme Capital wants a search over ten years of investment memos.\n"
            "Maya Chen: Decision: pilot with five analysts, review after six weeks.",
        ),
    ]  # fmt: skip
    _, text = run("what do we know about acme", sources=sources)
    assert "[1]" in text and "[2]" in text, text


def test_when_something_was_decided_is_the_date_of_the_meeting_that_records_it():
    from rag.llm.prose import dated_lead

    review = ContextSource(n=1, title="Acme Capital pilot review", text="", date="2026-09-15")
    one_on_one = ContextSource(n=2, title="1:1 with Leo", text="", date="2026-11-26")
    line = ["Decision: add recency as a ranking feature."]
    lead = dated_lead("when did we decide to add recency", line, [review, one_on_one], spoken=True, quoted=[review])
    assert lead == "“Acme Capital pilot review” is dated 2026-09-15 [1]."
    # The future is not the date of the meeting that mentions it.
    nxt = ["I will pair with him on the next release."]
    assert dated_lead("when is the next release", nxt, [one_on_one], spoken=True, quoted=[one_on_one]) == ""


def test_the_latest_on_a_named_subject_is_an_overview_of_it():
    review = ContextSource(n=1, title="Acme Capital pilot review", text="", date="2026-09-15")
    kickoff = ContextSource(n=2, title="Acme Capital kickoff", text="", date="2026-08-01")
    extend = _line(review, 3, "Acme Capital will extend the pilot.", 0.8, "Sam Okafor")
    wants = _line(kickoff, 0, "Acme Capital wants a search over memos.", 0.9, "Leo Martin")
    assert spread([wants, extend], asked_terms("whats the latest on acme"), limit=4) == [extend, wants]


def test_how_many_opens_with_the_sentence_that_counts_the_thing():
    from rag.llm.counts import counts_first

    review = ContextSource(n=1, title="Acme Capital pilot review", text="")
    kickoff = ContextSource(n=2, title="Acme Capital kickoff", text="")
    used = _line(review, 0, "Analysts used the pilot 340 times.")
    extend = _line(review, 3, "Acme Capital will extend the pilot.")
    five = _line(kickoff, 3, "Decision: pilot with five analysts.")
    assert counts_first("analyst", [used, extend, five]) == [five, used, extend]
    assert counts_first("memo", [used, five]) == [used, five]  # nothing counts memos: as chosen
    assert counts_first("", [used, five]) == [used, five]


def test_a_change_between_two_values_says_how_they_compare():
    from rag.words import content_terms, implied_terms

    change = implied_terms("The budget for 2027 is 412,000 euros, up from 365,000 euros this year.")
    assert content_terms("is the budget bigger") - {"budget"} <= change
    assert content_terms("did it increase") <= change
    assert not content_terms("bigger") & implied_terms("The budget for 2027 is 412,000 euros.")


def test_an_example_is_the_code_a_source_shows():
    from rag.llm.examples import asks_example, code_example

    page = ContextSource(
        n=1, title="Call stack, task queue and microtasks",
        text="Promise reactions are *microtasks*.\n\n```javascript\nsetTimeout(f, 0);\n```\n\n"
        "Another.\n\n```javascript\nPromise.resolve().then(() => console.log('microtask'));\n```",
    )  # fmt: skip
    other = ContextSource(n=2, title="Closures", text="```js\nfunction makeCounter() {}\n```")
    assert asks_example("give me an example") and asks_example("show me some code")
    assert not asks_example("what is a microtask") and not asks_example("what does the code in counter.js do")
    assert asks_example("can you show me one") and not asks_example("show me one of the meetings with acme")
    terms = {"microtask"}
    # The block naming the subject, cited and fenced as the page writes it.
    assert code_example([page, other], terms) == (
        "An example from [1]:\n\n```javascript\nPromise.resolve().then(() => console.log('microtask'));\n```"
    )
    # Once shown, the next one; with no word in common, the best-ranked source's first.
    shown = "Promise.resolve().then(() => console.log('microtask'));"
    assert code_example([page, other], terms, already_said=shown).endswith("setTimeout(f, 0);\n```")
    assert code_example([other, page], {"loop"}).startswith("An example from [2]")
    assert code_example([ContextSource(n=1, title="t", text="No code here.")], terms) == ""


def test_a_follow_up_on_a_part_is_answered_by_the_sources_that_hold_it():
    from rag.llm.context import STATED_CONVERSATION
    from rag.llm.stated import holding_own_words

    loop = ContextSource(n=1, title="Call stack, task queue and microtasks", text="")
    ranking = ContextSource(n=2, title="How knowhub search ranks results", text="")
    micro = _line(loop, 0, "Promise reactions are microtasks.")
    score = _line(ranking, 0, "Each chunk gets 0.7 times its vector similarity.")
    weights = _line(ranking, 1, "Judgments can retune these weights.")
    pool = [micro, score, weights]
    follow_up = [f"{STATED_CONVERSATION}and the weights? (microtask)"]
    # The source that says the question's own word, whole: its other sentences may answer too.
    assert holding_own_words("and the weights?", follow_up, pool) == [score, weights]
    assert holding_own_words("and the deadline?", follow_up, pool) == []
    # No word of its own: the sources on the conversation's subject, every candidate when none is.
    assert holding_own_words("who raised it?", follow_up, pool) == pool
    assert holding_own_words("what should i do then", [f"{STATED_CONVERSATION}what should i do then (weights)"],
                             pool) == [score, weights]  # fmt: skip
    assert holding_own_words("what then", [f"{STATED_CONVERSATION}what then (redis)"], pool) == pool
    assert holding_own_words("and the weights?", [], pool) == pool
    # Of the sources saying the follow-up's own word (in other words too), those on the subject.
    review = ContextSource(n=3, title="Acme Capital pilot review", text="")
    changelog = ContextSource(n=4, title="Changelog", text="")
    complaint = _line(review, 0, "Two complaints: old memos ranked above recent ones.")
    decision = _line(review, 1, "Decision: add recency as a ranking feature.")
    fix = _line(changelog, 0, "fix(mobile): incorrect theme color for the status bar")
    stated = [f"{STATED_CONVERSATION}did we fix it (acmes complaints)"]
    assert holding_own_words("did we fix it", stated, [complaint, decision, fix]) == [complaint, decision]
    # "It" is the subject: when no source on it says the follow-up's word, none answers.
    handlers = _line(changelog, 1, "Handlers attached with then always run as microtasks.")
    handling = [f"{STATED_CONVERSATION}who is handling it (acme complaints)"]
    assert holding_own_words("who is handling it", handling, [complaint, decision, handlers]) == []


def test_what_someone_is_busy_with_reads_their_latest_meetings_first():
    from rag.llm.listing import latest_of_each

    old = ContextSource(n=1, title="Acme Capital kickoff", text="", date="2026-08-01")
    new = ContextSource(n=2, title="1:1 with Leo", text="", date="2026-11-26")
    undated = ContextSource(n=3, title="Notes", text="")
    a = _line(old, 0, "They care most about citations.", 0.9, "Maya Chen")
    b = _line(old, 3, "Decision: pilot with five analysts.", 0.8, "Maya Chen")
    c = _line(new, 0, "Leo wants more time with clients.", 0.2, "Maya Chen")
    d = _line(undated, 0, "An undated line.", 0.95, "Maya Chen")
    # One line of each meeting in turn, newest first, undated last, whatever their scores.
    assert latest_of_each([a, b, c, d], limit=3) == [c, a, d]
    assert latest_of_each([a, b, c, d], limit=5) == [c, a, b, d]


def test_who_talked_about_something_is_answered_by_the_lines_someone_said_on_it():
    from rag.llm.transcripts import spoken_lines

    handbook = ContextSource(n=1, title="Connecting Notion", text="")
    weekly = ContextSource(n=2, title="Platform weekly", text="")
    page = _line(handbook, 0, "There are two ways to bring Notion pages in.")
    sync = _line(weekly, 1, "The nightly Notion sync hit rate limits twice.", speaker="Sam Okafor")
    other = _line(weekly, 0, "p95 search latency is 24 ms.", speaker="Maya Chen")
    assert spoken_lines("who talked about notion", [page, sync, other]) == [sync]
    assert spoken_lines("who mentioned the budget", [page, sync, other]) == []
    assert spoken_lines("who wrote the notion page", [page, sync, other]) == []  # asks no one's words


def test_when_the_next_one_is_is_not_the_date_of_the_last_one():
    from rag.llm.prose import dated_sources

    review = ContextSource(n=1, title="Acme Capital pilot review", text="", date="2026-09-15")
    assert dated_sources("when was the acme review", [review]) == [review]
    assert dated_sources("when is the next review", [review]) == []
    assert dated_sources("when is the upcoming acme review", [review]) == []


def test_a_bare_why_with_no_reason_quoted_says_so():
    from rag.llm.completing import no_reason_given

    weekly = ContextSource(n=1, title="Platform weekly", text="")
    latency = _line(weekly, 0, "p95 search latency is 24 ms.", speaker="Maya Chen")
    because = _line(weekly, 1, "We moved it because the nightly run was too late.", speaker="Sam Okafor")
    assert no_reason_given("why", [latency]) and no_reason_given("and why?", [latency])
    assert not no_reason_given("why", [latency, because])
    assert not no_reason_given("why is the budget going up", [latency])  # a question of its own


def test_a_part_named_only_in_a_page_title_is_held_by_that_page():
    from rag.llm.context import STATED_CONVERSATION
    from rag.llm.stated import holding_own_words

    tuning = ContextSource(n=1, title="Tuning HNSW in pgvector", text="")
    graph = _line(tuning, 0, "HNSW builds a layered graph over the vectors.")
    follow_up = [f"{STATED_CONVERSATION}how do i tune it (hnsw)"]
    assert holding_own_words("how do i tune it", follow_up, [graph]) == [graph]
