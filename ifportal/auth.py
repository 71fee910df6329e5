"""The sign-in backend: Django's ModelBackend, with the session's user read through the cache.

Every signed-in request loads its user (`auth_user` by primary key) and, for the access rules,
the user's role groups (`runs.access.roles_of`): two queries on each page, a sixth of a warm
leaderboard's time. `CachedModelBackend.get_user` keeps both in the default cache for
IFPORTAL_USER_CACHE_SECONDS and attaches the role names to the user it returns, which
`roles_of` then uses instead of querying. Nothing is cached for anonymous requests, and what a
user may see is unchanged: a cached user is checked as ModelBackend checks one (inactive users
get no session user), and a superuser is still a lead.

A change must show on the very next request, so the entry is deleted when the user is saved or
deleted, when their groups change (from either side: `user.groups.add(...)`,
`group.user_set.remove(...)`, a clear), and for every member when a group is renamed or
deleted (`connect_signals`, from `ifportal.apps`). Each deletion is repeated once the
transaction commits, so a request that read the old rows while the change was uncommitted
cannot leave them cached. What bypasses signals is bounded by the expiry only: a bulk
`QuerySet.update()` on users, raw SQL, a row changed by another program.

A cache that is down never fails a request: the user and roles are read from the database, as
ModelBackend does, with one warning per process and outage; a deletion that failed is retried
at this process's next successful cache call. Entries are keyed by the database, as sessions
are (ifportal.sessions), so two portals or test databases on one Redis never share users.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import connections, router, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete

from runs.access import ROLE_NAMES_ATTRIBUTE, role_group_names

log = logging.getLogger(__name__)
UserModel = get_user_model()

#: entries this process could not delete (the cache was down), deleted at its next successful call
_undeleted: set[str] = set()
#: at most this many are remembered; past it the entries' expiry is the only bound
UNDELETED_MAX = 10_000
_lock = threading.Lock()
_failing = False


class CachedModelBackend(ModelBackend):
    """ModelBackend whose `get_user` reads the user and their role names through the cache."""

    def get_user(self, user_id):
        seconds = settings.IFPORTAL_USER_CACHE_SECONDS
        if seconds <= 0:
            return super().get_user(user_id)
        key = user_cache_key(user_id)
        user = _user_of(_cache_call("get", key))
        if user is None:
            try:
                user = UserModel._default_manager.get(pk=user_id)
            except UserModel.DoesNotExist:
                return None
            setattr(user, ROLE_NAMES_ATTRIBUTE, role_group_names(user))
            _cache_call("set", key, _entry_of(user), seconds)
        return user if self.user_can_authenticate(user) else None


def user_cache_key(user_id, using: str | None = None) -> str:
    """The cache key of a user of the database `using` (by default, where users are written)."""
    where = connections[using or router.db_for_write(UserModel)].settings_dict
    tag = hashlib.sha256(f"{where.get('HOST') or ''}:{where.get('PORT') or ''}/{where.get('NAME')}".encode())
    return f"ifportal:user:{tag.hexdigest()[:8]}:{user_id}"


def users_forget(user_ids, *, using: str) -> None:
    """Delete the cached entries of these users now and again when the current transaction commits."""
    keys = [user_cache_key(user_id, using) for user_id in user_ids]
    if not keys:
        return
    _delete_many(keys)
    if connections[using].in_atomic_block:
        transaction.on_commit(lambda: _delete_many(keys), using=using)


def _field_names() -> list[str]:
    return [field.attname for field in UserModel._meta.concrete_fields]


def _entry_of(user) -> tuple[dict, tuple[str, ...]]:
    """What is cached: the user's column values (not a pickled model) and their role names."""
    return {name: getattr(user, name) for name in _field_names()}, tuple(sorted(getattr(user, ROLE_NAMES_ATTRIBUTE)))


def _user_of(entry) -> object | None:
    """The user of a cache entry, with its role names attached; None for a miss or an entry of other columns."""
    if not isinstance(entry, tuple) or len(entry) != 2:
        return None
    values, role_names = entry
    names = _field_names()
    if not isinstance(values, dict) or values.keys() != set(names):
        return None
    user = UserModel.from_db(router.db_for_read(UserModel), names, [values[name] for name in names])
    setattr(user, ROLE_NAMES_ATTRIBUTE, frozenset(role_names))
    return user


def _delete_many(keys: list[str]) -> None:
    if _cache_call("delete_many", keys, ok=True) is None:
        with _lock:
            if len(_undeleted) < UNDELETED_MAX:
                _undeleted.update(keys)


def _cache_call(method: str, *args, ok=None):
    """The cache's `method(*args)`, after any deletion this process still owes it; on any error, `None` (a miss:
    the database answers) and a warning the first time. `ok`: returned on success instead of the method's own
    result."""
    global _failing
    try:
        if _undeleted:
            _delete_undeleted()
        result = getattr(cache, method)(*args)
    except Exception:
        if not _failing:
            _failing = True
            log.warning("user cache unavailable (%s): users are read from the database", method, exc_info=True)
        return None
    if _failing:
        _failing = False
        log.warning("user cache available again")
    return result if ok is None else ok


def _delete_undeleted() -> None:
    with _lock:
        pending = list(_undeleted)
        _undeleted.clear()
    try:
        cache.delete_many(pending)
    except Exception:
        with _lock:
            _undeleted.update(pending)
        raise


# what changes a cached user -----------------------------------------------------------------
def _user_changed(sender, instance, using, **kwargs) -> None:
    users_forget([instance.pk], using=using)


def _membership_changed(sender, instance, action, pk_set, using, **kwargs) -> None:
    if isinstance(instance, UserModel):  # user.groups.add/remove/clear/set
        if action in ("post_add", "post_remove", "post_clear"):
            instance.__dict__.pop(ROLE_NAMES_ATTRIBUTE, None)  # this request reads its new roles too
            users_forget([instance.pk], using=using)
    elif action in ("post_add", "post_remove"):  # group.user_set.add/remove: the users are pk_set
        users_forget(pk_set or (), using=using)
    elif action == "pre_clear":  # group.user_set.clear(): its members, while they still are
        users_forget(_member_ids(sender, instance, using), using=using)


def _group_renamed(sender, instance, created, using, **kwargs) -> None:
    if not created:
        users_forget(_member_ids(UserModel.groups.through, instance, using), using=using)


def _group_deleted(sender, instance, using, **kwargs) -> None:
    # before the delete: its memberships go with it, without m2m_changed
    users_forget(_member_ids(UserModel.groups.through, instance, using), using=using)


def _member_ids(through, group, using: str) -> list:
    return list(through._default_manager.using(using).filter(group_id=group.pk).values_list("user_id", flat=True))


def connect_signals() -> None:
    """Delete a user's entry whenever something it holds changes (called once, by ifportal.apps)."""
    post_save.connect(_user_changed, sender=UserModel, dispatch_uid="ifportal.auth.user_saved")
    post_delete.connect(_user_changed, sender=UserModel, dispatch_uid="ifportal.auth.user_deleted")
    m2m_changed.connect(_membership_changed, sender=UserModel.groups.through, dispatch_uid="ifportal.auth.groups")
    post_save.connect(_group_renamed, sender=Group, dispatch_uid="ifportal.auth.group_saved")
    pre_delete.connect(_group_deleted, sender=Group, dispatch_uid="ifportal.auth.group_deleted")
