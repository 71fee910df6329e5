"""What one request may cost the server: uploads refused before they are read (too large, too many
files), and the cache entries it stores charged to whoever asked (CacheBudgetMiddleware).

Runs before the session and CSRF middleware: the CSRF check of a signed-in browser (or a
session-authenticated API call) reads a multipart body whole to find its token, so a
size check in the view came after a 2 GB body was already on disk. Here a body declared
larger than IFPORTAL_MAX_UPLOAD_BYTES is refused from its Content-Length alone, and a
form with more files than one import takes (Django's DATA_UPLOAD_MAX_NUMBER_FILES, set to
the same number) gets the app's own explanation instead of Django's bare 400.
"""

from collections.abc import Callable

from django.core.exceptions import TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from ifportal.security import client_address
from runs.cache import cache_scope
from runs.forms import request_size_problem, upload_count_problem


class UploadLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            too_large = request_size_problem(request)
            if too_large:
                return _refused(request, too_large, 413)
            if request.content_type == "multipart/form-data":
                try:
                    request.FILES  # noqa: B018 - parse now (streamed to disk) to count the files
                except TooManyFilesSent:
                    return _refused(request, upload_count_problem(), 400)
        return self.get_response(request)


def _refused(request: HttpRequest, problem: str, status: int) -> HttpResponse:
    """The refusal as the API answers problems ({"files": [...]}), or as a page for a browser."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"files": [problem]}, status=status)
    else:
        response = render(request, "runs/upload_refused.html", {"problem": problem}, status=status)
    response["Connection"] = "close"  # the unread body is not worth keeping the connection for
    return response


class CacheBudgetMiddleware:
    """Charges the leaderboard cache entries a request stores to its signed-in user, or else to its address
    (API token clients authenticate inside the view, after this runs: they count by address)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        owner = f"user:{user.pk}" if user is not None and user.is_authenticated else f"addr:{client_address(request)}"
        with cache_scope(owner):
            return self.get_response(request)
