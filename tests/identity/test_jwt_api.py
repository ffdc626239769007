"""API calls with JWT bearer tokens from a real OpenID provider (npm oidc-provider on loopback):
the user and projects come from the token's subject and groups through the admin's mapping;
every bad token is a 401 JSON; key rotation is picked up; cached keys verify while the provider
is down."""

from __future__ import annotations

import time

import jwt
import pytest
from django.core.cache import caches
from rest_framework.authtoken.models import Token

from identity.models import ExternalIdentity, GroupProjectMapping
from rag.models import Project
from tests.identity.provider import API_AUDIENCE, new_signing_key, start_provider
from tests.rag.factories import doc, load

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(local_embedder):
    """A public chunk, one of project "eng" and one of project "sales", all about vectors."""
    for slug in ("eng", "sales"):
        Project.objects.create(slug=slug, name=slug.title())
    load(
        [
            doc("open", "Open", "shared knowledge about vectors"),
            doc("eng-doc", "Eng", "engineering knowledge about vectors", visibility="restricted", project="eng"),
            doc("sales-doc", "Sales", "sales knowledge about vectors", visibility="restricted", project="sales"),
        ],
        local_embedder,
    )
    GroupProjectMapping.objects.create(group="engineers", project=Project.objects.get(slug="eng"))
    GroupProjectMapping.objects.create(group="sellers", project=Project.objects.get(slug="sales"))


def _query(api_client, token: str, *, scheme: str = "Bearer"):
    return api_client.post(
        "/rag/query", {"query": "knowledge about vectors", "top_k": 10}, format="json",
        HTTP_AUTHORIZATION=f"{scheme} {token}",
    )  # fmt: skip


def _sources(response) -> set[str]:
    assert response.status_code == 200, response.content
    return {hit["source_id"] for hit in response.json()["results"]}


def _assert_refused(response, why: str):
    assert response.status_code == 401, (response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] == "authentication_failed"
    assert why in body["detail"], body


def test_a_token_answers_for_the_projects_its_groups_map_to(sso, corpus, api_client):
    sso.set_user("ann", groups=["engineers", "unmapped-group"])
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open", "eng-doc"}
    identity = ExternalIdentity.objects.get(issuer=sso.issuer, subject="sub-ann")
    assert list(identity.user.knowhub_projects.values_list("slug", flat=True)) == ["eng"]

    # Moved from engineering to sales at the provider: the next token's call sees it at once.
    sso.set_user("ann", groups=["sellers"])
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open", "sales-doc"}
    # Taken out of every group: only public chunks.
    sso.set_user("ann", groups=[])
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open"}


def test_a_request_field_cannot_add_projects(sso, corpus, api_client):
    sso.set_user("ann", groups=[])
    response = api_client.post(
        "/rag/query", {"query": "knowledge about vectors", "project": "eng", "groups": ["engineers"]},
        format="json", HTTP_AUTHORIZATION=f"Bearer {sso.access_token('ann')}",
    )  # fmt: skip
    assert response.status_code == 400  # unknown fields are refused, never read
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open"}


def test_an_admin_given_membership_survives_group_changes(sso, corpus, api_client, django_user_model):
    sso.set_user("ann", groups=["engineers"])
    _query(api_client, sso.access_token("ann"))
    user = ExternalIdentity.objects.get(subject="sub-ann").user
    Project.objects.get(slug="sales").members.add(user)  # by hand, in the admin
    sso.set_user("ann", groups=[])
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open", "sales-doc"}


def test_staff_status_follows_the_configured_group(sso, corpus, api_client, settings):
    settings.KNOWHUB_OIDC_STAFF_GROUP = "knowhub-admins"
    sso.set_user("ann", groups=["knowhub-admins"])
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open", "eng-doc", "sales-doc"}
    assert ExternalIdentity.objects.get(subject="sub-ann").user.is_staff
    sso.set_user("ann", groups=[])
    assert _sources(_query(api_client, sso.access_token("ann"))) == {"open"}
    assert not ExternalIdentity.objects.get(subject="sub-ann").user.is_staff


