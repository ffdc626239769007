"""REST API of learning sessions: start, chat (plain and streamed), finish, read.

Only a session's learner (or staff) can read or write it; anyone else gets 404, so session ids
reveal nothing. A finished session is read-only: chatting answers 409, finishing again returns
the stored artifact.
"""

from __future__ import annotations

import logging

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from knowhub.api import StrictSerializerMixin
from knowhub.sse import EventStreamNegotiation, event_stream_response
from sessions import services
from sessions.guide import progress
from sessions.models import LearningSession
from sessions.selectors import SessionNotFound, realm_progress_list, session_get_for_user

logger = logging.getLogger(__name__)


# --- output shapes --------------------------------------------------------------------------


@extend_schema_serializer(component_name="SessionEvent")
class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    data = serializers.JSONField()
    created_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="SessionLegendRow")
class LegendRowSerializer(serializers.Serializer):
    entity = serializers.CharField()
    symbol = serializers.CharField()
    meaning = serializers.CharField(allow_blank=True)


@extend_schema_serializer(component_name="SessionProgress")
class ProgressSerializer(serializers.Serializer):
    phase = serializers.CharField()
    phase_index = serializers.IntegerField()
    entities_mapped = serializers.IntegerField()
    entities_total = serializers.IntegerField()
    misconceptions_done = serializers.IntegerField()
    misconceptions_total = serializers.IntegerField()
    tests_answered = serializers.IntegerField()
    tests_total = serializers.IntegerField()


@extend_schema_serializer(component_name="LearningSession")
class SessionOutputSerializer(serializers.Serializer):
    @extend_schema_serializer(component_name="SessionRealmRef")
    class RealmRef(serializers.Serializer):
        slug = serializers.CharField()
        name = serializers.CharField()

    @extend_schema_serializer(component_name="SessionTopicRef")
    class TopicRef(serializers.Serializer):
        slug = serializers.CharField()
        title = serializers.CharField()
        domain = serializers.CharField()

    id = serializers.IntegerField()
    status = serializers.CharField()
    guide = serializers.CharField()
    realm = RealmRef()
    topic = TopicRef()
    progress = ProgressSerializer()
    legend = LegendRowSerializer(many=True)
    rules = serializers.ListField(child=serializers.CharField())
    script = serializers.CharField(allow_blank=True)
    red_flags = serializers.ListField(child=serializers.CharField())
    score = serializers.FloatField(allow_null=True)
    artifact_source = serializers.CharField(allow_blank=True)
    indexed = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    events = EventSerializer(many=True)


def session_output(session: LearningSession, *, with_events: bool = True) -> dict:
    topic = session.topic_pack or {}
    return SessionOutputSerializer(
        {
            "id": session.pk,
            "status": session.status,
            "guide": session.guide,
            "realm": {"slug": session.realm_id, "name": session.realm_name},
            "topic": {"slug": session.topic_id, "title": session.topic_title, "domain": topic.get("domain", "")},
            "progress": progress(session.state or {}, topic),
            "legend": session.legend or [],
            "rules": session.rules or [],
            "script": session.script,
            "red_flags": session.red_flags or [],
            "score": session.score,
            "artifact_source": session.artifact_source,
            "indexed": session.indexed_at is not None,
            "created_at": session.created_at,
            "finished_at": session.finished_at,
            "events": list(session.events.all()) if with_events else [],
        }
    ).data


def _error(exc: services.SessionError) -> Response:
    return Response({"error": exc.code, "detail": exc.detail, **exc.extra}, status=exc.status)


def _not_found() -> Response:
    return Response({"error": "not_found", "detail": "No such session."}, status=status.HTTP_404_NOT_FOUND)


_ERRORS = {
    400: OpenApiResponse(description="invalid input"),
    404: OpenApiResponse(description="no such session (or not yours)"),
    409: OpenApiResponse(description="finished session / realm complete / another session open"),
}


# --- views ----------------------------------------------------------------------------------


class SessionStartApi(APIView):
    """Resume the open session in a realm, or start one on the learner's next topic."""

    @extend_schema_serializer(component_name="SessionStartInput")
    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        realm = serializers.SlugField(max_length=100)
        topic = serializers.SlugField(max_length=100, required=False, help_text="Pick a topic (e.g. to revisit one).")

    @extend_schema_serializer(component_name="SessionStartOutput")
    class OutputSerializer(SessionOutputSerializer):
        resumed = serializers.BooleanField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 200: OutputSerializer, **_ERRORS})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = services.session_start(user=request.user, **data.validated_data)
        except services.SessionError as exc:
            return _error(exc)
        body = {**session_output(result.session), "resumed": not result.created}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class SessionDetailApi(APIView):
    """A session with its events, progress and (once finished) its artifact."""

    @extend_schema(responses={200: SessionOutputSerializer, 404: _ERRORS[404]})
    def get(self, request, pk: int):
        try:
            session = session_get_for_user(session_id=pk, user=request.user)
        except SessionNotFound:
            return _not_found()
        return Response(session_output(session))


@extend_schema_serializer(component_name="SessionChatInput")
class ChatInputSerializer(StrictSerializerMixin, serializers.Serializer):
    message = serializers.CharField(max_length=services.MAX_MESSAGE_CHARS, trim_whitespace=True)


