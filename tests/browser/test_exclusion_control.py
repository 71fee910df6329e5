"""The exclusion controls in a real browser: beside the audit policy, the item health dropdown says "none" with
nothing ticked (not "all", as the runs dropdown does), ticking a flag applies it with the audit policy kept, and the
box names both parts."""

import pytest

from runs.demo import SCALES, manyih_plan
from runs.ingest import Source, ingest
from runs.models import Benchmark

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study(tmp_path):
    for step in manyih_plan(1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    return Benchmark.objects.get(kind="hierarchy")


def test_a_reviewer_leaves_out_flagged_items_beside_an_audit_policy(
    page, live_server, console, reviewer, log_in, artifacts, study
):
    log_in("reviewer", "pw-reviewer-1")
    page.goto(f"{live_server.url}/b/{study.slug}/hierarchy/?exclude=superseded")
    dropdown = page.locator("details#id_health")
    assert dropdown.locator("summary").inner_text() == "none (every item)"
    dropdown.locator("summary").click()
    page.locator("#id_health_1").check()  # ceiling
    page.wait_for_selector("#exclusion")
    page.wait_for_url("**health=ceiling**")
    assert "exclude=superseded" in page.url
    box = page.locator("#exclusion").inner_text()
    assert "Items left out: items replaced by a newer version + item health: ceiling" in box
    assert "kendall" in box.lower()  # the facts list uppercases its terms
    assert dropdown.locator("summary").inner_text().startswith("1 of 7: ceiling")
    page.locator("#id_health_1").uncheck()
    page.wait_for_url(lambda url: "health=" not in url)
    assert dropdown.locator("summary").inner_text() == "none (every item)"
    page.screenshot(path=str(artifacts / "exclusion-control.png"), full_page=True)
    assert console.errors == []
