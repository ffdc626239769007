"""gunicorn's settings, read from the working directory by every `gunicorn` started here (the
image, compose, bench_load): an access log line per request that names its request id (the
X-Request-ID the app answers with, also in the app's log lines and any 500 body)."""

accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
# Request lines up to 8190 bytes reach the app, which refuses URLs past KNOWHUB_MAX_URL_CHARS
# with a JSON 414 (gunicorn's own refusal of longer lines is a bare 400 page).
limit_request_line = 8190
