"""Ingestion routes, mounted at the site root (``/notion/ingest`` is where n8n workflows post:
moving it breaks them)."""

from django.urls import path

from ingestion import apis, user_file_apis

app_name = "ingestion"

urlpatterns = [
    path("notion/ingest", apis.NotionIngestApi.as_view(), name="notion-ingest"),
    path("ingest/documents", apis.DocumentsIngestApi.as_view(), name="documents-ingest"),
    path("ingest/files", apis.FilesIngestApi.as_view(), name="files-ingest"),
    path("ingest/files/<str:sha256>", apis.FileDownloadApi.as_view(), name="file-download"),
    # A signed-in person's own files (the ask page's attachments); path: source ids hold a slash.
    path("ingest/my-files", user_file_apis.UserFilesApi.as_view(), name="my-files"),
    path("ingest/my-files/<path:source_id>", user_file_apis.UserFileDetailApi.as_view(), name="my-file"),
    path("rag/reindex", apis.ReindexApi.as_view(), name="reindex"),
    path("rag/reindex/<int:run_id>", apis.RunDetailApi.as_view(), name="run-detail"),
    path("rag/reindex/<int:run_id>/resume", apis.RunResumeApi.as_view(), name="run-resume"),
]
