"""Page state lives in the URL: the current query string with some parameters replaced or removed."""

from __future__ import annotations

from django.http import QueryDict


def params_with(params: QueryDict, **changes) -> str:
    """A query string with some parameters replaced (None removes one; a list sets several values)."""
    params = params.copy()
    for name, value in changes.items():
        params.pop(name, None)
        if value is not None:
            params.setlist(name, value if isinstance(value, list) else [value])
    return params.urlencode()


def query_with(request, **changes) -> str:
    """The request's query string with some parameters replaced (None removes one)."""
    return params_with(request.GET, **changes)
