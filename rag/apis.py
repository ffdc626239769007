"""HTTP API of the index."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from rag.selectors import health_status


class HealthApi(APIView):
    """Database, pgvector, embedding provider and broker, each with a status."""

    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []

    @extend_schema(responses={200: dict, 503: dict})
    def get(self, request):
        status = health_status()
        return Response(status, status=200 if status["ok"] else 503)
