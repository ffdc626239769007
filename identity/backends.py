"""Sign-in through the OpenID provider: mozilla-django-oidc's authorization-code flow (with PKCE),
its endpoints from the provider's discovery document, the ID token checked by ``identity.tokens``
(signature, iss, aud, exp, nonce), the user found by issuer + subject and their groups applied."""

from __future__ import annotations

import logging

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from identity import discovery, services, tokens

logger = logging.getLogger(__name__)


class OidcBackend(OIDCAuthenticationBackend):
    def __init__(self, *args, **kwargs):
        # Nothing is read from the provider here: Django builds every backend for every password
        # sign-in too, and those must work while the provider is down.
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if request is None or "nonce" not in kwargs or not settings.KNOWHUB_OIDC_ISSUER:
            return None  # not the provider's callback (a password sign-in, say)
        config = discovery.configuration()  # ProviderUnavailable goes to the callback view
        self.issuer = settings.KNOWHUB_OIDC_ISSUER.rstrip("/")
        self.OIDC_OP_TOKEN_ENDPOINT = config["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = config.get("userinfo_endpoint")
        self.OIDC_OP_JWKS_ENDPOINT = config["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        return super().authenticate(request, **kwargs)

    def verify_token(self, token, **kwargs):
        try:
            return tokens.verify(
                token, issuer=self.issuer, audience=self.OIDC_RP_CLIENT_ID, jwks_url=self.OIDC_OP_JWKS_ENDPOINT,
                leeway=settings.KNOWHUB_JWT_LEEWAY_SECONDS, algorithms=list(settings.KNOWHUB_JWT_ALGORITHMS),
                nonce=kwargs.get("nonce") if settings.OIDC_USE_NONCE else None,
            )  # fmt: skip
        except tokens.TokenInvalid as exc:
            raise SuspiciousOperation(f"ID token refused: {exc}") from exc

    def get_userinfo(self, access_token, id_token, payload):
        """The ID token's claims, completed by the userinfo endpoint's (some providers put the
        groups or the email only there)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT and access_token:
            try:
                info = super().get_userinfo(access_token, id_token, payload)
            except requests.RequestException as exc:
                logger.warning("userinfo not available, using the ID token's claims: %s", exc)
                info = {}
            # The userinfo answer must be about the same person (OpenID Connect Core 5.3.2).
            if isinstance(info, dict) and info.get("sub") == payload.get("sub"):
                claims.update(info)
        return claims

    def verify_claims(self, claims):
        return bool(claims.get("sub"))

    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims):
            raise SuspiciousOperation("the provider gave no subject")
        try:
            user = services.user_for_identity(self.issuer, claims, create=settings.OIDC_CREATE_USER)
        except services.IdentityRefused as exc:
            raise SuspiciousOperation(str(exc)) from exc
        if user.is_active:
            services.apply_groups(user, services.groups_from_claims(claims))
        return user
