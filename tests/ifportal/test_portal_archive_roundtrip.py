"""The demo study moved SQLite -> PostgreSQL -> SQLite with portal_export / portal_import shows the same pages.

Each portal is its own `manage.py` process (IFPORTAL_VAR_DIR, DATABASE_URL): the demo is loaded into a fresh SQLite
portal, with three share links (live, revoked, expired); `page_figures` writes what the demo users see
(pages, fragments, exports, API answers) in each portal: the first, the PostgreSQL database its archive went
into, and the fresh SQLite portal that took the PostgreSQL portal's own archive.

Every export and API answer (anything but HTML) is byte for byte the same in the three portals, and so are the
share links' pages. An HTML page holds the same lines with the same words, in any order: PostgreSQL keeps JSON
objects as jsonb, whose keys come back sorted, so a page that prints a stored object's keys in stored order (a
dialogue constraint's parameters, a label's answers) lists them differently once the data has been through
PostgreSQL. The search page is left out of the PostgreSQL comparison: there it counts hits with a time bound
("At least N hits"), by design. Skips when PostgreSQL is unreachable (PORTAL_ROUNDTRIP_SERVER, default
postgres://postgres@127.0.0.1:5432)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = os.environ.get("PORTAL_ROUNDTRIP_SERVER", "postgres://postgres@127.0.0.1:5432")
DATABASE = os.environ.get("PORTAL_ROUNDTRIP_DATABASE", "ifportal_archive_roundtrip")
#: answers walked per demo user in each portal (the walk's first ones, in the same order everywhere)
PER_ROLE = 100

SHARE_LINKS_MAKE = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from runs.models import Benchmark
from runs.selectors.checklist import state_of
from runs.sharing import share_link_create
user = get_user_model().objects.get(username="demo")
benchmark = Benchmark.objects.filter(kind="checklist").order_by("slug").first()
tokens = {}
for name in ("live", "revoked", "expired"):
    link, tokens[name] = share_link_create(user=user, benchmark=benchmark, state=state_of({}), include_attempts=True)
    if name == "revoked":
        link.revoked_at = timezone.now()
    if name == "expired":
        link.expires_at = timezone.now() - timedelta(days=1)
    link.save()
print(json.dumps(tokens))
"""

SHARE_LINKS_READ = """
import json, sys
from django.test import Client
from ifportal.benchmarks.management.commands.page_figures import describe
client = Client(HTTP_HOST="127.0.0.1")
out = {}
for name, token in json.loads(sys.argv[-1]).items():
    for path in (f"/s/{token}/", f"/s/{token}/export/?format=csv", f"/s/{token}/export/?format=json"):
        out[name + " " + path.replace(token, "TOKEN")] = describe(client.get(path))[0]
print(json.dumps(out))
"""


def _server_reachable() -> bool:
    try:
        import psycopg

        with psycopg.connect(f"{SERVER}/postgres", connect_timeout=3, autocommit=True):
            return True
    except Exception:
        return False


def _manage(env: dict, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def _portal(var_dir: Path, database_url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL", "CELERY_BROKER_URL")}
    env.update(IFPORTAL_VAR_DIR=str(var_dir), IFPORTAL_JOBS="inline")
    if database_url:
        env["DATABASE_URL"] = database_url
    var_dir.mkdir(parents=True, exist_ok=True)
    _manage(env, "migrate", "--noinput", "-v", "0")
    return env


def _answers(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*.txt"))}


def _words(text: str) -> list[str]:
    """The page's lines, each as its sorted words, in sorted order (JSON punctuation split off)."""
    spaced = text.replace("{", " { ").replace("}", " } ").replace(",", " , ")
    return sorted(" ".join(sorted(line.split())) for line in spaced.splitlines())


def _share_pages(env: dict, tokens: dict) -> dict:
    script = SHARE_LINKS_READ.replace("sys.argv[-1]", repr(json.dumps(tokens)))
    return json.loads(_manage(env, "shell", "-c", script).strip().splitlines()[-1])


def _pg(statement: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def _walks(portals: dict[str, dict], tmp_path: Path) -> None:
    """page_figures on every portal at once: the three processes load the same code (the checkout may change
    while the test runs), and walk in a third of the time."""
    running = {
        name: subprocess.Popen(
            [sys.executable, "manage.py", "page_figures", str(tmp_path / f"pages-{name}"), "--per-role", str(PER_ROLE)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, env in portals.items()
    }
    for name, process in running.items():
        _, errors = process.communicate(timeout=1200)
        assert process.returncode == 0, f"page_figures on the {name} portal: {errors[-3000:]}"


@pytest.mark.skipif(not _server_reachable(), reason=f"PostgreSQL unreachable at {SERVER}")
def test_the_demo_study_shows_the_same_pages_after_sqlite_postgresql_sqlite(tmp_path):
    first = _portal(tmp_path / "first", None)
    _manage(first, "demo")
    _manage(first, "demo_login")
    tokens = json.loads(_manage(first, "shell", "-c", SHARE_LINKS_MAKE).strip().splitlines()[-1])
    _manage(first, "portal_export", str(tmp_path / "first.zip"), "--with-password-hashes", "--no-progress")

    _pg(f'DROP DATABASE IF EXISTS "{DATABASE}"')
    _pg(f'CREATE DATABASE "{DATABASE}"')
    try:
        second = _portal(tmp_path / "second", f"{SERVER}/{DATABASE}")
        _manage(second, "portal_import", str(tmp_path / "first.zip"), "--no-progress")
        _manage(second, "portal_export", str(tmp_path / "second.zip"), "--with-password-hashes", "--no-progress")
        third = _portal(tmp_path / "third", None)
        _manage(third, "portal_import", str(tmp_path / "second.zip"), "--no-progress")

        _walks({"first": first, "second": second, "third": third}, tmp_path)
        shared_first, shared_second, shared_third = (_share_pages(env, tokens) for env in (first, second, third))
    finally:
        _pg(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')

    assert shared_first == shared_second == shared_third
    assert shared_first["live /s/TOKEN/"].startswith("200 text/html")
    assert shared_first["revoked /s/TOKEN/"].startswith("404") and shared_first["expired /s/TOKEN/"].startswith("404")

    pages = [_answers(tmp_path / f"pages-{name}") for name in ("first", "second", "third")]
    # the walk follows links in the order a page lists them, and PostgreSQL may list rows that tie in another
    # order, so near its end it can pick another page of the same shape; nearly all answers are in every walk
    common = pages[0].keys() & pages[1].keys() & pages[2].keys()
    assert len(pages[0]) >= 3 * PER_ROLE - 10 and len(common) >= 0.95 * len(pages[0])
    html = {name for name in common if pages[0][name].split("\n")[1].endswith("text/html")}
    for name in sorted(common):
        text = pages[0][name]
        if name not in html:
            assert pages[1][name] == text, f"{name} differs on PostgreSQL"
            assert pages[2][name] == text, f"{name} differs after the round trip"
            continue
        assert _words(pages[2][name]) == _words(text), f"{name} differs after the round trip"
        if "_search_" not in name:
            assert _words(pages[1][name]) == _words(text), f"{name} differs on PostgreSQL"
    assert len(common) - len(html) > 50  # exports and API answers among them
