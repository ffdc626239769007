"""Writes for learning sessions: start, chat, finish, index the artifact, import content.

Every service takes ``llm`` (default: ``rag.llm.get_chat_llm()``, which is None offline) and
``embedder`` (default: the configured provider) as keyword arguments, so tests and commands
can inject them. Model calls happen outside transactions; the writes after them are atomic
and check that the session did not move on meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from knowhub.sse import Event
from rag.answering.citations import CitationFilter
from sessions.artifacts import Artifact, extract_deterministic, extract_with_llm
from sessions.content import ImportResult, load_content, upsert_content
from sessions.guide import LLMGuide, OfflineGuide, progress
from sessions.models import LearningSession, Realm, SessionEvent, SessionProgress, Topic
from sessions.selectors import next_topic, realm_topics

logger = logging.getLogger(__name__)

_DEFAULT = object()
MAX_MESSAGE_CHARS = 4000


class SessionError(Exception):
    """A request the session cannot honour; ``code`` and ``status`` shape the API's answer."""

    code = "session_error"
    status = 400

    def __init__(self, detail: str, **extra):
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


# A realm or topic name that does not exist (for this learner): 404, like any identifier.
class UnknownRealm(SessionError):
    code, status = "unknown_realm", 404


class UnknownTopic(SessionError):
    code, status = "unknown_topic", 404


class RealmComplete(SessionError):
    code, status = "realm_complete", 409


class SessionOpen(SessionError):
    code, status = "session_open", 409


class SessionFinished(SessionError):
    code, status = "session_finished", 409


class SessionConflict(SessionError):
    code, status = "session_conflict", 409


class SessionForbidden(SessionError):
    code, status = "not_found", 404


def resolve_llm(llm=_DEFAULT):
    """The chat model to use, or None: offline, or a provider that cannot write free text."""
    if llm is _DEFAULT:
        from rag.llm import get_chat_llm

        llm = get_chat_llm()
    return llm if llm is not None and getattr(llm, "generative", False) else None


def _check_access(session: LearningSession, user) -> None:
    if session.user_id != user.pk and not (user.is_staff or user.is_superuser):
        raise SessionForbidden("No such session.")


# --- content --------------------------------------------------------------------------------


@transaction.atomic
def learning_content_import(*, path: Path | str | None = None) -> ImportResult:
    """Create or update realms and topics from JSON files (default: the shipped ones), by slug."""
    realms, topics, files = load_content(path)
    result = upsert_content(realms=realms, topics=topics, realm_model=Realm, topic_model=Topic)
    result.files = files
    logger.info("learning content imported: %s", result.as_dict())
    return result


# --- start ----------------------------------------------------------------------------------


@dataclass
class StartResult:
    session: LearningSession
    created: bool


def session_start(*, user, realm: str, topic: str | None = None, llm=_DEFAULT, embedder=None) -> StartResult:
    """Resume the learner's open session in ``realm``, or start one on the next topic.

    ``topic`` picks a topic explicitly (e.g. to revisit a completed one). The topic pack and the
    realm are copied onto the session so later edits in the admin don't change it midway.
    """
    realm_obj = Realm.objects.filter(slug=realm, is_active=True).first()
    if realm_obj is None:
        raise UnknownRealm(f"Unknown realm {realm!r}.")
    open_session = LearningSession.objects.filter(
        user=user, realm_id=realm_obj.slug, status=LearningSession.Status.ACTIVE
    ).first()
    if open_session is not None:
        if topic and topic != open_session.topic_id:
            raise SessionOpen(
                f"Finish your open session on {open_session.topic_title} in this realm first.",
                session_id=open_session.pk,
            )
        return StartResult(open_session, created=False)

    if topic:
        topic_obj = realm_topics(realm_obj).filter(slug=topic).first()
        if topic_obj is None:
            raise UnknownTopic(f"Topic {topic!r} is not offered in realm {realm_obj.slug!r}.")
    else:
        topic_obj = next_topic(user=user, realm=realm_obj)
        if topic_obj is None:
            raise RealmComplete(f"You have completed every topic of {realm_obj.name}. Pick one to revisit.")

    guide = OfflineGuide(embedder=embedder)
    pack, snapshot = topic_obj.pack(), realm_obj.snapshot()
    state = guide.initial_state(topic=pack, realm=snapshot)
    opening = guide.opening(topic=pack, realm=snapshot, state=state)
    mode = LearningSession.Guide.LLM if resolve_llm(llm) else LearningSession.Guide.OFFLINE
    try:
        with transaction.atomic():
            session = LearningSession.objects.create(
                user=user,
                realm_id=realm_obj.slug,
                topic_id=topic_obj.slug,
                topic_pack=pack,
                realm_snapshot=snapshot,
                state=state,
                rules=state["rules"],
                guide=mode,
            )
            SessionEvent.objects.create(
                session=session,
                role=SessionEvent.Role.ASSISTANT,
                content=opening,
                data={"phase": "entities", "kind": "opening"},
            )
    except IntegrityError:
        # Another request opened a session in this realm a moment ago: resume that one.
        session = LearningSession.objects.get(user=user, realm_id=realm_obj.slug, status=LearningSession.Status.ACTIVE)
        return StartResult(session, created=False)
    logger.info(
        "session %s started: user=%s realm=%s topic=%s guide=%s",
        session.pk, user.pk, session.realm_id, session.topic_id, mode,
    )
    return StartResult(session, created=True)


