"""DRF authentication by ``Authorization: Bearer <jwt>`` issued by the OpenID provider.

The user is the token's issuer + subject (created on first use, like a first sign-in) and their
projects come from the token's groups claim through the admin's mapping, applied on every call:
never from anything else in the request. Other ``Authorization`` schemes (DRF's ``Token``) are
left to the other authentication classes.
"""

from __future__ import annotations

import logging

from rest_framework import authentication, exceptions, status

from identity import tokens

logger = logging.getLogger(__name__)


class KeysUnavailable(exceptions.APIException):
    """The provider's signing keys cannot be fetched (and none cached are fresh): retry later."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "identity_provider_unavailable"


class JWTAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid bearer header: expected 'Bearer <token>'.")
        try:
            token = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid bearer token: not ASCII.") from None
        try:
            claims, config = tokens.verify_api_token(token)
        except tokens.TokenInvalid as exc:
            raise exceptions.AuthenticationFailed(f"Invalid bearer token: {exc}.") from None
        except tokens.KeysUnavailable as exc:
            logger.warning("JWT refused, provider keys unavailable: %s", exc)
            raise KeysUnavailable("The identity provider's signing keys cannot be fetched right now.") from None
        from identity import services  # models: imported once the apps are ready

        try:
            user = services.user_for_identity(claims["iss"], claims)
        except services.IdentityRefused as exc:
            raise exceptions.AuthenticationFailed(f"Invalid bearer token: {exc}.") from None
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        services.apply_groups(user, services.groups_from_claims(claims))
        return user, claims

    def authenticate_header(self, request):
        return f'{self.keyword} realm="api"'
