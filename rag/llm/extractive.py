"""The offline answerer: quotes the retrieved sentences that best answer the question.

It reads the same messages an LLM gets (``rag.llm.context``), splits each numbered source into
sentences, scores them by embedding similarity to the question (the local model, one batch),
keyword overlap and closeness to the other sentences (what the sources mostly say), picks a few
non-redundant ones (MMR), and writes them grouped by source in document order, each followed by
its ``[n]``. When nothing scores high enough it says so instead of quoting noise. It never invents
text: ``generative`` is False; the one line it adds names the meeting's agenda item it quotes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

from rag.llm.base import Completion, LLMError
from rag.llm.candidates import (
    Sentence,
    centrality,
    dot,
    embedded_text,
    of_the_names,
    query_vector,
    score_overlap,
    sentence_vectors,
    unsaid_sentences,
)
from rag.llm.completing import completed, with_antecedents
from rag.llm.context import (
    STATED_COUNT,
    STATED_LISTED,
    STATED_MORE_ABOUT,
    ContextSource,
    parse_stated,
    parse_user_prompt,
)
from rag.llm.counts import (
    answers_count,
    counted_target,
    counted_thing,
    counts_first,
    counts_thing,
    examples_of,
    one_a_source,
)
from rag.llm.examples import asks_example, code_example
from rag.llm.listing import (
    each_in_turn,
    latest_of_each,
    newest_first,
    on_subject,
    overview,
    says_kind,
    states,
    stating,
    wants_all,
)
from rag.llm.pointing_back import about_what_was_asked, quoted_lines
from rag.llm.prose import (
    answers_otherwise,
    asks_how_long,
    asks_how_often,
    dated_sources,
    has_expected_form,
    naming_sources,
    only_points_elsewhere,
    unmentioned_names,
)
from rag.llm.quoting import written_answer
from rag.llm.sentence_rank import word_fit
from rag.llm.stated import holding_own_words, without_stated
from rag.llm.transcripts import (  # transcripts only: speaker turns, hesitations, role names
    ACTIVITY_TERMS,
    asks_what_busy_with,
    asks_who_said_it,
    lend_to_replies,
    lines_said_by,
    names_speaker,
    says_something,
    spoken_lines,
)
from rag.words import (
    GENERIC_TERMS,
    asked_listing,
    asked_terms,
    asks_for_more,
    asks_how_to,
    content_terms,
    in_written_forms,
    joined_as_written,
    listing_of,
)

logger = logging.getLogger(__name__)

_HOW_LONG_TERMS = frozenset(content_terms("long"))


class ExtractiveLLM:
    """Quotes, never writes: the offline default behind the LLM protocol.

    ``min_similarity`` is the cosine (all-MiniLM-L6-v2) the best sentence must reach, unless
    it shares at least ``min_overlap`` of the question's content words.
    """

    name = "extractive"
    generative = False

    def __init__(
        self,
        *,
        embedder=None,
        max_sentences: int = 4,
        max_chars: int = 900,
        max_candidates: int = 96,
        min_similarity: float = 0.3,
        min_overlap: float = 0.5,
        sure_similarity: float = 0.5,
        related_similarity: float = 0.35,
        min_specific: float = 0.3,
        overlap_similarity: float = 0.2,
        mmr_lambda: float = 0.7,
        floor_ratio: float = 0.7,
        more_floor_ratio: float = 0.3,
        speaker_bonus: float = 0.1,
        focus_bonus: float = 0.2,
        source_rank_weight: float = 0.5,
        centrality_weight: float = 0.3,
        question_penalty: float = 0.3,
        reply_weight: float = 0.8,
        form_bonus: float = 0.1,
        pairs_weight: float = 0.2,
        rare_weight: float = 0.1,
        count_bonus: float = 0.3,
        said_penalty: float = 0.3,
    ):
        self._embedder = embedder
        self.max_sentences = max_sentences
        self.max_chars = max_chars
        self.max_candidates = max_candidates
        self.min_similarity = min_similarity
        self.min_overlap = min_overlap
        self.sure_similarity = sure_similarity
        self.related_similarity = related_similarity
        self.min_specific = min_specific
        self.last_candidates: list[Sentence] = []  # what the last select() weighed (calibration)
        self.overlap_similarity = overlap_similarity
        self.mmr_lambda = mmr_lambda
        self.floor_ratio = floor_ratio
        # "Tell me more about X" wants what the sources say about X, not only the closest sentence.
        self.more_floor_ratio = more_floor_ratio
        self.speaker_bonus = speaker_bonus
        self.focus_bonus = focus_bonus
        self.source_rank_weight = source_rank_weight
        self.centrality_weight = centrality_weight
        self.question_penalty = question_penalty
        self.reply_weight = reply_weight
        self.form_bonus = form_bonus
        # Written sentences only: the question's word pairs and rare words they say (``sentence_rank``).
        self.pairs_weight = pairs_weight
        self.rare_weight = rare_weight
        self.count_bonus = count_bonus
        # What the conversation already quoted, against a sentence it has not (see ``select``).
        self.said_penalty = said_penalty

    @property
    def embedder(self):
        if self._embedder is None:
            from rag.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    def complete(self, *, messages, max_tokens=800, temperature=0.2, json_schema=None, timeout=None) -> Completion:
        if json_schema is not None:
            raise LLMError("The extractive answerer cannot produce structured output.")
        final = None
        for part in self.stream(messages=messages, max_tokens=max_tokens, temperature=temperature, timeout=timeout):
            if isinstance(part, Completion):
                final = part
        assert final is not None
        return final

    def stream(self, *, messages, max_tokens=800, temperature=0.2, timeout=None) -> Iterator[str | Completion]:
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        question, sources, topic = parse_user_prompt(user)
        stated = parse_stated(user)
        said = " ".join(m["content"] for m in messages if m.get("role") == "assistant")
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "assistant"), "")
        parts = list(
            self.answer_parts(
                question=question, sources=sources, topic=topic, already_said=said, stated=stated, last_answer=last
            )
        )
        yield from parts
        yield Completion(text="".join(parts), model=self.name)

    # -- the answerer ---------------------------------------------------------------------------

    def select(
        self, *, question: str, sources: list[ContextSource], topic: str = "", already_said: str = "",
        stated: list[str] | None = None, last_answer: str = "",
    ) -> tuple[list[Sentence], float]:  # fmt: skip
        """The chosen sentences (in reading order) and the best raw similarity seen.

        ``stated`` are phrases of the question already applied as filters ("last month", "in
        the meetings collection"): they are taken out of the question before scoring, and when
        nothing specific is left ("what was decided?") every source passed the person's own
        filters, so the best sentences are quoted rather than refused.
        """
        # A person the question names stays in what tells whose lines answer it, also when a filter
        # on that person took the name out of the question ("what is Maya working on").
        asked = question
        question, narrowed = without_stated(question, stated)
        # "Tell me more", "what else": only what the conversation has not quoted yet. Any other
        # follow-up prefers it too (``said_penalty``), but "why did it go up?" is answered by the
        # quote of why it went up, however recently said, before a new sentence that does not.
        only_new = asks_for_more(question) or any(p.startswith(STATED_MORE_ABOUT) for p in stated or [])
        if asks_who_said_it(question) and (quoted := quoted_lines(sources, last_answer)):
            return about_what_was_asked(quoted, topic, question)[: self.max_sentences], 0.0
        candidates = unsaid_sentences(sources, already_said, keep_said=not only_new)
        candidates = holding_own_words(question, stated, candidates)
        if not candidates:
            return [], 0.0
        question = joined_as_written(question, [*(c.text for c in candidates), *(s.title for s in sources)])
        query = f"{topic} {question}".strip() if topic else question
        q_terms = asked_terms(query)
        if asks_how_long(question):
            q_terms -= _HOW_LONG_TERMS  # "how long is the pilot" is no question about long tasks
        busy = asks_what_busy_with(asked)  # "what is maya working on": "working" is no subject
        if busy:
            q_terms -= ACTIVITY_TERMS
        n_sources = max(len(sources), 1)
        rank = {src.n: i for i, src in enumerate(sources)}
        score_overlap(candidates, q_terms, how_to=asks_how_to(question))
        if len(candidates) > self.max_candidates:
            # Embedding is the cost: keep the sentences of the best-ranked sources, and any that
            # share words with the question.
            keep = sorted(candidates, key=lambda c: -(c.overlap + 0.5 * (1 - rank[c.source.n] / n_sources)))
            kept = {id(c) for c in keep[: self.max_candidates]}
            candidates = [c for c in candidates if id(c) in kept]
        # Closeness is measured in the sources' own word forms ("weighting" typed, "weights" written).
        q_vec = query_vector(self.embedder, in_written_forms(query, [c.text for c in candidates]))
        vecs = sentence_vectors(self.embedder, [embedded_text(c) for c in candidates])
        prose = not any(c.speaker for c in candidates)
        # A count the metadata made ("how many times did we meet acme") is no number for a sentence
        # to state: "used the pilot 340 times" counts something else. Its sources, and a listing's,
        # are the documents counted (listed): one example of each is quoted.
        counting = any(p.startswith((STATED_COUNT, STATED_LISTED)) for p in stated or [])
        counted = "" if counting else counted_thing(question)  # what a "how many X" asks a number of
        self._weigh(candidates, vecs, q_vec=q_vec, question=question, prose=prose, rank=rank,
                    counted=counted, asked=asked)  # fmt: skip
        self.last_candidates = candidates
        best_similarity = max(c.similarity for c in candidates)
        # A source whose agenda item the question names answers it, though no single sentence
        # is close: "Summarize the discussion on X" where X is a topic of the meeting.
        on_agenda = any(src.agenda for src in sources)
        if not self._relevant(candidates, q_terms, question) and not narrowed and not on_agenda:
            return [], best_similarity
        if prose and not narrowed and unmentioned_names(question, " ".join(f"{s.title} {s.text}" for s in sources)):
            return [], best_similarity  # it names something the sources never mention
        more = any(phrase.startswith(STATED_MORE_ABOUT) for phrase in stated or [])
        # "What did we decide with Acme?", "what are the steps…": the answer is every decision
        # (step) the sources hold, often one a document, not the one closest to the question.
        whole = wants_all(q_terms)
        floor_ratio = self.more_floor_ratio if more or whole else self.floor_ratio
        # The decisions of what the question is about: "what did we decide with Acme?" is not
        # answered by a course page's "…is decided by where it is written".
        # "What did Sam say about Notion?" is answered by Sam's lines on it, however well a
        # handbook page on Notion ranks: that page is no one's words.
        said = lines_said_by(asked, q_terms, candidates)
        listed = listing_of(question, q_terms) if whole else asked_listing(question)  # every decision (task)
        about = _quotable_sources(question, sources, candidates, q_terms, whole=whole and not said, spoken=not prose)
        kept = said or spoken_lines(question, candidates) or stating(candidates, listed, about, q_terms)
        if counting:  # the quotes are examples of what the metadata counted
            kept = examples_of(counted_target(stated, STATED_COUNT), kept or candidates) or kept
        elif not kept and asked_listing(question) is not None:
            # "What did we decide in the last 24 hours" where that day holds only course pages: their
            # "is decided by where it is written" is no decision. No answer lets the period be lifted.
            return [], best_similarity
        pool, pool_vecs = _only(kept, candidates, vecs)
        # Not "the Logseq sync" for "the notion sync" (the names as all the lines write them), also
        # when that was the only line kept: then any line but those of another name.
        named = of_the_names(question, pool, sources=candidates) or of_the_names(question, candidates)
        pool, pool_vecs = _only(named, candidates, vecs)
        leads = self._leads(pool, q_terms, question, prose=prose) if not narrowed else None
        leads = _giving_what_is_asked(question, counted, pool, leads)
        # A list of decisions (tasks), some of them dated (meetings), is read newest first.
        dated = bool(
            listed
            and kept
            and all(states(listed, c.text, c.source.text) for c in kept)
            and any(c.source.date for c in kept)
        )
        chosen = self._choose(
            pool, pool_vecs, floor_ratio=floor_ratio, whole=whole, about=about, leads=leads,
            latest=dated and asked_listing(question) is not None, dated=dated, q_terms=q_terms,
        )  # fmt: skip
        if said and busy:
            chosen = latest_of_each(said, limit=self.max_sentences)  # her lines, her latest meetings first
        elif not counting and not said:  # an overview of a named subject, a summary of one source
            chosen = overview(question, chosen, pool, candidates, q_terms, limit=self.max_sentences)
        # What the quotes need beside them ("and how do i use it" after the steps that create it
        # starts at the first step the conversation has not quoted).
        chosen = completed(question, chosen, candidates, max_sentences=self.max_sentences)
        if counting:  # one example of each document counted: the best of its lines; those listed fill the room
            telling = [c for c in pool if not c.speaker or says_something(c.text)]
            counted_only = any(p.startswith(STATED_COUNT) for p in stated or [])
            chosen = (one_a_source if counted_only else each_in_turn)(telling, limit=self.max_sentences)
        else:
            chosen = counts_first(counted, chosen)
        chosen = with_antecedents(chosen, candidates, q_terms)
        if prose and not narrowed and chosen and answers_otherwise(question, chosen):
            return [], best_similarity
        return chosen, best_similarity

    def _weigh(
        self, candidates: list[Sentence], vecs: list[list[float]], *, q_vec: list[float], question: str, prose: bool,
        rank: dict[int, int], counted: str, asked: str = "",
    ) -> None:  # fmt: skip
        """Set each candidate's ``similarity``, ``relevance`` and ``score`` (relevance and the rank
        of its source, ``rank``: source number -> place). ``counted``: the stem a "how many X"
        question counts ("" when the metadata counted). ``asked``: the question as asked, its
        filtered names kept (whose turns it asks for)."""
        central = centrality(vecs)
        fits = word_fit(question, [c.text for c in candidates]) if prose else [None] * len(candidates)
        # A frequency or a span of time is stated the same way written or spoken ("move the sync to
        # every fifteen minutes", "review after six weeks"); the other forms are checked on written
        # sources only.
        form_check = bool(self.form_bonus) and (prose or asks_how_often(question) or asks_how_long(question))
        for cand, vec, centre, fit in zip(candidates, vecs, central, fits, strict=True):
            cand.similarity = dot(q_vec, vec)
            # The sources come ranked by their whole evidence (several chunks, a meeting's
            # agenda), a steadier judgment of which document answers than one sentence's
            # closeness: QMSum validation, citations from the question's meeting 61% at 0.1,
            # 71% at 0.5 (fit half 57% -> 70%, held-out 65% -> 73%).
            cand.relevance = 0.65 * cand.similarity + 0.25 * cand.overlap
            if fit is not None:
                # A written fact is answered by the sentence that restates the question's words
                # around it, in its order: closeness alone ranks any sentence on the topic as high.
                cand.relevance += self.pairs_weight * fit.pairs + self.rare_weight * fit.rare
            if counted and counts_thing(counted, cand.text):
                # "How many analysts…?": the sentence with a number of analysts, spoken or written,
                # over one that counts something else (the sources' rank would otherwise decide).
                cand.relevance += self.count_bonus
            if form_check and has_expected_form(question, cand.text):
                # "When…?" is answered by the sentence with a date, "who…?" by one with a name.
                cand.relevance += self.form_bonus
            # What the sources as a whole talk about (a sentence close to the others) sums up a
            # discussion better than a stray sentence that happens to echo the question's words
            # (and a question asked in the sources is penalised below). QMSum validation ROUGE-L
            # 0.157 without both, 0.162 with (fit and held-out halves alike).
            cand.relevance += self.centrality_weight * centre
            if cand.speaker and names_speaker(asked or question, cand.speaker):
                # "What did C think…", "What did the Industrial Designer say…": that person's turns.
                cand.relevance += self.speaker_bonus
        if self.reply_weight:
            # A quoted question is then followed by its answer. QMSum validation ROUGE-L, fit half
            # 0.163 → 0.167 (0.6 and 1.0 did worse there), held-out 0.161 → 0.163.
            lend_to_replies(candidates, weight=self.reply_weight)
        for cand in candidates:
            # A question in the sources echoes the person's question but does not answer it
            # (penalised after lending, so its reply inherits its own relevance).
            if cand.asks:
                cand.relevance -= self.question_penalty
            elif prose and only_points_elsewhere(cand.text):
                cand.relevance -= self.question_penalty  # "See Logseq Sync Encryption.": no answer
            cand.relevance -= self.said_penalty * cand.said
            prior = 1.0 - rank.get(cand.source.n, 0) / max(len(rank), 1)
            cand.score = cand.relevance + self.source_rank_weight * prior

    def _leads(self, pool: list[Sentence], q_terms: set[str], question: str, *, prose: bool) -> set[int] | None:
        """The candidates (ids) the answer may open with; None: any.

        A written answer opens with a sentence relevant on its own: closeness alone ("call stack"
        for "who is on call") must not lead because another source made the question relevant.
        Among lines, one holding every word of the question ("Decision: send a proposal … by
        Friday" for "the proposal deadline") opens before a line of a higher-ranked meeting that
        holds one of them; a question asked in the meeting holds them too, and answers nothing.
        So does a written sentence ("p95 search latency is 24 ms" for "is search fast")."""
        whole = {id(c) for c in pool if len(q_terms) >= 2 and c.matched == len(q_terms) and not c.asks}
        if prose:
            relevant = {id(c) for c in pool if self._answers(c, q_terms, question)}
            return (relevant & whole) or relevant
        return whole or None

    def _relevant(self, candidates: list[Sentence], q_terms: set[str], question: str = "") -> bool:
        """Whether any candidate answers the question rather than merely sharing its topic.

        Relevant when the meaning is close, or when most of the question's words (two at least,
        so "capital" alone does not tie Peru to Borealis Capital) appear with some closeness.
        Calibrated on answerable QMSum questions against unanswerable ones (bench_answers): a
        sentence close in meaning must also carry some of the question's rarer words, or a
        non-member asking for "p95 search latency" is quoted a sentence about search ranking.
        A line spoken by the person the question names is relevant when it says one of the
        question's other words, or when the question asks nothing but what they said ("what did Maya
        decide?"): the name is its speaker, not its text, so neither closeness nor words show it.
        """
        # Thresholds from a grid on half the QMSum validation meetings (every other meeting, 126
        # questions) against every other off-topic question (25), chosen to refuse all of those
        # off-topic ones: 2.4% of the calibration questions refused; on the held-out meetings
        # 8.1% refused and 92% of the held-out off-topic ones. The demo's answerable and
        # not-visible questions (tests) still pass.
        return any(self._answers(c, q_terms, question) for c in candidates)

    def _answers(self, c: Sentence, q_terms: set[str], question: str) -> bool:
        """Whether the one candidate ``c`` is relevant on its own (``_relevant``'s test)."""
        return bool(
            c.similarity >= self.sure_similarity
            or (c.similarity >= self.related_similarity and (c.matched >= 2 or c.specific >= self.min_specific))
            or (c.similarity >= self.min_similarity and c.specific >= self.min_specific)
            or (
                # Every word of the subject held counts as much as most of the question's words:
                # "who raised the rate limits" needs no sentence saying "raised".
                (c.overlap >= self.min_overlap or c.specific >= 1.0)
                and c.similarity >= self.overlap_similarity
                and c.specific >= self.min_specific
                and (c.matched >= 2 or len(q_terms - GENERIC_TERMS) == 1)
            )
            or (c.speaker and names_speaker(question, c.speaker) and (c.matched or not _asks_beyond(q_terms, c)))
            or (c.similarity >= self.overlap_similarity and answers_count(question, c.text))
            # "What did we decide?" is answered by any line stating a decision, whatever its words
            # ("what are the action items?": any line giving a task).
            or ((listing := asked_listing(question)) is not None and states(listing, c.text, c.source.text))
        )

    def _choose(
        self, candidates: list[Sentence], vecs: list[list[float]], *, floor_ratio: float, whole: bool = False,
        about: set[int] | None = None, leads: set[int] | None = None, latest: bool = False, dated: bool = False,
        q_terms: set[str] = frozenset(),
    ) -> list[Sentence]:  # fmt: skip
        """Pick the answer's sentences by maximal marginal relevance, then put them in reading order.

        After the first, a sentence must reach ``floor_ratio`` of its relevance (or be among the
        first two and relevant on its own). With ``latest`` every candidate answers alike (each
        states a decision or a task, and the question names no subject): the newest are taken
        first, as many as the answer holds. With ``dated`` (a list of them) it reads newest first.
        ``q_terms``, the question's words, say which kind of line is worth a hop to another source."""
        vec_of = {id(c): v for c, v in zip(candidates, vecs, strict=True)}
        # A spoken line that says nothing ("Guess you could, yeah.", "How can I say this.") is not
        # quoted, however well it scores as the reply to a question that does.
        pool = sorted(
            (
                c
                for c in candidates
                if (not c.speaker or says_something(c.text)) and (about is None or c.source.n in about)
            ),
            key=lambda c: (c.source.date, c.score) if latest else (c.score,),
            reverse=True,
        )[:60]
        chosen: list[Sentence] = []
        chars = 0
        written = not any(c.speaker for c in candidates)
        # How many sentences are worth quoting is a matter of their relevance against the answer's
        # first sentence: the sources' rank decides between sentences, not how long the answer is.
        floor = 0.15
        while pool and len(chosen) < self.max_sentences:

            def mmr(c: Sentence) -> float:
                redundancy = max((dot(vec_of[id(c)], vec_of[id(s)]) for s in chosen), default=0.0)
                # Once a document answers, its neighbouring sentences read better than a hop to
                # another document that merely shares words.
                focus = self.focus_bonus if chosen and c.source.n == chosen[0].source.n else 0.0
                if whole and says_kind(c.text, q_terms):  # another decision (step) is worth the hop
                    focus = 2 * self.focus_bonus
                return self.mmr_lambda * (c.score + focus) - (1 - self.mmr_lambda) * redundancy

            openers = [c for c in pool if leads is None or chosen or id(c) in leads]
            if not openers:
                break
            pick = openers[0] if latest else max(openers, key=mmr)
            pool.remove(pick)
            # Below the floor only to make a second sentence that is relevant on its own. The first
            # is the best the ranked sources offer: its score, rank included, must reach the floor.
            weight = pick.relevance if chosen else pick.score
            low = weight < floor and (len(chosen) >= 2 or pick.similarity < self.min_similarity + 0.1)
            if low and not latest:
                # MMR takes a less redundant sentence before a more relevant one: in a written
                # source one below the floor ends nothing while another above it is left. (A
                # meeting's lines above the floor after that are mostly other meetings' words.)
                if not chosen or not written:
                    break
                continue
            if any(dot(vec_of[id(pick)], vec_of[id(s)]) > 0.9 for s in chosen):
                continue
            if chosen and chars + len(pick.text) > self.max_chars:
                continue
            if not chosen:
                floor = max(pick.relevance * floor_ratio, floor)
            chosen.append(pick)
            chars += len(pick.text)
        # Reading order: the opener's source first (it was chosen to open), then sources by their
        # best chosen sentence, then document order inside each.
        order: dict[int, float] = {}
        for s in chosen:
            order[s.source.n] = max(order.get(s.source.n, -math.inf), s.score)
        if chosen:
            order[chosen[0].source.n] = math.inf
        chosen.sort(key=lambda s: (-order[s.source.n], s.source.n, s.position))
        return newest_first(chosen) if dated else chosen

    def answer_parts(
        self, *, question: str, sources: list[ContextSource], topic: str = "", already_said: str = "",
        stated: list[str] | None = None, last_answer: str = "",
    ) -> Iterator[str]:  # fmt: skip
        """The answer, one sentence (or one speaker's quote) per delta."""
        if not sources:
            yield f"I found nothing relevant to “{question}” in the sources you can see."
            return
        if asks_example(question) and (
            example := code_example(sources, asked_terms(f"{topic} {question}"), already_said)
        ):
            yield example  # the code a page shows says more than its prose quoted again
            return
        chosen, _ = self.select(
            question=question, sources=sources, topic=topic, already_said=already_said, stated=stated,
            last_answer=last_answer,
        )  # fmt: skip
        if not chosen:
            if already_said:
                yield "These sources hold nothing more on this than what I already quoted."
            else:
                yield f"I found nothing relevant to “{question}” in the sources you can see."
            return
        yield from written_answer(question, chosen, sources, stated)


def _asks_beyond(q_terms: set[str], line: Sentence) -> bool:
    """The question names something besides the line's speaker and what they said, decided or
    thought ("what did Maya say about the budget?", not "what did Maya say?")."""
    return bool(q_terms - GENERIC_TERMS - content_terms(line.speaker))


def _quotable_sources(
    question: str, sources: list[ContextSource], candidates: list[Sentence], q_terms: set[str], *, whole: bool,
    spoken: bool = False,
) -> set[int] | None:  # fmt: skip
    """The sources the answer may quote (None: any): the one dated source a "when…?" names ("when
    did we last meet acme?" is the lines of that meeting); else, among ``spoken`` sources (meetings
    beside any others), those that mention the names the question does, when some do; and of them
    those on the question's subject when it wants every decision or step. (An article's chunk
    often names its subject only as "the Institute" or "it": written sources are not narrowed so.)"""
    if len(dated := dated_sources(question, sources)) == 1:
        return {dated[0].n}
    naming = naming_sources(question, sources) if spoken else None
    subject = on_subject(candidates, q_terms, question) if whole else None
    if naming is None or subject is None:
        return naming if subject is None else subject
    return (naming & subject) or subject


def _giving_what_is_asked(question: str, counted: str, pool: list[Sentence], leads: set[int] | None) -> set[int] | None:
    """``leads`` narrowed to the lines that give what the question's form asks for, where some do.
    "How many people joined the pilot?" opens with the line giving a number of them ("pilot with
    five analysts"), not with a closer line counting something else; "how long is the pilot?" with
    the line giving a span of time ("review after six weeks"), "how often…" with the one giving a
    frequency, however high another meeting ranks."""
    if counted and (counting_lines := {id(c) for c in pool if counts_thing(counted, c.text)}):
        leads = (counting_lines & (leads or set())) or counting_lines
    if (asks_how_long(question) or asks_how_often(question)) and (
        timed := {id(c) for c in pool if has_expected_form(question, c.text)}
    ):
        leads = (timed & (leads or set())) or timed
    return leads


def _only(kept: list[Sentence], candidates: list[Sentence], vecs: list[list[float]]) -> tuple[list, list]:
    """The ``kept`` candidates and their vectors; all of them when none is kept."""
    if not kept:
        return candidates, vecs
    ids = {id(c) for c in kept}
    pairs = [(c, v) for c, v in zip(candidates, vecs, strict=True) if id(c) in ids]
    return [c for c, _ in pairs], [v for _, v in pairs]
