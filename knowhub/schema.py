"""drf-spectacular's AutoSchema, told what the serializers really accept.

A schema-valid request must be accepted. DRF's CharField and knowhub's JSON parser refuse NUL
and lone surrogate characters; a CharField that trims whitespace and refuses blanks also refuses
strings of whitespace only (Python's idea of whitespace); a ListField that refuses empty lists needs an item;
a serializer that rejects unknown fields (``StrictSerializerMixin``) allows no additional properties. Saying
so here fixes the contract of every endpoint, present and future.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

# Lone surrogates are refused too (knowhub.parsers), but a pattern cannot say so: a class with
# \ud800-\udfff is not a valid ECMA-262 regex for Rust-based validators, which then drop the whole
# pattern, and no generator of valid Unicode text produces one anyway.
_ALLOWED = r"[^\x00]"
_VISIBLE = r"[^\s\x00\x1c-\x1f\x85]"  # not whitespace for str.strip(), not refused
ANY_TEXT = rf"^{_ALLOWED}*$"
NON_BLANK_TEXT = rf"^{_ALLOWED}*{_VISIBLE}{_ALLOWED}*$"


class AutoSchema(SpectacularAutoSchema):
    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction != "request" or not isinstance(schema, dict):
            return schema
        plain_string = schema.get("type") == "string" and not {"enum", "format", "pattern"} & set(schema)
        if isinstance(field, serializers.SlugField) and plain_string and not field.allow_unicode:
            schema["pattern"] = r"^[-a-zA-Z0-9_]+$"  # SlugField's own validator, which the schema omits
        elif isinstance(field, serializers.CharField) and plain_string:
            blank_refused = not field.allow_blank and field.trim_whitespace
            schema["pattern"] = NON_BLANK_TEXT if blank_refused else ANY_TEXT
        if isinstance(field, serializers.ListField | serializers.ListSerializer) and not getattr(
            field, "allow_empty", True
        ):
            schema["minItems"] = max(1, schema.get("minItems", 0))
        return schema

    def _get_request_body(self, direction="request"):
        # A body whose every field is optional, but which must name something (``oneOf`` in
        # ``request_schema_extra``), is required all the same.
        body = super()._get_request_body(direction)
        if body is not None and getattr(self.get_request_serializer(), "request_schema_extra", None):
            body["required"] = True
        return body

    def _map_serializer(self, serializer, direction, bypass_extensions=False):
        from knowhub.api import StrictSerializerMixin

        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        if direction == "request" and isinstance(serializer, StrictSerializerMixin) and isinstance(schema, dict):
            schema["additionalProperties"] = False
            # A rule across fields a serializer's validate() enforces, stated where JSON Schema can
            # (``oneOf`` of two ways to name something): ``request_schema_extra`` on the class.
            schema.update(getattr(serializer, "request_schema_extra", None) or {})
        return schema
