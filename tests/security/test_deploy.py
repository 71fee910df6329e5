"""Deploy-safe settings: `check --deploy` is silent with production variables; unsafe ones refuse to start."""

import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_UNSET = {
    "DEBUG",
    "SECRET_KEY",
    "SECRET_KEY_FILE",
    "IFPORTAL_PRODUCTION",
    "IFPORTAL_JOBS",
    "CELERY_BROKER_URL",
    "DATABASE_URL",
    "DATABASE_URL_FILE",
    "ALLOWED_HOSTS",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "CACHE_URL",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
}


def _random_key() -> str:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    return "".join(secrets.choice(alphabet) for _ in range(50))


def _manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _UNSET}
    clean.update(DJANGO_SETTINGS_MODULE="ifportal.settings", IFPORTAL_VAR_DIR=str(tmp_path / "var"), **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def _production(**extra: str) -> dict[str, str]:
    return {
        "DEBUG": "0",
        "IFPORTAL_PRODUCTION": "1",
        "SECRET_KEY": _random_key(),
        "ALLOWED_HOSTS": "example.org",
        "DATABASE_URL": "postgres://ifportal@127.0.0.1:5432/ifportal",
        **extra,
    }


def test_it_passes_check_deploy_with_production_variables(tmp_path):
    result = _manage(tmp_path, "check", "--deploy", "--fail-level", "DEBUG", **_production())

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNINGS" not in result.stderr + result.stdout


def test_it_reads_the_secret_key_and_database_url_from_files(tmp_path):
    key_file, db_file = tmp_path / "key", tmp_path / "db"
    key_file.write_text(_random_key() + "\n")
    db_file.write_text("postgres://ifportal:s3cret@db.internal:5432/ifportal\n")
    env = _production(SECRET_KEY_FILE=str(key_file), DATABASE_URL_FILE=str(db_file))
    del env["SECRET_KEY"], env["DATABASE_URL"]

    result = _manage(
        tmp_path,
        "shell",
        "-v",
        "0",
        "-c",
        f"from django.conf import settings as s; print(s.SECRET_KEY == open({str(key_file)!r}).read().strip(), "
        "s.DATABASES['default']['HOST'])",
        **env,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "db.internal"]


def test_it_turns_on_secure_cookies_hsts_and_https_in_production(tmp_path):
    result = _manage(
        tmp_path,
        "shell",
        "-v",
        "0",
        "-c",
        "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SESSION_COOKIE_HTTPONLY, s.SECURE_HSTS_SECONDS >= 31536000, s.SECURE_SSL_REDIRECT, s.DEBUG)",
        **_production(),
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "True", "True", "True", "False"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"DEBUG": "1"}, "DEBUG must be off when IFPORTAL_PRODUCTION=1"),
        ({"SECRET_KEY": "change-me-to-a-long-random-string"}, "SECRET_KEY must be a random string"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY must be a random string"),
        ({"SECRET_KEY": ""}, "SECRET_KEY (or SECRET_KEY_FILE) must be set"),
    ],
)
def test_it_refuses_to_start_production_with_unsafe_settings(tmp_path, override, message):
    result = _manage(tmp_path, "check", **_production(**override))

    assert result.returncode != 0
    assert message in result.stderr


def test_it_refuses_production_without_allowed_hosts(tmp_path):
    env = _production()
    del env["ALLOWED_HOSTS"]

    result = _manage(tmp_path, "check", **env)

    assert result.returncode != 0
    assert "ALLOWED_HOSTS must name the portal's host(s)" in result.stderr


def test_it_shows_no_debug_page_on_an_error(client, settings):
    settings.DEBUG = False

    response = client.get("/no/such/page/at/all/")

    assert response.status_code == 404
    body = response.content.decode()
    assert "Traceback" not in body and "URLconf" not in body and "SECRET_KEY" not in body
