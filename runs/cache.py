"""One cache for what the portal computes from a benchmark's data: `cached()`.

An entry is keyed by a release constant (`CODE_VERSION`: a digest of the runs app's modules and
the templates, so a deploy never reads what another version stored; the benchmark tooling is
outside it), the database (two portals or test databases on one Redis never meet), the
benchmark, its data generation and a part name. Every write that changes what a page shows
bumps the benchmark's `data_generation` in its own transaction
(`runs.services.benchmarks_generation_bump`), so an entry of an older generation is never read
again; it expires after CACHE_SECONDS.

The generation is read before the data it keys: outside a `cache_scope` every `cached()`
call reads it (one primary-key query); inside one (a request, a job warming pages) the first
read of each benchmark's generation is kept for the scope, so a page that caches several
parts reads it once, and a value computed in the scope is reused there before its store commits. Code that changes data and then reads pages in the same scope opens a
new scope for the read.

Values are stored once the reading transaction commits (dropped on rollback), so numbers
computed from uncommitted rows never reach the cache. What one person can make the cache
hold is bounded: while a scope has an owner (runs.middleware.CacheBudgetMiddleware: the
signed-in user, else the address), at most IFPORTAL_CACHE_ENTRIES_PER_USER new entries a day
are stored for that owner; past it values are computed as usual and not kept. What there is
one of per generation whoever asks (the leaderboard summary, the filter choices, the page as
first opened) is stored with `charged=False`. A cache that is down makes pages compute (and
log a warning), not fail.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from runs.models import Benchmark

log = logging.getLogger(__name__)

#: how long an entry stays; entries of older generations are simply never read again
CACHE_SECONDS = 24 * 3600
T = TypeVar("T")


#: the project's root: the code version digests its runs/ and templates/
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def code_version_files(root: Path = PROJECT_ROOT) -> list[Path]:
    """What the code version digests: every module of the runs app (migrations aside) and every template.

    Everything, not a list of the files that seem to matter: a hand-kept list missed templates and
    modules rendered into the cached fragments (_filters.html, _rank_change.html, rank_change.py...).
    Tooling that renders nothing into the cache lives outside runs/, so changing it keeps every entry:
    the benchmark is the app ifportal.benchmarks (tests/benchmarks/test_apart.py holds the rule)."""
    files = [*(root / "runs").rglob("*.py"), *(root / "templates").rglob("*.html")]
    return sorted(path for path in files if "migrations" not in path.relative_to(root).parts)


def _code_version(root: Path = PROJECT_ROOT) -> str:
    """A digest of `code_version_files`: a deploy that changes how rows are scored, shaped or rendered
    never reads what an older version cached in Redis."""
    digest = hashlib.sha256()
    for path in code_version_files(root):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_version()


def data_generation(benchmark_id: int) -> int | None:
    """The benchmark's data generation as committed now (None if it was deleted): one primary-key query."""
    return Benchmark.objects.filter(pk=benchmark_id).values_list("data_generation", flat=True).first()


def digest(document: Mapping[str, Any]) -> str:
    """The SHA-256 of a JSON document in one canonical form (keys sorted, no spaces): the part of a cache key that
    names a state or a choice, the same however the document's keys were ordered."""
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def cache_key(benchmark_id: int, generation: int, part: str) -> str:
    """The key of one part of one benchmark's data generation (the database's name is part of it)."""
    return f"leaderboard:{CODE_VERSION}:{_database_tag()}:{benchmark_id}:{generation}:{part}"


def _database_tag() -> str:
    settings_dict = connection.settings_dict
    where = f"{settings_dict.get('HOST') or ''}:{settings_dict.get('PORT') or ''}/{settings_dict.get('NAME')}"
    return hashlib.sha256(where.encode()).hexdigest()[:8]


#: who the entries stored now are charged to (None: nobody, e.g. a job warming the default page)
_budget_owner: ContextVar[str | None] = ContextVar("cache_owner", default=None)
#: the generations read in the current scope, by benchmark id (None: no scope, read every time)
_generations: ContextVar[dict[int, int | None] | None] = ContextVar("cache_generations", default=None)
#: values computed in the current scope, by key: read again in the same scope before their store commits
_computed: ContextVar[dict[str, Any] | None] = ContextVar("cache_computed", default=None)
#: the budget's window: as long as an entry lives, so one owner holds at most about twice the budget at once
BUDGET_SECONDS = CACHE_SECONDS


