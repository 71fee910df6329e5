"""Work that follows a committed write, off the writer's path: copying judge reasoning into the search's index
(runs.search_index), fitting item health (runs.cache_warming). `soon` runs it where `IFPORTAL_JOBS` runs jobs: as a
Celery task on a worker, in a thread of this process, or at once (inline). A process that started threads and is
about to end (`manage.py ingest`) waits for them (`wait`): a daemon thread would end with it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from celery import current_app
from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)

_threads: list[threading.Thread] = []
_held = threading.local()


def soon(task: str, work: Callable[..., object], *args) -> None:
    """Run `work(*args)` after this write: the Celery task named `task` (runs.tasks, which calls `work`), a thread,
    or now; nothing inside `apart`."""
    if getattr(_held, "apart", False):
        return
    mode = settings.IFPORTAL_JOBS
    if mode == "celery":
        current_app.send_task(task, args=list(args))
    elif mode == "thread":
        _threads[:] = [t for t in _threads if t.is_alive()]  # a long-lived process starts many
        thread = threading.Thread(target=_in_thread, args=(task, work, args), name=task, daemon=True)
        _threads.append(thread)
        thread.start()
    else:
        work(*args)


def wait() -> int:
    """Wait for the threads `soon` started in this process; how many there were."""
    started = list(_threads)
    for thread in started:
        thread.join()
    del _threads[: len(started)]
    return len(started)


@contextmanager
def apart() -> Iterator[None]:
    """Writes inside leave their follow-up work undone, whatever IFPORTAL_JOBS says: the benchmark times an
    import and what follows it apart."""
    _held.apart = True
    try:
        yield
    finally:
        _held.apart = False


def _in_thread(task: str, work: Callable[..., object], args: tuple) -> None:
    try:
        work(*args)
    except Exception:
        log.warning("%s failed after a write; the next write asks again", task, exc_info=True)
    finally:
        connection.close()  # this thread ends: its session would stay open until garbage collection
