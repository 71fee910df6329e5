"""Plotly markup in model names, drawn by Chromium: no link, no restyled text, the name shown literally.

Plotly renders a subset of HTML in labels (`<a href>` becomes a clickable SVG link, `<span style>`
restyles); runs.templatetags.figures escapes every name for it. Checked on the leaderboard and on the
public share page, where anyone with the URL sees the chart.
"""

import re
import runpy
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.browser

build_study = runpy.run_path(str(Path(__file__).resolve().parents[1] / "runs" / "test_views_checklist.py"))[
    "build_study"
]

LINK = '<a href="https://example.org/pwned">plotly link</a>'
HUGE = '<span style="font-size:200px">HUGE</span>'


def test_model_names_with_plotly_markup_draw_as_text(session, live_server, console, reviewer, editor, artifacts):
    bench, _ = build_study(models=(LINK, HUGE))
    owner = Client()
    owner.force_login(editor)  # share links are an editor's; the reviewer reads them
    created = owner.post(
        reverse("runs:page-share-create", args=[bench.slug]), {"path": f"/b/{bench.slug}/leaderboard/"}
    )
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)
    page = session("reviewer", "pw-reviewer-1")
    problems = {}

    for name, path in (("leaderboard", f"/b/{bench.slug}/leaderboard/"), ("share", f"/s/{token}/")):
        console.errors.clear()
        page.goto(f"{live_server.url}{path}")
        page.wait_for_selector("[data-plotly] .main-svg", state="attached")
        chart = page.evaluate("""() => {
            const root = document.querySelector('[data-plotly]');
            const sizes = Array.from(root.querySelectorAll('text, tspan'))
                .map(el => parseFloat(el.style.fontSize || getComputedStyle(el).fontSize) || 0);
            return {links: root.querySelectorAll('a').length, text: root.textContent, biggest: Math.max(0, ...sizes)};
        }""")
        found = [f"{chart['links']} links in the chart"] if chart["links"] else []
        found += [f"text of {chart['biggest']}px"] if chart["biggest"] > 40 else []
        found += [f"{label!r} not shown literally" for label in (LINK, HUGE) if label not in chart["text"]]
        found += page.evaluate("window.__csp") + console.errors
        if found:
            problems[name] = found
            page.screenshot(path=str(artifacts / f"hostile-chart-{name}.png"), full_page=True)

    assert problems == {}