@contextmanager
def cache_scope(owner: str | None) -> Iterator[None]:
    """A request or job: entries stored inside are charged to `owner` ("user:<id>", "addr:<ip>"; None:
    nobody), and each benchmark's data generation is read once, at its first cached read inside."""
    owner_token = _budget_owner.set(owner)
    generations_token = _generations.set({})
    computed_token = _computed.set({})
    try:
        yield
    finally:
        _computed.reset(computed_token)
        _generations.reset(generations_token)
        _budget_owner.reset(owner_token)


def generation_of(benchmark_id: int) -> int | None:
    """The benchmark's data generation for this scope: read now, or as first read inside the current scope."""
    seen = _generations.get()
    if seen is None:
        return data_generation(benchmark_id)
    if benchmark_id not in seen:
        seen[benchmark_id] = data_generation(benchmark_id)
    return seen[benchmark_id]


def generation_seen(benchmark) -> None:
    """Record, for the current scope, the data generation of a benchmark row the scope has just read (before
    any of its data): the scope's cached reads then need no query of their own for it. No-op outside a scope."""
    seen = _generations.get()
    if seen is not None:
        seen.setdefault(benchmark.id, benchmark.data_generation)


def cached(benchmark_id: int, part: str, compute: Callable[[], T], *, kind: type, charged: bool = True) -> T:
    """`compute()`, cached under (code version, benchmark, data generation, `part`) until the generation moves.

    A value of another type than `kind` under the key counts as a miss. `charged=False` for a part of
    which there is one per generation whoever asks (a summary, the filter choices): no one's budget pays
    for it, so a reader past their budget still leaves it for the next one."""
    return cached_many(benchmark_id, {part: (compute, kind)}, charged=charged)[part]


def cached_many(
    benchmark_id: int, parts: Mapping[str, tuple[Callable[[], Any], type]], *, charged: bool = True
) -> dict[str, Any]:
    """Several parts of one benchmark's generation in one cache round trip: {part: value}, each computed
    (in the order given) and stored when missing, as `cached` does for one."""
    generation = generation_of(benchmark_id)
    if generation is None:  # deleted meanwhile: compute (empty) rather than cache under no generation
        return {part: compute() for part, (compute, _) in parts.items()}
    keys = {part: cache_key(benchmark_id, generation, part) for part in parts}
    try:
        found = cache.get_many(list(keys.values()))
    except Exception:  # a cache that is down must not take the pages with it
        log.warning("cache unavailable (read)", exc_info=True)
        found = {}
    computed = _computed.get()
    out = {}
    for part, (compute, kind) in parts.items():
        value = found.get(keys[part])
        if not isinstance(value, kind) and computed is not None:
            value = computed.get(keys[part])
        if not isinstance(value, kind):
            value = compute()
            _store_on_commit(keys[part], value, charged=charged)
            if computed is not None:
                computed[keys[part]] = value
        out[part] = value
    return out


def _store_on_commit(key: str, value, *, charged: bool) -> None:
    if charged and not _budget_allows_store():
        return
    # inside a transaction the store waits for commit (and is dropped on rollback): keep what
    # was computed now, whatever the caller does to what it gets back meanwhile
    stored = copy.deepcopy(value) if connection.in_atomic_block else value
    transaction.on_commit(lambda: _store(key, stored))


def _store(key: str, value) -> None:
    try:
        cache.set(key, value, CACHE_SECONDS)
    except Exception:
        log.warning("cache unavailable (write)", exc_info=True)


def _budget_allows_store() -> bool:
    """Whether the current owner may store one more entry in this window (and count it); True without an owner."""
    owner = _budget_owner.get()
    if owner is None:
        return True
    window = int(time.time() // BUDGET_SECONDS)
    key = f"leaderboard:budget:{_database_tag()}:{hashlib.sha256(owner.encode()).hexdigest()[:16]}:{window}"
    try:
        cache.add(key, 0, BUDGET_SECONDS)
        spent = cache.incr(key)
    except Exception:  # a cache that is down stores nothing anyway
        return False
    if spent == settings.IFPORTAL_CACHE_ENTRIES_PER_USER + 1:
        log.warning(
            "cache budget of %s spent (%d entries): further pages are not cached",
            owner,
            settings.IFPORTAL_CACHE_ENTRIES_PER_USER,
        )
    return spent <= settings.IFPORTAL_CACHE_ENTRIES_PER_USER
