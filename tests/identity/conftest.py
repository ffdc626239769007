"""The identity tests' real OpenID provider and the settings that point knowhub at it."""

from __future__ import annotations

import pytest

from identity import discovery, tokens
from tests.identity.provider import API_AUDIENCE, CLIENT_ID, CLIENT_SECRET, OpenIDProvider, free_port, missing_reason

PROVIDER_PORTS = (9120, 9129)


def start_provider(workdir, redirect_uris=(), post_logout_uris=()) -> OpenIDProvider:
    reason = missing_reason()
    if reason:
        pytest.skip(f"needs the OpenID provider: {reason}")
    provider = OpenIDProvider(
        workdir, port=free_port(*PROVIDER_PORTS), redirect_uris=list(redirect_uris),
        post_logout_uris=list(post_logout_uris),
    )  # fmt: skip
    provider.start()
    return provider


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    running = start_provider(
        tmp_path_factory.mktemp("oidc-provider"),
        redirect_uris=["http://testserver/oidc/callback/"], post_logout_uris=["http://testserver/login/"],
    )
    yield running
    running.stop()


def point_at(settings, provider: OpenIDProvider) -> None:
    """knowhub's settings for ``provider``, caches of an earlier one dropped."""
    settings.KNOWHUB_OIDC_ISSUER = provider.issuer
    settings.KNOWHUB_OIDC_CLIENT_ID = settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.KNOWHUB_OIDC_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.KNOWHUB_OIDC_SCOPES = settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.KNOWHUB_JWT_ISSUER = provider.issuer
    settings.KNOWHUB_JWT_AUDIENCE = [API_AUDIENCE]
    settings.KNOWHUB_JWT_JWKS_URL = ""
    settings.KNOWHUB_JWT_LEEWAY_SECONDS = 0
    discovery.forget()
    tokens.forget_keys()


@pytest.fixture
def sso(settings, provider):
    point_at(settings, provider)
    yield provider
    discovery.forget()
    tokens.forget_keys()
