"""Content-Security-Policy: every response carries it (the pages under it in Chromium: tests/browser/test_security.py)."""

import pytest

from ifportal.security import DEFAULT_POLICY, policy_header

EXPECTED = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def test_it_builds_the_policy_without_unsafe_inline_for_scripts():
    assert policy_header(DEFAULT_POLICY) == EXPECTED
    script_sources = DEFAULT_POLICY["script-src"]
    assert "'unsafe-inline'" not in script_sources and "'unsafe-eval'" not in script_sources


@pytest.mark.parametrize("url", ["/login/", "/", "/api/benchmarks/", "/static/js/charts.js", "/no-such-page/"])
def test_it_sends_the_policy_on_every_response(client, db, url):
    response = client.get(url)

    assert response["Content-Security-Policy"] == EXPECTED


def test_it_keeps_a_policy_a_view_set_itself(rf):
    from django.http import HttpResponse

    from ifportal.security import ContentSecurityPolicyMiddleware

    own = HttpResponse()
    own["Content-Security-Policy"] = "sandbox"
    middleware = ContentSecurityPolicyMiddleware(lambda request: own)

    assert middleware(rf.get("/"))["Content-Security-Policy"] == "sandbox"
