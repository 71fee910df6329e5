"""Build, before a web process serves its first request, what Django would otherwise build during it.

A fresh process imports every view module when it first resolves a URL, compiles each template
when it first renders it, and renders the metrics help page (whose anchors every "How is this
computed" link checks) when a page first shows such a link. The first visitor after a deploy or a
worker's restart would pay for all of it, about a second on a fresh worker against tens of ms after
(docs/performance.md, "The web process"). `ifportal.wsgi` calls
`warm_process()` once per process, before the WSGI server hands it a request; with gunicorn's
default (no preload) that is in each worker as it boots.

Then everything the process has built so far is frozen out of the cyclic garbage collector
(`gc.freeze()`): it lives as long as the process, and each full collection would walk all of it
again, 80-90 ms for the 160,000 objects of a booted worker, the p95 of pages that allocate much
(frozen, the 10M drill-down's p95 over HTTP about halves, its median unchanged;
docs/performance.md, "The web process").

Nothing here reads the database, so it runs the same before a fork or after one.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from pathlib import Path

from django.conf import settings
from django.template import TemplateSyntaxError, engines
from django.template.exceptions import TemplateDoesNotExist
from django.template.utils import get_app_template_dirs
from django.urls import get_resolver

from runs.help_pages import metrics_help

log = logging.getLogger(__name__)


def warm_process() -> dict:
    """Import the URLconf and every view (and fill the reverse look-ups), compile every template of
    every template engine, render the metrics help page, then freeze what the process holds out of
    the garbage collector's full collections. A template that does not compile is logged and skipped
    (its page fails as it would have anyway; the suite compiles every template).

    Returns {"templates": how many compiled, "failed": [(name, reason)], "seconds": time taken}."""
    start = time.perf_counter()
    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 (imports every view module)
    resolver.reverse_dict  # noqa: B018 (what `reverse` and `{% url %}` build on their first call)
    for _, namespace in resolver.namespace_dict.values():
        namespace.reverse_dict  # noqa: B018
    compiled, failed = 0, []
    for name, engine in _template_names():
        try:
            engine.get_template(name)
            compiled += 1
        except (TemplateSyntaxError, TemplateDoesNotExist) as exc:
            failed.append((name, str(exc)))
            log.warning("template %s does not compile: %s", name, exc)
    metrics_help()
    # what is built so far lives as long as the process: out of the cyclic collector's sight from now on
    gc.collect()
    gc.freeze()
    return {"templates": compiled, "failed": failed, "seconds": time.perf_counter() - start}


def _template_names():
    """(name, engine) of every .html file of the project's own in each engine's folders (its directories,
    and its apps' when APP_DIRS): not the admin's or the API browser's, which few pages use."""
    project, environment = Path(settings.BASE_DIR).resolve(), Path(sys.prefix).resolve()  # a venv may sit inside it
    for engine in engines.all():
        backend = getattr(engine, "engine", None)  # a Django-templates backend; others have no loaders to fill
        if backend is None:
            continue
        folders = [*backend.dirs, *(get_app_template_dirs("templates") if backend.app_dirs else ())]
        seen: set[str] = set()
        for folder in (Path(f).resolve() for f in folders):
            if not folder.is_relative_to(project) or folder.is_relative_to(environment):
                continue
            for path in sorted(folder.rglob("*.html")):
                name = path.relative_to(folder).as_posix()
                if name not in seen:  # the first folder's file is the one the loaders find
                    seen.add(name)
                    yield name, engine