# --- chat -----------------------------------------------------------------------------------


def _grounding_hits(*, user, topic: dict, query: str, embedder=None, top_k: int = 4) -> list:
    """Course content of the topic's domain the learner may see, best first; [] if none or on error."""
    from rag.acl import Scope
    from rag.search import SearchFilters, chunk_search

    filters = SearchFilters(
        collections=list(settings.KNOWHUB_SESSIONS_GROUNDING_COLLECTIONS), domain=topic.get("domain") or None
    )
    try:
        result = chunk_search(query=query, scope=Scope.for_user(user), filters=filters, top_k=top_k, embedder=embedder)
    except Exception:  # noqa: BLE001 — grounding is an extra; the guide works without it
        logger.exception("grounding search failed for topic %s", topic.get("slug"))
        return []
    return [h for h in result.hits if h.score >= settings.KNOWHUB_SESSIONS_GROUNDING_MIN_SCORE]


def _citation(n: int, hit) -> dict:
    return {
        "n": n,
        "chunk_uid": hit.chunk_uid,
        "title": hit.title,
        "url": hit.url,
        "collection": hit.collection,
        "source_id": hit.source_id,
    }


def _snippet(text: str, limit: int = 320) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def session_chat_stream(
    *, session: LearningSession, user, message: str, llm=_DEFAULT, embedder=None
) -> Iterator[Event]:
    """Validate now, then return an iterator of stream events for one learner message.

    Events (``knowhub.sse.Event``): ``delta`` (``text``) while the reply is written, ``replace``
    (``text``) if a model failed midway and the offline text replaces it, then one ``done``
    (``event``, ``user_event``, ``session``) once both events are stored, or ``error``
    (``error``, ``detail``). Errors that can be known up front raise before anything is
    streamed. The model's ``[n]`` citations pass the ask pipeline's ``CitationFilter``: one
    that names no retrieved excerpt never reaches the learner, nor the stored reply.
    """
    _check_access(session, user)
    if session.is_finished:
        raise SessionFinished("This session is finished and read-only.")
    message = (message or "").strip()
    if not message:
        raise SessionError("Say something to the guide.")
    if len(message) > MAX_MESSAGE_CHARS:
        raise SessionError(f"Messages are limited to {MAX_MESSAGE_CHARS} characters.")
    return _chat_events(session=session, user=user, message=message, llm=resolve_llm(llm), embedder=embedder)


