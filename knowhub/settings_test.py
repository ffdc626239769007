"""Settings of the test suite: production settings with a test-only secret and plain HTTP.

Set in the environment before the settings load so that processes the suite starts (a Celery
worker, a concurrent upsert, gunicorn) inherit the same values.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "knowhub-test-suite-only-secret-0123456789-abcdefghijklmnop")
os.environ.setdefault("KNOWHUB_HTTPS", "false")

from knowhub.settings import *  # noqa: E402,F403

# Wrong-credential counts are kept per address and every test request comes from 127.0.0.1: the
# suite keeps them in this process (tests/conftest.py starts each test with none), never in Redis,
# where one test's refused tokens would throttle the next test's right ones.
CACHES["throttle"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}  # noqa: F405
