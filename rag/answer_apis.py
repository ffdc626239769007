"""HTTP API of answering: ``POST /rag/ask``, ``POST /rag/ask/stream`` (SSE), ``GET /rag/facets``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from knowhub.api import BadRequest, StrictSerializerMixin
from rag.acl import Scope
from rag.answering.selectors import facet_values
from rag.answering.services import AskError, AskEvent, ask, collect
from rag.llm import available_models, default_model_id
from rag.search import MODES, SearchFilters, known_collections

logger = logging.getLogger(__name__)


class JSONOnlyNegotiation(BaseContentNegotiation):
    """Errors are JSON even when the client asked for ``text/event-stream``."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class AskInputSerializer(StrictSerializerMixin, serializers.Serializer):
    query = serializers.CharField(max_length=2000, help_text="The question.")
    collections = serializers.ListField(child=serializers.CharField(max_length=100), required=False, max_length=50)
    date_from = serializers.DateField(required=False, allow_null=True)
    date_to = serializers.DateField(required=False, allow_null=True)
    domain = serializers.CharField(required=False, allow_blank=True, max_length=100)
    entity = serializers.CharField(required=False, allow_blank=True, max_length=200)
    people = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=20)
    tags = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=20)
    model = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text="A model id of GET /rag/facets 'models'.")
    conversation_id = serializers.CharField(required=False, allow_blank=True, max_length=64, help_text="Continue a conversation (returned by every answer).")
    top_k = serializers.IntegerField(required=False, min_value=1, max_value=50)
    mode = serializers.ChoiceField(choices=MODES, required=False, default="hybrid")

    def validate_query(self, value: str) -> str:
        value = value.strip()
        if not value:
            raise serializers.ValidationError("The question is empty.")
        if len(value.split()) > 300:
            raise serializers.ValidationError("The question is longer than 300 words.")
        return value

    def validate(self, attrs):
        if attrs.get("date_from") and attrs.get("date_to") and attrs["date_from"] > attrs["date_to"]:
            raise serializers.ValidationError({"date_to": ["date_to is before date_from."]})
        return attrs


class SourceSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    chunk_uid = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    date = serializers.DateField(allow_null=True)
    collection = serializers.CharField()
    source_type = serializers.CharField()
    source_id = serializers.CharField()
    breadcrumb = serializers.CharField()
    score = serializers.FloatField()
    vec_score = serializers.FloatField()
    txt_score = serializers.FloatField()
    content = serializers.CharField()


class CitationSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    chunk_uid = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    date = serializers.DateField(allow_null=True)


class AskOutputSerializer(serializers.Serializer):
    answer = serializers.CharField(allow_null=True, help_text="null when generation failed (see error).")
    error = serializers.CharField(allow_null=True, help_text="GENERATION_FAILED when the model failed; sources are still returned.")
    detail = serializers.CharField(required=False)
    citations = CitationSerializer(many=True, help_text="Exactly the sources the answer cites.")
    sources = SourceSerializer(many=True, help_text="Every chunk the model was given, numbered as cited.")
    strategy = serializers.ChoiceField(choices=["NO_RAG", "REUSE", "NEW_QUERY"])
    conversation_id = serializers.CharField()
    filters = serializers.DictField()
    analysis = serializers.DictField(allow_null=True)
    fallback = serializers.CharField(allow_null=True)
    count = serializers.DictField(allow_null=True)
    interaction_id = serializers.IntegerField(allow_null=True)
    model = serializers.CharField()
    provider = serializers.CharField()
    extractive = serializers.BooleanField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    tokens = serializers.IntegerField()
    cost_usd = serializers.FloatField()
    latency_ms = serializers.FloatField()


def _start(request, data: dict) -> Iterator[AskEvent]:
    filters = SearchFilters(
        collections=data.get("collections") or None,
        domain=data.get("domain") or None,
        entity=data.get("entity") or None,
        people=data.get("people") or [],
        tags=data.get("tags") or [],
        date_from=data.get("date_from"),
        date_to=data.get("date_to"),
    )
    try:
        return ask(
            user=request.user,
            query=data["query"],
            filters=filters,
            model=data.get("model") or None,
            conversation_id=data.get("conversation_id") or None,
            top_k=data.get("top_k"),
            mode=data.get("mode", "hybrid"),
        )
    except AskError as exc:
        raise BadRequest(detail=exc.detail, code=exc.code) from exc


class AskApi(APIView):
    """Answer a question from the sources the caller may see, with checked numbered citations."""

    content_negotiation_class = JSONOnlyNegotiation
    InputSerializer = AskInputSerializer  # shared with the stream twin: one schema component
    OutputSerializer = AskOutputSerializer

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: dict})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        events = _start(request, serializer.validated_data)
        result = collect(events)
        return Response(result)


def sse_encode(events: Iterator[AskEvent]) -> Iterator[bytes]:
    """Server-sent events, one per pipeline event. Closing this closes the pipeline."""
    try:
        for event in events:
            yield f"event: {event.type}\ndata: {json.dumps(event.data, default=str)}\n\n".encode()
    except Exception as exc:
        logger.exception("ask stream failed")
        payload = {"error": "INTERNAL", "detail": f"{type(exc).__name__}: {exc}"[:300]}
        yield f"event: error\ndata: {json.dumps(payload)}\n\n".encode()
    finally:
        events.close()


class AskStreamApi(APIView):
    """The same answer as server-sent events: status, sources, delta…, citations, done (or error).

    A client that disconnects closes the stream, which stops generation.
    """

    content_negotiation_class = JSONOnlyNegotiation
    InputSerializer = AskInputSerializer

    @extend_schema(
        request=InputSerializer,
        responses={200: OpenApiResponse(description="text/event-stream: events status, sources, delta, citations, done, error"), 400: dict},
    )
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        events = _start(request, serializer.validated_data)
        response = StreamingHttpResponse(sse_encode(events), content_type="text/event-stream; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


class FacetsOutputSerializer(serializers.Serializer):
    collections = serializers.ListField(child=serializers.DictField())
    domains = serializers.ListField(child=serializers.DictField())
    people = serializers.ListField(child=serializers.DictField())
    tags = serializers.ListField(child=serializers.DictField())
    entities = serializers.ListField(child=serializers.DictField())
    date_min = serializers.DateField(allow_null=True)
    date_max = serializers.DateField(allow_null=True)
    models = serializers.ListField(child=serializers.DictField())
    default_model = serializers.CharField()


class FacetsApi(APIView):
    """Known metadata values (people, tags, entities, domains, collections) and models to pick.

    Only values of chunks the caller may see are listed.
    """

    OutputSerializer = FacetsOutputSerializer

    @extend_schema(
        parameters=[OpenApiParameter("collections", str, description="Comma-separated collection names")],
        responses={200: OutputSerializer, 400: dict},
    )
    def get(self, request):
        scope = Scope.for_user(request.user)
        raw = request.query_params.get("collections", "")
        collections = [c.strip() for c in raw.split(",") if c.strip()] or None
        if collections:
            unknown = sorted(set(collections) - set(known_collections(scope)))
            if unknown:
                raise BadRequest(detail=f"Unknown collection(s): {', '.join(unknown)}.", code="unknown_collection")
        facets = facet_values(scope=scope, collections=collections)
        return Response(
            {
                **facets.as_dict(),
                "models": [m.as_dict() for m in available_models()],
                "default_model": default_model_id(),
            }
        )
