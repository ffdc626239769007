"""Sign-in routes: /oidc/… (single sign-on) and /account/tokens/ (API tokens)."""

from django.urls import path

from identity import views

urlpatterns = [
    path("oidc/authenticate/", views.SsoStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.SsoCallbackView.as_view(), name="oidc_authentication_callback"),
    path("account/tokens/", views.api_token_page, name="api-tokens"),
]
