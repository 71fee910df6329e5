"""Content-Security-Policy for every response; API pagination and token guessing kept bounded.

Django 5.2 has no CSP support of its own (6.0 adds it). The policy here is fixed and
nonce-free because no page has inline script: scripts come from static files, data from
`json_script` blocks (type application/json, which CSP does not execute). django-csp
would add a dependency, a dozen settings and a per-request nonce we do not need; this
middleware is the whole feature. Styles keep 'unsafe-inline' because Plotly and htmx
set element styles at run time; scripts never get it.
"""
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.throttling import SimpleRateThrottle

DEFAULT_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}


def policy_header(policy: dict[str, list[str]]) -> str:
    """The header value for a directive -> sources mapping, in the mapping's order."""
    return "; ".join(" ".join([directive, *sources]) for directive, sources in policy.items())


class ContentSecurityPolicyMiddleware:
    """Adds Content-Security-Policy (settings.IFPORTAL_CSP, else DEFAULT_POLICY) unless a view set its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.header = policy_header(getattr(settings, "IFPORTAL_CSP", None) or DEFAULT_POLICY)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.header
        return response


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """LimitOffsetPagination whose limit and offset stay inside a database integer.

    DRF passes any non-negative integer through; an offset of 10**20 reached PostgreSQL
    as OFFSET and failed there ("bigint out of range", a 500 found by API fuzzing).
    """

    max_limit = 1000
    max_offset = 2**62

    def get_offset(self, request) -> int:
        return min(super().get_offset(request), self.max_offset)


class TokenFailureThrottle(SimpleRateThrottle):
    """Counts the bad API tokens one address sent (IFPORTAL_TOKEN_FAILURE_RATE, e.g. "10/hour")."""

    scope = "token-failures"

    def get_rate(self) -> str:
        return settings.IFPORTAL_TOKEN_FAILURE_RATE

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def blocked_for(self, request) -> float | None:
        """Seconds until this address may try a token again, or None when it may now."""
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return self.wait() if len(self.history) >= self.num_requests else None

    def record_failure(self, request) -> None:
        self.allow_request(request, None)  # appends now to the address's history


class ThrottledTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, with guessing bounded: once an address has sent too many bad
    tokens it gets 429 (with Retry-After) for every token, good or bad, until its window passes.

    DRF's own throttles run after authentication, so they never see a request whose token failed;
    the count lives here instead. A good token does not reset the count (a guesser holding one
    valid token must not be able to launder failures with it).
    """

    def authenticate(self, request):
        if not self.keyword_in(request):
            return None
        throttle = TokenFailureThrottle()
        wait = throttle.blocked_for(request)
        if wait is not None:
            raise Throttled(wait, detail="Too many bad API tokens from this address; try again later.")
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            throttle.record_failure(request)
            raise

    def keyword_in(self, request) -> bool:
        """Whether the request carries an Authorization header of this scheme at all."""
        words = request.META.get("HTTP_AUTHORIZATION", "").split()
        return bool(words) and words[0].lower() == self.keyword.lower()
