"""gunicorn's settings, read from the working directory by every `gunicorn` started here (the
image, compose, bench_load): how many workers serve, and an access log line per request that
names its request id (the X-Request-ID the app answers with, also in the app's log lines and any
500 body)."""

import os


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use (a container's share)
    except AttributeError:
        return os.cpu_count() or 1


# Single-threaded workers, two a core and one more (gunicorn's own sizing): a worker takes the
# next request only when it is free, so requests wait in the one listen queue in the order they
# came. Threaded workers accept while every thread is busy and queue requests behind each other,
# each worker its own: under many clients some requests then wait twice as long as the rest.
# WEB_CONCURRENCY overrides the count.
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * _cores() + 1)
# An answer from a remote LLM streams for seconds, waiting on the network: give each worker
# threads (GUNICORN_THREADS) so that a wait does not hold a whole worker.
threads = int(os.environ.get("GUNICORN_THREADS") or 1)
timeout = 120

accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
# Request lines up to 8190 bytes reach the app, which refuses URLs past KNOWHUB_MAX_URL_CHARS
# with a JSON 414 (gunicorn's own refusal of longer lines is a bare 400 page).
limit_request_line = 8190
