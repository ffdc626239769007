"""Fixtures for the LLM provider tests: the answering tests' corpus, for a provider that is tested
through the whole ask pipeline."""

from tests.rag.answering.conftest import corpus  # noqa: F401  (a fixture, requested by name)
