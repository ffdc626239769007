"""Verifying a JWT issued by the OpenID provider: signature against its JWKS, ``iss``, ``aud``,
``exp``, ``nbf`` with a clock-skew leeway. Keys are cached; a token signed with a key not yet
seen fetches the key set again (at most every KNOWHUB_JWT_JWKS_MIN_REFRESH_SECONDS, so forged
``kid`` values cannot make knowhub hammer the provider), which is how a key rotation is picked up.
While the provider is down, keys fetched less than KNOWHUB_JWT_JWKS_CACHE_SECONDS ago still verify.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import jwt
import requests
from django.conf import settings

from identity import discovery


class TokenInvalid(Exception):
    """The token is not one knowhub accepts; the message says why (safe to show the caller)."""


class KeysUnavailable(Exception):
    """The provider's keys could not be fetched and none cached are fresh enough."""


@dataclass
class _KeySet:
    keys: dict[str, tuple[jwt.PyJWK, str | None]] = field(default_factory=dict)  # kid -> key, its stated alg
    fetched_at: float | None = None
    attempted_at: float | None = None


_lock = threading.Lock()
_key_sets: dict[str, _KeySet] = {}


@dataclass(frozen=True)
class JwtConfig:
    issuer: str
    audience: list[str]
    jwks_url: str
    leeway: int
    algorithms: list[str]


def jwt_config() -> JwtConfig | None:
    """The API's JWT settings, the JWKS URL from the issuer's discovery when not set; None when
    JWT bearer tokens are not configured."""
    issuer = settings.KNOWHUB_JWT_ISSUER
    audience = settings.KNOWHUB_JWT_AUDIENCE
    if not issuer or not audience:
        return None
    jwks_url = settings.KNOWHUB_JWT_JWKS_URL
    if not jwks_url:
        try:
            jwks_url = discovery.configuration(issuer)["jwks_uri"]
        except (discovery.ProviderUnavailable, KeyError) as exc:
            raise KeysUnavailable(f"cannot find the provider's keys: {exc}") from exc
    return JwtConfig(
        issuer=issuer, audience=list(audience), jwks_url=jwks_url,
        leeway=settings.KNOWHUB_JWT_LEEWAY_SECONDS, algorithms=list(settings.KNOWHUB_JWT_ALGORITHMS),
    )  # fmt: skip


def _fetch(url: str) -> dict[str, tuple[jwt.PyJWK, str | None]]:
    response = requests.get(url, timeout=settings.KNOWHUB_OIDC_TIMEOUT)
    response.raise_for_status()
    keys = {}
    for data in response.json().get("keys", []):
        if data.get("use", "sig") != "sig" or "kid" not in data:
            continue
        try:
            keys[data["kid"]] = (jwt.PyJWK(data), data.get("alg"))
        except jwt.PyJWKError:
            continue  # a key type this machine cannot use; others may still verify
    return keys


def signing_key(url: str, kid: str) -> tuple[jwt.PyJWK, str | None]:
    """The key ``kid`` of the set at ``url``: from the cache while it is fresh, fetched again when
    stale or when ``kid`` is new (rate-limited)."""
    now = time.monotonic()
    max_age = settings.KNOWHUB_JWT_JWKS_CACHE_SECONDS
    with _lock:
        cached = _key_sets.setdefault(url, _KeySet())
        fresh = cached.fetched_at is not None and now - cached.fetched_at < max_age
        if fresh and kid in cached.keys:
            return cached.keys[kid]
        since = None if cached.attempted_at is None else now - cached.attempted_at
        if since is not None and since < settings.KNOWHUB_JWT_JWKS_MIN_REFRESH_SECONDS:
            # Fetched (or tried) a moment ago: neither a forged kid nor an outage makes every
            # request wait on the provider.
            if fresh:
                raise TokenInvalid("the token is signed with a key the provider does not publish")
            raise KeysUnavailable(f"the provider's keys could not be fetched from {url} a moment ago")
        cached.attempted_at = now
        try:
            cached.keys = _fetch(url)
            cached.fetched_at = now
        except (requests.RequestException, ValueError, AttributeError) as exc:
            if not fresh:
                cached.keys = {}
                raise KeysUnavailable(f"the provider's keys could not be fetched from {url}: {exc}") from exc
        if kid not in cached.keys:
            raise TokenInvalid("the token is signed with a key the provider does not publish")
        return cached.keys[kid]


def forget_keys() -> None:
    """Drop every cached key set (tests)."""
    with _lock:
        _key_sets.clear()


def verify(token: str, *, issuer: str, audience: list[str] | str, jwks_url: str, leeway: int,
           algorithms: list[str], nonce: str | None = None) -> dict:  # fmt: skip
    """The claims of ``token`` once every check passed; raises TokenInvalid or KeysUnavailable."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise TokenInvalid("the token is not a JWT") from exc
    alg = header.get("alg")
    # Only the asymmetric algorithms configured: never "none", never HS* keyed by a public key.
    if alg not in algorithms:
        raise TokenInvalid(f"the token's algorithm {alg!r} is not accepted")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise TokenInvalid("the token names no signing key (kid)")
    key, key_alg = signing_key(jwks_url, kid)
    if key_alg and key_alg != alg:
        raise TokenInvalid("the token's algorithm does not match its key")
    # Some issuers end in "/" (Auth0) and settings are kept without it: either spelling.
    issuers = [issuer.rstrip("/"), issuer.rstrip("/") + "/"]
    try:
        claims = jwt.decode(
            token, key=key.key, algorithms=[alg], audience=audience, issuer=issuers, leeway=leeway,
            options={"require": ["exp", "iss", "aud", "sub"], "verify_nbf": True, "verify_iat": True},
        )  # fmt: skip
    except jwt.ExpiredSignatureError as exc:
        raise TokenInvalid("the token has expired") from exc
    except jwt.ImmatureSignatureError as exc:
        raise TokenInvalid("the token is not valid yet (nbf/iat in the future)") from exc
    except jwt.InvalidAudienceError as exc:
        raise TokenInvalid("the token is for another audience") from exc
    except jwt.InvalidIssuerError as exc:
        raise TokenInvalid("the token is from another issuer") from exc
    except jwt.MissingRequiredClaimError as exc:
        raise TokenInvalid(f"the token lacks the {exc.claim!r} claim") from exc
    except jwt.InvalidSignatureError as exc:
        raise TokenInvalid("the token's signature does not verify") from exc
    except jwt.PyJWTError as exc:
        raise TokenInvalid(f"the token is invalid: {exc}") from exc
    if nonce is not None and claims.get("nonce") != nonce:
        raise TokenInvalid("the ID token's nonce does not match this sign-in")
    return claims


def verify_api_token(token: str) -> tuple[dict, JwtConfig]:
    """A bearer token of an API call, checked against the API's JWT settings."""
    config = jwt_config()
    if config is None:
        raise TokenInvalid("JWT bearer tokens are not configured on this server")
    claims = verify(
        token, issuer=config.issuer, audience=config.audience, jwks_url=config.jwks_url,
        leeway=config.leeway, algorithms=config.algorithms,
    )  # fmt: skip
    return claims, config
