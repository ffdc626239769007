"""The API contract, fuzzed: every operation of /api/schema/ with schema-generated requests.

schemathesis drives the Django app in process (WSGI) with a staff token, in its three phases
(examples, coverage: the boundary and type-confusion cases of every field, fuzzing), valid and
invalid data alike: no server error, no status code the schema does not document, no
schema-valid request refused, no schema-invalid request accepted, every response body matching
its schema. A stateful run follows the schema's links (a query's interaction to feedback and
clicks, an ask's conversation, a reindex run, a learning session). Generic over the schema, so
endpoints added later are covered.

Bounded for CI (KNOWHUB_CONTRACT_EXAMPLES fuzzed examples per operation, default 20; the coverage
phase's cases come on top). The probe's size, with new examples each run:
``KNOWHUB_CONTRACT_EXAMPLES=30 KNOWHUB_CONTRACT_RANDOM=1 pytest -m contract tests/api``.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

pytestmark = pytest.mark.contract

MAX_EXAMPLES = int(os.environ.get("KNOWHUB_CONTRACT_EXAMPLES", "20"))
STATEFUL_EXAMPLES = int(os.environ.get("KNOWHUB_CONTRACT_STATEFUL_EXAMPLES", str(MAX_EXAMPLES)))
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
    # The fuzzer sends wrong credentials on purpose (its ignored_auth check), hundreds of them from
    # one address: throttling them (tests/knowhub/test_brute_force.py) would answer its other
    # requests 429 too.
    settings.KNOWHUB_AUTH_FAILURE_LIMIT = 10**9


@pytest.fixture
def staff_token(db, django_user_model):
    from rest_framework.authtoken.models import Token

    user = django_user_model.objects.create_user(username="fuzz", password="pw-fuzz-123", is_staff=True)
    return Token.objects.create(user=user).key


schema = _load_schema()


# Rules that span items or fields, which JSON Schema cannot state; each is in the field's
# description, and a request breaking one must be refused (checked below: a 400, or the 404/409
# of something else wrong with it that is checked first, such as a chunk that was not a result). Rules a
# schema can state are in it (oneOf/anyOf of the feedback and ingest bodies).
def _dates_reversed(body) -> bool:
    start, end = body.get("date_from"), body.get("date_to")
    return isinstance(start, str) and isinstance(end, str) and end < start


def _repeated_ids(body) -> bool:
    ids = [d.get("id") for d in body.get("documents") or [] if isinstance(d, dict)]
    return len(ids) != len(set(ids))


def _judgment_pairs_clash(body) -> bool:
    judgments = [j for j in body.get("judgments") or [] if isinstance(j, dict)]
    uids = [j.get("chunk_uid") for j in judgments]
    return len(uids) != len(set(uids)) or any(j.get("preferred_over") == j.get("chunk_uid") for j in judgments)


REFUSED = (400, 404, 409)
CROSS_FIELD_RULES = {
    "POST /rag/query": _dates_reversed,
    "POST /rag/ask": _dates_reversed,
    "POST /rag/ask/stream": _dates_reversed,
    "POST /ingest/documents": _repeated_ids,
    "POST /rag/feedback": _judgment_pairs_clash,
}

# The one schema-valid refusal left: a file whose name or bytes are not PDF, DOCX, PPTX, HTML, PNG
# or JPEG (the schema cannot state a file's type).
KNOWN_REFUSALS = {"POST /ingest/files", "POST /ingest/my-files"}
# DRF parses the query string and forms itself: "0" is a valid integer there. Invalid JSON bodies
# are refused (knowhub.api.StrictSerializerMixin); for these the refusal is not checked.
LENIENT = {"POST /ingest/files", "POST /ingest/my-files", "POST /notion/ingest"}


def _breaks_a_cross_field_rule(case) -> bool:
    rule = CROSS_FIELD_RULES.get(case.operation.label)
    meta = case.meta
    positive = meta is None or meta.generation.mode.is_positive
    return bool(rule and positive and isinstance(case.body, dict) and rule(case.body))


def _excluded_checks(case) -> list:
    excluded = []
    if case.operation.label in LENIENT or case.query or case.operation.method.upper() == "GET":
        excluded.append(schemathesis.checks.negative_data_rejection)
    if case.operation.label in KNOWN_REFUSALS or _breaks_a_cross_field_rule(case):
        excluded.append(schemathesis.checks.positive_data_acceptance)
    return excluded


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE,
    database=None,
)
def test_every_operation_keeps_the_contract(case, staff_token):
    response = case.call_and_validate(
        headers={"Authorization": f"Token {staff_token}"}, excluded_checks=_excluded_checks(case)
    )
    if _breaks_a_cross_field_rule(case):
        assert response.status_code in REFUSED, (case.operation.label, case.body, response.text[:300])


def test_linked_operations_keep_the_contract(staff_token, local_embedder):
    """Requests that name what an earlier answer returned, along the schema's links, over a small
    index (so a query has results to click)."""
    from django.db import transaction

    from tests.rag.factories import load, topic_corpus

    load(topic_corpus(), local_embedder)
    # a schema of its own: the parametrized runs leave what they learnt on theirs
    machine = _load_schema().as_state_machine()

    followed: set[str] = set()

    class Machine(machine):
        # Each scenario from the same database: hypothesis replays a scenario's choices and
        # expects the same answers (rows left by an earlier scenario would change them).
        def setup(self):
            self._scenario = transaction.atomic()
            self._scenario.__enter__()

        def teardown(self):
            transaction.set_rollback(True)
            self._scenario.__exit__(None, None, None)

        def step(self, input):
            if input.transition is not None and input.is_applied:
                followed.add(input.transition.id)
            return super().step(input)

        def get_call_kwargs(self, case):
            return {"headers": {"Authorization": f"Token {staff_token}"}}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            if _breaks_a_cross_field_rule(case):
                assert response.status_code in REFUSED, (case.operation.label, case.body, response.text[:300])
                return
            # The token is set here, not generated: ignored_auth would take it for a generated one.
            excluded = [*_excluded_checks(case), schemathesis.checks.ignored_auth]
            case.validate_response(response, excluded_checks=excluded, transport_kwargs=kwargs)

    Machine.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
            derandomize=DERANDOMIZE, database=None, stateful_step_count=6,
        )
    )  # fmt: skip
    # the links were followed (which ones varies with the examples drawn)
    assert followed, "no request was made from an earlier answer"
