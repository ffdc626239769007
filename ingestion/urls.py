"""Ingestion routes, mounted at the site root (the paths are the ones seed 001 used)."""

from django.urls import path

from ingestion import apis

app_name = "ingestion"

urlpatterns = [
    path("notion/ingest", apis.NotionIngestApi.as_view(), name="notion-ingest"),
    path("ingest/documents", apis.DocumentsIngestApi.as_view(), name="documents-ingest"),
    path("rag/reindex", apis.ReindexApi.as_view(), name="reindex"),
    path("rag/reindex/<int:run_id>", apis.RunDetailApi.as_view(), name="run-detail"),
]
