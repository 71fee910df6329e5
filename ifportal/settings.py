"""One env-driven settings module.

With nothing configured the portal runs on the embedded default: a SQLite file under
var/, jobs in a background thread of the web process. Setting DATABASE_URL and
CELERY_BROKER_URL moves it onto PostgreSQL and Celery workers. Every variable is
documented in .env.example.
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("IFPORTAL_VAR_DIR", BASE_DIR / "var"))

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """The variable, or the contents of the file named by NAME_FILE, or the default."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """A boolean variable; anything but the usual spellings of yes and no is an error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int) -> int:
    """An integer variable; a non-integer is an error."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list variable."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def _embedded_secret_key() -> str:
    """A random key kept under var/ so sessions survive restarts of the embedded run."""
    path = VAR_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


PRODUCTION = env_bool("IFPORTAL_PRODUCTION", False)
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY") or (_embedded_secret_key() if not PRODUCTION else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set when IFPORTAL_PRODUCTION=1")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
if PRODUCTION:
    # Debug pages show settings and source to anyone who triggers an error; a key copied
    # from .env.example is public; the local host list would answer any Host header spoof.
    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be off when IFPORTAL_PRODUCTION=1 (debug pages leak settings and code)")
    if SECRET_KEY.startswith(("change-me", "django-insecure")) or len(SECRET_KEY) < 50:
        raise ImproperlyConfigured("SECRET_KEY must be a random string of at least 50 characters in production")
    if "ALLOWED_HOSTS" not in os.environ:
        raise ImproperlyConfigured("ALLOWED_HOSTS must name the portal's host(s) when IFPORTAL_PRODUCTION=1")
    if "*" in ALLOWED_HOSTS or not ALLOWED_HOSTS:
        # '*' answers any Host header: password-reset links, absolute URLs and caches keyed by host follow the attacker's
        raise ImproperlyConfigured("ALLOWED_HOSTS must name the portal's host(s), not '*', when IFPORTAL_PRODUCTION=1")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "axes",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "runs",
    "audits",
    "ifportal.apps.PortalConfig",  # the user cache's invalidation signals (ifportal.auth)
    "ifportal.benchmarks",  # `manage.py benchmark` (tooling, outside the cache's code version)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "ifportal.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # before anything reads the body (sessions' CSRF check reads a form upload whole)
    "runs.middleware.UploadLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "runs.middleware.CacheBudgetMiddleware",
    "runs.access.BlindnessMiddleware",  # every route: blind annotators reach only views declared blind_safe
    "runs.access.WriteAccessMiddleware",  # every route: writes (imports, re-checks, share links) for editors and leads
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # last, as django-axes asks: turns a locked-out sign-in into its 429 page
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "ifportal.urls"
WSGI_APPLICATION = "ifportal.wsgi.application"

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
                "runs.access.context",
            ],
        },
    },
]

#: what every SQLite database gets, the embedded one or one named by DATABASE_URL: WAL and immediate
#: transactions let the in-process job thread write while pages read, without "database is locked" on
#: lock upgrades; the timeout makes a writer wait for the lock instead of failing at once
SQLITE_OPTIONS = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}


#: what every PostgreSQL connection gets: no JIT compilation. The planner turns it on by estimated cost,
#: which grows with the tables, not with the work: at 10M verdicts each rollup rebuild statement (2 s of
#: work) paid 1.1 s compiling, and a page query crossing the threshold would pay the same. The portal's
#: queries are short; none gains from compiled expressions (docs/performance.md, "Ingest").
POSTGRESQL_OPTIONS = {"options": "-c jit=off"}


def with_database_options(database: dict) -> dict:
    """The database settings, with SQLITE_OPTIONS or POSTGRESQL_OPTIONS under any options the URL gave itself."""
    defaults = {"django.db.backends.sqlite3": SQLITE_OPTIONS, "django.db.backends.postgresql": POSTGRESQL_OPTIONS}.get(
        database.get("ENGINE")
    )
    if defaults is None:
        return database
    return dict(database, OPTIONS={**defaults, **database.get("OPTIONS", {})})


DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {
        "default": with_database_options(
            dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
        )
    }
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": with_database_options({"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "ifportal.sqlite3"})
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Jobs: "celery" when a broker is configured, otherwise a thread of the web process
# ("thread"); tests use "inline" so a job finishes before the request returns.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 6 * 3600)
#: `celery -A ifportal beat` runs these (the embedded default has no scheduler: use cron, docs/security.md)
CELERY_BEAT_SCHEDULE = {"uploads-clean": {"task": "runs.uploads_clean", "schedule": 24 * 3600}}
IFPORTAL_JOBS = env_str("IFPORTAL_JOBS") or ("celery" if CELERY_BROKER_URL else "thread")
if IFPORTAL_JOBS not in {"celery", "thread", "inline"}:
    raise ImproperlyConfigured(f"IFPORTAL_JOBS={IFPORTAL_JOBS!r} must be celery, thread or inline")
if IFPORTAL_JOBS == "celery" and not CELERY_BROKER_URL:
    raise ImproperlyConfigured("IFPORTAL_JOBS=celery needs CELERY_BROKER_URL")


def cache_url_beside(broker_url: str) -> str:
    """The Redis URL for the cache next to a Redis broker: same server, the next database
    number (broker /0 -> cache /1), so cache keys never mix with Celery's queues; "" for a
    broker that is not Redis."""
    if not broker_url.startswith(("redis://", "rediss://")):
        return ""
    parts = urlsplit(broker_url)
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ImproperlyConfigured(
            f"CELERY_BROKER_URL={broker_url!r}: the Redis database number {db!r} is not a number"
        )
    cache_db = int(db) + 1 if int(db) < 15 else int(db) - 1
    return urlunsplit(parts._replace(path=f"/{cache_db}"))


# The cache holds live job progress and computed leaderboards (keyed by data generation):
# Redis when workers or several web processes run, process memory in the embedded default
# (jobs run in a thread of the same process). Default: the broker's Redis, next database.
CACHE_URL = env_str("CACHE_URL") or cache_url_beside(CELERY_BROKER_URL)
#: new leaderboard cache entries one signed-in user (or one address) may have stored per day; past it
#: pages are computed and not kept (runs.cache.cache_scope)
IFPORTAL_CACHE_ENTRIES_PER_USER = env_int("IFPORTAL_CACHE_ENTRIES_PER_USER", 600)
#: share links one user may make in 24 hours, and the megabytes the snapshots of their live (unrevoked) links may
#: take in the database: past either the Share form says why and makes none (runs.sharing.share_budget_check)
IFPORTAL_SHARE_LINKS_PER_DAY = env_int("IFPORTAL_SHARE_LINKS_PER_DAY", 100)
IFPORTAL_SHARE_MB_PER_USER = env_int("IFPORTAL_SHARE_MB_PER_USER", 256)
CACHES = {
    # Django's RedisCache, one redis.Redis client per pool instead of one per call (ifportal/redis_cache.py)
    "default": {"BACKEND": "ifportal.redis_cache.PooledClientRedisCache", "LOCATION": CACHE_URL}
    if CACHE_URL.startswith(("redis://", "rediss://"))
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
# Sessions live in the database and are read through that cache (a signed-in request makes no session
# query once its session is cached); a cache that is down makes them read from the database, never fails
# a request. A cached session is read again from the database at least every IFPORTAL_SESSION_CACHE_SECONDS
# (the longest a cache that comes back from a snapshot can serve a session signed out while it was down).
SESSION_ENGINE = "ifportal.sessions"
IFPORTAL_SESSION_CACHE_SECONDS = env_int("IFPORTAL_SESSION_CACHE_SECONDS", 300)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Guessing passwords: django-axes counts failed sign-ins (the /login/ form and /admin/login/ alike) and
# refuses further tries for a while from an address that failed AXES_FAILURE_LIMIT times, for one name or for
# any; ifportal.signin slows guessing one name from many addresses without locking its user out (429 with the
# page saying so). The login page states the rule. Bad API tokens are throttled per address by
# ifportal.security.ThrottledTokenAuthentication.
# The session's user and their roles are read through the cache (ifportal.auth): a change to the user or their
# groups is seen on the next request, anything done behind Django's back (a bulk update, raw SQL) within
# IFPORTAL_USER_CACHE_SECONDS; 0 reads them from the database on every request.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "ifportal.signin.SignInDelayBackend",  # checks no password: refuses a try inside a user name's wait
    "ifportal.auth.CachedModelBackend",
]
IFPORTAL_USER_CACHE_SECONDS = env_int("IFPORTAL_USER_CACHE_SECONDS", 60)
AXES_FAILURE_LIMIT = env_int("IFPORTAL_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("IFPORTAL_LOGIN_LOCKOUT_MINUTES", 15))
# an address failing too often for one name, or for any names, is locked out; a name alone never is: failures
# for one name from many addresses meet the growing per-name delay of ifportal.signin instead
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a refused try is not a failure: nothing was checked
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_LOCKOUT_CALLABLE = "ifportal.signin.signin_refused"
#: after AXES_FAILURE_LIMIT failures for one name from addresses it never signed in from, each further try from
#: such an address waits this many seconds, doubling with each failure up to the maximum (ifportal.signin)
IFPORTAL_LOGIN_DELAY_SECONDS = env_int("IFPORTAL_LOGIN_DELAY_SECONDS", 2)
IFPORTAL_LOGIN_DELAY_MAX_SECONDS = env_int("IFPORTAL_LOGIN_DELAY_MAX_SECONDS", 900)
#: a name's failures are forgotten after this many hours without one
IFPORTAL_LOGIN_DELAY_FORGET_HOURS = env_int("IFPORTAL_LOGIN_DELAY_FORGET_HOURS", 24)
#: an address the user signed in from in this many days is not slowed by failures made elsewhere
IFPORTAL_LOGIN_KNOWN_ADDRESS_DAYS = env_int("IFPORTAL_LOGIN_KNOWN_ADDRESS_DAYS", 90)
if not 0 < IFPORTAL_LOGIN_DELAY_SECONDS <= IFPORTAL_LOGIN_DELAY_MAX_SECONDS:
    raise ImproperlyConfigured(
        "IFPORTAL_LOGIN_DELAY_SECONDS must be more than 0 and at most IFPORTAL_LOGIN_DELAY_MAX_SECONDS"
    )
AXES_VERBOSE = False
#: bad API tokens one address may send before it gets 429 (DRF rate syntax: n/second|minute|hour|day)
IFPORTAL_TOKEN_FAILURE_RATE = env_str("IFPORTAL_TOKEN_FAILURE_RATE", "10/hour")
#: reverse proxies in front of the portal that append to X-Forwarded-For; 0 (the default) trusts no such header:
#: every count per address (bad tokens, failed sign-ins, cache budgets) uses the peer address
#: (ifportal.security.client_address)
IFPORTAL_TRUSTED_PROXIES = env_int("IFPORTAL_TRUSTED_PROXIES", 0)
if IFPORTAL_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured(f"IFPORTAL_TRUSTED_PROXIES={IFPORTAL_TRUSTED_PROXIES} must be 0 or more")
AXES_CLIENT_IP_CALLABLE = "ifportal.security.client_address"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request without it


# static/vendor/plotly holds plotly.js's cartesian partial bundle (its README says which version)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG and env_bool("IFPORTAL_MANIFEST_STATIC", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")

# Uploads: files are streamed to disk, never held in memory; a request larger than the limit is refused
# before its body is read (runs.middleware.UploadLimitMiddleware), the page's and the API's alike.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
IFPORTAL_MAX_UPLOAD_BYTES = env_int("IFPORTAL_MAX_UPLOAD_BYTES", 2 * 1024**3)
#: files one import takes; Django's own cap is the same number, so a larger upload gets the app's clear error
IFPORTAL_MAX_UPLOAD_FILES = env_int("IFPORTAL_MAX_UPLOAD_FILES", 1000)
DATA_UPLOAD_MAX_NUMBER_FILES = IFPORTAL_MAX_UPLOAD_FILES
#: days an import's uploaded files are kept after its job finished (`manage.py uploads_clean`, run daily
#: by the Celery beat schedule or cron); 0 keeps them forever
IFPORTAL_UPLOAD_RETENTION_DAYS = env_int("IFPORTAL_UPLOAD_RETENTION_DAYS", 7)
#: an ingest first refreshes the planner statistics of a table it bulk-writes once more rows changed
#: since the last analysis than the table had then, and at least this many (runs.services.statistics_refresh)
IFPORTAL_ANALYZE_MIN_ROWS = env_int("IFPORTAL_ANALYZE_MIN_ROWS", 10_000)
#: the time limit of a transcript search (runs.search; PostgreSQL's statement timeout, SQLite's interrupt): a broad
#: query is stopped with the hits found by then and the user asked to narrow it, instead of keeping a core busy
IFPORTAL_SEARCH_TIMEOUT_MS = env_int("IFPORTAL_SEARCH_TIMEOUT_MS", 2000)
#: on SQLite, the searches one process runs at once; more are answered "busy" (429), so scans cannot hold every
#: core and thread the embedded server's other pages need (PostgreSQL bounds each search by its timeout alone)
IFPORTAL_SEARCH_CONCURRENCY = env_int("IFPORTAL_SEARCH_CONCURRENCY", 2)
#: how long (ms) a search counts its hits beyond its page; past it the page says "at least N"
IFPORTAL_SEARCH_COUNT_MS = env_int("IFPORTAL_SEARCH_COUNT_MS", 300)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: its WWW-Authenticate header turns "not logged in" into 401 for scripts.
        # Bad tokens count against their address (IFPORTAL_TOKEN_FAILURE_RATE), then 429.
        "ifportal.security.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "ifportal.security.BoundedLimitOffsetPagination",
    # any DRF throttle's get_ident reads the address as ifportal.security.client_address does
    "NUM_PROXIES": IFPORTAL_TRUSTED_PROXIES,
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ifportal API",
    "DESCRIPTION": "Instruction-following benchmark results: ingest, runs, attempts, metrics.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # the schema lists every endpoint: for signed-in users and tokens only, like the API itself
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

# Deploy-safe defaults once DEBUG is off; `manage.py check --deploy` stays quiet.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from a meta tag, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
