"""Audit journey in Chromium: a lead creates and starts a campaign for three assigned annotators, they
label with the keyboard alone in separate sessions (taking units, skipping one, saving), a fourth
annotator who is not assigned gets nothing, the lead adjudicates with the keyboard from one disputed
unit to the next, and the leaderboard under the exclusion policy shows the rank change. An annotator typing at 80 ms per key the moment
a unit shows (or before it shows) loses no key, and neither does a lead adjudicating before the page has loaded or while a
decision is on its way, which is posted once."""

import re
import time

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from audits import services as audit_services
from audits.models import Adjudication, AuditUnit, Label, UnitState
from audits.rubrics import CHECKLIST
from runs.models import AgentModel, Attempt, Benchmark, BenchmarkKind, ChecklistItem, Instance, Judge, Run, Verdict
from runs.services import rollups_rebuild_for_attempts

pytestmark = pytest.mark.browser


@pytest.fixture
def audit_world(transactional_db, django_user_model):
    """Lead, two annotators, and a benchmark where model alpha fails only the vague "x" items (beta wins until they go)."""
    users = {}
    for name, group in (
        ("lead", "lead"),
        ("ann_a", "annotator"),
        ("ann_b", "annotator"),
        ("ann_c", "annotator"),
        ("ann_out", "annotator"),
    ):
        users[name] = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
        users[name].groups.add(Group.objects.get_or_create(name=group)[0])
    bench = Benchmark.objects.create(slug="octo-journey", name="Octo journey", kind=BenchmarkKind.CHECKLIST)
    judge = Judge.objects.create(name="judge-1")
    runs = {
        m: Run.objects.create(benchmark=bench, model=AgentModel.objects.create(name=m), label=f"{m}-r1")
        for m in ("alpha", "beta")
    }
    attempts = []
    for n in (1, 2, 3):
        inst = Instance.objects.create(
            benchmark=bench,
            external_id=f"task-{n}",
            content_hash="h",
            spec={"system_prompt": "Use tabs.", "user_query": f"Fix bug {n}"},
        )
        items = {
            key: ChecklistItem.objects.create(
                instance=inst, key=key, position=i, category="System Prompt", description=desc, content_hash="h"
            )
            for i, (key, desc) in enumerate((("x", "Check the output is nice"), ("y", "Check tabs are used")))
        }
        for model, run in runs.items():
            attempt = Attempt.objects.create(run=run, instance=inst, response=f"{model} {n}")
            attempts.append(attempt.id)
            for key, item in items.items():
                fail = (model == "alpha" and key == "x") or (model == "beta" and key == "y" and n < 3)
                Verdict.objects.create(attempt=attempt, item=item, judge=judge, result="fail" if fail else "pass")
    rollups_rebuild_for_attempts(attempts)
    return {"users": users, "benchmark": bench}


def _session(browser, live_server, console, username):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"pw-{username}-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")
    return context, page


def _label_everything(page, flag_x: bool, artifacts, name) -> int:
    """Answer each item with the keyboard only; "x" items are flagged when `flag_x`. The first unit is skipped
    once (it comes back last). Returns how many were saved."""
    saved = 0
    skipped = False
    page.keyboard.press("Enter")  # take the next unit (reserving is a POST)
    page.wait_for_selector("article.unit, .unit-done")
    while page.locator("article.unit").count():
        assignment = page.locator("article.unit").get_attribute("data-assignment")
        key = page.locator("article.unit code").first.inner_text()
        if not skipped:
            page.screenshot(path=str(artifacts / f"audit-label-{name}.png"), full_page=True)
            page.keyboard.press("s")
            skipped = True
        else:
            keys = ["2", "1", "1", "2"] if flag_x and key.endswith("/x") else ["1", "1", "1", "1"]
            for k in keys:
                page.keyboard.press(k)
            page.keyboard.press("Enter")
            saved += 1
        page.wait_for_function(
            "a => !document.querySelector('article.unit') || document.querySelector('article.unit').dataset.assignment !== a",
            arg=assignment,
        )
        assert re.search(rf"{saved} of \d+ done", page.locator("#queue-progress").inner_text())
    assert page.get_by_text("Nothing left for you").is_visible()
    return saved


