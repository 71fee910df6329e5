"""The API fuzzed from its own OpenAPI schema (schemathesis): no input makes it answer 5xx.

The schema is fetched from /api/schema/ as a signed-in client would; every operation gets
a few generated requests (kept small so the suite stays fast) sent through the WSGI app
with a superuser's token, over a database holding one benchmark of every kind.
"""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error

from ifportal.wsgi import application

MAX_EXAMPLES = 8  # per operation and generation mode


@pytest.fixture
def same_connection():
    """Keep the test's database connection across calls of the raw WSGI app (as django.test.Client does).

    Django closes the connection when a request finishes; under the test transaction that
    would close it under the test (PostgreSQL: "the connection is closed").
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api(db, django_user_model, tmp_path, hostile, same_connection):
    """(schema, headers) with one benchmark of every kind stored and a token of a superuser (lead: every operation opens)."""
    hostile.ingest_all(tmp_path)
    boss = django_user_model.objects.create_superuser("fuzz-admin", password="pw-fuzz-admin-1")
    headers = {"Authorization": f"Token {Token.objects.create(user=boss).key}"}
    return schemathesis.openapi.from_wsgi("/api/schema/?format=json", application, headers=headers), headers


def test_it_fuzzes_every_api_operation_without_a_server_error(api):
    schema, headers = api
    operations = [result.ok() for result in schema.get_all_operations()]
    failures = {}

    for operation in operations:

        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case):
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        try:
            run()
        except Exception as exc:  # collect every operation's failure, then report them together
            failures[operation.label] = f"{type(exc).__name__}: {str(exc)[:2000]}"

    assert len(operations) >= 15
    assert failures == {}


def test_it_refuses_a_campaign_seed_beyond_the_database_integer(api):
    """Found by the fuzzing: a 20-digit seed overflowed the column and answered 500."""
    from rest_framework.test import APIClient

    from runs.models import Benchmark

    schema, headers = api
    client = APIClient(HTTP_AUTHORIZATION=headers["Authorization"])
    body = {
        "name": "x",
        "subject": "checklist_items",
        "benchmarks": [Benchmark.objects.get(slug="hostile").slug],
        "strata": [],
        "allocation": "proportional",
        "size": 1,
        "seed": 10**20,
        "minimum_per_stratum": 10**20,
    }

    response = client.post("/api/audits/campaigns/", body, format="json")

    assert response.status_code == 400
    assert set(response.json()) == {"seed", "minimum_per_stratum"}


def test_it_refuses_a_nul_character_in_a_campaign_benchmark(api):
    """Found by the fuzzing on PostgreSQL: a NUL in a benchmark slug reached the query and answered 500."""
    from rest_framework.test import APIClient

    schema, headers = api
    client = APIClient(HTTP_AUTHORIZATION=headers["Authorization"])
    body = {"name": "x", "subject": "checklist_items", "benchmarks": ["host\x00ile"], "size": 1}

    response = client.post("/api/audits/campaigns/", body, format="json")

    assert response.status_code == 400
    assert list(response.json()) == ["benchmarks"]


@pytest.mark.parametrize("path", ["/api/runs/", "/api/attempts/", "/api/jobs/", "/api/benchmarks/"])
def test_it_answers_a_huge_offset_or_limit_without_a_server_error(api, path):
    """Found by the fuzzing on PostgreSQL: ?offset=10**20 answered 500 (bigint out of range)."""
    from rest_framework.test import APIClient

    schema, headers = api
    client = APIClient(HTTP_AUTHORIZATION=headers["Authorization"])

    response = client.get(path, {"offset": 10**20, "limit": 10**20})

    assert response.status_code == 200
    assert response.json()["results"] == []
