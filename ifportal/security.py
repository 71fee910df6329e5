"""Content-Security-Policy for every response; API pagination and token guessing kept bounded; the client's address.

Django 5.2 has no CSP support of its own (6.0 adds it). The policy here is fixed and
nonce-free because no page has inline script: scripts come from static files, data from
`json_script` blocks (type application/json, which CSP does not execute). django-csp
would add a dependency, a dozen settings and a per-request nonce we do not need; this
middleware is the whole feature. Styles keep 'unsafe-inline' because Plotly and htmx
set element styles at run time; scripts never get it.
"""

import ipaddress
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


def client_address(request) -> str:
    """The address a request came from: the peer the server sees (REMOTE_ADDR), or, with
    IFPORTAL_TRUSTED_PROXIES = n > 0 proxies in front, the address the outermost of them saw.

    Each proxy appends the address it received the request from to X-Forwarded-For, so only the
    last n entries were written by our proxies; anything before them is whatever the client sent,
    and is never read. An entry that is not an IP address (a proxy that was not configured to
    append) falls back to the peer address. Every count kept per address (bad API tokens, failed
    sign-ins, cache budgets) asks this function.
    """
    peer = request.META.get("REMOTE_ADDR", "")
    proxies = settings.IFPORTAL_TRUSTED_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if proxies <= 0 or not forwarded:
        return peer
    entries = [entry.strip() for entry in forwarded.split(",")]
    candidate = entries[-min(proxies, len(entries))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return peer


class TokenFailureThrottle(SimpleRateThrottle):
    """Counts the bad API tokens one address sent (IFPORTAL_TOKEN_FAILURE_RATE, e.g. "10/hour"), in the
    default cache: Redis whenever workers or several web processes run, so every worker adds to one count.

    A fixed window per address, counted with the cache's atomic `incr`: concurrent failures from several
    workers each add one (a read-modify-write of a list, as DRF's own throttles keep, would lose some).
    """

    scope = "token-failures"

    def get_rate(self) -> str:
        return settings.IFPORTAL_TOKEN_FAILURE_RATE

    def get_ident(self, request) -> str:
        return client_address(request)

    def get_cache_key(self, request, view) -> str:
        self.now = self.timer()
        self.window_start = int(self.now // self.duration) * self.duration
        ident = self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
        return f"{ident}:{self.window_start}"

    def blocked_for(self, request) -> float | None:
        """Seconds until this address may try a token again, or None when it may now."""
        self.key = self.get_cache_key(request, None)
        if (self.cache.get(self.key) or 0) < self.num_requests:
            return None
        return max(self.window_start + self.duration - self.now, 1)

    def record_failure(self, request) -> None:
        """Adds one bad token to this address's count in the current window."""
        key = self.get_cache_key(request, None)
        self.cache.add(key, 0, self.duration)
        try:
            self.cache.incr(key)
        except ValueError:  # expired between add and incr: this failure opens the next count
            self.cache.add(key, 1, self.duration)


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
