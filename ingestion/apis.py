"""HTTP API of ingestion: the Notion webhook, document ingestion and reindex runs."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

from django.conf import settings
from django.db import transaction
from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import permissions, serializers, status
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion import services
from ingestion.models import IngestRun
from ingestion.uploads import uploads_on_disk, use_disk_uploads
from knowhub.api import BadRequest, StrictSerializerMixin
from knowhub.parsers import unstorable_text
from knowhub.schema import ANY_TEXT, NON_BLANK_TEXT
from rag.acl import user_hash

logger = logging.getLogger(__name__)


def _error(code: str, detail, http_status: int) -> Response:
    return Response({"error": code, "detail": detail}, status=http_status)


class RawBodyParser(BaseParser):
    """Leaves the body alone: the webhook authenticates the exact bytes it received."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


_UNAUTHORIZED = (
    "missing or wrong webhook secret: send 'Authorization: Bearer <KNOWHUB_NOTION_WEBHOOK_SECRET>' "
    "or 'X-Knowhub-Signature: sha256=<hex HMAC-SHA256 of the raw body>'"
)


class NotionIngestApi(APIView):
    """Receive a Notion page from an n8n workflow, authenticated by a shared secret.

    Order matters: authenticate, parse and validate, and only then store the raw delivery and
    queue its processing — a malformed or unauthenticated body leaves nothing behind.
    """

    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]
    parser_classes = [RawBodyParser]

    def finalize_response(self, request, response, *args, **kwargs):
        """Errors keep ``{error, detail}`` and add ``cause``, the reason again: n8n's HTTP Request
        node shows the first of ``cause``, ``error``, ``message``… it finds in a failed response's
        body, so without it the user would see only the short code ("invalid")."""
        data = getattr(response, "data", None)
        if response.status_code >= 400 and isinstance(data, dict) and isinstance(data.get("detail"), str):
            data.setdefault("cause", data["detail"])
        return super().finalize_response(request, response, *args, **kwargs)

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "NotionDeliveryInput"

        page_id = serializers.CharField(help_text="With or without dashes, any case, or the page's notion.so URL.")
        database_id = serializers.CharField(required=False, help_text="Notion database: its source setting applies.")
        visibility = serializers.ChoiceField(choices=["public", "restricted", "private"], required=False,
                                             help_text="Only narrower than the database's setting.")
        project = serializers.SlugField(required=False)
        properties = serializers.DictField(required=False)
        content = serializers.CharField(required=False, allow_blank=True)
        url = serializers.CharField(required=False, allow_blank=True)
        last_edited_time = serializers.DateTimeField(required=False, help_text="An older edit never overwrites newer.")
        archived = serializers.BooleanField(required=False, help_text="true: the page's chunks are hidden.")
        in_trash = serializers.BooleanField(required=False, help_text="true: the page's chunks are hidden.")

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
            403: OpenApiResponse(description="No webhook secret configured on the server (says which setting)."),
            413: OpenApiResponse(description="Body too large."),
        },
        auth=[],
    )
    def post(self, request):
        secret = services.notion_webhook_secret()
        if not secret:
            # 403, not 503: nothing changes by retrying (n8n presents a 503 as "try again later").
            return _error(
                "webhook_disabled",
                "this knowhub accepts no Notion deliveries: set KNOWHUB_NOTION_WEBHOOK_SECRET on the knowhub "
                "server (and the same value in n8n's Header Auth credential), then restart it.",
                status.HTTP_403_FORBIDDEN,
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
            return _error("unauthorized", _UNAUTHORIZED, status.HTTP_401_UNAUTHORIZED)
        try:
            payload = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _error("invalid_json", f"body is not valid UTF-8 JSON: {exc}", status.HTTP_400_BAD_REQUEST)
        problem = unstorable_text(payload)
        if problem:
            return _error("invalid_json", problem, status.HTTP_400_BAD_REQUEST)
        from ingestion.services.source_settings import (
            narrowed,
            setting_access,
            setting_for_document,
        )
        from ingestion.sources.notion import webhook_delivery

        try:
            checked = webhook_delivery(payload, collection=services.NOTION_COLLECTION)
            doc = checked.document
            requested = doc.units[0].metadata.get("requested_access") if doc.units else None
            # A delivery may narrow its database's access, never widen it: refused before storing.
            narrowed(setting_access(setting_for_document(doc)), requested)
        except services.IngestError as exc:  # access_widening, invalid_access, unknown_project
            return _error(exc.code, str(exc), status.HTTP_400_BAD_REQUEST)
        except ValueError as exc:
            return _error("invalid", str(exc), status.HTTP_400_BAD_REQUEST)
        receipt = services.notion_delivery_receive(
            body=body, page_id=doc.source_id, edited_at=checked.edited_at, gone=checked.gone
        )
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
            "started_at", "finished_at", "duration_s", "heartbeat_at", "resumed_as",
        ]  # fmt: skip

    def get_duration_s(self, run) -> float | None:
        return round(run.duration_ms / 1000, 3) if run.duration_ms is not None else None


