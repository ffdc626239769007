"""How many workers serve: gunicorn.conf.py sizes them from the cores, and the image, compose and
bench_load take that sizing rather than repeating their own numbers."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest
from django.conf import settings

from rag.management.commands.bench_load import served_as

CONFIG = Path(settings.BASE_DIR) / "gunicorn.conf.py"


def test_single_threaded_workers_two_a_core_and_one_more(monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    monkeypatch.delenv("GUNICORN_THREADS", raising=False)
    config = runpy.run_path(str(CONFIG))
    assert config["workers"] == 2 * len(os.sched_getaffinity(0)) + 1
    assert config["threads"] == 1
    assert served_as() == {"workers": config["workers"], "threads": 1}


def test_the_environment_sizes_them_otherwise(monkeypatch):
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    monkeypatch.setenv("GUNICORN_THREADS", "4")
    assert served_as() == {"workers": 3, "threads": 4}


@pytest.mark.parametrize("path", ["Dockerfile", "docker-compose.yml"])
def test_the_image_and_compose_serve_with_the_config(path):
    text = (Path(settings.BASE_DIR) / path).read_text()
    assert "gunicorn knowhub.wsgi:application" in text or '"gunicorn", "knowhub.wsgi:application"' in text
    assert "--workers" not in text and "--threads" not in text
