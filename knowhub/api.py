"""Shared API plumbing: one error shape for every endpoint."""

from __future__ import annotations

from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.views import exception_handler as drf_exception_handler


class BadRequest(APIException):
    """A request that is well-formed JSON but asks for something that cannot be done."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "bad_request"


def exception_handler(exc, context):
    """DRF's handler, with every error body carrying an ``error`` code and a ``detail``."""
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict) and "detail" in data and len(data) == 1:
        code = getattr(data["detail"], "code", None) or getattr(exc, "default_code", "error")
        response.data = {"error": str(code), "detail": str(data["detail"])}
    elif isinstance(data, dict | list):
        response.data = {"error": "invalid", "detail": data}
    return response


class StrictSerializerMixin:
    """Reject fields the serializer does not declare: a typo must not be silently ignored."""

    def to_internal_value(self, data):
        from rest_framework import serializers

        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)
