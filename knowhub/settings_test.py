"""Settings of the test suite: production settings with a test-only secret and plain HTTP.

Set in the environment before the settings load so that processes the suite starts (a Celery
worker, a concurrent upsert, gunicorn) inherit the same values.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "knowhub-test-suite-only-secret-0123456789-abcdefghijklmnop")
os.environ.setdefault("KNOWHUB_HTTPS", "false")

from knowhub.settings import *  # noqa: E402,F403
