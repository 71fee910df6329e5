"""The job page in a real browser speaks of each kind of job in its own terms: a re-check counts the attempts it
checked (not bytes) and leads back to the runs it checked, instead of offering a new import."""

from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest
from runs.jobs import job_create, job_execute
from runs.models import Attempt, Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"


@pytest.fixture
def two_runs() -> list[Run]:
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    for label in ("acme-ordinal", "acme-scalar"):
        ingest("manyih-results", [Source.of(FIXTURES / "results_small.json")], Options(model="acme", run=label))
    return list(Run.objects.order_by("label"))


def test_a_recheck_job_counts_attempts_and_leads_to_the_runs_it_checked(
    page, live_server, console, editor, log_in, two_runs, artifacts
):
    job = job_create(
        kind="recheck",
        params={"run_ids": [r.id for r in two_runs], "benchmark": two_runs[0].benchmark.slug},
        user=editor,
    )
    job_execute(job.id)
    attempts = Attempt.objects.filter(run__in=two_runs).count()
    log_in("editor", "pw-editor-1")

    page.goto(f"{live_server.url}/jobs/{job.id}/")
    status = page.locator("#job-status").inner_text()
    assert f"{attempts} of {attempts} attempts checked" in status
    assert "bytes" not in status
    assert page.get_by_role("link", name="New import").count() == 0
    page.screenshot(path=str(artifacts / "recheck-job.png"), full_page=True)

    page.get_by_role("link", name="See the re-checked runs").click()
    page.wait_for_load_state("networkidle")
    assert "/hierarchy/recheck/?run=acme-ordinal&run=acme-scalar" in page.url
    page.go_back()
    page.locator("#job-status").get_by_role("link", name="acme-scalar").click()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("/hierarchy/recheck/?run=acme-scalar")
    assert "acme-scalar" in page.locator("main").inner_text()
    assert console.errors == []