def test_it_runs_an_audit_from_campaign_to_leaderboard_change(browser, live_server, console, audit_world, artifacts):
    bench = audit_world["benchmark"]
    lead_ctx, lead = _session(browser, live_server, console, "lead")
    lead.get_by_role("link", name="Audits").click()
    lead.get_by_role("link", name="New campaign").click()
    lead.fill("#id_name", "Journey audit")
    lead.select_option("#id_subject", "checklist_items")
    lead.check(f"input[name=benchmarks][value='{bench.pk}']")
    lead.fill("#id_size", "6")
    lead.fill("#id_seed", "5")
    lead.fill("#id_annotators_per_unit", "3")
    for name in ("ann_a", "ann_b", "ann_c"):
        lead.check(f"input[name=annotators][value='{audit_world['users'][name].pk}']")
    lead.get_by_role("button", name="Create draft").click()
    assert lead.get_by_text("Sample preview").is_visible()
    lead.screenshot(path=str(artifacts / "audit-draft.png"), full_page=True)
    lead.get_by_role("button", name="Start: freeze the sample").click()
    assert lead.get_by_text("Units go to: ann_a, ann_b, ann_c.").is_visible()
    assert lead.get_by_role("link", name="Start labelling").count() == 0  # the lead is not one of them
    campaign_url = lead.url

    ctx, page = _session(browser, live_server, console, "ann_out")
    page.goto(campaign_url.rstrip("/") + "/label/")
    assert page.get_by_text("You are not assigned to this campaign").is_visible()
    ctx.close()
    for name, flag_x in (("ann_a", True), ("ann_b", False), ("ann_c", False)):
        ctx, page = _session(browser, live_server, console, name)
        page.goto(campaign_url)
        page.get_by_role("link", name="Start labelling").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r".*/label/$"))
        page.wait_for_load_state("load")  # the labelling script is there
        assert _label_everything(page, flag_x, artifacts, name) == 6
        ctx.close()

    lead.goto(campaign_url.rstrip("/") + "/adjudicate/")
    lead.screenshot(path=str(artifacts / "audit-queue.png"), full_page=True)
    lead.get_by_role("link", name="Adjudicate").first.click()
    lead.wait_for_load_state("load")
    decided = 0
    while "/units/" in lead.url:
        for n in (1, 2, 3):
            assert lead.get_by_role("heading", name=f"Annotator {n}").is_visible()
        assert lead.get_by_text("ann_a").count() == 0
        assert lead.get_by_text("Use tabs.").count()  # the instance's system prompt, as the annotators saw it
        if decided == 0:
            lead.screenshot(path=str(artifacts / "audit-adjudicate.png"), full_page=True)
        lead.keyboard.press("i")
        with lead.expect_navigation():
            lead.keyboard.press("Enter")
        decided += 1
        assert decided <= 3
    assert decided == 3 and "No disputed unit is left" in lead.content()

    # the leaderboard itself: pick the policy in its filter form (htmx swaps the results in)
    lead.goto(f"{live_server.url}/b/{bench.slug}/leaderboard/")
    assert lead.locator("#results tbody tr").first.inner_text().startswith("beta")
    lead.select_option("#id_exclude", "adjudicated_invalid")
    lead.wait_for_selector("#exclusion")
    assert "exclude=adjudicated_invalid" in lead.url
    assert "alpha now above beta" in lead.locator("#exclusion").inner_text()
    first = lead.locator("#results tbody tr").first.inner_text()
    assert first.startswith("alpha") and "▲ 1" in first
    # the chart is drawn again from the swapped-in figure (htmx drops script elements from swapped content)
    lead.wait_for_selector('[data-plotly="leaderboard-figure"] .main-svg', timeout=5000)
    lead.screenshot(path=str(artifacts / "audit-leaderboard-excluded.png"), full_page=True)
    lead.get_by_role("link", name="Items behind each swap").click()

    lead.wait_for_url(re.compile(r".*/audits/effect/.*exclude=adjudicated_invalid.*"))
    lead.screenshot(path=str(artifacts / "audit-effect.png"), full_page=True)
    rows = lead.locator("#effect-table tbody tr")
    assert re.match(r"alpha\s+0\.00\s+100\.00", rows.nth(0).inner_text())
    assert "▲ 1" in rows.nth(0).inner_text()
    assert lead.get_by_text("alpha gained on beta").is_visible()
    lead_ctx.close()
    assert console.errors == []


#: a unit answered from the keyboard: 1 1 1 3 is yes, yes, neither, and the third "overall" answer
KEYS = "1113"
ANSWERS = {c.name: c.values[int(k) - 1] for c, k in zip(CHECKLIST.criteria, KEYS, strict=True)}


