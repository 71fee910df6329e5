"""In Chromium, the ManyIH metrics page comparing two runs: a reviewer is offered the samples that flip (CSV) and a
blind annotator is not, and no export the blind annotator's toolbar offers carries a sample's pass/fail."""

import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from runs.ingest import Options, Source, ingest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
PAGE = "/b/manyih-coding/hierarchy/?a=coder-ordinal&b=coder-scalar"
FLIPS = "Samples that flip between the compared runs (CSV)"
#: a CSV cell, or a JSON value, that is a sample's pass or fail
PASS_FAIL = re.compile(r'(?m)(?:^|,)(?:pass|fail)(?=,|\r?$)|"\s*:\s*"(?:pass|fail)"')


@pytest.fixture
def compared_runs(tmp_path):
    """Two runs of one model whose sample 0 passes in the first and fails in the second."""
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    doc = json.loads((FIXTURES / "results_small.json").read_text())
    for label in ("coder-ordinal", "coder-scalar"):
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(doc))
        ingest("manyih-results", [Source.of(path)], Options(model="acme/coder-1", run=label))
        next(r for r in doc["results"] if r["id"] == 0)["evaluation"].update(test_passed=False, overall_passed=False)


def _offered(page) -> dict[str, str]:
    """The toolbar's export links: their text -> href."""
    links = page.locator("#page-tools a[download]")
    return {links.nth(i).inner_text(): links.nth(i).get_attribute("href") for i in range(links.count())}


def test_only_the_reviewer_is_offered_the_samples_that_flip(
    session, live_server, django_user_model, compared_runs, artifacts, console
):
    django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")
    blind = django_user_model.objects.create_user("blind", password="pw-blind-1")
    blind.groups.add(Group.objects.get_or_create(name="annotator")[0])

    reviewer = session("reviewer", "pw-reviewer-1")
    reviewer.goto(f"{live_server.url}{PAGE}")
    offered = _offered(reviewer)
    assert FLIPS in offered and reviewer.get_by_role("columnheader", name="coder-scalar").is_visible()
    assert PASS_FAIL.search(reviewer.request.get(f"{live_server.url}{offered[FLIPS]}").text())

    annotator = session("blind", "pw-blind-1")
    annotator.goto(f"{live_server.url}{PAGE}")
    assert annotator.get_by_text("Flip rate", exact=True).is_visible()  # the comparison's aggregates stay
    offered = _offered(annotator)
    assert FLIPS not in offered and "all tables (JSON)" in offered
    assert annotator.get_by_role("columnheader", name="coder-scalar").count() == 0
    for text, href in offered.items():
        answer = annotator.request.get(f"{live_server.url}{href}")
        assert answer.status == 200 and not PASS_FAIL.search(answer.text()), text
    annotator.screenshot(path=str(artifacts / "blind-hierarchy-compare.png"), full_page=True)
    assert console.errors == []
