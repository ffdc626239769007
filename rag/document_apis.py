"""HTTP API of the document view: ``GET /rag/documents/<chunk_uid>``."""

from __future__ import annotations

from dataclasses import asdict

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from rag.acl import Scope
from rag.documents import document_for_chunk


class DocumentChunkSerializer(serializers.Serializer):
    chunk_uid = serializers.CharField()
    unit_anchor = serializers.CharField()
    chunk_idx = serializers.IntegerField()
    title = serializers.CharField()
    breadcrumb = serializers.CharField()
    content = serializers.CharField()
    date = serializers.DateField(allow_null=True)
    updated_at = serializers.DateTimeField()
    cited = serializers.BooleanField(help_text="The chunk that was asked for.")


class DocumentVersionSerializer(serializers.Serializer):
    chunk_uid = serializers.CharField()
    change = serializers.ChoiceField(choices=["created", "updated", "deleted"])
    title = serializers.CharField()
    content = serializers.CharField()
    content_hash = serializers.CharField()
    created_at = serializers.DateTimeField()


class DocumentOutputSerializer(serializers.Serializer):
    chunk_uid = serializers.CharField()
    collection = serializers.CharField()
    source_type = serializers.CharField()
    source_id = serializers.CharField()
    title = serializers.CharField()
    breadcrumb = serializers.CharField()
    url = serializers.CharField(help_text="The original (http(s), notion://, logseq://), or empty.")
    page_url = serializers.CharField(help_text="This document's page on knowhub.")
    date = serializers.DateField(allow_null=True)
    updated_at = serializers.DateTimeField()
    visibility = serializers.CharField()
    metadata = serializers.DictField()
    chunks = DocumentChunkSerializer(many=True, help_text="The chunks the caller may see, in document order.")
    history = DocumentVersionSerializer(many=True, help_text="Versions of those chunks, newest first.")


class DocumentApi(APIView):
    """The whole document a chunk belongs to, as far as the caller may see it.

    404 for a chunk that does not exist, was deleted, or that search would not show the caller.
    """

    OutputSerializer = DocumentOutputSerializer

    @extend_schema(responses={200: OutputSerializer, 404: OpenApiResponse(description="No such chunk visible to you.")})
    def get(self, request, chunk_uid: str):
        doc = document_for_chunk(scope=Scope.for_user(request.user), chunk_uid=chunk_uid)
        if doc is None:
            raise Http404("No such document.")
        data = {**asdict(doc), "page_url": reverse("document-page", kwargs={"chunk_uid": doc.chunk_uid})}
        return Response(self.OutputSerializer(data).data)