@pytest.fixture
def labelling(audit_world, monkeypatch):
    """A started campaign of 6 units for ann_a, on a server that takes 0.3 s to reserve a unit and to save a label
    (so keys typed at 80 ms arrive while the next unit is on its way)."""
    lead, ann = audit_world["users"]["lead"], audit_world["users"]["ann_a"]
    campaign = audit_services.campaign_create(
        name="keys",
        subject="checklist_items",
        benchmarks=[audit_world["benchmark"]],
        strata=["category"],
        allocation="proportional",
        size=6,
        seed=3,
        user=lead,
        annotators=[ann],
    )
    audit_services.campaign_start(campaign)
    for name in ("assignment_next", "label_submit"):
        original = getattr(audit_services, name)

        def slow(*args, _original=original, **kwargs):
            time.sleep(0.3)
            return _original(*args, **kwargs)

        monkeypatch.setattr(audit_services, name, slow)
    return {"campaign": campaign, "annotator": ann}


def _wait_for_done_or_error(page, done: int) -> None:
    """Until the queue line says `done` labels are saved, or the save status shows an error (or 15 s passed: the
    page is stuck, and the caller's assertions on the saved labels say what was lost)."""
    try:
        page.wait_for_function(
            "n => new RegExp('\\\\b' + n + ' of \\\\d+ done').test(document.getElementById('queue-progress').innerText)"
            " || document.querySelector('#save-status.is-error')",
            arg=done,
            timeout=15_000,
        )
    except PlaywrightTimeoutError:
        pass


def test_it_keeps_every_key_typed_while_the_next_unit_is_on_its_way(session, live_server, labelling, console):
    page = session("ann_a", "pw-ann_a-1")
    page.goto(f"{live_server.url}/audits/{labelling['campaign'].pk}/label/")
    page.wait_for_load_state("load")
    page.keyboard.press("Enter")  # take the first unit, then answer four units without waiting for any
    for _ in range(4):
        page.keyboard.type(KEYS, delay=80)
        page.keyboard.press("Enter")
    _wait_for_done_or_error(page, 4)
    assert "Answer every question" not in page.locator("#save-status").inner_text()
    labels = Label.objects.filter(assignment__annotator=labelling["annotator"])
    assert [label.values for label in labels] == [ANSWERS] * 4
    assert console.errors == []


def test_it_shows_no_unit_before_its_keys_are_listened_to(session, live_server, labelling, console):
    """A unit visible before the labelling script runs would drop what is typed at it: hold the script back
    and type at whatever shows; then let it run and type at the unit."""
    ann = labelling["annotator"]
    audit_services.assignment_next(labelling["campaign"], ann)  # a held unit: the page shows it on GET
    page = session("ann_a", "pw-ann_a-1")
    held = []
    page.route("**/js/labelling.js*", lambda route: held.append(route))
    page.goto(f"{live_server.url}/audits/{labelling['campaign'].pk}/label/", wait_until="commit")
    while not held:
        page.wait_for_timeout(20)
    page.wait_for_timeout(500)  # time for the page to show what it can without the script
    if page.locator("article.unit").is_visible():
        page.keyboard.type(KEYS, delay=80)  # a person types at the unit on the screen
        held[0].continue_()
    else:
        held[0].continue_()
        page.locator("article.unit").wait_for()
        page.keyboard.type(KEYS, delay=80)
    page.keyboard.press("Enter")
    _wait_for_done_or_error(page, 1)
    assert [label.values for label in Label.objects.filter(assignment__annotator=ann)] == [ANSWERS]
    assert console.errors == []


def test_it_lands_an_annotator_on_their_queue_when_they_sign_in(session, live_server, labelling, console):
    page = session("ann_a", "pw-ann_a-1")
    assert page.url == f"{live_server.url}/audits/{labelling['campaign'].pk}/label/"
    assert page.get_by_role("button", name="Take the next unit").is_visible()
    page.keyboard.press("Enter")  # the button has the focus: one key to the first unit
    page.locator("article.unit").wait_for()
    assert console.errors == []


def test_it_shows_that_the_draft_is_being_created_until_it_is(session, live_server, audit_world, monkeypatch, console):
    create = audit_services.campaign_create

    def slow_create(**kwargs):
        time.sleep(1.5)
        return create(**kwargs)

    monkeypatch.setattr(audit_services, "campaign_create", slow_create)
    lead = session("lead", "pw-lead-1")
    lead.goto(f"{live_server.url}/audits/new/")
    lead.fill("#id_name", "Slow draft")
    lead.check(f"input[name=benchmarks][value='{audit_world['benchmark'].pk}']")
    lead.fill("#id_size", "4")
    seen = []  # what the button says half a second after the click, while the server still works
    lead.on("console", lambda message: seen.append(message.text) if message.text.startswith("button:") else None)
    lead.evaluate("""() => document.addEventListener('submit', e => setTimeout(() => console.log(
        'button: ' + e.submitter.textContent + (e.submitter.disabled ? ' (disabled)' : '')), 500))""")
    lead.get_by_role("button", name="Create draft").click()
    lead.get_by_text("Sample preview").wait_for()
    assert seen == ["button: Creating draft… (disabled)"]
    assert lead.locator("#campaign-live").count() == 0  # a draft has nothing to poll
    assert console.errors == [] and lead.evaluate("window.__csp") == []


