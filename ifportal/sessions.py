"""Sessions kept in the database and read through the cache (SESSION_ENGINE).

Django's `cached_db` store takes the session query off every signed-in request (a warm
leaderboard is a few round trips, one of them the session: docs/performance.md, "The web
process"), but as shipped a cache that is down fails requests: its `load` writes
the session back to the cache unguarded, and `exists` (a new session key, at sign-in) and
`delete` (sign-out) touch it unguarded. Here every cache call is guarded: a cache that is down
makes sessions read and written in the database only, as with the `db` store, with one warning
per process and outage. Sessions stay in the database, so nothing is lost when Redis restarts.

A session that is deleted (sign-out, a new key at sign-in, a password changed elsewhere) must
never be served from the cache again:

- its entry is overwritten by a tombstone, not deleted, and a session read from the database is
  put in the cache with `add`, which never replaces one: a request that read the row just
  before a sign-out removed it cannot bring the session back into the cache;
- a change to an existing session is written to the cache before the database, and the entry is
  replaced by a tombstone if the row has gone meanwhile (Django then refuses the request);
- a tombstone that could not be written (the cache down during the sign-out) is written at this
  process's next successful cache call, and every entry expires after
  IFPORTAL_SESSION_CACHE_SECONDS whatever happens, so a cache that comes back with old entries
  (Redis restarted from its snapshot) serves a session signed out meanwhile for that long at most.

Entries are keyed by the database, as `runs.cache` keys its own: two portals or test databases
on one Redis never read each other's sessions.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.backends.base import UpdateError
from django.contrib.sessions.backends.db import SessionStore as DatabaseStore
from django.db import connections, router

log = logging.getLogger(__name__)

#: the sign-in backend sessions named before ifportal.auth's replaced it, and its replacement
REPLACED_BACKEND = "django.contrib.auth.backends.ModelBackend"
CACHED_BACKEND = "ifportal.auth.CachedModelBackend"

#: what a deleted session's entry holds (a session's data is always a dict)
DELETED = "deleted"
#: tombstones this process could not write (the cache was down), written at its next successful call
_unwritten: set[str] = set()
#: at most this many are remembered; past it the entries' expiry is the only bound
UNWRITTEN_MAX = 10_000
_lock = threading.Lock()
_failing = False


def _backend_current(data: dict) -> dict:
    """A session signed in through ModelBackend, before ifportal.auth.CachedModelBackend replaced it, as if
    signed in through its replacement: Django signs out a session whose backend is no longer configured,
    and a deploy must not sign out everyone (a form being filled in would be lost at its next post)."""
    if (
        data.get(BACKEND_SESSION_KEY) == REPLACED_BACKEND
        and REPLACED_BACKEND not in settings.AUTHENTICATION_BACKENDS
        and CACHED_BACKEND in settings.AUTHENTICATION_BACKENDS
    ):
        return {**data, BACKEND_SESSION_KEY: CACHED_BACKEND}
    return data


class SessionStore(cached_db.SessionStore):
    @property
    def cache_key_prefix(self) -> str:
        where = connections[router.db_for_write(self.model)].settings_dict
        tag = hashlib.sha256(f"{where.get('HOST') or ''}:{where.get('PORT') or ''}/{where.get('NAME')}".encode())
        return f"{cached_db.KEY_PREFIX}:{tag.hexdigest()[:8]}:"

    def load(self) -> dict:
        key = self.cache_key
        data = self._cache_call("get", key)
        if data == DELETED:  # signed out: a new key if anything is stored, as for a key the database lacks
            self._session_key = None
            return {}
        if isinstance(data, dict):
            return _backend_current(data)
        row = self._get_session_from_db()
        if not row:
            return {}
        data = self.decode(row.session_data)
        self._cache_call("add", key, data, self._cache_seconds(row.expire_date))
        return _backend_current(data)

    def exists(self, session_key: str) -> bool:
        # True for a tombstone too: a key that was deleted is never handed out again
        return bool(
            session_key and self._cache_call("has_key", self.cache_key_prefix + session_key)
        ) or DatabaseStore.exists(self, session_key)

    def save(self, must_create: bool = False) -> None:
        if self.session_key is None:
            return self.create()  # saves with must_create
        if must_create:  # a new key: no other request knows it yet
            DatabaseStore.save(self, must_create)
            self._cache_call("set", self.cache_key, self._session, self._cache_seconds())
            return
        key = self.cache_key
        self._cache_call("set", key, self._session, self._cache_seconds())
        try:
            DatabaseStore.save(self, must_create)
        except UpdateError:  # the row was deleted since this request read it: keep it deleted
            self._tombstone(key)
            raise
        except Exception:
            self._cache_call("delete", key)
            raise

    def delete(self, session_key: str | None = None) -> None:
        DatabaseStore.delete(self, session_key)
        session_key = session_key or self.session_key
        if session_key is not None:
            self._tombstone(self.cache_key_prefix + session_key)

    async def aload(self) -> dict:
        return await sync_to_async(self.load)()

    async def aexists(self, session_key: str) -> bool:
        return await sync_to_async(self.exists)(session_key)

    async def asave(self, must_create: bool = False) -> None:
        await sync_to_async(self.save)(must_create)

    async def adelete(self, session_key: str | None = None) -> None:
        await sync_to_async(self.delete)(session_key)

    def _cache_seconds(self, expiry=None) -> int:
        return max(0, min(settings.IFPORTAL_SESSION_CACHE_SECONDS, self.get_expiry_age(expiry=expiry)))

    def _tombstone(self, key: str) -> None:
        if not self._cache_call("set", key, DELETED, settings.IFPORTAL_SESSION_CACHE_SECONDS, ok=True):
            with _lock:
                if len(_unwritten) < UNWRITTEN_MAX:
                    _unwritten.add(key)

    def _cache_call(self, method: str, *args, ok=None):
        """The cache's `method(*args)`, after any tombstone this process still owes it; on any error, `None`
        (a miss: the database answers) and a warning the first time. `ok`: returned on success instead of
        the method's own result."""
        global _failing
        try:
            if _unwritten:
                self._write_unwritten()
            result = getattr(self._cache, method)(*args)
        except Exception:
            if not _failing:
                _failing = True
                log.warning(
                    "session cache unavailable (%s): sessions are read from the database", method, exc_info=True
                )
            return None
        if _failing:
            _failing = False
            log.warning("session cache available again")
        return result if ok is None else ok

    def _write_unwritten(self) -> None:
        with _lock:
            pending = dict.fromkeys(_unwritten, DELETED)
            _unwritten.clear()
        try:
            self._cache.set_many(pending, settings.IFPORTAL_SESSION_CACHE_SECONDS)
        except Exception:
            with _lock:
                _unwritten.update(pending)
            raise
