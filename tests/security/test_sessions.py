"""Sessions read through the cache (ifportal.sessions): a cache that is down fails no request, and a
session that was signed out is never served from the cache again."""

import logging

import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ifportal import sessions
from ifportal.sessions import SessionStore

CACHE_METHODS = ("get", "set", "add", "delete", "has_key", "get_many", "set_many", "delete_many", "incr", "touch")

pytestmark = pytest.mark.django_db


class CacheDown:
    """Makes the cache raise on every call (Redis stopped) until `up()`."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch

    def down(self) -> None:
        def refuse(*args, **kwargs):
            raise ConnectionError("Connection refused")

        for name in CACHE_METHODS:
            self.monkeypatch.setattr(caches[settings.SESSION_CACHE_ALIAS], name, refuse)

    def up(self) -> None:
        self.monkeypatch.undo()


@pytest.fixture
def cache_outage(monkeypatch):
    outage = CacheDown(monkeypatch)
    yield outage
    outage.up()
    sessions._unwritten.clear()
    sessions._failing = False


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-1")


def sign_in(client: Client) -> None:
    response = client.post("/login/", {"username": "alice", "password": "pw-alice-1"})
    assert response.status_code == 302 and response["Location"] == "/", response.content.decode()[:500]


def signed_in(client: Client) -> bool:
    response = client.get("/")
    assert response.status_code in (200, 302)
    return response.status_code == 200 and response.context["user"].username == "alice"


def with_cookie(key: str) -> Client:
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = key
    return client


def test_it_signs_in_shows_a_page_and_signs_out_with_the_cache_down(alice, cache_outage, caplog):
    cache_outage.down()
    client = Client()
    with caplog.at_level(logging.WARNING, logger="ifportal.sessions"):
        sign_in(client)
        assert signed_in(client)
        key = client.cookies[settings.SESSION_COOKIE_NAME].value
        assert client.post("/logout/").status_code == 302
    assert not signed_in(client)
    warnings = [r for r in caplog.records if r.name == "ifportal.sessions"]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage()  # once per outage, not per call
    cache_outage.up()
    assert not signed_in(with_cookie(key))


def test_a_session_signed_out_while_the_cache_was_down_is_not_served_when_it_comes_back(alice, cache_outage):
    client = Client()
    sign_in(client)
    assert signed_in(client)  # now in the cache
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert isinstance(caches[settings.SESSION_CACHE_ALIAS].get(SessionStore(key).cache_key), dict)
    cache_outage.down()
    assert client.post("/logout/").status_code == 302  # the row is deleted, the cache unreachable
    cache_outage.up()  # with the entry still in it (Redis restarted from its snapshot)
    assert not signed_in(with_cookie(key))


def test_a_signed_out_session_is_refused_with_the_cache_up(alice):
    client = Client()
    sign_in(client)
    assert signed_in(client)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.post("/logout/").status_code == 302
    stale = with_cookie(key)
    assert not signed_in(stale)
    stale.get("/login/")
    assert stale.cookies[settings.SESSION_COOKIE_NAME].value != key  # a signed-out key is never adopted again


def test_a_session_read_just_before_its_sign_out_is_not_put_back_in_the_cache(alice, monkeypatch):
    client = Client()
    sign_in(client)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    cache = caches[settings.SESSION_CACHE_ALIAS]
    cache.delete(SessionStore(key).cache_key)  # expired from the cache: the next read goes to the database
    reader = SessionStore(key)
    read_row = SessionStore._get_session_from_db

    def sign_out_meanwhile(store):
        row = read_row(store)
        SessionStore(key).delete()  # another request signs out between this read and its cache write
        return row

    monkeypatch.setattr(SessionStore, "_get_session_from_db", sign_out_meanwhile)
    assert reader.load()  # this request still sees what it read
    monkeypatch.undo()
    assert SessionStore(key).load() == {}
    assert not signed_in(with_cookie(key))


def test_a_password_changed_elsewhere_signs_out_the_cached_sessions(alice):
    client = Client()
    sign_in(client)
    assert signed_in(client)
    alice.set_password("pw-alice-2")
    alice.save()
    assert not signed_in(client)


def test_a_signed_in_page_reads_no_session_row_once_cached(alice):
    client = Client()
    sign_in(client)
    client.get("/")
    with CaptureQueriesContext(connection) as queries:
        assert signed_in(client)
    assert not any("django_session" in q["sql"] for q in queries)


def test_two_databases_on_one_cache_do_not_share_sessions(alice):
    store = SessionStore()
    store["who"] = "alice"
    store.save()
    key = store.cache_key
    assert caches[settings.SESSION_CACHE_ALIAS].get(key) == {"who": "alice"}
    here = connection.settings_dict
    name = here["NAME"]
    try:
        here["NAME"] = f"{name}-another-portal"  # another portal (or test database) on the same Redis
        elsewhere = SessionStore(store.session_key).cache_key
    finally:
        here["NAME"] = name
    assert elsewhere != key and caches[settings.SESSION_CACHE_ALIAS].get(elsewhere) is None
