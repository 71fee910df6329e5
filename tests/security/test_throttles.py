"""Counts kept per client address cannot be steered by the client: the address is the peer the server sees,
or with IFPORTAL_TRUSTED_PROXIES only what the portal's own proxies appended (ifportal.security.client_address),
and the bad-token count is one count for every worker."""

import threading

import pytest
from axes.models import AccessAttempt
from django.core.cache.backends.redis import RedisCache
from django.test import Client, RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from ifportal.security import TokenFailureThrottle, client_address

REDIS_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture
def reviewer(django_user_model):
    return django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")


def bad_tokens(client: APIClient, count: int, **headers) -> list[int]:
    return [
        client.get("/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {n:040x}", **headers).status_code
        for n in range(count)
    ]


@pytest.mark.django_db
def test_it_ignores_a_rotated_forwarded_for_header_when_no_proxy_is_trusted(settings):
    settings.IFPORTAL_TOKEN_FAILURE_RATE = "5/hour"
    guesser = APIClient()

    statuses = [
        guesser.get(
            "/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {n:040x}", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}"
        ).status_code
        for n in range(8)
    ]

    assert statuses == [401] * 5 + [429] * 3


@pytest.mark.django_db
def test_a_victims_address_in_the_header_does_not_throttle_the_victim(reviewer, settings):
    settings.IFPORTAL_TOKEN_FAILURE_RATE = "5/hour"
    victim_token = Token.objects.create(user=reviewer).key
    attacker = APIClient(REMOTE_ADDR="203.0.113.66")

    assert bad_tokens(attacker, 6, HTTP_X_FORWARDED_FOR="192.0.2.10")[-1] == 429

    victim = APIClient(REMOTE_ADDR="192.0.2.10")
    assert victim.get("/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {victim_token}").status_code == 200


@pytest.mark.django_db
def test_behind_a_trusted_proxy_the_address_it_appended_counts_and_nothing_before_it(reviewer, settings):
    settings.IFPORTAL_TOKEN_FAILURE_RATE = "5/hour"
    settings.IFPORTAL_TRUSTED_PROXIES = 1
    good = Token.objects.create(user=reviewer).key
    via_proxy = APIClient(REMOTE_ADDR="10.0.0.2")  # every request comes from the proxy

    statuses = [
        via_proxy.get(
            "/api/benchmarks/",
            HTTP_AUTHORIZATION=f"Token {n:040x}",
            HTTP_X_FORWARDED_FOR=f"198.51.100.{n}, 203.0.113.66",
        ).status_code
        for n in range(6)
    ]

    assert statuses == [401] * 5 + [429]  # the forged first entries changed nothing
    other_client = via_proxy.get(
        "/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {good}", HTTP_X_FORWARDED_FOR="203.0.113.67"
    )
    assert other_client.status_code == 200  # another client behind the same proxy has its own count


def test_client_address_reads_only_the_entries_the_trusted_proxies_wrote(settings):
    factory = RequestFactory()
    request = factory.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9, 10.0.0.1")

    settings.IFPORTAL_TRUSTED_PROXIES = 0
    assert client_address(request) == "10.0.0.2"
    settings.IFPORTAL_TRUSTED_PROXIES = 2
    assert client_address(request) == "203.0.113.9"
    settings.IFPORTAL_TRUSTED_PROXIES = 5  # fewer entries than proxies: the first one, which a proxy wrote
    assert client_address(factory.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.9")) == "203.0.113.9"
    settings.IFPORTAL_TRUSTED_PROXIES = 1
    assert client_address(factory.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="not-an-address")) == "10.0.0.2"


@pytest.mark.django_db
@pytest.mark.parametrize("proxies, recorded", [(0, {"127.0.0.1"}), (1, {"203.0.113.66"})])
def test_failed_sign_ins_are_counted_under_the_same_address(django_user_model, settings, proxies, recorded):
    settings.IFPORTAL_TRUSTED_PROXIES = proxies
    django_user_model.objects.create_user("target", password="right-horse-battery-1")

    for n in range(3):
        Client().post(
            "/login/",
            {"username": "target", "password": f"guess-{n}"},
            HTTP_X_FORWARDED_FOR=f"198.51.100.{n}, 203.0.113.66",
        )

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == recorded


@pytest.fixture
def redis_caches():
    """Two clients of one Redis, each with its own connection pool, as two web workers hold them."""
    workers = [RedisCache(REDIS_URL, {}) for _ in range(2)]
    try:
        workers[0].get("ping")
    except Exception:
        pytest.skip(f"no Redis at {REDIS_URL}")
    yield workers
    client = workers[0]._cache.get_client(None, write=True)
    for key in client.scan_iter(
        match=workers[0].make_key(
            TokenFailureThrottle.cache_format % {"scope": TokenFailureThrottle.scope, "ident": "*"}
        )
    ):
        client.delete(key)


def test_failures_recorded_at_once_by_several_workers_all_count(redis_caches, settings):
    """Sixteen failures from two workers' threads at the same moment make a count of sixteen: none is lost."""
    settings.IFPORTAL_TOKEN_FAILURE_RATE = "16/hour"
    request = RequestFactory().get("/", REMOTE_ADDR="203.0.113.77")
    start = threading.Barrier(16)

    def fail(cache) -> None:
        throttle = TokenFailureThrottle()
        throttle.cache = cache
        start.wait()
        throttle.record_failure(request)

    threads = [threading.Thread(target=fail, args=(redis_caches[n % 2],)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    for cache in redis_caches:
        throttle = TokenFailureThrottle()
        throttle.cache = cache
        assert throttle.blocked_for(request) is not None  # both workers see the sixteen
    below = TokenFailureThrottle()
    below.cache = redis_caches[0]
    assert below.blocked_for(RequestFactory().get("/", REMOTE_ADDR="203.0.113.78")) is None
