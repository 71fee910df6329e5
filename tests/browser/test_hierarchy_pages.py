"""Hierarchy pages in a real browser: a hierarchy sample page and the conflict-resolution table, after a style re-check."""

from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Run
from runs.recheck import recheck_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"


@pytest.fixture
def rechecked_run():
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(FIXTURES / "results_small.json")], Options(model="acme", run="acme-ordinal"))
    run = Run.objects.get(label="acme-ordinal")
    recheck_run(run=run)
    return run


def test_a_reviewer_reads_a_sample_and_the_conflict_table(
    page, live_server, console, reviewer, log_in, artifacts, rechecked_run
):
    log_in("reviewer", "pw-reviewer-1")
    slug = rechecked_run.benchmark.slug
    attempt = Attempt.objects.filter(run=rechecked_run).order_by("id").first()

    page.goto(f"{live_server.url}/b/{slug}/hierarchy/attempts/{attempt.pk}/")
    assert page.locator("h1").first.is_visible()
    body = page.locator("main").inner_text()
    assert "Conflict groups" in body and "winner" in body
    assert "Privilege" in body
    page.screenshot(path=str(artifacts / "hierarchy-sample.png"), full_page=True)

    page.goto(f"{live_server.url}/b/{slug}/hierarchy/conflicts/")
    table = page.locator("table").first
    assert table.is_visible()
    assert "acme" in page.locator("main").inner_text()
    page.screenshot(path=str(artifacts / "hierarchy-conflicts.png"), full_page=True)
    assert console.errors == []
