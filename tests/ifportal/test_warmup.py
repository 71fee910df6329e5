"""A web process builds its URLconf, templates and help page before its first request (ifportal.warmup)."""

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.template import engines
from django.test import override_settings

from ifportal.warmup import warm_process

PROJECT_TEMPLATES = sorted(
    p.relative_to(settings.BASE_DIR / "templates").as_posix() for p in (settings.BASE_DIR / "templates").rglob("*.html")
)


@pytest.fixture(autouse=True)
def unfrozen():
    """warm_process freezes the process's objects out of the collector: not the test runner's for the rest of the suite."""
    yield
    gc.unfreeze()


def cached_loader():
    """The Django engine's cached loader (django-template-partials wraps it in its own)."""
    loader = engines["django"].engine.template_loaders[0]
    while not hasattr(loader, "get_template_cache"):
        loader = loader.loaders[0]
    return loader


def cached_names() -> set[str]:
    """The template names the cached loader holds compiled."""
    return {key.split("-")[0] for key in cached_loader().get_template_cache}


def test_every_project_template_compiles_and_stays_compiled():
    cached_loader().reset()
    done = warm_process()
    assert done["failed"] == [] and done["templates"] >= len(PROJECT_TEMPLATES) > 50
    assert set(PROJECT_TEMPLATES) <= cached_names()
    assert not any(name.startswith(("admin/", "rest_framework/")) for name in cached_names())  # not what few pages use


def test_a_template_that_does_not_compile_is_logged_and_skipped(tmp_path, caplog):
    (tmp_path / "ok.html").write_text("<p>{{ x }}</p>")
    (tmp_path / "broken.html").write_text("{% if %}")
    templates = [{**settings.TEMPLATES[0], "DIRS": [tmp_path], "APP_DIRS": False}]
    with override_settings(TEMPLATES=templates, BASE_DIR=tmp_path):
        done = warm_process()
    assert done["templates"] == 1 and [name for name, _ in done["failed"]] == ["broken.html"]
    assert "broken.html" in caplog.text


def test_importing_the_wsgi_application_warms_the_process():
    """What gunicorn's worker does on boot, in a fresh interpreter: no view module, template or help
    page is left for the first request to build, and what it built is frozen out of the collector."""
    probe = (
        "import gc, json, sys, ifportal.wsgi\n"
        "from django.template import engines\n"
        "from runs.help_pages import _render\n"
        "loader = engines['django'].engine.template_loaders[0]\n"
        "while not hasattr(loader, 'get_template_cache'):\n"
        "    loader = loader.loaders[0]\n"
        "print(json.dumps({'views': 'runs.views.checklist' in sys.modules and 'audits.views' in sys.modules,\n"
        "                  'templates': sorted({k.split('-')[0] for k in loader.get_template_cache}),\n"
        "                  'help': _render.cache_info().currsize, 'frozen': gc.get_freeze_count()}))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ifportal.settings", "DEBUG": "0"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=Path(settings.BASE_DIR), env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["views"] and seen["help"] == 1
    assert seen["frozen"] > 50_000  # what the process built is out of the collector's full collections
    assert set(PROJECT_TEMPLATES) <= set(seen["templates"])
