"""Shared API plumbing: one error shape for every endpoint, whatever failed."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import QueryDict
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)

# The errors that mean "the database cannot be reached or went away", not "this request is bad".
DATABASE_ERRORS = (OperationalError, InterfaceError)
DATABASE_UNAVAILABLE = {
    "error": "database_unavailable",
    "detail": "The database is not reachable right now. Try again in a moment.",
}
RETRY_AFTER_SECONDS = "5"


class BadRequest(APIException):
    """A request that is well-formed JSON but asks for something that cannot be done."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "bad_request"


class ServiceUnavailable(APIException):
    """A part knowhub needs (the broker, a provider) is down; the request may be retried."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "service_unavailable"


def database_failed(exc: BaseException) -> None:
    """Log a database outage and, for the embedded default, start the server for the next request."""
    logger.error("database unavailable: %s", str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        try:  # a broken connection must not be reused by this thread's next request
            conn.close()
        except Exception:  # noqa: BLE001 — closing a dead socket may fail; it is dropped either way
            conn.connection = None
    if settings.KNOWHUB_DATABASE == "embedded":
        from knowhub import embedded_db

        embedded_db.restart_if_stopped(settings.BASE_DIR)


def exception_handler(exc, context):
    """DRF's handler, with every error body carrying an ``error`` code and a ``detail``.

    A database that cannot be reached is a 503 ``database_unavailable`` (never a 500 or a
    debug page); anything else DRF does not know stays a 500 and goes to the middleware.
    """
    if isinstance(exc, DATABASE_ERRORS):
        database_failed(exc)
        return Response(DATABASE_UNAVAILABLE, status=503, headers={"Retry-After": RETRY_AFTER_SECONDS})
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


# The JSON type each field's schema declares, checked before DRF's coercion: DRF reads 0 as
# false and as "0", which the schema calls invalid. ChoiceFields are left to their choices.
_JSON_TYPES = (
    (serializers.BooleanField, (bool,), "a boolean"),
    (serializers.CharField, (str,), "a string"),
    (serializers.DateField, (str,), "a string"),
    (serializers.DateTimeField, (str,), "a string"),
    (serializers.IntegerField, (int,), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.DecimalField, (int, float, str), "a number"),
    (serializers.ListField, (list,), "a list"),
    (serializers.ListSerializer, (list,), "a list"),
    (serializers.DictField, (dict,), "an object"),
)


def _json_type_error(field, value) -> str | None:
    if value is None:
        return None  # allow_null decides
    for field_class, types, name in _JSON_TYPES:
        if isinstance(field, field_class):
            wrong = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
            return f"Expected {name}, not {type(value).__name__}." if wrong else None
    return None


class StrictSerializerMixin:
    """Reject fields the serializer does not declare (a typo must not be silently ignored), and
    in a JSON body values of another type than the field's schema says (``{"title": 0}``,
    ``{"prune": 0}``). Form data is all strings, so its values are left to the fields."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        if not isinstance(data, QueryDict):
            wrong = {name: _json_type_error(self.fields[name], value) for name, value in data.items()}
            wrong = {name: [problem] for name, problem in wrong.items() if problem}
            if wrong:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


class UnknownReference(APIException):
    """A well-formed request naming something that does not exist for the caller (a collection,
    a project, a realm): 404, like any identifier that is not there."""

    status_code = status.HTTP_404_NOT_FOUND
    default_code = "not_found"


# --- OpenAPI: what every operation can answer, and what a schema-valid request is --------------

# Answers any endpoint can give, whatever it declares: bad input, no or wrong credentials, not
# allowed, nothing there, wrong method, wrong media type, and a database or broker outage.
COMMON_ERRORS = {
    "400": "invalid input (error: invalid, or a specific code)",
    "401": "no or wrong credentials (error: not_authenticated, authentication_failed)",
    "403": "not allowed (error: permission_denied)",
    "404": "nothing there, or a referenced name that does not exist (error: not_found, unknown_…)",
    "405": "method not allowed (error: method_not_allowed)",
    "406": "cannot answer in an accepted media type (error: not_acceptable)",
    "413": "request body too large (error: too_large)",
    "414": "URL too long (error: uri_too_long)",
    "415": "request body is not JSON (error: unsupported_media_type)",
    "429": "too many requests or failed sign-ins (error: throttled); see Retry-After",
    "503": "the database or another part is down (error: database_unavailable, …); retry later",
}


