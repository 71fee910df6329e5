"""Review journey in Chromium on the demo's OctoBench study: leaderboard -> a cell -> an attempt -> a failing
item -> the message it concerns (highlighted) -> the side-by-side comparison -> a share link opened logged out."""

import re

import pytest
from django.contrib.auth.models import Group

from runs.access import EDITOR
from runs.demo import SCALES, octobench_plan
from runs.ingest import Source, ingest

pytestmark = pytest.mark.browser


@pytest.fixture
def octobench_demo(transactional_db, reviewer, tmp_path):
    """The demo's OctoBench part (small scale: instances, every run's trajectories and judges' scores); the reviewer
    may also write (the journey ends with a share link, an editor's)."""
    reviewer.groups.add(Group.objects.get_or_create(name=EDITOR)[0])
    for step in octobench_plan(1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)


def _watch(page, console):
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    page.on("requestfailed", console.on_request_failed)


def test_it_walks_from_the_leaderboard_to_the_message_and_shares_a_snapshot(
    octobench_demo, page, live_server, console, log_in, artifacts, browser
):
    log_in("reviewer", "pw-reviewer-1")

    # leaderboard, grouped by source category
    page.goto(f"{live_server.url}/b/octobench/leaderboard/?by=category")
    assert page.locator("h1").inner_text() == "Leaderboard" and "OctoBench" in page.locator(".crumbs").inner_text()
    page.wait_for_selector('[data-plotly="leaderboard-figure"] .main-svg')
    page.screenshot(path=str(artifacts / "journey-1-leaderboard.png"), full_page=True)

    # a cell -> the attempts behind it, failing first
    cell = page.locator("#results table.grid td.num a").first
    cell.click()
    page.wait_for_load_state("networkidle")
    assert "/b/octobench/attempts/" in page.url and "group=" in page.url
    assert page.locator("ul.failing-items li").count() > 0
    page.screenshot(path=str(artifacts / "journey-2-drilldown.png"), full_page=True)

    # a failing item -> the attempt page at that item
    item_link = page.locator("ul.failing-items a").first
    item_key = item_link.inner_text()
    item_link.click()
    page.wait_for_load_state("networkidle")
    assert re.search(r"/attempts/\d+/#item-\d+$", page.url)
    item = page.locator(page.url[page.url.index("#") :])
    assert item.locator("code").first.inner_text() == item_key and "failed" in item.get_attribute("class")
    page.screenshot(path=str(artifacts / "journey-3-attempt.png"))

    # the message it concerns: opened on its page, scrolled to and highlighted
    evidence = item.get_by_role("link", name=re.compile(r"^evidence #\d+$"))
    index = int(evidence.inner_text().split("#")[1])
    evidence.click()
    page.wait_for_load_state("networkidle")
    message = page.locator(f"#m-0-{index}")
    assert f"at={index}" in page.url and page.url.endswith(f"#m-0-{index}")
    assert message.evaluate("e => e.matches(':target')")
    assert message.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
    assert message.locator(".role").first.inner_text().lower() == "assistant"
    assert message.is_visible() and message.evaluate("e => e.getBoundingClientRect().top < window.innerHeight")
    page.screenshot(path=str(artifacts / "journey-4-message.png"))

    # compare with another attempt on the same instance
    page.locator("details.compare-with summary").click()
    page.locator("details.compare-with a").first.click()
    page.wait_for_load_state("networkidle")
    assert "/compare/?a=" in page.url
    assert page.get_by_role("heading", name=re.compile("judged differently")).is_visible()
    assert page.locator("#side-a .msg").count() > 0 and page.locator("#side-b .msg").count() > 0
    page.screenshot(path=str(artifacts / "journey-5-compare.png"))

    # share the leaderboard with its drill-down, then open the link in a logged-out context
    page.goto(f"{live_server.url}/b/octobench/leaderboard/?by=category")
    page.locator("details.share summary").click()
    page.get_by_label(re.compile("include the attempts")).check()
    page.get_by_role("button", name="Create share link").click()
    url = page.locator("input.share-url").input_value()
    assert re.search(r"/s/[\w-]{40,}/$", url)
    page.screenshot(path=str(artifacts / "journey-6-share-created.png"))

    outsider = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        public = outsider.new_page()
        _watch(public, console)
        public.goto(url)
        assert public.url == url  # no login redirect
        assert public.get_by_role("button", name="Log out").count() == 0
        assert public.locator("h1").inner_text() == "Leaderboard"  # the page's own heading, as the reviewer saw it
        assert (
            public.get_by_text("OctoBench").first.is_visible() and public.get_by_text("shared page").first.is_visible()
        )
        assert public.locator("table.grid tbody tr").count() >= 6
        public.wait_for_selector('[data-plotly="leaderboard-figure"] .main-svg')  # the page's chart, frozen
        public.screenshot(path=str(artifacts / "journey-7-shared.png"), full_page=True)
        # the drill-down the link includes, and nothing beyond it
        public.locator("table.grid td a").first.click()
        public.wait_for_load_state("networkidle")
        assert "/attempts/?model=" in public.url and public.locator("ul.failing-items li").count() > 0
        assert public.goto(f"{live_server.url}/b/octobench/leaderboard/").url.startswith(f"{live_server.url}/login/")
    finally:
        outsider.close()

    assert console.errors == []
