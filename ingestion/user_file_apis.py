"""REST twin of the ask page's attachments: a signed-in person's own files (``/ingest/my-files``).

List, upload (multipart ``files``, streamed to disk, bounded extraction, OCR) and delete. Files
are private to their owner; restrict a question to some with ``source_ids`` on ``POST /rag/ask``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from ingestion import services
from ingestion.apis import files_refused, request_too_large
from ingestion.services.user_files import (
    QuotaExceeded,
    user_file_delete,
    user_files_list,
    user_files_quota,
    user_files_upload,
)
from ingestion.uploads import uploads_on_disk, use_disk_uploads
from knowhub.api import StrictSerializerMixin


class UserFileSerializer(serializers.Serializer):
    source_id = serializers.CharField(help_text="Restrict a question to it: POST /rag/ask {source_ids: [...]}.")
    name = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    url = serializers.CharField(help_text="Download the original.")
    chunk_uid = serializers.CharField(help_text="Its document page: /documents/<chunk_uid>/.")
    created_at = serializers.DateTimeField()


class QuotaSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    bytes = serializers.IntegerField()
    max_count = serializers.IntegerField()
    max_bytes = serializers.IntegerField()


class UserFilesOutputSerializer(serializers.Serializer):
    files = UserFileSerializer(many=True)
    quota = QuotaSerializer()


def _error(code: str, detail: str, http_status: int) -> Response:
    return Response({"error": code, "detail": detail}, status=http_status)


def _listing(user) -> dict:
    return {"files": [f.as_dict() for f in user_files_list(user=user)], "quota": user_files_quota(user=user).as_dict()}


class UserFilesApi(APIView):
    """Your own files: GET lists them with your quota; POST adds files (private to you)."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(StrictSerializerMixin, serializers.Serializer):
        class Meta:
            ref_name = "UserFilesInput"

        files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False)

    def initialize_request(self, request, *args, **kwargs):
        use_disk_uploads(request)  # before DRF's CSRF check reads the body
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(responses={200: UserFilesOutputSerializer})
    def get(self, request):
        return Response(UserFilesOutputSerializer(_listing(request.user)).data)

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        responses={
            200: OpenApiResponse(description="One entry per file (indexed or failed, why), and your files now."),
            400: OpenApiResponse(description="No files or an unsupported type; nothing stored."),
            411: OpenApiResponse(description="No Content-Length (a chunked upload); nothing read or stored."),
            413: OpenApiResponse(description="A file or the request is too large, or over your quota; nothing stored."),
        },
    )
    def post(self, request):
        refused = request_too_large(request)
        if refused is not None:
            return refused
        files = request.FILES.getlist("files")
        serializer = self.InputSerializer(data={"files": files})
        serializer.is_valid(raise_exception=True)
        refused = files_refused(files)
        if refused is not None:
            return refused
        try:
            with uploads_on_disk(files) as uploads:
                result = user_files_upload(user=request.user, uploads=uploads)
        except QuotaExceeded as exc:
            return _error("quota_exceeded", str(exc), status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        except services.IngestError as exc:
            return _error("invalid", str(exc), status.HTTP_400_BAD_REQUEST)
        return Response({"results": [f.as_dict() for f in result.files], **_listing(request.user)})


class UserFileDetailApi(APIView):
    """Delete one of your files (its chunks and, when nothing else uses it, the original)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses={204: None, 404: OpenApiResponse(description="No such file of yours.")})
    def delete(self, request, source_id: str):
        if not user_file_delete(user=request.user, source_id=source_id):
            return _error("not_found", "no such file of yours", status.HTTP_404_NOT_FOUND)
        return Response(status=status.HTTP_204_NO_CONTENT)
