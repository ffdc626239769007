"""HTTP API of answering: ``POST /rag/ask``, ``POST /rag/ask/stream`` (SSE), ``GET /rag/facets``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from knowhub.api import StrictSerializerMixin
from knowhub.schema import ANY_TEXT, NON_BLANK_TEXT
from knowhub.sse import EventStreamNegotiation, event_stream_response
from rag.acl import Scope
from rag.answering.analysis import CHIP_FIELDS
from rag.answering.selectors import facet_values
from rag.answering.services import AskEvent, ask, collect
from rag.apis import search_request_refused
from rag.llm import available_models, default_model_id
from rag.search import MAX_QUERY_CHARS, MODES, SearchFilters, SearchRequestError

logger = logging.getLogger(__name__)


# What ``validate_ignore_filters`` accepts: a date chip is named by its field alone; any other
# chip needs its (non-blank) value.
IGNORED_FILTER_SCHEMA = {
    "oneOf": [
        {
            "type": "object", "required": ["field"], "additionalProperties": False,
            "properties": {
                "field": {"type": "string", "enum": ["date"]},
                "value": {"type": "string", "maxLength": 200, "pattern": ANY_TEXT, "nullable": True},
            },
        },
        {
            "type": "object", "required": ["field", "value"], "additionalProperties": False,
            "properties": {
                "field": {"type": "string", "enum": [f for f in CHIP_FIELDS if f != "date"]},
                "value": {"type": "string", "maxLength": 200, "pattern": NON_BLANK_TEXT},
            },
        },
    ]
}  # fmt: skip


@extend_schema_field(IGNORED_FILTER_SCHEMA)
class IgnoredFilterField(serializers.DictField):
    """One chip to re-ask without; ``rag.answering.services.validate_ignore_filters`` checks it."""


@extend_schema_field({"type": "string", "pattern": r"^[A-Za-z0-9_-]{0,64}$", "maxLength": 64})
class ConversationIdField(serializers.CharField):
    """1-64 letters, digits, '-' or '_' (or empty: a new conversation): the ask checks it
    (``invalid_conversation_id``); the schema says so, so no client is surprised."""


class AskInputSerializer(StrictSerializerMixin, serializers.Serializer):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, help_text="The question.")
    collections = serializers.ListField(child=serializers.CharField(max_length=100), required=False, max_length=50)
    date_from = serializers.DateField(required=False, allow_null=True)
    date_to = serializers.DateField(
        required=False, allow_null=True, help_text="Not before date_from (an end before the start: 400 invalid_dates)."
    )
    domain = serializers.CharField(required=False, allow_blank=True, max_length=100)
    entity = serializers.CharField(required=False, allow_blank=True, max_length=200)
    people = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=20)
    tags = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=20)
    source_ids = serializers.ListField(
        child=serializers.CharField(max_length=300), required=False, max_length=20,
        help_text="Only these documents (source ids), e.g. files you attached (GET /ingest/my-files).",
    )  # fmt: skip
    model = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="A model id of GET /rag/facets 'models'."
    )
    conversation_id = ConversationIdField(
        required=False, allow_blank=True, max_length=64, help_text="Continue a conversation (returned by every answer)."
    )
    top_k = serializers.IntegerField(required=False, min_value=1, max_value=50)
    mode = serializers.ChoiceField(choices=MODES, required=False, default="hybrid")
    ignore_filters = serializers.ListField(
        child=IgnoredFilterField(), required=False, max_length=20,
        help_text='Chips of analysis_filters to re-ask without: [{"field": "tags", "value": "search"}] '
        "(field: date, collections, people, entity, tags or domain).",
    )  # fmt: skip

    # The question's length, the date order and the collections are checked by ``ask``
    # (``rag.search``: one validation for every search surface).


class CitationSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    chunk_uid = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    date = serializers.DateField(allow_null=True)


class SourceRowSerializer(CitationSerializer):  # a citation's fields first, then the document's
    """One source row (a document) as the ask page shows it, live or read back from a stored turn."""

    collection = serializers.CharField()
    source_type = serializers.CharField()
    source_id = serializers.CharField()
    breadcrumb = serializers.CharField()
    agenda = serializers.CharField(
        help_text="The document's agenda item (a meeting's topic) the question is about; empty when none is close."
    )
    content = serializers.CharField(help_text="The document's retrieved chunks, in document order.")
    chunk_uids = serializers.ListField(
        child=serializers.CharField(), help_text="The retrieved chunks of this document."
    )
    snippet = serializers.CharField(help_text="Plain text (no markdown) of the best chunk.")
    ocr = serializers.BooleanField(required=False, help_text="Some of its text was read by OCR (a scanned page).")
    cited = serializers.BooleanField()
    chunks = serializers.ListField(child=serializers.DictField())


class SourceSerializer(SourceRowSerializer):
    score = serializers.FloatField()
    vec_score = serializers.FloatField()
    txt_score = serializers.FloatField()


class AskOutputSerializer(serializers.Serializer):
    answer = serializers.CharField(allow_null=True, help_text="null when generation failed (see error).")
    error = serializers.CharField(
        allow_null=True, help_text="GENERATION_FAILED when the model failed; sources are still returned."
    )
    detail = serializers.CharField(required=False)
    citations = CitationSerializer(many=True, help_text="Exactly the sources the answer cites.")
    sources = SourceSerializer(many=True, help_text="Every chunk the model was given, numbered as cited.")
    strategy = serializers.ChoiceField(choices=["NO_RAG", "REUSE", "NEW_QUERY"])
    conversation_id = serializers.CharField()
    filters = serializers.DictField()
    analysis = serializers.DictField(allow_null=True)
    analysis_filters = serializers.ListField(
        child=serializers.DictField(),
        help_text="Filters the query analysis read from the question: {field, value, origin: stated|guessed, "
        "phrase, effect: filter|boost|dropped, label}. Re-ask without one via ignore_filters.",
    )
    ignored_filters = serializers.ListField(child=serializers.DictField(), help_text="The ignore_filters applied.")
    searched_query = serializers.CharField(help_text="The question actually searched (a follow-up made standalone).")
    strategy_label = serializers.CharField(help_text="The strategy in words: new search, same sources as before…")
    cost_label = serializers.CharField(help_text="The cost in words ('free (local)' when nothing was paid).")
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
        source_ids=data.get("source_ids") or [],
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
            ignore_filters=data.get("ignore_filters"),
        )
    except SearchRequestError as exc:
        raise search_request_refused(exc) from exc


class AskApi(APIView):
    """Answer a question from the sources the caller may see, with checked numbered citations."""

    content_negotiation_class = EventStreamNegotiation
    InputSerializer = AskInputSerializer  # shared with the stream twin: one schema component
    OutputSerializer = AskOutputSerializer

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: dict, 409: dict})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        events = _start(request, serializer.validated_data)
        result = collect(events)
        return Response(result)


STREAM_FAILED = "Something went wrong while answering. Please try again."


class AskStreamApi(APIView):
    """The same answer as server-sent events: status, sources, delta…, citations, done (or error).

    A client that disconnects closes the stream, which stops generation.
    """

    content_negotiation_class = EventStreamNegotiation
    InputSerializer = AskInputSerializer

    @extend_schema(
        request=InputSerializer,
        responses={
            200: OpenApiResponse(
                description="text/event-stream: events status, sources, delta, citations, done, error"
            ),
            400: dict,
            409: dict,
        },
    )
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        events = _start(request, serializer.validated_data)
        return event_stream_response(events, failure_detail=STREAM_FAILED, name="ask")


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
        try:
            SearchFilters(collections=collections).validate(scope=scope)
        except SearchRequestError as exc:
            raise search_request_refused(exc) from exc
        facets = facet_values(scope=scope, collections=collections)
        return Response(
            {
                **facets.as_dict(),
                "models": [m.as_dict() for m in available_models()],
                "default_model": default_model_id(),
            }
        )
