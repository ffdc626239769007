"""Pages of sign-in: starting and finishing single sign-on, signing out (at the provider too),
and the page where people create and revoke their own API token."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from identity import discovery, selectors, services

logger = logging.getLogger(__name__)


def _provider_down(request, exc: Exception):
    logger.warning("single sign-on: provider unreachable: %s", exc)
    return render(
        request, "identity/provider_down.html",
        {"provider": settings.KNOWHUB_OIDC_PROVIDER_NAME, "local_login": settings.KNOWHUB_LOCAL_LOGIN},
        status=503,
    )  # fmt: skip


class SsoStartView(OIDCAuthenticationRequestView):
    """Redirects to the provider's authorization endpoint (from discovery) with state, nonce and
    a PKCE challenge kept in the session."""

    def __init__(self, *args, **kwargs):
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)  # endpoints come in get()

    def get(self, request):
        if not settings.KNOWHUB_OIDC_ISSUER:
            raise Http404("Single sign-on is not configured.")
        try:
            config = discovery.configuration()
        except discovery.ProviderUnavailable as exc:
            return _provider_down(request, exc)
        self.OIDC_OP_AUTH_ENDPOINT = config["authorization_endpoint"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends people back: code → tokens → user; a refusal or an unreachable
    provider is a page that says so, never an error page."""

    def get(self, request):
        if not settings.KNOWHUB_OIDC_ISSUER:
            raise Http404("Single sign-on is not configured.")
        try:
            return super().get(request)
        except requests.HTTPError as exc:
            # The provider answered and refused (a used or expired code, a wrong client secret).
            logger.warning("single sign-on: the provider refused the code exchange: %s", exc)
            return self.login_failure(reason="the provider refused to complete it; please sign in again")
        except (discovery.ProviderUnavailable, requests.RequestException) as exc:
            return _provider_down(request, exc)

    def login_failure(self, reason: str = ""):
        reason = reason or self.request.GET.get("error_description") or self.request.GET.get("error") or ""
        return render(
            self.request, "identity/sso_failed.html",
            {"provider": settings.KNOWHUB_OIDC_PROVIDER_NAME, "reason": reason[:300]}, status=403,
        )  # fmt: skip


def provider_logout_url(request) -> str:
    """The provider's end-session URL (RP-initiated logout) when it has one, else knowhub's own
    page after sign-out."""
    local = request.build_absolute_uri(settings.LOGOUT_REDIRECT_URL)
    id_token = request.session.get("oidc_id_token")
    if not id_token or not settings.KNOWHUB_OIDC_ISSUER:
        return settings.LOGOUT_REDIRECT_URL
    try:
        endpoint = discovery.configuration().get("end_session_endpoint")
    except discovery.ProviderUnavailable:
        return settings.LOGOUT_REDIRECT_URL
    if not endpoint:
        return settings.LOGOUT_REDIRECT_URL
    query = urlencode({"id_token_hint": id_token, "post_logout_redirect_uri": local,
                       "client_id": settings.OIDC_RP_CLIENT_ID})  # fmt: skip
    return f"{endpoint}?{query}"


class LogoutView(auth_views.LogoutView):
    """Django's sign-out, then the provider's when the person signed in through it."""

    def post(self, request, *args, **kwargs):
        target = provider_logout_url(request) if request.user.is_authenticated else None
        response = super().post(request, *args, **kwargs)
        if target and target != settings.LOGOUT_REDIRECT_URL:
            return redirect(target)
        return response


@login_required
@require_http_methods(["GET", "POST"])
def api_token_page(request):
    """The signed-in person's own API token: create (or replace) it, revoke it. The key is shown
    once, right after it is made."""
    created = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            created = services.api_token_create(request.user)
        elif action == "revoke":
            services.api_token_revoke(request.user)
        else:
            return render(request, "identity/tokens.html", {"error": "Unknown action."}, status=400)
        if created is None:
            return redirect("api-tokens")
    token = selectors.api_token_for(request.user)
    return render(request, "identity/tokens.html", {"token": token, "created": created})
