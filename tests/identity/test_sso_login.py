"""Single sign-on against a real OpenID provider (npm oidc-provider on loopback), driven with
Django's test client on knowhub's side and plain HTTP on the provider's: authorization code +
PKCE, users matched by subject then verified email, groups applied at every sign-in, the
provider down, and sign-out ending the provider's session."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
import requests

from identity.models import ExternalIdentity, GroupProjectMapping
from rag.models import Project

pytestmark = pytest.mark.django_db


def _start(client, next_url: str = "/"):
    response = client.get(f"/oidc/authenticate/?next={next_url}")
    assert response.status_code == 302, response.content
    return response["Location"]


def sign_in(client, provider, login: str, next_url: str = "/"):
    """The whole code flow; returns knowhub's answer to the provider's redirect."""
    authorize = _start(client, next_url)
    back = provider.sign_in(requests.Session(), authorize, login)
    parsed = urlparse(back)
    assert f"{parsed.scheme}://{parsed.netloc}{parsed.path}" == "http://testserver/oidc/callback/"
    return client.get(f"{parsed.path}?{parsed.query}")


def _user(client):
    return client.get("/account/tokens/").wsgi_request.user


def test_the_authorization_request_uses_pkce_state_and_nonce(sso, client):
    query = parse_qs(urlparse(_start(client)).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) >= 43
    assert query["state"] and query["nonce"]
    assert query["response_type"] == ["code"]
    assert "groups" in query["scope"][0].split()


def test_sign_in_creates_the_user_and_gives_the_projects_of_their_groups(sso, client):
    eng = Project.objects.create(slug="eng", name="Eng")
    GroupProjectMapping.objects.create(group="engineers", project=eng)
    sso.set_user("ann", groups=["engineers", "not-mapped"])
    response = sign_in(client, sso, "ann", next_url="/learn/")
    assert response.status_code == 302 and response["Location"] == "/learn/"
    user = _user(client)
    assert user.is_authenticated and user.username == "ann" and user.email == "ann@example.test"
    assert ExternalIdentity.objects.get(issuer=sso.issuer, subject="sub-ann").user == user
    assert list(user.knowhub_projects.values_list("slug", flat=True)) == ["eng"]

    # Out of the group at the provider: the next sign-in takes the project away.
    client.logout()
    sso.set_user("ann", groups=[])
    sign_in(client, sso, "ann")
    assert _user(client).pk == user.pk
    assert not user.knowhub_projects.exists()


def test_a_verified_email_links_the_existing_user_once(sso, client, django_user_model):
    existing = django_user_model.objects.create_user(username="ann-local", email="ANN@example.test")
    sso.set_user("ann", groups=[])
    sign_in(client, sso, "ann")
    assert _user(client) == existing
    # Another person at the provider with that email later (a reused address) gets their own user.
    client.logout()
    sso.set_user("ann2", groups=[], email="ann@example.test")
    sign_in(client, sso, "ann2")
    assert _user(client) != existing


def test_an_unverified_email_never_takes_over_an_account(sso, client, django_user_model):
    existing = django_user_model.objects.create_user(username="carl-local", email="carl@example.test")
    sso.set_user("carl", groups=[], email_verified=False)
    sign_in(client, sso, "carl")
    user = _user(client)
    assert user.is_authenticated and user != existing and user.email == ""


def test_staff_group_opens_the_admin(sso, client, settings):
    settings.KNOWHUB_OIDC_STAFF_GROUP = "knowhub-admins"
    sso.set_user("root", groups=["knowhub-admins"])
    sign_in(client, sso, "root", next_url="/admin/")
    assert _user(client).is_staff
    assert client.get("/admin/").status_code == 200


def test_the_provider_down_at_sign_in_is_a_clear_page(sso, client):
    sso.stop()
    try:
        response = client.get("/oidc/authenticate/")
        assert response.status_code == 503
        assert b"Sign-in is unavailable right now" in response.content
        assert b"sign in with a knowhub password" in response.content
    finally:
        sso.start()


def test_the_provider_going_down_during_sign_in_is_a_clear_page(sso, client):
    sso.set_user("ann", groups=[])
    back = sso.sign_in(requests.Session(), _start(client), "ann")
    sso.stop()  # the code cannot be exchanged any more
    try:
        parsed = urlparse(back)
        response = client.get(f"{parsed.path}?{parsed.query}")
        assert response.status_code == 503
        assert b"Sign-in is unavailable right now" in response.content
        assert not _user(client).is_authenticated
    finally:
        sso.start()


def test_a_code_the_provider_refuses_is_a_page_not_an_error(sso, client):
    sso.set_user("ann", groups=[])
    back = urlparse(sso.sign_in(requests.Session(), _start(client), "ann"))
    query = parse_qs(back.query)
    response = client.get(back.path, {"code": "not-the-code", "state": query["state"][0]})
    assert response.status_code == 403
    assert b"refused to complete it" in response.content
    assert not _user(client).is_authenticated


def test_a_refused_sign_in_is_a_page_not_an_error(sso, client):
    _start(client)
    response = client.get("/oidc/callback/?error=access_denied&error_description=End-User+aborted")
    assert response.status_code == 403
    assert b"End-User aborted" in response.content


def test_sign_out_ends_the_provider_session(sso, client):
    sso.set_user("ann", groups=[])
    sign_in(client, sso, "ann")
    response = client.post("/logout/")
    assert not _user(client).is_authenticated
    target = urlparse(response["Location"])
    assert f"{target.scheme}://{target.netloc}" == sso.issuer
    query = parse_qs(target.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/login/"]
    assert query["id_token_hint"]
    # The provider accepts it: its logout confirmation page, not an error.
    answer = requests.get(response["Location"], timeout=5)
    assert answer.status_code == 200 and 'name="logout"' in answer.text, answer.text[:800]


def test_password_sign_in_can_be_turned_off(sso, client, settings, user):
    page = client.get("/login/")
    assert b'id="sso-login"' in page.content and b'name="password"' in page.content
    settings.KNOWHUB_LOCAL_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = ["identity.backends.OidcBackend"]
    page = client.get("/login/")
    assert b'id="sso-login"' in page.content and b'name="password"' not in page.content
    client.post("/login/", {"username": "alice", "password": "pw-alice-123"})
    assert not _user(client).is_authenticated


def test_without_a_provider_the_pages_are_as_before(settings, client, user):
    settings.KNOWHUB_OIDC_ISSUER = ""
    page = client.get("/login/")
    assert b'id="sso-login"' not in page.content
    assert client.get("/oidc/authenticate/").status_code == 404
    response = client.post("/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302 and _user(client).is_authenticated