def _chat_events(*, session: LearningSession, user, message: str, llm, embedder) -> Iterator[Event]:
    started = time.perf_counter()
    guide = OfflineGuide(embedder=embedder)
    topic, realm = session.topic_pack, session.realm_snapshot
    turns_before = (session.state or {}).get("turns", 0)
    step = guide.step(topic=topic, realm=realm, state=session.state, legend=session.legend, message=message)
    data: dict = dict(step.data)
    citations: list[dict] = []
    text = step.text

    if llm is None:
        data["guide"] = "offline"
        if step.grounding_query:
            hits = _grounding_hits(user=user, topic=topic, query=step.grounding_query, embedder=embedder, top_k=1)
            if hits:
                head, _, rest = text.partition("\n\n")
                text = f"{head}\nFrom the course, {hits[0].title}: \"{_snippet(hits[0].content)}\" [1]\n\n{rest}"
                citations = [_citation(1, hits[0])]
        yield Event("delta", {"text": text})
    else:
        data["guide"] = "llm"
        query = step.grounding_query or f"{topic.get('title', '')}: {message}"
        hits = _grounding_hits(user=user, topic=topic, query=query, embedder=embedder)
        history = list(session.events.values("role", "content"))
        cf = CitationFilter(valid=set(range(1, len(hits) + 1)))
        parts: list[str] = []
        completion = None
        try:
            for item in LLMGuide(llm).stream(
                topic=topic,
                realm=realm,
                legend=step.legend,
                history=history,
                message=message,
                step=step.text,
                hits=hits,
            ):
                if isinstance(item, str):
                    shown = cf.feed(item)
                    if shown:
                        parts.append(shown)
                        yield Event("delta", {"text": shown})
                else:
                    completion = item
            tail = cf.flush()
            if tail:
                parts.append(tail)
                yield Event("delta", {"text": tail})
            text = "".join(parts).strip() or step.text
            cited = cf.used
        except Exception as exc:  # noqa: BLE001 — any model failure falls back to the offline text
            logger.warning("LLM guide failed for session %s, using the offline reply: %s", session.pk, exc)
            data["guide"] = "offline"
            data["llm_error"] = str(exc)[:300]
            text = step.text
            yield Event("replace", {"text": text})
            cited = []
        citations = [_citation(n, hits[n - 1]) for n in cited]
        if completion is not None:
            data.update(
                model=completion.model,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens,
                cost_usd=completion.cost_usd,
            )
    data["citations"] = citations
    data["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)

    try:
        user_event, reply_event = _save_turn(
            session=session, turns_before=turns_before, message=message, step=step, text=text, data=data
        )
    except SessionError as exc:
        yield Event("error", {"error": exc.code, "detail": exc.detail})
        return
    yield Event(
        "done",
        {
            "user_event": event_payload(user_event),
            "event": event_payload(reply_event),
            "session": session_state_payload(session),
        },
    )


@transaction.atomic
def _save_turn(*, session: LearningSession, turns_before: int, message: str, step, text: str, data: dict):
    locked = LearningSession.objects.select_for_update().get(pk=session.pk)
    if locked.is_finished:
        raise SessionFinished("This session was finished meanwhile.")
    if (locked.state or {}).get("turns", 0) != turns_before:
        raise SessionConflict("The session moved on while this reply was written; reload and try again.")
    user_event = SessionEvent.objects.create(
        session=locked, role=SessionEvent.Role.USER, content=message, data={"phase": step.data.get("phase")}
    )
    reply_event = SessionEvent.objects.create(session=locked, role=SessionEvent.Role.ASSISTANT, content=text, data=data)
    locked.state = step.state
    locked.legend = step.legend
    locked.rules = step.state.get("rules", [])
    locked.save(update_fields=["state", "legend", "rules", "updated_at"])
    session.state, session.legend, session.rules, session.updated_at = (
        locked.state, locked.legend, locked.rules, locked.updated_at
    )
    return user_event, reply_event


@dataclass
class ChatResult:
    session: LearningSession
    user_event: dict
    event: dict


def session_chat(*, session: LearningSession, user, message: str, llm=_DEFAULT, embedder=None) -> ChatResult:
    """One learner message and the guide's reply, both stored as ``SessionEvent``s."""
    final: Event | None = None
    for item in session_chat_stream(session=session, user=user, message=message, llm=llm, embedder=embedder):
        if item.type in ("done", "error"):
            final = item
    if final is None or final.type == "error":
        failed = final.data if final is not None else {}
        code = failed.get("error", "session_conflict")
        raise {"session_finished": SessionFinished}.get(code, SessionConflict)(
            failed.get("detail", "The reply could not be stored.")
        )
    return ChatResult(session=session, user_event=final.data["user_event"], event=final.data["event"])


def event_payload(event: SessionEvent) -> dict:
    return {
        "id": event.pk,
        "role": event.role,
        "content": event.content,
        "data": event.data,
        "created_at": event.created_at.isoformat(),
    }


def session_state_payload(session: LearningSession) -> dict:
    """What the page needs after a turn: phase, progress, the legend so far."""
    return {
        "id": session.pk,
        "status": session.status,
        "progress": progress(session.state or {}, session.topic_pack or {}),
        "legend": session.legend,
    }


# --- finish ---------------------------------------------------------------------------------


@dataclass
class FinishResult:
    session: LearningSession
    already_finished: bool
    indexed: bool


def session_finish(*, session: LearningSession, user, llm=_DEFAULT, embedder=None) -> FinishResult:
    """Extract the artifact, mark the topic complete and index the artifact for its learner.

    The artifact comes from the LLM's structured output when a model is configured and its
    output validates, otherwise from the deterministic extraction. Finishing a finished session
    changes nothing (it only retries indexing if that failed the first time).
    """
    _check_access(session, user)
    if session.is_finished:
        indexed = session.indexed_at is not None or _index_quietly(session, embedder)
        return FinishResult(session=session, already_finished=True, indexed=indexed)

    topic, realm = session.topic_pack, session.realm_snapshot
    artifact = extract_deterministic(topic=topic, realm=realm, state=session.state or {}, legend=session.legend or [])
    measured = artifact.score
    model = resolve_llm(llm)
    if model is not None:
        transcript = list(session.events.values("role", "content"))
        from_llm = extract_with_llm(llm=model, topic=topic, realm=realm, transcript=transcript, draft=artifact)
        if from_llm is not None:
            # The tests were scored by the embedding model; that number beats the model's opinion.
            if (session.state or {}).get("test_results"):
                from_llm.score = measured
            artifact = from_llm

    already = _store_artifact(session=session, artifact=artifact)
    if already:
        session.refresh_from_db()
        return FinishResult(session=session, already_finished=True, indexed=session.indexed_at is not None)
    indexed = _index_quietly(session, embedder)
    logger.info(
        "session %s finished: score=%.2f source=%s indexed=%s", session.pk, artifact.score, artifact.source, indexed
    )
    return FinishResult(session=session, already_finished=False, indexed=indexed)


@transaction.atomic
def _store_artifact(*, session: LearningSession, artifact: Artifact) -> bool:
    """Write the artifact, the progress row and a closing event. True if someone finished first."""
    locked = LearningSession.objects.select_for_update().get(pk=session.pk)
    if locked.is_finished:
        return True
    now = timezone.now()
    locked.legend = artifact.legend
    locked.rules = artifact.rules
    locked.script = artifact.script
    locked.red_flags = artifact.red_flags
    locked.score = round(artifact.score, 4)
    locked.artifact_source = artifact.source
    locked.status = LearningSession.Status.FINISHED
    locked.finished_at = now
    locked.save()
    progress_row, created = SessionProgress.objects.select_for_update().get_or_create(
        user_id=locked.user_id,
        realm_id=locked.realm_id,
        topic_id=locked.topic_id,
        defaults={"session": locked, "best_score": locked.score},
    )
    if not created and (progress_row.best_score is None or locked.score > progress_row.best_score):
        progress_row.best_score = locked.score
        progress_row.session = locked
        progress_row.save(update_fields=["best_score", "session", "updated_at"])
    SessionEvent.objects.create(
        session=locked,
        role=SessionEvent.Role.SYSTEM,
        content=f"Session finished. Score {locked.score:.0%}.",
        data={"kind": "finished", "score": locked.score, "artifact_source": artifact.source},
    )
    for name in (
        "legend", "rules", "script", "red_flags", "score", "artifact_source", "status", "finished_at", "updated_at"
    ):
        setattr(session, name, getattr(locked, name))
    return False


def _index_quietly(session: LearningSession, embedder=None) -> bool:
    """Index the artifact; on failure log it, leave ``indexed_at`` empty and queue a retry.

    The retry task backs off and gives up after a bounded number of transient failures;
    finishing the session again also retries.
    """
    try:
        session_artifact_index(session=session, embedder=embedder)
    except Exception:  # noqa: BLE001 — the session is finished either way; indexing is retried
        logger.exception("indexing the artifact of session %s failed", session.pk)
        _enqueue_index_retry(session.pk)
        return False
    return True


def _enqueue_index_retry(session_id: int) -> None:
    """Queue the re-indexing task once the current transaction commits (a broker that does not
    answer is logged, not raised: the session stays finished and unindexed)."""
    from sessions.tasks import session_artifact_index_task

    transaction.on_commit(lambda: session_artifact_index_task.delay(session_id), robust=True)


def artifact_document(session: LearningSession):
    """The ``SourceDocument`` of a finished session's artifact: private to its learner (staff see every chunk)."""
    from rag.acl import user_hash
    from rag.units import SourceDocument, Unit, Visibility

    artifact = Artifact(
        legend=session.legend or [],
        rules=session.rules or [],
        script=session.script,
        red_flags=session.red_flags or [],
        score=session.score or 0.0,
        source=session.artifact_source,
    )
    topic = session.topic_pack or {}
    owner = user_hash(session.user_id)
    unit = Unit(
        unit_anchor="artifact",
        content=artifact.index_text(),
        title=f"{session.topic_title} — {session.realm_name}",
        breadcrumb=f"Learning sessions › {session.realm_name} › {session.topic_title}",
        url=f"/learn/session/{session.pk}/summary/",
        domain=topic.get("domain", ""),
        concepts=[topic.get("slug", session.topic_id)] + [r["entity"].lower() for r in artifact.legend][:20],
        mnemonic_tags=[r["symbol"].lower() for r in artifact.legend][:20],
        date=session.finished_at.date() if session.finished_at else None,
        metadata={
            "legend": artifact.legend,
            "realm_id": session.realm_id,
            "topic": session.topic_id,
            "score": session.score,
            "topic_title": session.topic_title,
            "realm_name": session.realm_name,
            "artifact_source": session.artifact_source,
        },
    )
    return SourceDocument(
        collection="user_sessions",
        source_type="session",
        source_id=str(session.pk),
        units=[unit],
        visibility=Visibility.PRIVATE,
        owner_hash=owner,
        author_hash=owner,
        pii_level=2,
    )


def session_artifact_index(*, session: LearningSession, embedder=None):
    """Upsert the artifact into the index (idempotent) and stamp ``indexed_at``."""
    from rag.services import chunk_upsert

    if not session.is_finished:
        raise SessionError("Only a finished session has an artifact to index.")
    result = chunk_upsert(documents=[artifact_document(session)], embedder=embedder)
    if result.errors:
        raise RuntimeError(f"indexing session {session.pk}: {result.errors}")
    session.indexed_at = timezone.now()
    LearningSession.objects.filter(pk=session.pk).update(indexed_at=session.indexed_at)
    return result


# --- contested grades -------------------------------------------------------------------------


class ContestClosed(SessionError):
    code, status = "contest_closed", 409


MAX_CONTEST_REASON_CHARS = 2000


@transaction.atomic
def session_grade_contest(*, session: LearningSession, user, test_index: int, reason: str = ""):
    """The learner contests the grade of one answered test; staff see it in the review queue.

    Contesting again while the contest is open updates the reason; a reviewed contest is closed.
    Only the session's own learner can contest (staff who can read the session cannot).
    """
    from feedback.models import GradeContest

    if session.user_id != user.pk:
        raise SessionForbidden("No such session.")
    reason = (reason or "").strip()
    if len(reason) > MAX_CONTEST_REASON_CHARS:
        raise SessionError(f"Keep the reason under {MAX_CONTEST_REASON_CHARS} characters.")
    locked = LearningSession.objects.select_for_update().get(pk=session.pk)
    results = (locked.state or {}).get("test_results") or []
    if not isinstance(test_index, int) or isinstance(test_index, bool) or not 0 <= test_index < len(results):
        raise SessionError("There is no graded answer with that number to contest.")
    row = results[test_index]
    contest = GradeContest.objects.filter(session=locked, test_index=test_index).first()
    if contest is not None and contest.status != GradeContest.Status.OPEN:
        raise ContestClosed("This grade was already reviewed.")
    if contest is None:
        contest = GradeContest(session=locked, learner=user, test_index=test_index)
    contest.question = row.get("question", "")
    contest.answer = row.get("answer", "")
    contest.expected = row.get("expected", "")
    contest.score = float(row.get("score") or 0.0)
    contest.passed = bool(row.get("passed"))
    contest.explanation = row.get("explanation", "")
    contest.reason = reason
    contest.save()
    logger.info("grade contested: session=%s test=%s contest=%s", locked.pk, test_index, contest.pk)
    return contest


@transaction.atomic
def grade_contest_review(*, contest, reviewer, accept: bool, note: str = ""):
    """Staff decide a contest. Accepting the answer re-grades it as passed (score 1) and
    re-computes the session's score and the learner's best score for the topic."""
    from feedback.models import GradeContest
    from sessions.guide import session_score

    contest = GradeContest.objects.select_for_update().get(pk=contest.pk)
    session = LearningSession.objects.select_for_update().get(pk=contest.session_id)
    contest.status = GradeContest.Status.ACCEPTED if accept else GradeContest.Status.UPHELD
    contest.review_note = note
    contest.reviewed_by = reviewer
    contest.reviewed_at = timezone.now()
    contest.save()
    state = dict(session.state or {})
    results = [dict(r) for r in state.get("test_results") or []]
    if contest.test_index < len(results):
        row = results[contest.test_index]
        row["contest"] = contest.status
        if accept:
            row.update(
                passed=True,
                score=1.0,
                explanation="Accepted on review: " + (note or "the reviewer accepted your answer."),
            )
        state["test_results"] = results
        session.state = state
        fields = ["state", "updated_at"]
        if session.is_finished and accept:
            session.score = session_score(state)
            fields.append("score")
            SessionProgress.objects.filter(
                user_id=session.user_id, realm_id=session.realm_id, topic_id=session.topic_id,
                best_score__lt=session.score,
            ).update(
                best_score=session.score, session=session, updated_at=timezone.now()
            )
        session.save(update_fields=fields)
    logger.info("grade contest %s reviewed by %s: %s", contest.pk, getattr(reviewer, "pk", None), contest.status)
    return contest
