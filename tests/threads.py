"""Helpers for tests with real concurrency: writer threads with their own database connections, and the
services (PostgreSQL, Redis) that Celery workers started by a test need. Imported by the test modules
(`from ..threads import ...`); the `postgres` fixture is in tests/conftest.py."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import close_old_connections, connection


def redis_up() -> bool:
    """Whether the Celery broker is a Redis that answers."""
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        return False
    import redis

    try:
        return bool(redis.Redis.from_url(settings.CELERY_BROKER_URL).ping())
    except redis.RedisError:
        return False


def worker_database_url(*, application_name: str | None = None) -> str:
    """The test database as a DATABASE_URL for a Celery worker process started by a test."""
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return f"{url}?application_name={application_name}" if application_name else url


def in_thread(target, *args):
    """Run `target` in a thread with its own database connection; returns (thread, results, errors)."""
    results, errors = [], []

    def run():
        try:
            results.append(target(*args))
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, results, errors


def race(fns, timeout: float = 60) -> list[BaseException]:
    """Run each fn in its own thread (own connection), released together by a barrier; returns the
    exceptions raised. Every thread must finish within `timeout`."""
    barrier = threading.Barrier(len(fns))
    errors: list[BaseException] = []

    def run(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as exc:  # asserted on by the caller
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a writer did not finish"
    return errors
