"""The real OpenID provider of the identity tests (npm ``oidc-provider``), started on loopback.

``scripts/install_oidc_provider.sh`` installs it under var/oidc-provider; without node or the
package the tests skip and say so. The tests own its users (a JSON file it reads on every lookup)
and its signing keys (a JSON file read at start: restart with new keys to rotate them).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings

from identity import discovery, tokens

MODULE = Path(settings.BASE_DIR) / "var" / "oidc-provider" / "node_modules" / "oidc-provider" / "lib" / "index.js"
SERVER = Path(__file__).with_name("provider.mjs")
CLIENT_ID = "knowhub-test"
CLIENT_SECRET = "knowhub-test-secret-" + "x" * 24
API_AUDIENCE = "urn:knowhub:api"
# Where the provider may send people back (the token-minting flow never follows it).
TOKEN_REDIRECT = "http://127.0.0.1:9/tokens/callback"


def missing_reason() -> str | None:
    """Why the provider cannot run here, or None."""
    if not shutil.which("node"):
        return "node is not installed (scripts/install_oidc_provider.sh installs it)"
    if not MODULE.exists():
        return "oidc-provider is not installed under var/oidc-provider (run scripts/install_oidc_provider.sh)"
    return None


def free_port(first: int, last: int) -> int:
    for port in range(first, last + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}-{last}")


def new_signing_key(kid: str | None = None) -> tuple[dict, rsa.RSAPrivateKey]:
    """A fresh RSA key as a private JWK (what the provider signs with) and the key itself."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    jwk.pop("key_ops", None)  # PyJWT says "sign" only; the provider verifies its own ID tokens with it too
    jwk.update(kid=kid or secrets.token_hex(8), alg="RS256", use="sig")
    return jwk, key


class OpenIDProvider:
    """One provider process. ``issuer`` is its URL; ``start``/``stop``/``restart`` control it."""

    def __init__(self, workdir: Path, *, port: int, redirect_uris: list[str], post_logout_uris: list[str] = ()):
        self.workdir = workdir
        self.port = port
        self.issuer = f"http://127.0.0.1:{port}"
        self.redirect_uris = [*redirect_uris, TOKEN_REDIRECT]
        self.post_logout_uris = list(post_logout_uris)
        self.users_file = workdir / "users.json"
        self.keys_file = workdir / "keys.json"
        self.keys: list[tuple[dict, rsa.RSAPrivateKey]] = [new_signing_key()]
        self.users: dict[str, dict] = {}
        self.proc: subprocess.Popen | None = None
        self.log = workdir / "provider.log"

    # --- users and keys ---------------------------------------------------------------------
    def set_user(self, login: str, *, groups: list[str], password: str = "pw", email: str | None = None,
                 email_verified: bool = True, sub: str | None = None) -> None:  # fmt: skip
        self.users[login] = {
            "password": password, "groups": groups, "email": email or f"{login}@example.test",
            "email_verified": email_verified, "sub": sub or f"sub-{login}",
        }  # fmt: skip
        self.users_file.write_text(json.dumps(self.users))

    def rotate_keys(self) -> None:
        """A new signing key first (the provider signs with it), the old one still published."""
        self.keys.insert(0, new_signing_key())
        self.restart()

    @property
    def signing_key(self) -> tuple[dict, rsa.RSAPrivateKey]:
        return self.keys[0]

    # --- process ----------------------------------------------------------------------------
    def start(self) -> None:
        self.users_file.write_text(json.dumps(self.users))
        self.keys_file.write_text(json.dumps([jwk for jwk, _ in self.keys]))
        env = {
            **os.environ, "OIDC_MODULE": str(MODULE), "PORT": str(self.port), "ISSUER": self.issuer,
            "USERS_FILE": str(self.users_file), "KEYS_FILE": str(self.keys_file), "CLIENT_ID": CLIENT_ID,
            "CLIENT_SECRET": CLIENT_SECRET, "REDIRECT_URIS": ",".join(self.redirect_uris),
            "POST_LOGOUT_REDIRECT_URIS": ",".join(self.post_logout_uris), "API_AUDIENCE": API_AUDIENCE,
        }  # fmt: skip
        log = self.log.open("ab")
        self.proc = subprocess.Popen(["node", str(SERVER)], env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the OpenID provider exited: {self.log.read_text()[-2000:]}")
            try:
                if requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=1).ok:
                    return
            except requests.RequestException:
                time.sleep(0.1)
        raise RuntimeError(f"the OpenID provider did not answer: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    # --- a token the way a client gets one: authorization code + PKCE ------------------------
    def access_token(self, login: str, *, resource: str = API_AUDIENCE) -> str:
        """Sign in as ``login`` through the provider's own login page and return the JWT access
        token it issues for ``resource``."""
        return self.tokens(login, resource=resource)["access_token"]

    def sign_in(self, browser: requests.Session, url: str, login: str, *, params: dict | None = None) -> str:
        """Follow an authorization request through the provider's login page as ``login`` and
        return where the provider sends the person back (the client's redirect URI + code)."""
        response = browser.get(url, params=params, allow_redirects=False, timeout=5)
        for _ in range(10):
            location = urljoin(response.url, response.headers.get("Location", ""))
            if response.is_redirect and not location.startswith(self.issuer):
                return location
            if response.is_redirect:
                response = browser.get(location, allow_redirects=False, timeout=5)
            elif "/interaction/" in response.url and 'name="login"' in response.text:
                response = browser.post(
                    f"{response.url.rstrip('/')}/login",
                    data={"login": login, "password": self.users[login]["password"]},
                    allow_redirects=False, timeout=5,
                )  # fmt: skip
            else:
                raise RuntimeError(f"unexpected provider answer {response.status_code}: {response.text[:500]}")
        raise RuntimeError("the provider never sent the person back")

    def tokens(self, login: str, *, resource: str = API_AUDIENCE) -> dict:
        browser = requests.Session()
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        config = browser.get(f"{self.issuer}/.well-known/openid-configuration", timeout=5).json()
        params = {
            "client_id": CLIENT_ID, "response_type": "code", "scope": "openid email profile groups",
            "redirect_uri": TOKEN_REDIRECT, "state": secrets.token_urlsafe(8), "nonce": secrets.token_urlsafe(8),
            "code_challenge": challenge, "code_challenge_method": "S256", "resource": resource,
        }  # fmt: skip
        location = self.sign_in(browser, config["authorization_endpoint"], login, params=params)
        query = parse_qs(urlparse(location).query)
        if "code" not in query:
            raise RuntimeError(f"the provider refused: {query}")
        code = query["code"][0]
        answer = browser.post(
            config["token_endpoint"],
            data={"grant_type": "authorization_code", "code": code, "redirect_uri": TOKEN_REDIRECT,
                  "code_verifier": verifier, "resource": resource},
            auth=(CLIENT_ID, CLIENT_SECRET), timeout=5,
        )  # fmt: skip
        answer.raise_for_status()
        return answer.json()


PROVIDER_PORTS = (9120, 9129)


def start_provider(workdir: Path, redirect_uris=(), post_logout_uris=()) -> OpenIDProvider:
    """A provider on a free port of the identity tests' range, or skip saying why it cannot run."""
    reason = missing_reason()
    if reason:
        pytest.skip(f"needs the OpenID provider: {reason}")
    provider = OpenIDProvider(
        workdir, port=free_port(*PROVIDER_PORTS), redirect_uris=list(redirect_uris),
        post_logout_uris=list(post_logout_uris),
    )  # fmt: skip
    provider.start()
    return provider


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
