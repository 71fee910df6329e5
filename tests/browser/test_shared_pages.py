"""What an outsider with a share link sees, in Chromium: the page as its creator saw it, frozen, with its caveats,
spreads, judge and layout (the demo's OctoBench leaderboard and OctoBench-Conflict page), and nothing to click
beyond the link's scope."""

import re

import pytest
from django.contrib.auth.models import Group
from django.http import HttpRequest
from django.urls import reverse

from runs import pages, sharing
from runs.demo import SCALES, conflict_plan, octobench_plan
from runs.ingest import Source, ingest
from runs.models import Benchmark

pytestmark = pytest.mark.browser


@pytest.fixture
def demo(transactional_db, django_user_model, tmp_path):
    """The demo's OctoBench and OctoBench-Conflict parts (small scale) and a lead who shares their pages."""
    for plan in (octobench_plan, conflict_plan):
        for step in plan(1, SCALES["small"], tmp_path / plan.__name__).steps:
            ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    lead = django_user_model.objects.create_user("lena", password="pw-lena-1")
    lead.groups.add(Group.objects.get_or_create(name="lead")[0])
    return lead


def _share(user, slug: str, path: str) -> str:
    """A link to the page at `path` made with its attempts, as the Share form makes it; its token."""
    request = HttpRequest()
    request.user, request.META = user, {"SERVER_NAME": "portal", "SERVER_PORT": "80"}
    snapshot = pages.page_snapshot(request, path=path, benchmark_slug=slug, include_attempts=True)
    return sharing.page_share_link_create(user=user, benchmark=Benchmark.objects.get(slug=slug), snapshot=snapshot)[1]


def _outside(page, token: str) -> list[str]:
    hrefs = page.locator("main a[href]").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    return [h for h in hrefs if not h.startswith((f"/s/{token}/", "#", "/help/"))]


def test_an_outsider_reads_the_leaderboards_caveats_and_spreads_as_its_creator_did(
    demo, session, live_server, console, artifacts
):
    token = _share(demo, "octobench", reverse("runs:checklist-leaderboard", args=["octobench"]))
    page = session()
    page.goto(f"{live_server.url}/s/{token}/")
    notes = page.locator("#reference-notes")
    assert notes.is_visible()
    assert re.search(
        r"\d+ verdicts? carried a result string the reference scorer does not recognise", notes.inner_text()
    )
    assert re.search(r"\d+ judge results? scored nothing", notes.inner_text())
    assert page.get_by_role("columnheader", name="Macro CSR %").is_visible()
    spread = page.locator("table.grid tbody tr").first.locator("td").nth(3)  # macro CSR, ± the std across judges
    assert re.fullmatch(r"\d+\.\d\d ± \d+\.\d\d", " ".join(spread.inner_text().split()))
    page.wait_for_selector('[data-plotly="leaderboard-figure"] .main-svg')
    assert _outside(page, token) == []
    page.screenshot(path=str(artifacts / "shared-leaderboard.png"), full_page=True)

    page.locator("table.grid tbody tr").first.locator("td a").first.click()  # a model: its frozen attempts
    page.wait_for_url(re.compile(rf"/s/{token}/attempts/\?model="))
    assert "as they were when the link was made" in page.get_by_role("note").inner_text()
    page.locator("#rows tbody tr td a").first.click()
    page.wait_for_url(re.compile(rf"/s/{token}/attempts/\d+/"))
    assert "as they were when the link was made" in page.get_by_role("note").inner_text()
    assert console.errors == []


def test_an_outsider_sees_the_conflict_page_laid_out_as_its_source_with_its_judge(
    demo, session, live_server, console, artifacts
):
    path = reverse("runs:conflict-metrics", args=["octobench-conflict"])
    token = _share(demo, "octobench-conflict", path)
    page = session()
    page.goto(f"{live_server.url}/s/{token}/")
    heading = page.get_by_role("heading", name=re.compile("Resolution rate per conflict type"))
    assert re.search(r"judge \S+ · \d+ attempts", heading.inner_text())
    assert page.get_by_role("heading", name="System-prompt rate per scenario").is_visible()
    assert page.locator("table.sticky-first").count() == 2  # the pivot tables of the source, not a flat list
    assert page.get_by_role("heading", name=re.compile("Attempts behind")).count() == 0  # no cell was chosen
    page.wait_for_selector('[data-plotly="conflict-figure"] .main-svg')
    assert _outside(page, token) == []
    page.screenshot(path=str(artifacts / "shared-conflict.png"), full_page=True)
    assert console.errors == []
