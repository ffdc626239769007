"""The API contract, fuzzed: every operation of /api/schema/ with schema-generated requests.

schemathesis drives the Django app in process (WSGI) with a staff token: no server error, no
status code the schema does not document, no schema-valid request rejected, every response
body matching its schema. Generic over the schema, so endpoints added later are covered.
Bounded (KNOWHUB_CONTRACT_EXAMPLES examples per operation) to stay within a couple of minutes.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

pytestmark = pytest.mark.contract

MAX_EXAMPLES = int(os.environ.get("KNOWHUB_CONTRACT_EXAMPLES", "12"))
# The same examples on every run, so a red build can be reproduced and a green one stays green;
# KNOWHUB_CONTRACT_RANDOM=1 (with more examples) explores new ones.
DERANDOMIZE = os.environ.get("KNOWHUB_CONTRACT_RANDOM", "") not in ("1", "true", "yes")


def _load_schema():
    from django.core.wsgi import get_wsgi_application

    # The schema view needs no database; loading it here makes one test per operation.
    return schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """As django.test.Client does: the raw WSGI app would close the test's connection (and its
    transaction) after each request."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _webhook_configured(settings):
    # Unconfigured, the Notion webhook answers 403 by design; configured, it checks signatures.
    settings.KNOWHUB_NOTION_WEBHOOK_SECRET = "contract-test-webhook-secret"


@pytest.fixture
def staff_token(db, django_user_model):
    from rest_framework.authtoken.models import Token

    user = django_user_model.objects.create_user(username="fuzz", password="pw-fuzz-123", is_staff=True)
    return Token.objects.create(user=user).key


schema = _load_schema()


# Known gaps, each checked for everything else (server errors, documented status codes, response
# schemas): requests the schema allows that these endpoints refuse with a 400 because the rule
# spans items or fields, which an OpenAPI schema cannot state:
# - /ingest/documents: the same document id twice in one request;
# - /rag/query, /rag/ask(/stream): date_to before date_from;
# - /rag/feedback: preferred_over vs chunk_uid, interaction_id vs interaction;
# - /ingest/files, /ingest/my-files: a file whose name or bytes are not PDF, DOCX, PPTX, HTML, PNG or JPEG.
KNOWN_REFUSALS = {
    "POST /ingest/documents", "POST /rag/query", "POST /rag/ask", "POST /rag/ask/stream", "POST /rag/feedback",
    "POST /ingest/files", "POST /ingest/my-files",
}  # fmt: skip


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE,
    database=None,
)
def test_every_operation_keeps_the_contract(case, staff_token):
    # Not checked: that every schema-violating request is refused. DRF coerces on purpose
    # (0 -> "0" for a string field), which is leniency, not a broken contract.
    excluded = [schemathesis.checks.negative_data_rejection]
    if case.operation.label in KNOWN_REFUSALS:
        excluded.append(schemathesis.checks.positive_data_acceptance)
    case.call_and_validate(headers={"Authorization": f"Token {staff_token}"}, excluded_checks=excluded)
