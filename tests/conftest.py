"""Shared fixtures: the real local model, and a labelled stand-in for tests about other things."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
from django.conf import settings

SHARED_DATA = Path(settings.BASE_DIR).parent / "shared" / "data"
if not SHARED_DATA.exists():  # a git worktree (…/wt/<branch>) sits one level deeper
    SHARED_DATA = next(
        (p / "shared" / "data" for p in Path(settings.BASE_DIR).parents if (p / "shared" / "data").exists()),
        SHARED_DATA,
    )


def shared_data(name: str) -> Path:
    """A folder of ../shared/data, or skip: the suite must pass without ../shared."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"../shared/data/{name} is not beside this checkout")
    return path


@pytest.fixture(scope="session")
def local_embedder():
    """The real all-MiniLM-L6-v2 provider (loads once per test session)."""
    from rag.embeddings import get_embedder

    return get_embedder()


class HashingEmbedder:
    """Deterministic bag-of-words vectors. A stand-in for tests that are about something other
    than embedding quality (idempotency counts, failure injection); it says so by its name."""

    def __init__(self, dims: int | None = None, name: str = "test:hashing"):
        self.dims = dims or settings.KNOWHUB_EMBEDDING_DIMS
        self.name = name
        self.calls: list[int] = []

    def _vec(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        for word in text.lower().split():
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            vec[h % self.dims] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        return [self._vec(t) for t in texts]

    def embed_query(self, text):
        return self._vec(text)


@pytest.fixture
def hashing_embedder():
    return HashingEmbedder()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(username="staff", password="pw-staff-123", is_staff=True)


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()
