"""HTTP API of stored conversations: list, read, rename, delete (``/rag/conversations``).

Only the caller's own live conversations exist for them: another user's id, or a deleted one,
is a 404 like an id that never existed.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from knowhub.api import BadRequest, StrictSerializerMixin
from rag.answer_apis import CitationSerializer, SourceRowSerializer
from rag.answering import history


class ConversationSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    turns = serializers.IntegerField(help_text="Questions asked in it.")


class TurnSourceSerializer(SourceRowSerializer):
    # Turns stored before source rows were per document lack the document-row fields.
    chunk_uids = serializers.ListField(child=serializers.CharField(), required=False)
    snippet = serializers.CharField(required=False)
    cited = serializers.BooleanField(required=False)
    chunks = serializers.ListField(child=serializers.DictField(), required=False)
    collection_label = serializers.CharField(required=False, help_text="The collection as a person reads it.")


class TurnSerializer(serializers.Serializer):
    interaction_id = serializers.IntegerField()
    question = serializers.CharField()
    answer = serializers.CharField(allow_null=True, help_text="null when generation failed (see error).")
    error = serializers.CharField(allow_null=True)
    stopped = serializers.BooleanField()
    strategy = serializers.CharField()
    model = serializers.CharField()
    created_at = serializers.DateTimeField()
    outcome = serializers.IntegerField(allow_null=True)
    sources = TurnSourceSerializer(
        many=True, help_text="The sources the answer was given that the caller may still see."
    )
    citations = CitationSerializer(many=True)
    count = serializers.DictField(allow_null=True)
    judgments = serializers.DictField(
        child=serializers.ChoiceField(choices=["positive", "negative"]), required=False,
        help_text="The thumbs given to the turn's sources: {chunk_uid: positive | negative}.",
    )  # fmt: skip
    searched_query = serializers.CharField(
        required=False, help_text="The question as searched, when a follow-up was rewritten."
    )
    analysis_filters = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Filters the query analysis proposed."
    )


class ConversationDetailSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    turns = TurnSerializer(many=True, help_text="Oldest first.")


class ConversationListApi(APIView):
    """The caller's conversations, most recently continued first."""

    OutputSerializer = ConversationSummarySerializer

    class FilterSerializer(serializers.Serializer):
        # One declaration for the schema (minimum/maximum) and the check.
        limit = serializers.IntegerField(
            required=False, default=50, min_value=1, max_value=200, help_text="At most this many."
        )

    @extend_schema(parameters=[FilterSerializer], responses={200: OutputSerializer(many=True), 400: dict})
    def get(self, request):
        params = self.FilterSerializer(data=request.query_params)
        if not params.is_valid():
            raise BadRequest(detail="limit must be a whole number from 1 to 200.", code="invalid_limit")
        rows = history.conversation_list(user=request.user, limit=params.validated_data["limit"])
        return Response(self.OutputSerializer(rows, many=True).data)


class ConversationDetailApi(APIView):
    """Read (turns oldest first), rename or delete one of the caller's conversations."""

    OutputSerializer = ConversationDetailSerializer

    class RenameInputSerializer(StrictSerializerMixin, serializers.Serializer):
        # Optional as PATCH bodies are: without a title nothing changes.
        title = serializers.CharField(max_length=history.TITLE_MAX, required=False, help_text="The new title.")

    @extend_schema(
        responses={200: OutputSerializer, 404: OpenApiResponse(description="No such conversation of yours.")}
    )
    def get(self, request, conversation_id: str):
        try:
            data = history.conversation_detail(user=request.user, conversation_id=conversation_id)
        except history.ConversationNotFound as exc:
            raise Http404("No such conversation.") from exc
        return Response(self.OutputSerializer(data).data)

    @extend_schema(
        request=RenameInputSerializer,
        responses={
            200: ConversationSummarySerializer,
            400: dict,
            404: OpenApiResponse(description="No such conversation of yours."),
        },
    )
    def patch(self, request, conversation_id: str):
        serializer = self.RenameInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            if "title" in serializer.validated_data:
                history.conversation_rename(
                    user=request.user, conversation_id=conversation_id, title=serializer.validated_data["title"]
                )
            elif not history.conversation_list(user=request.user, limit=1, ids=[conversation_id]):
                raise history.ConversationNotFound(conversation_id)
        except history.ConversationNotFound as exc:
            raise Http404("No such conversation.") from exc
        except ValueError as exc:
            raise BadRequest(detail=str(exc), code="invalid_title") from exc
        rows = history.conversation_list(user=request.user, limit=1, ids=[conversation_id])
        return Response(ConversationSummarySerializer(rows[0]).data)

    @extend_schema(responses={204: None, 404: OpenApiResponse(description="No such conversation of yours.")})
    def delete(self, request, conversation_id: str):
        try:
            history.conversation_delete(user=request.user, conversation_id=conversation_id)
        except history.ConversationNotFound as exc:
            raise Http404("No such conversation.") from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
