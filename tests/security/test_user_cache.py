"""The session's user and roles read through the cache (ifportal.auth): two queries fewer on a warm signed-in
page, every change to a user or their groups seen on the very next request, and a cache that is down fails
nothing."""

import logging

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ifportal import auth
from ifportal.auth import user_cache_key
from ifportal.sessions import SessionStore
from runs.access import ANNOTATOR, LEAD, REVIEWER, roles_of

pytestmark = pytest.mark.django_db

CACHE_METHODS = ("get", "set", "add", "delete", "has_key", "get_many", "set_many", "delete_many", "incr", "touch")
#: not blind_safe: a blind annotator gets 403 there, a reviewer the list (a read: no write role needed)
REVIEWERS_ONLY = "/api/attempts/"


def group(name: str) -> Group:
    return Group.objects.get_or_create(name=name)[0]  # transactional tests flush the data migration's groups


@pytest.fixture
def alice(django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw-alice-1")
    user.groups.add(group(ANNOTATOR))
    return user


@pytest.fixture
def client(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def cache_outage(monkeypatch):
    """Makes the cache raise on every call (Redis stopped) while the test runs, then `up()` again."""

    class Outage:
        def down(self):
            def refuse(*args, **kwargs):
                raise ConnectionError("Connection refused")

            for name in CACHE_METHODS:
                monkeypatch.setattr(cache, name, refuse)

        def up(self):
            monkeypatch.undo()

    outage = Outage()
    yield outage
    outage.up()
    auth._undeleted.clear()
    auth._failing = False


def roles_seen(client: Client) -> set[str]:
    """The roles of the request's user as the access rules saw them, and that the page agreed."""
    response = client.get(REVIEWERS_ONLY)
    if response.status_code == 302:  # signed out
        return set()
    roles = roles_of(response.wsgi_request.user)
    assert response.status_code == (403 if roles == {ANNOTATOR} else 200)
    return roles


def warm(client: Client) -> None:
    client.get("/")
    client.get("/")


def test_a_warm_signed_in_page_reads_neither_the_user_nor_their_roles(client, settings):
    warm(client)
    with CaptureQueriesContext(connection) as cached:
        assert client.get("/").status_code == 200
    assert not [q["sql"] for q in cached if "auth_user" in q["sql"] or "auth_group" in q["sql"]]
    settings.IFPORTAL_USER_CACHE_SECONDS = 0  # the cache off: ModelBackend's read and runs.access's
    with CaptureQueriesContext(connection) as uncached:
        assert client.get("/").status_code == 200
    assert len(uncached) - len(cached) == 2


def test_the_cached_user_and_roles_are_those_of_the_database(client, alice):
    warm(client)
    user = client.get("/").wsgi_request.user
    assert user.pk == alice.pk and user.username == "alice" and user.password == alice.password
    assert roles_of(user) == {ANNOTATOR} and cache.get(user_cache_key(alice.pk)) is not None


def test_removing_the_user_from_a_group_shows_on_the_next_request(client, alice):
    alice.groups.add(group(REVIEWER))
    warm(client)
    assert roles_seen(client) == {ANNOTATOR, REVIEWER}
    alice.groups.remove(group(REVIEWER))
    assert roles_seen(client) == {ANNOTATOR}  # blind again: 403


def test_adding_the_user_to_a_group_from_the_group_side_shows_on_the_next_request(client, alice):
    warm(client)
    assert roles_seen(client) == {ANNOTATOR}
    group(REVIEWER).user_set.add(alice)
    assert roles_seen(client) == {ANNOTATOR, REVIEWER}
    group(REVIEWER).user_set.remove(alice)
    assert roles_seen(client) == {ANNOTATOR}


@pytest.mark.parametrize("clear", ["the user's groups", "the group's members"])
def test_clearing_memberships_shows_on_the_next_request(client, alice, clear):
    alice.groups.add(group(REVIEWER))
    warm(client)
    assert roles_seen(client) == {ANNOTATOR, REVIEWER}
    if clear == "the user's groups":
        alice.groups.clear()
        assert roles_seen(client) == set()  # no role group: reads results like a reviewer
    else:
        group(REVIEWER).user_set.clear()
        assert roles_seen(client) == {ANNOTATOR}


def test_setting_the_user_groups_shows_on_the_next_request(client, alice):
    warm(client)
    alice.groups.set([group(LEAD)])
    assert roles_seen(client) == {LEAD}


def test_renaming_a_group_shows_on_the_next_request(client, alice):
    alice.groups.add(group("visitors"))
    warm(client)
    assert roles_seen(client) == {ANNOTATOR}
    visitors = Group.objects.get(name="visitors")
    visitors.name = REVIEWER
    Group.objects.filter(name=REVIEWER).exclude(pk=visitors.pk).delete()
    visitors.save()
    assert roles_seen(client) == {ANNOTATOR, REVIEWER}


def test_deleting_a_group_shows_on_the_next_request(client, alice):
    warm(client)
    assert roles_seen(client) == {ANNOTATOR}
    Group.objects.get(name=ANNOTATOR).delete()  # its memberships go with it, without m2m_changed
    assert roles_seen(client) == set()


def test_a_superuser_is_a_lead_from_the_next_request(client, alice):
    warm(client)
    alice.is_superuser = True
    alice.save()
    assert LEAD in roles_seen(client)


def test_a_deactivated_user_is_signed_out_on_the_next_request(client, alice):
    warm(client)
    alice.is_active = False
    alice.save()
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_an_inactive_user_in_the_cache_is_refused(client, alice, django_user_model):
    warm(client)
    django_user_model.objects.filter(pk=alice.pk).update(is_active=False)  # bypasses signals: the entry stays
    assert client.get("/").wsgi_request.user.is_authenticated  # within IFPORTAL_USER_CACHE_SECONDS
    key = user_cache_key(alice.pk)
    values, roles = cache.get(key)
    cache.set(key, ({**values, "is_active": False}, roles), 60)  # a cached inactive user: checked as ModelBackend does
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_a_changed_password_signs_out_on_the_next_request(client, alice):
    warm(client)
    alice.set_password("pw-alice-2")
    alice.save()
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_a_deleted_user_is_signed_out_on_the_next_request(client, alice):
    warm(client)
    alice.delete()
    assert not client.get("/").wsgi_request.user.is_authenticated


def test_the_cache_down_still_serves_pages_and_roles(client, alice, cache_outage, caplog):
    warm(client)
    cache_outage.down()
    with caplog.at_level(logging.WARNING, logger="ifportal.auth"):
        assert roles_seen(client) == {ANNOTATOR}
        alice.groups.add(group(REVIEWER))  # its deletion fails: owed to the cache
        assert roles_seen(client) == {ANNOTATOR, REVIEWER}
        assert client.get("/").status_code == 200
    warnings = [r for r in caplog.records if r.name == "ifportal.auth"]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage()  # once per outage, not per call
    cache_outage.up()  # with alice's entry of before the change still in it
    assert roles_seen(client) == {ANNOTATOR, REVIEWER}  # the owed deletion was made first


def test_users_loaded_otherwise_have_their_roles_read(alice, django_user_model):
    user = django_user_model.objects.get(pk=alice.pk)  # an API token's user, a test's: no role names attached
    with CaptureQueriesContext(connection) as queries:
        assert roles_of(user) == {ANNOTATOR}
    assert len(queries) == 1


def test_two_databases_on_one_cache_do_not_share_users(client, alice):
    warm(client)
    key = user_cache_key(alice.pk)
    here = connection.settings_dict
    name = here["NAME"]
    try:
        here["NAME"] = f"{name}-another-portal"
        elsewhere = user_cache_key(alice.pk)
    finally:
        here["NAME"] = name
    assert elsewhere != key and cache.get(key) is not None and cache.get(elsewhere) is None


def test_an_anonymous_request_caches_nothing(alice):
    assert Client().get("/").wsgi_request.user.is_anonymous
    assert cache.get(user_cache_key(alice.pk)) is None


def test_a_session_signed_in_before_the_cached_backend_stays_signed_in(alice):
    """A session that names ModelBackend (signed in before this backend replaced it) is read as one of this
    backend: a deploy signs no one out, and a form being filled in is not lost at its next post."""
    store = SessionStore()
    store[SESSION_KEY] = str(alice.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = alice.get_session_auth_hash()
    store.save()
    client = Client()
    client.cookies[django_settings.SESSION_COOKIE_NAME] = store.session_key
    for _ in range(2):  # from the database, then from the cache
        response = client.get("/")
        assert response.status_code == 200 and response.wsgi_request.user.pk == alice.pk
