"""Every chart page of every kind, on a cold browser cache: it paints, becomes usable and draws every chart, with
no console error. The times (targets: first paint and usable under 1 s, charts drawn within 1.5 s on loopback) are
printed and written to test-artifacts/page-timing.json, not asserted: speed is measured by the
benchmark command on a quiet machine, and a timed assertion on a shared CI machine fails with the
machine (a host half as fast per core painted some pages in 1.1-1.2 s and drew charts in 1.5-2.9 s
while the suite ran, the pages' server time unchanged)."""

import json
import os
import re
import time

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from ifportal.benchmarks.browser import MEASURE
from runs.access import EDITOR

pytestmark = pytest.mark.browser

FIRST_PAINT_MS = 1000
USABLE_MS = 1000
CHARTS_DRAWN_MS = 1500
#: how long the chart library is held back in the test that the page does not wait for it
HELD_BACK_MS = 3000

#: (kind, url name, benchmark slug) of every page that draws a chart
CHART_PAGES = [
    ("checklist", "runs:checklist-leaderboard", "octobench"),
    ("checklist", "runs:checklist-length", "octobench"),
    ("dialogue", "runs:dialogue-survival", "evolif"),
    ("dialogue", "runs:dialogue-groups", "evolif"),
    ("hierarchy", "runs:hierarchy-metrics", "manyih-coding"),
    ("hierarchy", "runs:hierarchy-conflicts", "manyih-coding"),
    ("choice", "runs:choice-metrics", "guidebench"),
    ("choice", "runs:choice-rules", "guidebench"),
    ("conflict", "runs:conflict-metrics", "octobench-conflict"),
]

#: the charts whose drawing reaches past the box that holds it (the chart's card), by data-plotly name
CHARTS_OVERFLOWING = """
() => Array.from(document.querySelectorAll('[data-plotly]')).filter(chart => {
  const svg = chart.querySelector('.main-svg');
  const box = (chart.closest('.card') || chart).getBoundingClientRect();
  return svg && svg.getBoundingClientRect().right > box.right + 0.5;
}).map(chart => chart.dataset.plotly)
"""


@pytest.fixture
def study(transactional_db, django_user_model):
    from runs.demo import demo_load
    from runs.models import Run
    from runs.recheck import recheck_run

    demo_load(seed=3, scale="small")
    for run in Run.objects.filter(benchmark__slug="manyih-coding"):  # the conflict-resolution chart needs it
        recheck_run(run=run)
    django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")
    editor = django_user_model.objects.create_user("editor", password="pw-editor-1")  # share links are an editor's
    editor.groups.add(Group.objects.get_or_create(name=EDITOR)[0])


def _share_link(slug: str) -> str:
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username="editor"))
    response = client.post(reverse("runs:share-create", args=[slug]), {"query": "", "expires_in": ""})
    return re.search(r"/s/[A-Za-z0-9_-]+/", response.content.decode()).group(0)


def test_every_chart_page_paints_and_draws_its_charts_on_a_cold_browser_cache(
    study, browser, session, live_server, console, artifacts
):
    signed_in = session("reviewer", "pw-reviewer-1").context.storage_state()
    pages = [(kind, reverse(name, args=[slug]), signed_in) for kind, name, slug in CHART_PAGES]
    pages.append(("checklist share link", _share_link("octobench"), None))
    figures = []
    for kind, path, state in pages:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, storage_state=state)  # a cold cache
        page = context.new_page()
        page.on("pageerror", console.on_page_error)
        page.goto(f"{live_server.url}{path}", wait_until="domcontentloaded")
        measured = page.evaluate(MEASURE)
        overflowing = page.evaluate(CHARTS_OVERFLOWING)
        context.close()
        figures.append({"kind": kind, "path": path, "overflowing": overflowing, **measured})
    (artifacts / "page-timing.json").write_text(json.dumps(figures, indent=1))
    for f in figures:
        print(
            f"{f['kind']:>22} {f['path']:<44} first paint {f['first_paint']:7.0f} ms, usable {f['usable']:7.0f} ms, "
            f"charts ({f['charts']}) {f['charts_drawn']:7.0f} ms"
        )
    assert all(f["charts"] and f["drawn"] for f in figures), [
        f["path"] for f in figures if not (f["charts"] and f["drawn"])
    ]
    assert [(f["path"], f["overflowing"]) for f in figures if f["overflowing"]] == []  # every chart inside its card
    assert [f["path"] for f in figures if f["first_paint"] is None] == []  # painted, within MEASURE's 10 s
    slow = [
        (f["path"], round(f["first_paint"]), round(f["usable"]), round(f["charts_drawn"]))
        for f in figures
        if f["first_paint"] >= FIRST_PAINT_MS or f["usable"] >= USABLE_MS or f["charts_drawn"] >= CHARTS_DRAWN_MS
    ]
    print(
        f"past the targets ({FIRST_PAINT_MS} ms paint, {USABLE_MS} ms usable, {CHARTS_DRAWN_MS} ms charts) "
        f"on this machine now (load {os.getloadavg()[0]:.2f}): {slow or 'none'}"
    )
    assert console.errors == []


def test_a_chart_page_is_usable_before_the_chart_library_arrives_and_draws_its_charts_when_it_does(
    study, browser, session, live_server, console
):
    """The 1.5 MB chart library must not hold the page: with the library held back by HELD_BACK_MS, each kind's
    first chart page still finishes DOMContentLoaded (its links, forms and htmx controls work) well before the
    library arrives, and its charts are drawn once it does."""
    signed_in = session("reviewer", "pw-reviewer-1").context.storage_state()
    firsts = {}
    for kind, name, slug in CHART_PAGES:
        firsts.setdefault(kind, reverse(name, args=[slug]))
    for kind, path in firsts.items():
        context = browser.new_context(viewport={"width": 1280, "height": 900}, storage_state=signed_in)
        page = context.new_page()
        page.on("pageerror", console.on_page_error)

        def hold_back(route):
            time.sleep(HELD_BACK_MS / 1000)
            route.continue_()

        page.route("**/plotly-cartesian*.js", hold_back)
        page.goto(f"{live_server.url}{path}", wait_until="domcontentloaded")
        measured = page.evaluate(MEASURE)
        context.close()
        assert measured["usable"] < HELD_BACK_MS, (kind, path, measured)
        assert measured["charts"] and measured["drawn"] and measured["charts_drawn"] >= HELD_BACK_MS, (
            kind,
            path,
            measured,
        )
    assert console.errors == []