def test_bad_tokens_are_401_json(sso, corpus, api_client):
    sso.set_user("ann", groups=["engineers"])
    good = sso.access_token("ann")
    claims = jwt.decode(good, options={"verify_signature": False})
    jwk, key = sso.signing_key

    # Wrong audience: a real token of the provider, for another API.
    _assert_refused(_query(api_client, sso.access_token("ann", resource="urn:other:api")), "another audience")
    # Forged: the provider's kid, signed by another key; and a tampered payload.
    _, other_key = new_signing_key()
    forged = jwt.encode({**claims, "groups": ["sellers"]}, other_key, algorithm="RS256", headers={"kid": jwk["kid"]})
    _assert_refused(_query(api_client, forged), "signature")
    head, _, sig = good.split(".")
    tampered = jwt.encode({**claims, "groups": ["sellers"]}, "x" * 32, algorithm="HS256").split(".")[1]
    _assert_refused(_query(api_client, f"{head}.{tampered}.{sig}"), "signature")
    # "none" and a symmetric algorithm are never accepted.
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": jwk["kid"]})
    _assert_refused(_query(api_client, unsigned), "algorithm")
    hs = jwt.encode(claims, "s" * 32, algorithm="HS256", headers={"kid": jwk["kid"]})
    _assert_refused(_query(api_client, hs), "algorithm")
    # Not yet valid, and expired (signed with the provider's own key: only the times are wrong).
    now = int(time.time())
    early = jwt.encode({**claims, "nbf": now + 600}, key, algorithm="RS256", headers={"kid": jwk["kid"]})
    _assert_refused(_query(api_client, early), "not valid yet")
    late = jwt.encode({**claims, "exp": now - 5}, key, algorithm="RS256", headers={"kid": jwk["kid"]})
    _assert_refused(_query(api_client, late), "expired")
    # An unknown key id, garbage, and a missing subject.
    _assert_refused(_query(api_client, jwt.encode(claims, key, algorithm="RS256", headers={"kid": "nope"})), "key")
    _assert_refused(_query(api_client, "not.a.jwt"), "not a JWT")
    nosub = {k: v for k, v in claims.items() if k != "sub"}
    _assert_refused(_query(api_client, jwt.encode(nosub, key, algorithm="RS256", headers={"kid": jwk["kid"]})), "sub")
    # Eleven refusals from one address are past the wrong-credential limit (knowhub.throttling,
    # tested in tests/knowhub/test_brute_force.py): forget them, then the good one still works.
    caches["throttle"].clear()
    assert _sources(_query(api_client, good)) == {"open", "eng-doc"}


def test_a_token_the_provider_issued_expires(sso, corpus, api_client):
    sso.set_user("ann", groups=["engineers"])
    short = sso.access_token("ann", resource=f"{API_AUDIENCE}:short")  # lives 2 s
    assert _sources(_query(api_client, short)) == {"open", "eng-doc"}
    time.sleep(3)
    _assert_refused(_query(api_client, short), "expired")


def test_a_token_from_another_issuer_is_refused(sso, corpus, api_client, tmp_path):
    """A second provider with the very same signing keys but another issuer URL: the signature
    verifies, the issuer does not."""
    sso.set_user("ann", groups=["engineers"])
    impostor = start_provider(tmp_path)
    try:
        impostor.keys = list(sso.keys)
        impostor.users = dict(sso.users)
        impostor.restart()
        token = impostor.access_token("ann")
        assert jwt.get_unverified_header(token)["kid"] == sso.signing_key[0]["kid"]
        _assert_refused(_query(api_client, token), "another issuer")
    finally:
        impostor.stop()


def test_key_rotation_is_picked_up_and_cached_keys_outlive_the_provider(sso, corpus, api_client, settings):
    settings.KNOWHUB_JWT_JWKS_MIN_REFRESH_SECONDS = 0
    sso.set_user("ann", groups=["engineers"])
    before = sso.access_token("ann")
    assert _sources(_query(api_client, before)) == {"open", "eng-doc"}  # keys fetched and cached

    sso.rotate_keys()  # restarted, signing with a new key, the old one still published
    after = sso.access_token("ann")
    assert jwt.get_unverified_header(after)["kid"] != jwt.get_unverified_header(before)["kid"]
    assert _sources(_query(api_client, after)) == {"open", "eng-doc"}  # unknown kid: keys fetched again

    sso.stop()
    try:
        # Both keys are cached: tokens signed with either still verify with the provider down.
        assert _sources(_query(api_client, before)) == {"open", "eng-doc"}
        assert _sources(_query(api_client, after)) == {"open", "eng-doc"}
        # Once the cache is older than its lifetime the keys cannot be trusted any more: 503, not a 500.
        settings.KNOWHUB_JWT_JWKS_CACHE_SECONDS = 0
        response = _query(api_client, after)
        assert response.status_code == 503, response.content
        assert response.json()["error"] == "identity_provider_unavailable"
    finally:
        sso.start()


def test_drf_tokens_keep_working_beside_jwts(sso, corpus, api_client, user):
    key = Token.objects.create(user=user).key
    assert _sources(_query(api_client, key, scheme="Token")) == {"open"}
    _assert_refused(_query(api_client, "wrong-key", scheme="Token"), "Invalid token")
