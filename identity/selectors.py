"""Reads of the identity app."""

from __future__ import annotations

from rest_framework.authtoken.models import Token


def api_token_for(user) -> Token | None:
    return Token.objects.filter(user=user).first()