_TEXT = NON_BLANK_TEXT
DOCUMENT_PAYLOAD_SCHEMA = {
    "type": "object",
    "description": "A text/markdown document (`text`) or a meeting transcript (`turns`), with metadata.",
    "properties": {
        "id": {"type": "string", "maxLength": 500, "pattern": _TEXT},
        "text": {"type": "string", "pattern": _TEXT},
        "turns": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["text"],
                "properties": {
                    "speaker": {"type": "string", "pattern": ANY_TEXT}, "text": {"type": "string", "pattern": _TEXT}
                },
            },
        },
        "title": {"type": "string", "pattern": ANY_TEXT},
        "format": {"type": "string", "enum": ["text", "markdown"]},
        "date": {"type": "string", "format": "date"},
        "entity": {"type": "string", "pattern": ANY_TEXT},
        "people": {"type": "array", "items": {"type": "string", "pattern": ANY_TEXT}},
        "tags": {"type": "array", "items": {"type": "string", "pattern": ANY_TEXT}},
        "collection": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_\\-]{0,63}$"},
        "url": {"type": "string", "pattern": ANY_TEXT},
    },
    "required": ["id"],
    "oneOf": [{"required": ["text"]}, {"required": ["turns"]}],
    "additionalProperties": False,
}  # fmt: skip


@extend_schema_field(DOCUMENT_PAYLOAD_SCHEMA)
class DocumentPayloadField(serializers.DictField):
    """One posted document; ``ingestion.sources.documents.parse_document_payload`` validates it."""


class DocumentsIngestApi(APIView):
    """Index text/markdown documents or meeting transcripts (speaker turns), with metadata.

    Staff only: documents may be public. Synchronous, so the answer carries the counts; a
    document that fails is reported in ``errors`` and the others are still stored.
    """

    permission_classes = [permissions.IsAdminUser]

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        class Meta:
            ref_name = "DocumentsIngestInput"

        # Restricted documents name their project (post() checks it).
        request_schema_extra = {"anyOf": [
            {"properties": {"visibility": {"not": {"enum": ["restricted"]}}}},
            {"required": ["project"], "properties": {"project": {"type": "string"}}},
        ]}  # fmt: skip

        documents = serializers.ListField(
            child=DocumentPayloadField(), allow_empty=False,
            help_text="Each document's id at most once per request (a repeated id: 400, nothing stored).",
        )
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
        except services.UnknownProject as exc:
            return _error("unknown_project", str(exc), status.HTTP_404_NOT_FOUND)
        except services.IngestError as exc:
            return _error("invalid", str(exc), status.HTTP_400_BAD_REQUEST)
        run = services.documents_ingest(
            parsed=parsed, user=request.user, dry_run=serializer.validated_data["dry_run"]
        )
        return Response(RunOutputSerializer(run).data, status=status.HTTP_200_OK)