def add_common_error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation documents the common error answers
    with the one error body, so new endpoints inherit a complete contract."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(
        "Error",
        {
            "type": "object",
            "properties": {
                "error": {"type": "string", "description": "stable machine-readable code"},
                "detail": {"description": "a message, or per-field messages for 'invalid'"},
            },
            "required": ["error", "detail"],
        },
    )
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for code, description in COMMON_ERRORS.items():
                declared = responses.get(code)
                if declared is None:
                    responses[code] = {"description": description, "content": ref}
                elif (
                    not declared.get("content")
                    or declared["content"].get("application/json", {}).get("schema", {}).get("type") == "object"
                    and not declared["content"]["application/json"]["schema"].get("properties")
                ):
                    # a bare `dict` declaration: say what the body is
                    responses[code] = {"description": declared.get("description") or description, "content": ref}
    return result


# --- OpenAPI links: which answer feeds which request ---------------------------------------------

# (source operationId, status, link name, target operationId, parameters, requestBody). A client
# (and schemathesis' stateful phase) learns from them that an id an answer carries is what the next
# request names: a query's interaction is what feedback and clicks are about, an ask's conversation
# is what the conversation endpoints read, a reindex run is what its detail and resume read.
OPERATION_LINKS = [
    ("rag_query_create", "200", "FeedbackOnIt", "rag_feedback_create", {},
     {"interaction_id": "$response.body#/interaction_id", "outcome": 1}),
    ("rag_query_create", "200", "ClickItsFirstResult", "rag_feedback_click_create", {},
     {"interaction_id": "$response.body#/interaction_id", "chunk_uid": "$response.body#/results/0/chunk_uid",
      "rank": 1}),
    ("rag_query_create", "200", "ClickOnIt", "rag_feedback_click_create", {},
     {"interaction_id": "$response.body#/interaction_id"}),
    ("rag_ask_create", "200", "ReadItsConversation", "rag_conversations_retrieve",
     {"conversation_id": "$response.body#/conversation_id"}, None),
    ("rag_ask_create", "200", "RenameItsConversation", "rag_conversations_partial_update",
     {"conversation_id": "$response.body#/conversation_id"}, None),
    ("rag_ask_create", "200", "DeleteItsConversation", "rag_conversations_destroy",
     {"conversation_id": "$response.body#/conversation_id"}, None),
    ("rag_ask_create", "200", "FeedbackOnIt", "rag_feedback_create", {},
     {"interaction_id": "$response.body#/interaction_id", "outcome": -1}),
    ("rag_reindex_create", "202", "ReadTheRun", "rag_reindex_retrieve", {"run_id": "$response.body#/run_id"}, None),
    ("rag_reindex_create", "202", "ResumeTheRun", "rag_reindex_resume_create",
     {"run_id": "$response.body#/run_id"}, None),
    ("sessions_start_create", "201", "ReadTheSession", "sessions_retrieve", {"id": "$response.body#/id"}, None),
    ("sessions_start_create", "201", "ChatInIt", "sessions_chat_create", {"id": "$response.body#/id"}, None),
    ("sessions_start_create", "201", "FinishIt", "sessions_finish_create", {"id": "$response.body#/id"}, None),
]  # fmt: skip


def add_operation_links(result, generator, request, public):
    """drf-spectacular postprocessing hook: the ``links`` of OPERATION_LINKS on their answers."""
    operations = {
        op.get("operationId"): op
        for item in result.get("paths", {}).values()
        for method, op in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }
    for source, status_code, name, target, parameters, body in OPERATION_LINKS:
        response = operations.get(source, {}).get("responses", {}).get(status_code)
        if response is None or target not in operations:
            continue  # an endpoint left out of this schema (or renamed): no link to it
        link: dict = {"operationId": target}
        if parameters:
            link["parameters"] = parameters
        if body is not None:
            link["requestBody"] = body
            if target == "rag_feedback_create":
                # the whole body: merged with a generated one it could name the interaction both
                # ways, which feedback refuses
                link["x-schemathesis"] = {"merge_body": False}
        response.setdefault("links", {})[name] = link
    return result
