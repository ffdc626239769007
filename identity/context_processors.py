"""What the sign-in pages need to know: is single sign-on on, and does password sign-in stay."""

from django.conf import settings


def sign_in(request):
    return {
        "sso_enabled": bool(settings.KNOWHUB_OIDC_ISSUER),
        "sso_provider": settings.KNOWHUB_OIDC_PROVIDER_NAME,
        "local_login": settings.KNOWHUB_LOCAL_LOGIN,
    }
