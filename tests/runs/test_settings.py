"""The env helpers of settings.py fail loudly on bad values; .env.example documents every variable."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from ifportal.settings import env_bool, env_int, env_list, env_str, with_database_options

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("raw", ["1", "true", "YES", " on "])
def test_env_bool_reads_yes(monkeypatch, raw):
    monkeypatch.setenv("IFP_TEST_FLAG", raw)

    assert env_bool("IFP_TEST_FLAG", False) is True


@pytest.mark.parametrize("raw", ["0", "false", "No", "off", ""])
def test_env_bool_reads_no(monkeypatch, raw):
    monkeypatch.setenv("IFP_TEST_FLAG", raw)

    assert env_bool("IFP_TEST_FLAG", True) is False


def test_env_bool_uses_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("IFP_TEST_FLAG", raising=False)

    assert env_bool("IFP_TEST_FLAG", True) is True


@pytest.mark.parametrize("raw", ["maybe", "2", "truee", "y e s"])
def test_env_bool_rejects_anything_else(monkeypatch, raw):
    monkeypatch.setenv("IFP_TEST_FLAG", raw)

    with pytest.raises(ImproperlyConfigured, match=r"IFP_TEST_FLAG=.* is not a boolean"):
        env_bool("IFP_TEST_FLAG", False)


def test_env_int_reads_and_defaults(monkeypatch):
    monkeypatch.setenv("IFP_TEST_INT", " 42 ")
    assert env_int("IFP_TEST_INT", 1) == 42
    monkeypatch.setenv("IFP_TEST_INT", "")
    assert env_int("IFP_TEST_INT", 7) == 7


@pytest.mark.parametrize("raw", ["forty", "1.5", "10s", "0x10"])
def test_env_int_rejects_a_non_integer(monkeypatch, raw):
    monkeypatch.setenv("IFP_TEST_INT", raw)

    with pytest.raises(ImproperlyConfigured, match=r"IFP_TEST_INT=.* is not an integer"):
        env_int("IFP_TEST_INT", 1)


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("IFP_TEST_LIST", " a.example, ,b.example ,")
    assert env_list("IFP_TEST_LIST", ["x"]) == ["a.example", "b.example"]
    monkeypatch.delenv("IFP_TEST_LIST")
    assert env_list("IFP_TEST_LIST", ["x"]) == ["x"]


def test_env_str_reads_a_secret_from_a_file(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("IFP_TEST_KEY", "from-env")
    monkeypatch.setenv("IFP_TEST_KEY_FILE", str(secret))

    assert env_str("IFP_TEST_KEY") == "s3cret"


def test_env_str_fails_on_an_unreadable_file(monkeypatch, tmp_path):
    monkeypatch.setenv("IFP_TEST_KEY_FILE", str(tmp_path / "missing"))

    with pytest.raises(ImproperlyConfigured, match="IFP_TEST_KEY_FILE=.* cannot be read"):
        env_str("IFP_TEST_KEY")


def _load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean_env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DEBUG",
            "SECRET_KEY",
            "SECRET_KEY_FILE",
            "IFPORTAL_PRODUCTION",
            "IFPORTAL_JOBS",
            "CELERY_BROKER_URL",
            "DATABASE_URL",
            "DB_CONN_MAX_AGE",
        }
    }
    clean_env.update(DJANGO_SETTINGS_MODULE="ifportal.settings", IFPORTAL_VAR_DIR=str(tmp_path / "var"), **env)
    return subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.IFPORTAL_JOBS, settings.DEBUG)"],
        cwd=ROOT,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_settings_load_with_nothing_configured(tmp_path):
    result = _load_settings(tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["thread", "False"]
    assert (tmp_path / "var" / "secret_key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"IFPORTAL_JOBS": "cron"}, "IFPORTAL_JOBS='cron' must be celery, thread or inline"),
        ({"IFPORTAL_JOBS": "celery"}, "IFPORTAL_JOBS=celery needs CELERY_BROKER_URL"),
        ({"IFPORTAL_PRODUCTION": "1"}, "SECRET_KEY (or SECRET_KEY_FILE) must be set"),
        ({"DATABASE_URL": "postgres://u@h/db", "DB_CONN_MAX_AGE": "soon"}, "DB_CONN_MAX_AGE='soon' is not an integer"),
    ],
)
def test_settings_refuse_to_start_on_a_bad_value(tmp_path, env, message):
    result = _load_settings(tmp_path, **env)

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_env_example_documents_every_variable_settings_read():
    source = (ROOT / "ifportal" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|bool|int|list)\(\s*"([A-Z0-9_]+)"', source))
    read |= set(re.findall(r'os\.environ\.get\(\s*"([A-Z0-9_]+)"', source))
    documented = set(re.findall(r"(?m)^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text()))

    assert read, "no variables found in settings.py"
    assert read - documented == set()


def test_postgresql_connections_get_jit_off_unless_the_url_sets_options():
    postgresql = {"ENGINE": "django.db.backends.postgresql", "NAME": "x"}

    assert with_database_options(postgresql)["OPTIONS"] == {"options": "-c jit=off"}
    assert (
        with_database_options({**postgresql, "OPTIONS": {"options": "-c jit=on"}})["OPTIONS"]["options"] == "-c jit=on"
    )
    assert "OPTIONS" not in with_database_options({"ENGINE": "django.db.backends.mysql"})


@pytest.mark.django_db
def test_the_portal_connection_compiles_no_query():
    """JIT's compile time follows the planner's cost estimate, which grows with the tables: 1.1 s of each
    2 s rollup rebuild statement at 10M verdicts (docs/performance.md, "Ingest")."""
    if connection.vendor != "postgresql":
        pytest.skip("JIT is PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
