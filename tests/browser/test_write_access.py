"""In Chromium: a reviewer reads and is offered nothing that writes; an editor's re-check and revoke each stop on a
page that says what will change, and happen only after Confirm."""

from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.test import RequestFactory
from django.urls import reverse

from runs.access import EDITOR, REVIEWER
from runs.ingest import Options, Source, ingest
from runs.models import ChecklistItem, Job, Run, ShareLink, Verdict
from runs.pages import page_snapshot
from runs.recheck import CHECKERS
from runs.sharing import page_share_link_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
JUDGE = CHECKERS["hierarchy"].judge


@pytest.fixture
def study(django_user_model):
    """A ManyIH run not yet re-checked, a reviewer (rita) and an editor (ed)."""
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(FIXTURES / "results_small.json")], Options(model="acme", run="acme-ordinal"))
    for name, group in (("rita", REVIEWER), ("ed", EDITOR)):
        user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return Run.objects.get(label="acme-ordinal")


def _no_csp_violation(page) -> list:
    """The Content-Security-Policy violations the page reported (conftest.WATCH_CSP)."""
    return page.evaluate("window.__csp")


def test_a_reviewer_is_offered_nothing_that_writes(study, session, live_server, console):
    page = session("rita", "pw-rita-1")
    slug = study.benchmark.slug

    page.goto(f"{live_server.url}/b/{slug}/hierarchy/recheck/")
    assert page.get_by_role("button", name="Re-check 1 run").count() == 0
    assert page.get_by_text("Re-checks are started by editors and leads").is_visible()
    assert page.locator("nav.mainnav").get_by_role("link", name="Import").count() == 0
    page.goto(f"{live_server.url}/b/{slug}/hierarchy/")
    assert page.locator("details.share").count() == 0 and page.get_by_text("(CSV)").first.is_visible()
    assert page.get_by_role("button", name="Re-check 1 run").count() == 0
    assert _no_csp_violation(page) == [] and console.errors == []


def test_an_editors_re_check_says_what_it_adds_and_starts_on_confirm(study, session, live_server, console):
    page = session("ed", "pw-ed-1")
    expected = ChecklistItem.objects.filter(CHECKERS["hierarchy"].items, instance__attempts__run=study).count()

    page.goto(f"{live_server.url}/b/{study.benchmark.slug}/hierarchy/recheck/")
    page.get_by_role("button", name="Re-check 1 run").click()
    page.wait_for_load_state("networkidle")
    said = page.locator("main").inner_text()
    assert page.get_by_role("heading", name=f"Re-check 1 run of {study.benchmark.name}?").is_visible()
    assert f"This adds up to {expected:,} verdicts from judge {JUDGE} to 1 run (acme-ordinal)" in said
    assert f"will show judge {JUDGE}, which they do not show today" in said
    assert not Job.objects.exists() and not Verdict.objects.filter(judge__name=JUDGE).exists()  # nothing yet

    page.get_by_role("button", name="Confirm: start the re-check").click()
    page.wait_for_url(f"{live_server.url}/jobs/*/")
    page.get_by_text("succeeded").first.wait_for()
    assert Job.objects.get().state == "succeeded"
    assert Verdict.objects.filter(judge__name=JUDGE).count() == expected
    assert _no_csp_violation(page) == [] and console.errors == []


def test_an_editors_revoke_says_who_loses_the_link_and_cancel_keeps_it(
    study, session, live_server, console, django_user_model
):
    path = reverse("runs:hierarchy-metrics", args=[study.benchmark.slug])
    request = RequestFactory().get(path)
    request.user = django_user_model.objects.get(username="ed")
    link, _ = page_share_link_create(
        user=request.user,
        benchmark=study.benchmark,
        snapshot=page_snapshot(request, path=path, benchmark_slug=study.benchmark.slug, include_attempts=False),
    )
    page = session("ed", "pw-ed-1")

    page.goto(f"{live_server.url}/share-links/")
    page.get_by_role("button", name="Revoke").click()
    page.wait_for_load_state("networkidle")
    said = page.locator("main").inner_text()
    assert "Anyone holding this link will get a 404" in said and "cannot be undone" in said
    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"{live_server.url}/share-links/")
    assert ShareLink.objects.get(pk=link.pk).revoked_at is None

    page.get_by_role("button", name="Revoke").click()
    page.get_by_role("button", name="Confirm: revoke the link").click()
    page.wait_for_url(f"{live_server.url}/share-links/")
    assert ShareLink.objects.get(pk=link.pk).revoked_at is not None
    assert page.get_by_role("button", name="Revoke").count() == 0 and "revoked" in page.locator("main").inner_text()
    assert _no_csp_violation(page) == [] and console.errors == []