class FilesIngestApi(APIView):
    """Upload PDF, DOCX, HTML, PPTX, PNG or JPEG files (multipart, field ``files``, repeatable); staff only.

    Files are streamed to disk; each is read in a bounded child process (time, memory, zip
    checks), and images and scanned PDF pages are read by OCR.

    The request as a whole is checked first (files present, count, size, type, project): any
    problem there is a 4xx and nothing is stored. A file that then cannot give text (encrypted,
    corrupt, empty, scanned) is reported in ``files`` with the reason, and the others are indexed.
    """

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        class Meta:
            ref_name = "FilesIngestInput"

        files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)
        collection = serializers.RegexField(r"^[a-z0-9][a-z0-9_\-]{0,63}$", required=False, default="documents")
        project = serializers.SlugField(required=False, allow_null=True, default=None)
        visibility = serializers.ChoiceField(choices=["public", "restricted", "private"], default="public")
        date = serializers.DateField(required=False, allow_null=True, default=None)
        entity = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
        people = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list)
        tags = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list)
        dry_run = serializers.BooleanField(required=False, default=False)

    def initialize_request(self, request, *args, **kwargs):
        use_disk_uploads(request)  # before DRF's CSRF check reads the body
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        responses={
            200: OpenApiResponse(description="The run's counts and one entry per file (indexed or failed, why)."),
            400: OpenApiResponse(description="No files, unsupported type, unknown project; nothing stored."),
            411: OpenApiResponse(description="No Content-Length (a chunked upload); nothing read or stored."),
            413: OpenApiResponse(description="A file or the request is too large; nothing stored."),
        },
    )
    def post(self, request):
        refused = request_too_large(request)
        if refused is not None:
            return refused
        files = request.FILES.getlist("files")
        # No copy of request.data: a QueryDict copy deep-copies the files held open on disk.
        data = request.data
        payload = {k: data.getlist(k) if k in ("people", "tags") else data.get(k) for k in data if k != "files"}
        payload["files"] = files
        serializer = self.InputSerializer(data=payload)
        serializer.is_valid(raise_exception=True)
        v = serializer.validated_data
        refused = files_refused(files)
        if refused is not None:
            return refused
        if v["visibility"] == "restricted" and not v["project"]:
            return _error("invalid", "restricted files need a project", status.HTTP_400_BAD_REQUEST)
        if v["visibility"] != "restricted" and v["project"]:
            return _error("invalid", "a project is only used with visibility 'restricted'", status.HTTP_400_BAD_REQUEST)
        try:
            with uploads_on_disk(files) as uploads:
                result = services.files_ingest(
                    uploads=uploads, collection=v["collection"], project=v["project"], visibility=v["visibility"],
                    owner_hash=user_hash(request.user.pk) if v["visibility"] == "private" else "", date=v["date"],
                    entity=v["entity"], people=v["people"], tags=v["tags"], user=request.user, dry_run=v["dry_run"],
                )  # fmt: skip
        except services.IngestError as exc:
            return _error("invalid", str(exc), status.HTTP_400_BAD_REQUEST)
        body = {**RunOutputSerializer(result.run).data, "files": [f.as_dict() for f in result.files]}
        return Response(body, status=status.HTTP_200_OK)


def request_too_large(request) -> Response | None:
    """413 when the declared body could not fit the allowed files, 411 when no length is declared
    (chunked): both answered before a byte of the body is read."""
    max_bytes, max_files = settings.KNOWHUB_INGEST_MAX_FILE_BYTES, settings.KNOWHUB_INGEST_MAX_FILES
    if not request.META.get("CONTENT_LENGTH") and request.META.get("HTTP_TRANSFER_ENCODING"):
        # Django reads a body without Content-Length as empty: say so rather than "no files".
        return _error("length_required", f"send the upload with a Content-Length (files of at most {max_bytes} "
                      "bytes); chunked uploads are not read", status.HTTP_411_LENGTH_REQUIRED)  # fmt: skip
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > max_bytes * max_files + 1024 * 1024:
        return _error("too_large", f"request larger than {max_files} files of {max_bytes} bytes",
                      status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)  # fmt: skip
    return None