class SessionChatApi(APIView):
    """Send the guide a message; the reply and the message are stored as session events."""

    InputSerializer = ChatInputSerializer

    @extend_schema_serializer(component_name="SessionChatOutput")
    class OutputSerializer(serializers.Serializer):
        user_event = EventSerializer()
        event = EventSerializer()
        session = SessionOutputSerializer()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **_ERRORS})
    def post(self, request, pk: int):
        try:
            session = session_get_for_user(session_id=pk, user=request.user)
        except SessionNotFound:
            return _not_found()
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = services.session_chat(session=session, user=request.user, message=data.validated_data["message"])
        except services.SessionError as exc:
            return _error(exc)
        return Response(
            {
                "user_event": result.user_event,
                "event": result.event,
                "session": session_output(session, with_events=False),
            }
        )


class SessionChatStreamApi(APIView):
    """The chat as server-sent events: ``delta`` (text), ``replace``, then ``done`` or ``error``."""

    InputSerializer = ChatInputSerializer
    content_negotiation_class = EventStreamNegotiation

    @extend_schema(request=InputSerializer, responses={(200, "text/event-stream"): str, **_ERRORS})
    def post(self, request, pk: int):
        try:
            session = session_get_for_user(session_id=pk, user=request.user)
        except SessionNotFound:
            return _not_found()
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            events = services.session_chat_stream(
                session=session, user=request.user, message=data.validated_data["message"]
            )
        except services.SessionError as exc:
            return _error(exc)
        return event_stream_response(
            events, failure_detail="The guide failed; try again.", name=f"session {session.pk}: chat"
        )


class SessionFinishApi(APIView):
    """Extract and store the artifact, mark the topic complete, index it. Safe to repeat."""

    @extend_schema_serializer(component_name="SessionFinishOutput")
    class OutputSerializer(SessionOutputSerializer):
        already_finished = serializers.BooleanField()

    @extend_schema(request=None, responses={200: OutputSerializer, 404: _ERRORS[404]})
    def post(self, request, pk: int):
        try:
            session = session_get_for_user(session_id=pk, user=request.user)
        except SessionNotFound:
            return _not_found()
        if request.data:
            return Response({"error": "invalid", "detail": "finish takes no body"}, status=status.HTTP_400_BAD_REQUEST)
        try:
            result = services.session_finish(session=session, user=request.user)
        except services.SessionError as exc:
            return _error(exc)
        return Response({**session_output(result.session), "already_finished": result.already_finished})


class SessionContestApi(APIView):
    """Contest the grade of one answered test; it is stored for the admin's review queue."""

    @extend_schema_serializer(component_name="GradeContestInput")
    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        test = serializers.IntegerField(min_value=1, help_text="the question's number, from 1")
        reason = serializers.CharField(required=False, allow_blank=True, max_length=services.MAX_CONTEST_REASON_CHARS)

    @extend_schema_serializer(component_name="GradeContest")
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        test = serializers.IntegerField()
        status = serializers.CharField()
        score = serializers.FloatField()
        passed = serializers.BooleanField()
        reason = serializers.CharField(allow_blank=True)

    @extend_schema(
        request=InputSerializer,
        responses={201: OutputSerializer, 400: _ERRORS[400], 404: _ERRORS[404], 409: _ERRORS[409]},
    )
    def post(self, request, pk: int):
        try:
            session = session_get_for_user(session_id=pk, user=request.user)
        except SessionNotFound:
            return _not_found()
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            return Response({"error": "invalid", "detail": data.errors}, status=status.HTTP_400_BAD_REQUEST)
        try:
            contest = services.session_grade_contest(
                session=session,
                user=request.user,
                test_index=data.validated_data["test"] - 1,
                reason=data.validated_data.get("reason", ""),
            )
        except services.SessionError as exc:
            return _error(exc)
        out = {
            "id": contest.pk, "test": contest.test_index + 1, "status": contest.status, "score": contest.score,
            "passed": contest.passed, "reason": contest.reason,
        }
        return Response(self.OutputSerializer(out).data, status=status.HTTP_201_CREATED)


class RealmListApi(APIView):
    """Realms with the learner's progress: topics, which are completed, the open session."""

    @extend_schema_serializer(component_name="RealmProgress")
    class OutputSerializer(serializers.Serializer):
        @extend_schema_serializer(component_name="RealmTopicProgress")
        class TopicRow(serializers.Serializer):
            slug = serializers.CharField()
            title = serializers.CharField()
            domain = serializers.CharField()
            completed = serializers.BooleanField()
            best_score = serializers.FloatField(allow_null=True)

        slug = serializers.CharField()
        name = serializers.CharField()
        description = serializers.CharField(allow_blank=True)
        symbols = serializers.JSONField()
        hints = serializers.ListField(child=serializers.CharField())
        completed = serializers.IntegerField()
        total = serializers.IntegerField()
        next_topic = serializers.CharField(allow_null=True)
        open_session = serializers.IntegerField(allow_null=True)
        topics = TopicRow(many=True)

    @extend_schema(responses={200: OutputSerializer(many=True)})
    def get(self, request):
        rows = [
            {
                "slug": rp.realm.slug,
                "name": rp.realm.name,
                "description": rp.realm.description,
                "symbols": rp.realm.symbols,
                "hints": rp.realm.hints,
                "completed": rp.completed,
                "total": rp.total,
                "next_topic": rp.next_topic.slug if rp.next_topic else None,
                "open_session": rp.open_session.pk if rp.open_session else None,
                "topics": [
                    {
                        "slug": t.topic.slug, "title": t.topic.title, "domain": t.topic.domain,
                        "completed": t.completed, "best_score": t.best_score,
                    }
                    for t in rp.topics
                ],
            }
            for rp in realm_progress_list(user=request.user)
        ]
        return Response(self.OutputSerializer(rows, many=True).data)
