"""HTTP API of ingestion: the Notion webhook, document ingestion and reindex runs."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

from django.conf import settings
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion import services
from ingestion.models import IngestRun
from knowhub.api import StrictSerializerMixin
from rag.acl import user_hash

logger = logging.getLogger(__name__)


def _error(code: str, detail, http_status: int) -> Response:
    return Response({"error": code, "detail": detail}, status=http_status)


class RawBodyParser(BaseParser):
    """Leaves the body alone: the webhook authenticates the exact bytes it received."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


class NotionIngestApi(APIView):
    """Receive a Notion page from n8n (seed 001 payload), authenticated by a shared secret.

    Order matters: authenticate, parse and validate, and only then store the raw delivery and
    queue its processing — a malformed or unauthenticated body leaves nothing behind.
    """

    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]
    parser_classes = [RawBodyParser]

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "NotionDeliveryInput"

        page_id = serializers.CharField()
        properties = serializers.DictField(required=False)
        content = serializers.CharField(required=False, allow_blank=True)
        url = serializers.CharField(required=False, allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "NotionDeliveryOutput"

        delivery_id = serializers.IntegerField()
        status = serializers.CharField()
        replay = serializers.BooleanField()

    @extend_schema(
        request=InputSerializer,
        responses={
            202: OutputSerializer,
            400: OpenApiResponse(description="Malformed JSON or payload; nothing stored."),
            401: OpenApiResponse(description="Missing or wrong secret."),
            413: OpenApiResponse(description="Body too large."),
            503: OpenApiResponse(description="No webhook secret configured."),
        },
        auth=[],
    )
    def post(self, request):
        secret = services.notion_webhook_secret()
        if not secret:
            return _error(
                "webhook_disabled",
                "KNOWHUB_NOTION_WEBHOOK_SECRET is not set on the server, so every delivery is refused.",
                status.HTTP_503_SERVICE_UNAVAILABLE,
            )
        limit = settings.KNOWHUB_NOTION_MAX_BODY_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            return _error("too_large", f"body is larger than {limit} bytes", status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        body = request.body
        if len(body) > limit:
            return _error("too_large", f"body is larger than {limit} bytes", status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        if not _authenticated(request, body, secret):
            return _error("unauthorized", "missing or wrong webhook secret", status.HTTP_401_UNAUTHORIZED)
        try:
            payload = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _error("invalid_json", f"body is not valid UTF-8 JSON: {exc}", status.HTTP_400_BAD_REQUEST)
        from ingestion.sources.notion import webhook_to_document

        try:
            doc = webhook_to_document(payload, collection=services.NOTION_COLLECTION)
        except ValueError as exc:
            return _error("invalid", str(exc), status.HTTP_400_BAD_REQUEST)
        receipt = services.notion_delivery_receive(body=body, page_id=doc.source_id)
        out = {"delivery_id": receipt.delivery.pk, "status": receipt.delivery.status, "replay": receipt.replay}
        return Response(self.OutputSerializer(out).data, status=status.HTTP_202_ACCEPTED)


def _authenticated(request, body: bytes, secret: str) -> bool:
    """Bearer token or HMAC-SHA256 signature of the raw body; constant-time comparisons."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() == "bearer ":
        return hmac.compare_digest(header[7:].strip().encode(), secret.encode())
    signature = request.META.get("HTTP_X_KNOWHUB_SIGNATURE", "")
    if signature.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(signature[7:].strip().lower().encode(), expected.encode())
    return False


class RunOutputSerializer(serializers.ModelSerializer):
    run_id = serializers.IntegerField(source="pk")
    duration_s = serializers.SerializerMethodField()

    class Meta:
        model = IngestRun
        fields = [
            "run_id", "source", "types", "status", "dry_run", "prune", "since", "total", "sources", "skipped",
            "removed", "failed", "created", "updated", "unchanged", "deleted", "embedded", "errors", "message",
            "started_at", "finished_at", "duration_s",
        ]  # fmt: skip

    def get_duration_s(self, run) -> float | None:
        return round(run.duration_ms / 1000, 3) if run.duration_ms is not None else None


class DocumentsIngestApi(APIView):
    """Index text/markdown documents or meeting transcripts (speaker turns), with metadata.

    Staff only: documents may be public. Synchronous, so the answer carries the counts; a
    document that fails is reported in ``errors`` and the others are still stored.
    """

    permission_classes = [permissions.IsAdminUser]

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        class Meta:
            ref_name = "DocumentsIngestInput"

        documents = serializers.ListField(child=serializers.DictField(), allow_empty=False)
        project = serializers.SlugField(required=False, allow_null=True, default=None)
        visibility = serializers.ChoiceField(choices=["public", "restricted", "private"], default="public")
        dry_run = serializers.BooleanField(required=False, default=False)

    @extend_schema(
        request=InputSerializer,
        responses={200: RunOutputSerializer, 400: OpenApiResponse(description="Invalid documents; nothing stored.")},
    )
    def post(self, request):
        data = request.data
        if isinstance(data, dict) and ("text" in data or "turns" in data):
            data = {"documents": [data]}  # one document posted on its own
        serializer = self.InputSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        payloads = serializer.validated_data["documents"]
        visibility = serializer.validated_data["visibility"]
        project = serializer.validated_data["project"]
        if visibility == "restricted" and not project:
            return _error("invalid", "restricted documents need a project", status.HTTP_400_BAD_REQUEST)
        if len(payloads) > settings.KNOWHUB_INGEST_MAX_DOCUMENTS:
            return _error(
                "too_many", f"at most {settings.KNOWHUB_INGEST_MAX_DOCUMENTS} documents per request",
                status.HTTP_400_BAD_REQUEST,
            )  # fmt: skip
        try:
            parsed = services.documents_from_payloads(
                payloads=payloads, project=project, visibility=visibility,
                owner_hash=user_hash(request.user.pk) if visibility == "private" else "",
            )
        except services.IngestError as exc:
            return _error("invalid", str(exc), status.HTTP_400_BAD_REQUEST)
        run = services.documents_ingest(
            parsed=parsed, user=request.user, dry_run=serializer.validated_data["dry_run"]
        )
        return Response(RunOutputSerializer(run).data, status=status.HTTP_200_OK)


class ReindexApi(APIView):
    """Start a reindex run (staff only): types, since, dry_run, prune. Answers 202 with the run."""

    permission_classes = [permissions.IsAdminUser]

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        class Meta:
            ref_name = "ReindexInput"

        types = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        since = serializers.DateTimeField(required=False, allow_null=True, default=None)
        dry_run = serializers.BooleanField(required=False, default=False)
        prune = serializers.BooleanField(required=False, default=False)

        def validate_types(self, value):
            try:
                return services.normalise_types(value)
            except services.IngestError as exc:
                raise serializers.ValidationError(str(exc)) from exc

    @extend_schema(request=InputSerializer, responses={202: RunOutputSerializer})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        with transaction.atomic():
            run = services.run_create(
                source="reindex", types=data["types"], since=data["since"], dry_run=data["dry_run"],
                prune=data["prune"], user=request.user,
            )  # fmt: skip
            services.reindex_enqueue(run=run)
        run.refresh_from_db()
        return Response(RunOutputSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class RunDetailApi(APIView):
    """One ingest run, with live counts while it runs (staff only)."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        responses={200: RunOutputSerializer, 404: inline_serializer("RunNotFound", {"error": serializers.CharField()})}
    )
    def get(self, request, run_id: int):
        return Response(RunOutputSerializer(get_object_or_404(IngestRun, pk=run_id)).data)
