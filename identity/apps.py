from django.apps import AppConfig


class IdentityConfig(AppConfig):
    """Who a person is: single sign-on (OpenID Connect), JWT bearer tokens, groups → projects."""

    name = "identity"
    verbose_name = "Sign-in and identity"

    def ready(self):
        from identity import schema  # noqa: F401 — registers the OpenAPI security scheme
