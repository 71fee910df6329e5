"""The Redis cache backend builds one `redis.Redis` per connection pool (ifportal.redis_cache), and otherwise
behaves as Django's: writes to the first server, reads from the others."""

import pytest
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from ifportal.redis_cache import PooledClientRedisCache, PooledClientRedisCacheClient

# nothing listens there: a pool connects only when a command is sent, and these tests send none
SERVERS = ["redis://127.0.0.1:1/0", "redis://127.0.0.1:2/0", "redis://127.0.0.1:3/0"]


def counting(client: PooledClientRedisCacheClient) -> list:
    built = []
    make = client._client

    def build(**kwargs):
        built.append(kwargs["connection_pool"])
        return make(**kwargs)

    client._client = build
    return built


def test_it_builds_one_client_per_pool_however_many_calls():
    client = PooledClientRedisCacheClient(SERVERS[:1])
    built = counting(client)
    first = client.get_client("k", write=True)
    assert all(client.get_client("k", write=write) is first for write in (True, False) * 5)
    assert built == [first.connection_pool]


def test_it_writes_to_the_first_server_and_reads_from_the_others_each_with_its_own_client():
    client = PooledClientRedisCacheClient(SERVERS)
    built = counting(client)
    writer = client.get_client(write=True)
    readers = {client.get_client(write=False) for _ in range(100)}  # a random replica each time
    assert writer.connection_pool.connection_kwargs["port"] == 1
    assert sorted(r.connection_pool.connection_kwargs["port"] for r in readers) == [2, 3]
    assert len(built) == 3 and len({id(pool) for pool in built}) == 3  # one per pool, never rebuilt


def test_it_keeps_django_options_and_serializer():
    serializer = "django.core.cache.backends.redis.RedisSerializer"
    cache = PooledClientRedisCache("redis://127.0.0.1:1", {"OPTIONS": {"db": 4, "serializer": serializer}})
    assert isinstance(cache, RedisCache) and isinstance(cache._cache, PooledClientRedisCacheClient)
    assert cache._cache.get_client().connection_pool.connection_kwargs["db"] == 4
    assert cache._cache._serializer.loads(cache._cache._serializer.dumps({"a": 1})) == {"a": 1}


def test_the_configured_redis_cache_reuses_its_client():
    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        pytest.skip("the tests run on the process-memory cache (CACHE_URL unset)")
    assert isinstance(cache._cache, PooledClientRedisCacheClient)
    built = counting(cache._cache)
    cache.set("ifportal:test:redis-client", {"v": 1}, 30)
    assert cache.get("ifportal:test:redis-client") == {"v": 1}
    cache.delete("ifportal:test:redis-client")
    assert len(built) <= 1  # at most this thread's first use of the pool
