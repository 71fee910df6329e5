"""Security tests: the hostile corpus and the project's URL patterns as fixtures (tests are not a package under
--import-mode=importlib)."""

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

_spec = importlib.util.spec_from_file_location("_ifportal_hostile", Path(__file__).with_name("hostile.py"))
_hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hostile)


@pytest.fixture(scope="session")
def hostile():
    """tests/security/hostile.py: the hostile corpus and the files that carry it."""
    return _hostile


@dataclass(frozen=True)
class Route:
    name: str | None  # "namespace:name", None for an unnamed pattern
    pattern: str  # the full pattern, for messages
    params: tuple[str, ...]
    converters: tuple[str, ...] = ()  # the converter of each parameter: "int", "slug", "str", "uuid", "path", "regex"

    @property
    def admin(self) -> bool:
        return self.pattern.startswith("admin/")


CONVERTER_NAMES = {
    "IntConverter": "int",
    "SlugConverter": "slug",
    "StringConverter": "str",
    "UUIDConverter": "uuid",
    "PathConverter": "path",
}


def url_routes() -> list[Route]:
    """Every URL pattern of the project, recursively through includes."""

    def walk(resolver: URLResolver, prefix: str, namespace: str | None):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                inner = entry.namespace
                joined = f"{namespace}:{inner}" if namespace and inner else (inner or namespace)
                yield from walk(entry, prefix + str(entry.pattern), joined)
            elif isinstance(entry, URLPattern):
                name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
                converters = getattr(entry.pattern, "converters", None) or {}
                params = tuple(converters) or tuple(entry.pattern.regex.groupindex)
                kinds = tuple(
                    CONVERTER_NAMES.get(type(converters[p]).__name__, "regex") if p in converters else "regex"
                    for p in params
                )
                yield Route(name, prefix + str(entry.pattern), params, kinds)

    return list(walk(get_resolver(), "", None))


@pytest.fixture
def routes() -> list[Route]:
    """Every URL pattern of the project (see url_routes)."""
    return url_routes()