def test_it_updates_the_campaign_counts_while_people_label(session, live_server, audit_world, monkeypatch, console):
    monkeypatch.setattr("audits.views.CAMPAIGN_POLL_SECONDS", 1)
    users = audit_world["users"]
    campaign = audit_services.campaign_start(
        audit_services.campaign_create(
            name="live",
            subject="checklist_items",
            benchmarks=[audit_world["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=2,
            seed=3,
            user=users["lead"],
            annotators=[users["ann_a"], users["ann_b"]],
        )
    )
    lead = session("lead", "pw-lead-1")
    lead.goto(f"{live_server.url}/audits/{campaign.pk}/")
    saved = lead.locator(".stat", has_text="labels saved").locator(".stat-value")
    assert saved.inner_text() == "0 / 4"
    for name in ("ann_a", "ann_b"):
        assignment = audit_services.assignment_next(campaign, users[name])
        audit_services.label_submit(assignment, ANSWERS)
    lead.wait_for_function(
        "() => document.querySelector('#campaign-live .stat-value + .stat-label') &&"
        " /2 \\/ 4/.test(document.getElementById('campaign-live').innerText)",
        timeout=5000,
    )
    assert "0 still being labelled" not in lead.locator("#campaign-live").inner_text()  # one unit is left
    assert console.errors == [] and lead.evaluate("window.__csp") == []


def test_it_tells_the_lead_that_fresh_decisions_count_only_where_the_campaign_is_ticked(
    session, live_server, audit_world, console
):
    users = audit_world["users"]
    campaign = audit_services.campaign_start(
        audit_services.campaign_create(
            name="Fresh audit",
            subject="checklist_items",
            benchmarks=[audit_world["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=4,
            seed=3,
            user=users["lead"],
            annotators=[users["ann_a"], users["ann_b"]],
        )
    )
    flagged = {**ANSWERS, "overall": "ambiguous"}
    for name, answers in (("ann_a", ANSWERS), ("ann_b", flagged)):
        assignment = audit_services.assignment_next(campaign, users[name])
        audit_services.label_submit(assignment, answers)  # one unit disputed, three still open
    lead = session("lead", "pw-lead-1")
    lead.goto(f"{live_server.url}/audits/{campaign.pk}/adjudicate/")
    lead.get_by_role("link", name="Adjudicate").click()
    lead.wait_for_load_state("load")
    lead.keyboard.press("i")
    with lead.expect_navigation():
        lead.keyboard.press("Enter")
    reading = lead.locator("#policy-reading")
    assert "not counted by the leaderboard's exclusion policies yet" in reading.inner_text()
    assert "3 units of this one are still being labelled" in reading.inner_text()
    reading.get_by_role("link", name=audit_world["benchmark"].slug).click()
    lead.wait_for_url(re.compile(rf".*/audits/effect/.*campaigns={campaign.pk}.*"))
    assert "Drawn from 1 chosen campaign: Fresh audit" in lead.locator("main").inner_text()
    assert lead.locator("#not-counted").count() == 0
    lead.goto(f"{live_server.url}/audits/effect/{audit_world['benchmark'].slug}/")
    assert (
        "Not counted: Fresh audit (3 units still being labelled or awaiting adjudication)"
        in lead.locator("#not-counted").inner_text()
    )
    assert console.errors == [] and lead.evaluate("window.__csp") == []


def test_it_says_an_unknown_exclusion_policy_until_a_known_one_is_chosen(session, live_server, audit_world, console):
    slug = audit_world["benchmark"].slug
    lead = session("lead", "pw-lead-1")
    lead.goto(f"{live_server.url}/b/{slug}/leaderboard/?exclude=flagged_by_nobody")
    said = lead.locator("#query-notes [role=alert]")
    assert "unknown exclusion policy 'flagged_by_nobody'; one of: none, adjudicated_invalid" in said.inner_text()
    lead.select_option("#id_exclude", "flagged_by_either")
    lead.wait_for_selector("#exclusion")  # the results swapped in under a known policy: the note goes
    assert said.count() == 0
    assert console.errors == [] and lead.evaluate("window.__csp") == []


@pytest.fixture
def adjudicating(audit_world, monkeypatch):
    """Three units disputed between ann_a and ann_b, on a server that takes 0.3 s to record a decision (so keys
    typed at 80 ms arrive while it is on its way)."""
    users = audit_world["users"]
    campaign = audit_services.campaign_start(
        audit_services.campaign_create(
            name="Keys audit",
            subject="checklist_items",
            benchmarks=[audit_world["benchmark"]],
            strata=["category"],
            allocation="proportional",
            size=6,
            seed=3,
            user=users["lead"],
            annotators=[users["ann_a"], users["ann_b"]],
        )
    )
    flagged = {**ANSWERS, "overall": "ambiguous"}
    for _ in range(3):
        for name, answers in (("ann_a", ANSWERS), ("ann_b", flagged)):
            audit_services.label_submit(audit_services.assignment_next(campaign, users[name]), answers)
    disputed = AuditUnit.objects.filter(campaign=campaign, state=UnitState.DISPUTED)
    assert disputed.count() == 3
    original = audit_services.unit_adjudicate

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return original(*args, **kwargs)

    monkeypatch.setattr(audit_services, "unit_adjudicate", slow)
    return {"campaign": campaign, "lead": users["lead"]}


def test_it_keeps_every_adjudication_key_typed_before_the_page_loads_and_posts_each_decision_once(
    session, live_server, adjudicating, console
):
    """Typing at 80 ms/key at a unit whose page has not finished loading (a deferred script held back), and on through
    each decision's slow submit (Enter again included): every key lands on the unit it was typed for, once."""
    campaign = adjudicating["campaign"]
    lead = session("lead", "pw-lead-1")
    lead.goto(f"{live_server.url}/audits/{campaign.pk}/adjudicate/")
    first = lead.get_by_role("link", name="Adjudicate").first.get_attribute("href")
    posts = []
    lead.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    held = []
    lead.route("**/htmx-2.min.js*", lambda route: held.append(route))  # the page is not loaded until it comes
    lead.goto(f"{live_server.url}{first}", wait_until="commit")
    lead.locator("#adjudication-form").wait_for()
    while not held:
        lead.wait_for_timeout(20)
    lead.keyboard.type("i", delay=80)  # at the unit on the screen, before the page has loaded
    lead.keyboard.press("Enter")
    held[0].continue_()
    lead.unroute("**/htmx-2.min.js*")
    for key in ("v", "Enter", "u", "Enter"):  # while each decision is on its way, for the unit it opens next
        lead.keyboard.press(key, delay=80)
    try:
        lead.get_by_text("No disputed unit is left").wait_for(timeout=15_000)
    except PlaywrightTimeoutError:
        pass  # stuck: the decisions recorded say what was lost
    decided = list(
        Adjudication.objects.filter(unit__campaign=campaign).order_by("id").values_list("unit_id", "final_status")
    )
    assert [status for _, status in decided] == ["invalid", "valid", "unresolved"]
    assert len({unit for unit, _ in decided}) == 3
    assert len(posts) == 3 and len(set(posts)) == 3  # one POST per unit, none twice
    assert console.errors == [] and lead.evaluate("window.__csp") == []


def test_it_says_that_keys_typed_while_a_refused_decision_was_on_its_way_were_not_applied(
    session, live_server, adjudicating, django_user_model, console
):
    campaign = adjudicating["campaign"]
    lead = session("lead", "pw-lead-1")
    lead.goto(f"{live_server.url}/audits/{campaign.pk}/adjudicate/")
    lead.get_by_role("link", name="Adjudicate").first.click()
    lead.wait_for_load_state("load")
    other = django_user_model.objects.create_user("lead_b", password="pw-lead_b-1")
    other.groups.add(Group.objects.get(name="lead"))
    unit = AuditUnit.objects.get(pk=int(re.search(r"/units/(\d+)/", lead.url).group(1)))
    audit_services.unit_adjudicate(unit, lead=other, final_status="valid")  # another lead decides it meanwhile
    lead.keyboard.press("i")
    lead.keyboard.press("Enter")  # refused, after 0.3 s: the page comes back to this unit
    lead.keyboard.press("v", delay=80)
    lead.keyboard.press("Enter", delay=80)
    said = lead.locator("#record-status.is-error")
    said.wait_for()
    assert "The 2 keys typed while recording were not applied" in said.inner_text()
    assert not Adjudication.objects.filter(unit__campaign=campaign, lead=adjudicating["lead"]).exists()
    assert lead.locator("input[name=final_status]:checked").count() == 0  # the "v" was not played on the unit
    assert console.errors == []
