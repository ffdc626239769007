"""HTTP API of the index."""

from __future__ import annotations

import logging

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import APIView

from knowhub.api import BadRequest, StrictSerializerMixin, UnknownReference
from rag.acl import Scope
from rag.rerank import reranked_search
from rag.search import (
    MAX_QUERY_CHARS,
    MODES,
    SearchFilters,
    SearchRequestError,
    known_collections,
    validate_query,
)
from rag.selectors import EmbeddingModelMismatch, health_status

logger = logging.getLogger(__name__)

MAX_TOP_K = 50
MAX_LIST_ITEMS = 50


class HealthApi(APIView):
    """Database, pgvector, embedding provider and broker, each with a status."""

    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []

    @extend_schema(responses={200: dict, 503: dict})
    def get(self, request):
        status = health_status()
        return Response(status, status=200 if status["ok"] else 503)


def _tag_list(**kwargs):
    return serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=MAX_LIST_ITEMS, **kwargs
    )


def search_request_refused(exc: SearchRequestError) -> APIException:
    """The API error for a refused search request, the same from every endpoint: a name that
    does not exist for the caller is a 404 with its code (``unknown_collection``), an index of
    another embedding model's vectors a 409, a bad field value a 400 ``invalid`` naming the field,
    anything else a 400 with its own code."""
    if exc.code.startswith("unknown_"):
        return UnknownReference(detail=exc.detail, code=exc.code)
    if exc.code == EmbeddingModelConflict.default_code:
        return EmbeddingModelConflict(detail=exc.detail, code=exc.code)
    if exc.field:
        return serializers.ValidationError({exc.field: [exc.detail]})
    return BadRequest(detail=exc.detail, code=exc.code)


class EmbeddingModelConflict(BadRequest):
    status_code = 409
    default_code = "embedding_model_mismatch"


class QueryApi(APIView):
    """Hybrid search over the chunks the caller may see (public + their projects' + their own).

    ACL and every filter are applied inside the retrieval SQL. Each call is logged as an
    ``Interaction`` (kind ``query``) whose id comes back as ``interaction_id`` for feedback.
    """

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        query = serializers.CharField(max_length=MAX_QUERY_CHARS)
        top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, default=8)
        collections = _tag_list(allow_empty=False)
        domain = serializers.CharField(max_length=100, required=False)
        concepts = _tag_list()
        mnemonic_tags = _tag_list()
        has_image = serializers.BooleanField(required=False, allow_null=True, default=None)
        code = serializers.BooleanField(required=False, allow_null=True, default=None)
        date_from = serializers.DateField(required=False)
        date_to = serializers.DateField(
            required=False, help_text="Not before date_from (an end before the start: 400 invalid_dates)."
        )
        source_type = serializers.CharField(max_length=100, required=False)
        source_ids = serializers.ListField(
            child=serializers.CharField(max_length=300), required=False, max_length=MAX_LIST_ITEMS,
            help_text="Only these documents (source ids), e.g. your own files (GET /ingest/my-files).",
        )  # fmt: skip
        people = _tag_list()
        tags = _tag_list()
        entity = serializers.CharField(max_length=200, required=False)
        mode = serializers.ChoiceField(choices=MODES, default="hybrid")
        dedupe = serializers.BooleanField(default=False)

    class HitSerializer(serializers.Serializer):
        rank = serializers.IntegerField()
        chunk_uid = serializers.CharField()
        title = serializers.CharField()
        content = serializers.CharField()
        url = serializers.CharField()
        collection = serializers.CharField()
        source_type = serializers.CharField()
        source_id = serializers.CharField()
        breadcrumb = serializers.CharField()
        domain = serializers.CharField()
        concepts = serializers.ListField(child=serializers.CharField())
        mnemonic_tags = serializers.ListField(child=serializers.CharField())
        code_languages = serializers.ListField(child=serializers.CharField())
        has_image = serializers.BooleanField()
        date = serializers.DateField(allow_null=True)
        metadata = serializers.DictField()
        vec_score = serializers.FloatField()
        txt_score = serializers.FloatField()
        score = serializers.FloatField()

    class OutputSerializer(serializers.Serializer):
        results = serializers.ListField(child=serializers.DictField())
        mode = serializers.ChoiceField(choices=MODES)
        top_k = serializers.IntegerField()
        dedupe = serializers.BooleanField()
        filters = serializers.DictField()
        took_ms = serializers.FloatField(help_text="server-side, including query embedding")
        embed_ms = serializers.FloatField(help_text="query embedding part of took_ms")
        candidates = serializers.IntegerField(help_text="rows scored (union of both candidate lists)")
        interaction_id = serializers.IntegerField(
            allow_null=True, help_text="null when the interaction log could not be written (the hits stand)"
        )
        rerank = serializers.DictField(help_text="provider, served ('reranked' or 'fused'), candidates, ms, error")

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: dict, 409: dict})
    def post(self, request):
        from rag.interactions import interaction_record

        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = dict(data.validated_data)
        query = params.pop("query")
        top_k, mode, dedupe = params.pop("top_k"), params.pop("mode"), params.pop("dedupe")
        scope = Scope.for_user(request.user)
        filters = SearchFilters(**params)
        try:
            query = validate_query(query)
            filters.validate(scope=scope)
        except SearchRequestError as exc:
            raise search_request_refused(exc) from exc
        try:
            result, rerank = reranked_search(query=query, scope=scope, filters=filters, top_k=top_k, mode=mode,
                                             dedupe=dedupe)  # fmt: skip
        except EmbeddingModelMismatch as exc:
            raise EmbeddingModelConflict(str(exc)) from exc
        effective = filters.as_dict()
        if "collections" not in effective:
            effective["collections"] = known_collections(scope)
        # Which order was served (reranked, or fused after a rerank failure) stays with the log.
        # The log is an audit of the search, not part of it: when it cannot be written the hits
        # are still served, and the failure is a warning (as for an ask).
        interaction_id = None
        try:
            with transaction.atomic():
                interaction_id = interaction_record(
                    user=request.user, kind="query", query=query, filters={**effective, "rerank": rerank.as_dict()},
                    hits=result.hits, strategy=mode, latency_ms=result.took_ms,
                ).pk  # fmt: skip
        except Exception:  # noqa: BLE001 — whatever broke the log, the search result stands
            logger.warning("could not record the interaction of a query", exc_info=True)
        hits = self.HitSerializer(result.hits, many=True).data  # one serializer: its fields are built once
        out = {
            "results": hits,
            "mode": mode,
            "top_k": top_k,
            "dedupe": dedupe,
            "filters": effective,
            "took_ms": round(result.took_ms, 2),
            "embed_ms": round(result.embed_ms, 2),
            "candidates": result.candidates,
            "interaction_id": interaction_id,
            "rerank": rerank.as_dict(),
        }
        return Response(out)
