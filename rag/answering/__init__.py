"""Answering: query analysis, counting, citations, conversations and the ``ask`` pipeline."""
