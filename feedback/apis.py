"""HTTP API of the feedback loop: outcomes and judgments, and clicks on sources."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from feedback.models import Judgment
from feedback.services import (
    MAX_JUDGMENTS,
    MAX_REASON_CHARS,
    FeedbackError,
    FeedbackPermissionError,
    InteractionNotFound,
    NotAResult,
    UnknownChunks,
    click_record,
    feedback_submit,
)
from knowhub.api import BadRequest, StrictSerializerMixin, UnknownReference

MAX_UIDS = 500


class NotAResultConflict(APIException):
    """Feedback on a chunk the interaction did not show: well-formed, but not about that
    interaction's results (409, like any request the current state refuses)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "not_a_result"


class _Errors:
    """Map service errors to the API's 400 / 403 / 404."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            return False
        if issubclass(exc_type, UnknownChunks):
            raise UnknownReference(str(exc), code="unknown_chunk") from exc
        if issubclass(exc_type, NotAResult):
            raise NotAResultConflict(str(exc)) from exc
        if issubclass(exc_type, FeedbackError):
            raise BadRequest(str(exc)) from exc
        if issubclass(exc_type, FeedbackPermissionError):
            raise PermissionDenied(str(exc)) from exc
        if issubclass(exc_type, InteractionNotFound):
            raise NotFound(str(exc)) from exc
        return False


@extend_schema_serializer(component_name="FeedbackJudgment")
class JudgmentInputSerializer(StrictSerializerMixin, serializers.Serializer):
    """One label: ``chunk_uid`` positive/negative, or preferred over ``preferred_over``."""

    # A label, or a pair (validate() below); a chunk is not preferred over itself, and is judged
    # once per request (feedback_submit): rules across fields and items a schema cannot state.
    request_schema_extra = {"anyOf": [
        {"required": ["label"]},
        {"required": ["preferred_over"], "properties": {"preferred_over": {"minLength": 1}}},
    ]}  # fmt: skip

    chunk_uid = serializers.CharField(max_length=600)
    label = serializers.ChoiceField(choices=Judgment.Label.choices, required=False)
    preferred_over = serializers.CharField(max_length=600, required=False, allow_blank=True)
    reason = serializers.CharField(max_length=MAX_REASON_CHARS, required=False, allow_blank=True)

    def validate(self, attrs):
        if not attrs.get("label") and not attrs.get("preferred_over"):
            raise serializers.ValidationError(
                {"label": ["label is required (or preferred_over for a pair)."]}
            )
        return attrs


@extend_schema_serializer(component_name="FeedbackInteraction")
class InteractionInputSerializer(StrictSerializerMixin, serializers.Serializer):
    """An interaction a client logged itself: retrieved/selected are chunk uids in rank order."""

    query = serializers.CharField(max_length=10000)
    answer = serializers.CharField(required=False, allow_blank=True, max_length=100000)
    retrieved = serializers.ListField(
        child=serializers.CharField(max_length=600), required=False, max_length=MAX_UIDS
    )
    selected = serializers.ListField(
        child=serializers.CharField(max_length=600), required=False, max_length=MAX_UIDS
    )
    domain = serializers.CharField(required=False, allow_blank=True, max_length=100)
    kind = serializers.ChoiceField(choices=["query", "ask"], required=False)


class FeedbackApi(APIView):
    """Record how an answer was received: an outcome (−1/0/1), a comment and per-chunk judgments.

    Give ``interaction_id`` (every ``/rag/query`` and ask logs one) or a full ``interaction``. Only
    the interaction's user or staff may give feedback on it. Repeating a judgment updates it. An
    outcome of 0 does not erase an earlier −1/1 (send it with per-source labels freely).
    """

    @extend_schema_serializer(component_name="FeedbackInput")
    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        # Exactly one of the two ways to name the interaction (validate() below checks it).
        request_schema_extra = {"oneOf": [{"required": ["interaction_id"]}, {"required": ["interaction"]}]}

        interaction_id = serializers.IntegerField(required=False, min_value=1)
        interaction = InteractionInputSerializer(required=False)
        outcome = serializers.ChoiceField(choices=[-1, 0, 1], required=False, allow_null=True)
        comment = serializers.CharField(required=False, allow_blank=True, max_length=5000)
        judgments = JudgmentInputSerializer(many=True, required=False, max_length=MAX_JUDGMENTS)

        def validate(self, attrs):
            if ("interaction_id" in attrs) == ("interaction" in attrs):
                raise serializers.ValidationError(
                    {"interaction_id": ["Give interaction_id or interaction, not both."]}
                )
            attrs["judgments"] = [dict(j) for j in attrs.get("judgments") or []]
            if "interaction" in attrs:
                attrs["interaction"] = dict(attrs["interaction"])
            return attrs

    @extend_schema_serializer(component_name="FeedbackOutput")
    class OutputSerializer(serializers.Serializer):
        interaction_id = serializers.IntegerField()
        outcome = serializers.IntegerField(allow_null=True)
        created = serializers.IntegerField()
        updated = serializers.IntegerField()
        unchanged = serializers.IntegerField()
        judgments = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            409: OpenApiResponse(description="a judged chunk was not among the interaction's results (not_a_result)"),
        },
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with _Errors():
            result = feedback_submit(user=request.user, **data.validated_data)
        out = {
            "interaction_id": result.interaction.pk,
            "outcome": result.interaction.outcome,
            "created": result.created,
            "updated": result.updated,
            "unchanged": result.unchanged,
            "judgments": [
                {
                    "chunk_uid": j.chunk_uid,
                    "label": j.label,
                    "preferred_over": j.preferred_over or None,
                }
                for j in result.judgments
            ],
        }
        return Response(self.OutputSerializer(out).data, status=status.HTTP_200_OK)


class ClickApi(APIView):
    """Record that the user opened one of an interaction's sources (which chunk, at which rank)."""

    @extend_schema_serializer(component_name="ClickInput")
    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        interaction_id = serializers.IntegerField(min_value=1)
        chunk_uid = serializers.CharField(max_length=600)
        rank = serializers.IntegerField(min_value=1, max_value=1000)

    @extend_schema_serializer(component_name="ClickOutput")
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        interaction_id = serializers.IntegerField()
        chunk_uid = serializers.CharField()
        rank = serializers.IntegerField()

    @extend_schema(
        request=InputSerializer,
        responses={
            201: OutputSerializer,
            409: OpenApiResponse(description="chunk_uid was not among the interaction's results (not_a_result)"),
        },
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with _Errors():
            click = click_record(user=request.user, **data.validated_data)
        return Response(self.OutputSerializer(click).data, status=status.HTTP_201_CREATED)
