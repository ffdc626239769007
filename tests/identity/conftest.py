"""The identity tests' real OpenID provider and the settings that point knowhub at it."""

from __future__ import annotations

import pytest

from identity import discovery, tokens
from tests.identity.provider import point_at, start_provider


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    running = start_provider(
        tmp_path_factory.mktemp("oidc-provider"),
        redirect_uris=["http://testserver/oidc/callback/"], post_logout_uris=["http://testserver/login/"],
    )
    yield running
    running.stop()


@pytest.fixture
def sso(settings, provider):
    point_at(settings, provider)
    yield provider
    discovery.forget()
    tokens.forget_keys()
