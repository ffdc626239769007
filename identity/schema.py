"""OpenAPI: the JWT bearer scheme of ``identity.authentication.JWTAuthentication``."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class JWTBearerScheme(OpenApiAuthenticationExtension):
    target_class = "identity.authentication.JWTAuthentication"
    name = "jwtBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A JWT from the OpenID provider (KNOWHUB_JWT_ISSUER / _AUDIENCE); "
            "the user's projects come from its groups claim.",
        }
