"""Verdict audit journey in Chromium: a lead creates and starts a verdict audit, two blind annotators judge each
attempt's trajectory against its item with the keyboard alone (never shown a verdict), the lead adjudicates the
disagreement, and the leaderboard's calibrated view corrects the lenient judge."""

import re

import pytest
from django.contrib.auth.models import Group

from runs.models import AgentModel, Attempt, Benchmark, BenchmarkKind, ChecklistItem, Instance, Judge, Run, Verdict
from runs.services import rollups_rebuild_for_attempts
from runs.trajectory_store import trajectory_save

from .test_audit_journey import _session

pytestmark = pytest.mark.browser


@pytest.fixture
def verdict_world(transactional_db, django_user_model):
    """Lead, two annotators; alpha fails every "x" item (judge "strict" says so, judge "lenient" passes everything)."""
    users = {}
    for name, group in (("lead", "lead"), ("ann_a", "annotator"), ("ann_b", "annotator")):
        users[name] = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
        users[name].groups.add(Group.objects.get_or_create(name=group)[0])
    bench = Benchmark.objects.create(slug="octo-verdicts", name="Octo verdicts", kind=BenchmarkKind.CHECKLIST)
    strict, lenient = Judge.objects.create(name="strict"), Judge.objects.create(name="lenient")
    runs = {
        m: Run.objects.create(benchmark=bench, model=AgentModel.objects.create(name=m), label=f"{m}-r1")
        for m in ("alpha", "beta")
    }
    attempts = []
    for n in (1, 2):
        inst = Instance.objects.create(
            benchmark=bench, external_id=f"task-{n}", content_hash="h", spec={"user_query": "Fix"}
        )
        items = [
            ChecklistItem.objects.create(
                instance=inst,
                key=key,
                position=i,
                category="System Prompt",
                description=f"Check {key}",
                content_hash="h",
            )
            for i, key in enumerate("xy")
        ]
        for model, run in runs.items():
            attempt = Attempt.objects.create(run=run, instance=inst, response=f"{model} answer {n}")
            attempts.append(attempt.id)
            trajectory_save(
                attempt_id=attempt.id,
                threads=[
                    {"meta": {"thread": "main"}, "messages": [{"role": "assistant", "content": f"TRAJ-{model}-{n}"}]}
                ],
            )
            for item in items:
                fail = model == "alpha" and item.key == "x"
                Verdict.objects.create(
                    attempt=attempt, item=item, judge=strict, result="fail" if fail else "pass", reasoning="STRICT-WHY"
                )
                Verdict.objects.create(
                    attempt=attempt, item=item, judge=lenient, result="pass", reasoning="LENIENT-WHY"
                )
    rollups_rebuild_for_attempts(attempts)
    return {"users": users, "benchmark": bench}


def _truth_key(key: str) -> str:
    """The key a person presses: 1 satisfied, 2 not satisfied (alpha's attempts fail their "x" item)."""
    return "2" if "/alpha-r1/" in key and key.endswith("/x") else "1"


def test_a_verdict_audit_runs_from_campaign_to_calibrated_leaderboard(
    browser, live_server, console, verdict_world, artifacts
):
    bench = verdict_world["benchmark"]
    lead_ctx, lead = _session(browser, live_server, console, "lead")
    lead.goto(f"{live_server.url}/audits/new/")
    lead.fill("#id_name", "Verdict journey")
    lead.select_option("#id_subject", "verdicts")
    lead.check(f"input[name=benchmarks][value='{bench.pk}']")
    lead.fill("#id_size", "8")
    lead.fill("#id_seed", "2")
    for name in ("ann_a", "ann_b"):
        lead.check(f"input[name=annotators][value='{verdict_world['users'][name].pk}']")
    lead.get_by_role("button", name="Create draft").click()
    lead.get_by_role("button", name="Start: freeze the sample").click()
    campaign_url = lead.url

    for name in ("ann_a", "ann_b"):
        ctx, page = _session(browser, live_server, console, name)
        page.goto(campaign_url.rstrip("/") + "/label/")
        page.wait_for_load_state("load")
        page.keyboard.press("Enter")  # take the first unit
        page.wait_for_selector("article.unit, .unit-done")
        first = True
        while page.locator("article.unit").count():
            html = page.content()
            for secret in ("STRICT-WHY", "LENIENT-WHY", "strict", "lenient"):
                assert secret not in html  # no judge, verdict or reasoning before the unit settles
            assert page.locator("#trajectory").inner_text().count("TRAJ-")
            assignment = page.locator("article.unit").get_attribute("data-assignment")
            key = page.locator("article.unit code").first.inner_text()
            # ann_b cannot tell on the first unit: one disagreement for the lead
            page.keyboard.press("3" if name == "ann_b" and first else _truth_key(key))
            page.keyboard.press("Enter")
            first = False
            page.wait_for_function(
                "a => !document.querySelector('article.unit') || document.querySelector('article.unit').dataset.assignment !== a",
                arg=assignment,
            )
        assert page.get_by_text("Nothing left for you").is_visible()
        if name == "ann_a":
            page.screenshot(path=str(artifacts / "verdict-label-done.png"), full_page=True)
        ctx.close()

    lead.goto(campaign_url.rstrip("/") + "/adjudicate/")
    lead.get_by_role("link", name="Adjudicate").first.click()
    lead.wait_for_load_state("load")
    decided = 0
    while "/units/" in lead.url:
        assert lead.locator("#judge-verdicts").count() == 1  # the lead sees the judges and their reasoning
        key = lead.locator(".card code").first.inner_text()
        lead.keyboard.press("i" if _truth_key(key) == "2" else "v")
        with lead.expect_navigation():
            lead.keyboard.press("Enter")
        decided += 1
        assert decided <= 2
    assert decided == 1

    lead.goto(f"{live_server.url}/b/{bench.slug}/leaderboard/")
    lead.get_by_role("link", name="Calibrated by a verdict audit").click()
    lead.wait_for_url(re.compile(r".*/audits/calibrated/octo-verdicts/.*"))
    table = lead.locator("#calibrated-table").inner_text()
    assert "lenient" in table and "alpha" in table
    lead.screenshot(path=str(artifacts / "verdict-calibrated.png"), full_page=True)
    row = next(
        r.inner_text()
        for r in lead.locator("#calibrated-table tbody tr").all()
        if r.inner_text().startswith("alpha") and "lenient" in r.inner_text()
    )
    # the lenient judge's 100% CSR for alpha comes down towards the humans' 50% (half of alpha's items fail)
    assert re.search(r"100\.00\s", row)
    assert lead.locator("#rankings").count() == 1
    lead_ctx.close()
    assert console.errors == []