def files_refused(files, *, max_files: int | None = None) -> Response | None:
    """The checks every upload passes before anything is read: count, size, type."""
    from ingestion.sources.files import FILE_TYPES, suffix_of

    max_bytes = settings.KNOWHUB_INGEST_MAX_FILE_BYTES
    max_files = max_files or settings.KNOWHUB_INGEST_MAX_FILES
    if not files:
        return _error("no_files", "no files were sent (multipart field 'files')", status.HTTP_400_BAD_REQUEST)
    if len(files) > max_files:
        return _error("too_many", f"at most {max_files} files per request", status.HTTP_400_BAD_REQUEST)
    for f in files:
        if f.size > max_bytes:
            limit = f"at most {max_bytes} bytes ({max_bytes / (1024 * 1024):g} MB) per file"
            return _error("too_large", f"{f.name}: {f.size} bytes; {limit}", status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        if suffix_of(f.name) not in FILE_TYPES:
            return _error("unsupported", f"{f.name}: expected one of {', '.join(sorted(FILE_TYPES))}",
                          status.HTTP_400_BAD_REQUEST)  # fmt: skip
    return None


class FileDownloadApi(APIView):
    """The original of an ingested file, for whoever may see one of its chunks (404 otherwise)."""

    @extend_schema(responses={200: OpenApiResponse(description="The file's bytes."), 404: OpenApiResponse()})
    def get(self, request, sha256: str):
        from rag.acl import Scope

        found = services.file_for_download(sha256=sha256, scope=Scope.for_user(request.user))
        if found is None:
            return _error("not_found", "no such file, or not one you may see", status.HTTP_404_NOT_FOUND)
        response = FileResponse(found.path.open("rb"), as_attachment=True, filename=found.file.name,
                                content_type=found.file.content_type)  # fmt: skip
        response["X-Content-Type-Options"] = "nosniff"
        return response


class ReindexApi(APIView):
    """Start a reindex run (staff only): types, since, dry_run, prune. Answers 202 with the run."""

    permission_classes = [permissions.IsAdminUser]

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        class Meta:
            ref_name = "ReindexInput"

        # An enum in the schema: a client sees which types exist before it asks.
        types = serializers.ListField(
            child=serializers.ChoiceField(choices=[*services.ALL_TYPES, "all"]), required=False, default=list
        )
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
        services.runs_mark_interrupted()  # a run whose process died shows as interrupted
        return Response(RunOutputSerializer(get_object_or_404(IngestRun, pk=run_id)).data)


class RunResumeApi(APIView):
    """Resume an interrupted (or failed) run (staff only): its sources run again as a new queued
    reindex run, answered with 202. Unchanged chunks are kept, nothing unchanged is re-embedded."""

    permission_classes = [permissions.IsAdminUser]

    class RunNotResumable(BadRequest):
        status_code = status.HTTP_409_CONFLICT
        default_code = "not_resumable"

    @extend_schema(
        request=None,
        responses={
            202: RunOutputSerializer,
            409: OpenApiResponse(description="The run cannot be resumed in its state (not_resumable)."),
        },
    )
    def post(self, request, run_id: int):
        services.runs_mark_interrupted()
        run = get_object_or_404(IngestRun, pk=run_id)
        try:
            new = services.run_resume(run=run, user=request.user)
        except services.IngestError as exc:
            raise self.RunNotResumable(str(exc)) from exc
        new.refresh_from_db()
        return Response(RunOutputSerializer(new).data, status=status.HTTP_202_ACCEPTED)
