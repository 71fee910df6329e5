"""Shared fixtures: named actors and logged-in clients."""

from pathlib import Path

import pytest
from django.test import Client

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _inline_jobs(settings, tmp_path):
    """Jobs finish before the request that started them returns; uploads go to a temp dir."""
    settings.IFPORTAL_JOBS = "inline"
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _no_cache_between_tests():
    """Each test starts with no cached leaderboard (benchmark ids and generations repeat across tests),
    no cached session user and no count of bad API tokens (every test client comes from 127.0.0.1: one test's deliberate
    failures must not throttle the next one's requests; the lockout tests make theirs within one test).

    A process-memory cache is cleared; a Redis cache (shared with other test runs and
    workers) loses only those keys of this test database, never a whole Redis database.
    Sign-in lockouts (django-axes) live in database rows, which every test's rollback or flush removes."""
    _cache_forget()
    yield
    _cache_forget()


def _cache_forget() -> None:
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    from ifportal.auth import user_cache_key
    from ifportal.security import TokenFailureThrottle
    from runs.cache import _database_tag

    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        cache.clear()
        return
    client = cache._cache.get_client(None, write=True)
    patterns = [
        f"leaderboard:*:{_database_tag()}:*",
        TokenFailureThrottle.cache_format % {"scope": TokenFailureThrottle.scope, "ident": "*"},
        user_cache_key("*"),
    ]  # user ids repeat across test databases
    for pattern in patterns:
        for key in client.scan_iter(match=cache.make_key(pattern), count=1000):
            client.delete(key)


@pytest.fixture
def postgres():
    """Skip unless the tests run on PostgreSQL (real concurrent writers, advisory locks, Celery workers)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip(
            "needs PostgreSQL (DATABASE_URL): SQLite serialises every writer on one lock, and its "
            "in-memory test database refuses a second writer ('table is locked') instead of waiting"
        )


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or skip: a fresh clone does not have it."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA


@pytest.fixture
def reviewer(django_user_model):
    return django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")


@pytest.fixture
def editor(django_user_model):
    """A team member who may change what everyone sees (imports, re-checks, share links): group "editor"."""
    from django.contrib.auth.models import Group

    from runs.access import EDITOR

    user = django_user_model.objects.create_user("editor", password="pw-editor-1")
    user.groups.add(Group.objects.get_or_create(name=EDITOR)[0])
    return user


@pytest.fixture
def editor_client(editor) -> Client:
    """Signed in as the editor, with the user and roles cached as on every request after a session's first."""
    return _warm_client(editor)


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("outsider", password="pw-outsider-1")


@pytest.fixture
def reviewer_client(reviewer) -> Client:
    """Signed in as the reviewer, whose user and roles are already in the cache (ifportal.auth), as for every
    request of a session after its first: a query count taken on any of its requests is a warm page's."""
    return _warm_client(reviewer)


def _warm_client(user) -> Client:
    from django.contrib.auth import BACKEND_SESSION_KEY, load_backend

    client = Client()
    client.force_login(user)
    load_backend(client.session[BACKEND_SESSION_KEY]).get_user(user.pk)
    return client


@pytest.fixture
def evolif_logged(db) -> str:
    """EvolIF's fixture logs (two dialogues recorded at patience 2) imported as run acme-r1 of model acme; returns
    the dialogue benchmark's slug."""
    from runs.ingest import Options, Source, ingest
    from runs.models import Benchmark, BenchmarkKind

    logs = FIXTURES / "evolif"
    ingest("evolif-dialogs", [Source.of(logs / "dialog_1.jsonl"), Source.of(logs / "dialog_2.jsonl")], Options())
    ingest(
        "evolif-eval",
        [Source.of(logs / "eval_1.jsonl"), Source.of(logs / "eval_2.jsonl")],
        Options(model="acme", run="acme-r1"),
    )
    return Benchmark.objects.get(kind=BenchmarkKind.DIALOGUE).slug
