"""The main journey of each role in Chromium, as a person would take it.

anonymous -> share-link holder -> annotator -> reviewer -> lead -> admin. Every page is read for what it
shows (headings, numbers, messages), every browser context watches the console and the
Content-Security-Policy (conftest's `session`), and each step leaves a screenshot in
test-artifacts/journeys/ for a person to look at. The data of each journey is small: the
live server forces a flushed, transactional database per test.

The reviewer's path leaderboard -> cell -> attempt -> cited message -> side by side -> share link is
test_review_journey.py; the lead/annotator audit to a leaderboard change is test_audit_journey.py.
The journeys here cover what those leave out.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.http import QueryDict
from django.utils import timezone
from playwright.sync_api import expect

from runs.ingest import Options, Source, ingest

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STUDY = FIXTURES / "native" / "study.jsonl"  # "acme-agent-if": two instances, one run, judges gpt-4.1 and alice


@pytest.fixture
def shot(artifacts):
    """Save a full-page screenshot as test-artifacts/journeys/<name>.png."""
    folder = artifacts / "journeys"
    folder.mkdir(exist_ok=True)

    def _shot(page, name: str) -> None:
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)

    return _shot


def _user(django_user_model, name: str, group: str | None = None, **extra):
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1", **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _refused(console, page, status: int) -> None:
    """Drop Chromium's own "Failed to load resource ... status of <status>" line for a page refused on purpose."""
    console.errors[:] = [e for e in console.errors if not (f"status of {status}" in e and page.url.split("#")[0] in e)]


def _study():
    ingest("native", [Source.of(STUDY)], Options())
    from runs.models import Benchmark

    return Benchmark.objects.get(slug="acme-agent-if")


# anonymous ---------------------------------------------------------------------------------
def test_anonymous_is_sent_to_the_login_form_signs_in_after_a_typo_and_logs_out(
    session, live_server, console, django_user_model, shot
):
    _user(django_user_model, "rita", "editor")  # the import page she was going to is an editor's
    url = live_server.url
    page = session()

    for path in ("/", "/b/acme-agent-if/leaderboard/", "/jobs/", "/audits/", "/import/"):
        page.goto(url + path)
        assert page.url == f"{url}/login/?next={quote(path)}", path
        assert page.get_by_role("heading", name="Sign in to ifportal").is_visible()
        assert page.locator("nav.mainnav").count() == 0  # nothing of the portal before signing in
    shot(page, "anonymous-1-login")

    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill("pw-rita-typo")
    page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    assert "correct username and password" in alert.inner_text()
    assert page.get_by_label("Username").input_value() == "rita"  # what was typed is kept
    assert page.get_by_role("button", name="Log out").count() == 0
    shot(page, "anonymous-2-wrong-password")

    page.get_by_label("Password").fill("pw-rita-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{url}/import/")  # back where the visitor was going
    expect(page.get_by_role("heading", name="Import files")).to_be_visible()
    assert page.locator(".userbox-name").inner_text() == "rita"
    shot(page, "anonymous-3-signed-in")

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{url}/login/")
    assert page.get_by_role("button", name="Log out").count() == 0
    page.goto(f"{url}/jobs/")
    assert page.url == f"{url}/login/?next=/jobs/"

    for method, path in (("get", "/api/benchmarks/"), ("get", "/api/jobs/"), ("post", "/api/ingest/")):
        response = getattr(page.request, method)(url + path)
        assert response.status == 401, (path, response.status)
        assert "credentials were not provided" in response.json()["detail"]
    assert console.errors == []


# share-link holder -------------------------------------------------------------------------
@pytest.fixture
def shared(transactional_db, django_user_model):
    """The study and four links made by a reviewer: whole leaderboard, "bug fix" with attempts, revoked, expired."""
    from runs.models import Attempt
    from runs.selectors.checklist import checklist_query  # the state exactly as the page parses it
    from runs.sharing import share_link_create, share_link_revoke

    benchmark = _study()
    owner = _user(django_user_model, "rita", "reviewer")

    def make(query: str = "", **options):
        state = checklist_query(benchmark, QueryDict(query)).state
        return share_link_create(user=owner, benchmark=benchmark, state=state, **options)

    links = {
        "whole": make(),
        "bug fix": make("primary_category=bug fix", include_attempts=True),
        "revoked": make(include_attempts=True),
        "expired": make(expires_in_days=1),
    }
    share_link_revoke(user=owner, link_id=links["revoked"][0].pk)
    links["expired"][0].expires_at = timezone.now() - timedelta(minutes=1)
    links["expired"][0].save(update_fields=["expires_at"])
    attempts = {
        a.instance.external_id: a for a in Attempt.objects.filter(run__benchmark=benchmark).select_related("instance")
    }
    return {"links": {name: (link, token) for name, (link, token) in links.items()}, "attempts": attempts}


def _only_share_links(page, token: str) -> list[str]:
    """The links of a share page that lead anywhere but this token's pages (the brand's sign-in link aside)."""
    hrefs = page.locator("main a[href]").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    return [h for h in hrefs if not (h.startswith((f"/s/{token}/", "?", "#", "/help/")))]  # the public help page too


def test_a_share_link_holder_sees_the_snapshot_and_nothing_beyond_its_scope(
    shared, session, live_server, console, shot
):
    url = live_server.url
    page = session()
    whole, token = shared["links"]["whole"]

    # the whole leaderboard: its frozen numbers, no drill-down, downloads of the same rows
    page.goto(f"{url}/s/{token}/")
    assert page.url == f"{url}/s/{token}/"
    assert "Acme agent IF" in page.locator(".crumbs").inner_text()  # which benchmark
    assert page.locator("h1").inner_text() == "Leaderboard"  # which page, headed as its creator saw it
    assert "Frozen snapshot of" in page.get_by_role("note").inner_text()
    row = whole.snapshot["overall"][0]
    cells = page.locator("table.grid tbody tr").first.locator("td")
    assert cells.nth(0).inner_text().startswith("model-x")
    assert cells.nth(2).inner_text() == str(row["tie_group"])  # after the rank interval, the tie group
    assert cells.nth(3).inner_text().startswith(f"{row['isr']:.2f}")
    assert cells.nth(4).inner_text().startswith(f"{row['csr']:.2f}")
    assert page.locator("table.grid a").count() == 0  # leaderboard scope: no way into attempts
    assert page.get_by_role("button", name="Log out").count() == 0 and page.locator("nav.mainnav").count() == 0
    assert _only_share_links(page, token) == []
    with page.expect_download() as download:
        page.get_by_role("link", name="Leaderboard (CSV)").click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert [r["model"] for r in rows] == ["model-x"] and float(rows[0]["isr"]) == pytest.approx(row["isr"])
    shot(page, "share-1-snapshot")

    attempt = shared["attempts"]["repo-fix-001"]
    page.goto(f"{url}/s/{token}/attempts/?model=model-x")
    _refused(console, page, 404)
    assert page.get_by_role("heading", name="Not part of this share link").is_visible()
    page.goto(f"{url}/s/{token}/attempts/{attempt.pk}/")
    _refused(console, page, 404)
    assert page.get_by_role("heading", name="Not part of this share link").is_visible()
    shot(page, "share-2-out-of-scope")

    # a link made with its attempts, for "bug fix" only: that cell's attempt, and no other
    _, scoped = shared["links"]["bug fix"]
    page.goto(f"{url}/s/{scoped}/")
    assert "bug fix" in page.get_by_role("note").inner_text()
    page.get_by_role("link", name="model-x").click()
    page.wait_for_url(f"{url}/s/{scoped}/attempts/?model=model-x")
    expect(page.locator("#rows tbody tr")).to_have_count(1)
    assert page.locator("#rows tbody tr td").first.inner_text() == "repo-fix-001"
    assert _only_share_links(page, scoped) == []
    shot(page, "share-3-scoped-attempts")
    page.get_by_role("link", name="repo-fix-001").click()
    page.wait_for_url(f"{url}/s/{scoped}/attempts/{attempt.pk}/")
    assert page.locator("h1").first.inner_text() == "repo-fix-001"
    assert page.locator("article.msg").count() > 0  # the trajectory
    assert "No emoji in any reply" in page.locator("main").inner_text()  # the checklist with the verdicts
    assert _only_share_links(page, scoped) == []
    shot(page, "share-4-scoped-attempt")
    other = shared["attempts"]["多语言-002"]
    page.goto(f"{url}/s/{scoped}/attempts/{other.pk}/")
    _refused(console, page, 404)
    assert page.get_by_role("heading", name="Not part of this share link").is_visible()

    # revoked and expired links: one clear page, the same for both (it tells nobody which tokens exist)
    texts = []
    for name in ("revoked", "expired"):
        response = page.goto(f"{url}/s/{shared['links'][name][1]}/")
        _refused(console, page, 404)
        assert response.status == 404
        assert page.get_by_role("heading", name="This share link does not open").is_visible()
        texts.append(page.locator("main").inner_text())
        shot(page, f"share-5-{name}")
    assert texts[0] == texts[1] and "Ask whoever sent it for a new link" in texts[0]

    # the rest of the portal stays closed to the token's holder
    for path in (f"/attempts/{attempt.pk}/", "/b/acme-agent-if/leaderboard/", "/share-links/"):
        page.goto(url + path)
        assert page.url.startswith(f"{url}/login/"), path
    assert page.request.get(f"{url}/api/attempts/{attempt.pk}/verdicts/").status == 401
    assert console.errors == []


# annotator ---------------------------------------------------------------------------------
@pytest.fixture
def audit(transactional_db, django_user_model):
    """A started checklist-item campaign of 4 units that ann_b has labelled all valid; a second campaign
    labelled by ann_b alone; a draft the annotators must not see."""
    from audits import services

    benchmark = _study()
    lead = _user(django_user_model, "lena", "lead")
    ann_a, ann_b = _user(django_user_model, "ann_a", "annotator"), _user(django_user_model, "ann_b", "annotator")

    def campaign(name: str, size: int, start: bool = True):
        made = services.campaign_create(
            name=name,
            subject="checklist_items",
            benchmarks=[benchmark],
            strata=[],
            allocation="proportional",
            size=size,
            seed=3,
            user=lead,
        )
        return services.campaign_start(made) if start else made

    def label_all(campaign, annotator, valid: bool = True) -> None:
        values = {"decidable": "yes" if valid else "no", "grounded": "yes", "duplicate": "none", "overall": "ok"}
        while (assignment := services.assignment_next(campaign, annotator)) is not None:
            services.label_submit(assignment, values)

    main, other = campaign("Item audit", 4), campaign("Other audit", 1)
    campaign("Draft audit", 2, start=False)
    label_all(main, ann_b)
    label_all(other, ann_b)
    return {"campaign": main, "other": other, "lead": lead, "ann_a": ann_a, "ann_b": ann_b}


def _keyboard_label(page, answers: list[list[str]]) -> list[str]:
    """Label unit after unit with the keyboard only; returns the items' keys in the order shown."""
    keys = []
    for presses in answers:
        unit = page.locator("article.unit")
        assignment = unit.get_attribute("data-assignment")
        keys.append(unit.locator("code").first.inner_text())
        for key in presses:
            page.keyboard.press(key)
        page.keyboard.press("Enter")
        page.wait_for_function(
            "a => !document.querySelector('article.unit') || document.querySelector('article.unit').dataset.assignment !== a",
            arg=assignment,
        )
    return keys


def test_an_annotator_labels_their_own_queue_blind_and_sees_where_they_were_overruled(
    audit, session, live_server, console, shot
):
    from audits import services
    from audits.models import Assignment, AuditUnit, UnitState

    url, campaign = live_server.url, audit["campaign"]
    page = session("ann_a", "pw-ann_a-1")
    assert "/audits/" in page.url  # an annotator lands on their queue, not on a results table

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Audits").click()
    page.wait_for_url(f"{url}/audits/")
    listed = page.locator("main").inner_text()
    assert "Item audit" in listed and "Draft audit" not in listed
    assert page.get_by_role("link", name="New campaign").count() == 0
    shot(page, "annotator-1-campaigns")

    page.get_by_role("link", name="Item audit").click()
    page.get_by_role("link", name="Start labelling").click()
    assert page.locator("article.unit").count() == 0  # opening the page reserves nothing
    page.wait_for_load_state("load")  # the labelling script is there
    page.keyboard.press("Enter")  # take the next unit: a POST
    page.wait_for_selector("article.unit")
    shot(page, "annotator-2-label")
    # the first item: not decidable (2 = "no"), the rest valid; 1-9 answer, Enter saves and shows the next
    keys = _keyboard_label(page, [["2", "1", "1", "1"]] + [["1", "1", "1", "1"]] * 3)
    expect(page.get_by_text("Nothing left for you in this campaign")).to_be_visible()
    assert len(set(keys)) == 4
    shot(page, "annotator-3-done")

    # my labels: mine only, the disputed one still open
    page.get_by_role("link", name="See your labels").click()
    page.wait_for_url(f"{url}/audits/mine/")
    expect(page.locator("table:not(#my-queue) tbody tr")).to_have_count(
        4
    )  # ann_b's labels (in both campaigns) are not here
    assert (
        "Other audit" not in page.locator("table:not(#my-queue)").inner_text()
    )  # a campaign in the queue, no label yet
    disputed = AuditUnit.objects.get(campaign=campaign, state=UnitState.DISPUTED)
    disputed_row = page.locator("tr", has=page.locator(f"a[href='/audits/units/{disputed.pk}/']"))
    assert "open" in disputed_row.inner_text() and "overruled" not in disputed_row.inner_text()
    shot(page, "annotator-4-mine-open")

    # the disputed unit before it closes: my label only, no other label, no judges' verdicts
    disputed_row.get_by_role("link").click()
    page.wait_for_url(f"{url}/audits/units/{disputed.pk}/")
    body = page.locator("main").inner_text()
    assert page.get_by_role("heading", name="Your label").is_visible()
    assert "Another annotator" not in body and "ann_b" not in body and "Judges' verdicts" not in body
    shot(page, "annotator-5-unit-blind")

    # pages of the other annotator and of leads: refused with a readable reason
    theirs = Assignment.objects.get(unit=audit["other"].units.get(), annotator=audit["ann_b"])
    for path, status, text in (
        (f"/audits/units/{theirs.unit_id}/", 404, "No such unit."),
        # refused by runs.access before the view runs: the blind rule's own reason
        (f"/audits/{campaign.pk}/agreement/", 403, "Annotators label blind"),
        (f"/audits/{campaign.pk}/adjudicate/", 403, "Annotators label blind"),
        ("/audits/new/", 403, "Annotators label blind"),
    ):
        response = page.goto(url + path)
        _refused(console, page, status)
        assert response.status == status, path
        assert page.get_by_role("alert").inner_text().count(text) == 1, path
        shot(page, f"annotator-6-refused-{status}-{path.strip('/').replace('/', '-')}")
    api = page.request.get(f"{url}/api/audits/assignments/{theirs.pk}/")
    assert api.status == 404 and "ann_b" not in api.text()

    # the lead sides with the other annotator: the disputed unit closes as valid
    services.unit_adjudicate(
        disputed,
        lead=audit["lead"],
        final_status="valid",
        reason="annotator-error",
        upheld_slot=Assignment.objects.get(unit=disputed, annotator=audit["ann_b"]).slot,
    )
    page.goto(f"{url}/audits/mine/")
    disputed_row = page.locator("tr", has=page.locator(f"a[href='/audits/units/{disputed.pk}/']"))
    assert "valid (adjudicated)" in disputed_row.inner_text()
    assert disputed_row.locator(".badge", has_text="overruled").is_visible()
    assert page.locator("tr.overruled").count() == 1
    shot(page, "annotator-7-overruled")
    disputed_row.get_by_role("link").click()
    page.wait_for_url(f"{url}/audits/units/{disputed.pk}/")
    body = page.locator("main").inner_text()
    assert "Another annotator" in body and "Judges' verdicts" in body and "ann_b" not in body
    shot(page, "annotator-8-unit-closed")
    assert console.errors == []


# reviewer ----------------------------------------------------------------------------------
@pytest.fixture
def demo_results(transactional_db, tmp_path):
    """The demo's OctoBench, EvolIF and GuideBench parts at the small scale (about 4 s)."""
    from runs.demo import SCALES, evolif_plan, guidebench_plan, octobench_plan

    for plan in (octobench_plan, evolif_plan, guidebench_plan):
        for step in plan(1, SCALES["small"], tmp_path).steps:
            ingest(step.format, [Source.of(p) for p in step.paths], step.options)


def _chart_drawn(page, name: str) -> None:
    page.wait_for_selector(f'[data-plotly="{name}"] .main-svg')


def test_a_reviewer_compares_judges_and_runs_filters_exports_finds_and_reads_the_other_kinds(
    demo_results, session, live_server, console, django_user_model, shot
):
    from runs.models import Run

    _user(django_user_model, "rita", "reviewer")
    url = live_server.url
    page = session("rita", "pw-rita-1")

    page.get_by_role("link", name="OctoBench", exact=True).click()
    page.wait_for_url(f"{url}/b/octobench/leaderboard/")
    _chart_drawn(page, "leaderboard-figure")
    models = page.locator("#results table.grid tbody tr").count()
    assert models >= 4

    # how far the ranking depends on the judge
    page.get_by_role("link", name="Judge sensitivity").click()
    expect(page.get_by_role("heading", name="Kendall's tau between judges")).to_be_visible()
    taus = page.locator("table", has=page.locator("th", has_text="Judge B")).locator("tbody tr")
    assert taus.count() >= 1 and re.fullmatch(r"-?\d\.\d{3}", taus.first.locator("td.num").first.inner_text())
    ranks = page.locator("table", has=page.locator("th", has_text="rank under")).locator("tbody tr")
    assert ranks.count() == models
    shot(page, "reviewer-1-judges")

    # two runs, paired
    labels = list(Run.objects.filter(benchmark__slug="octobench").order_by("label").values_list("label", flat=True))
    page.get_by_role("link", name="Compare runs").click()
    page.select_option("#side-a", labels[0])
    page.select_option("#side-b", labels[-1])
    page.get_by_role("button", name="Compare").click()
    gain = page.locator("tr", has=page.locator("th", has_text="gain (B − A)"))
    assert re.match(r"gain \(B − A\)\s+-?\d+\.\d\d\s+-?\d+\.\d\d\s+\d+ common instances", gain.inner_text())
    assert page.get_by_role("heading", name=re.compile(r"^Fixed in B \(\d+\)$")).is_visible()
    shot(page, "reviewer-2-compare")

    # a filter narrows the leaderboard in place; the export carries the same rows
    page.get_by_role("link", name="Leaderboard").click()
    page.wait_for_url(f"{url}/b/octobench/leaderboard/")
    judges = page.locator("#id_judge")
    assert judges.locator("summary").inner_text().startswith("all ")  # nothing ticked: every judge
    judges.locator("summary").click()  # the dropdown of checkboxes opens: no Ctrl to pick several
    judge = judges.locator("input[type=checkbox]").first.get_attribute("value")
    judges.locator("input[type=checkbox]").first.check()  # htmx swaps the results and pushes the state into the address
    assert (
        judges.locator("summary").inner_text().startswith("1 of ") and judge in judges.locator("summary").inner_text()
    )
    page.wait_for_url(re.compile(rf"/leaderboard/\?(.*&)?judge={judge}"))
    badges = page.locator("#results table.grid tbody tr td .badge").all_inner_texts()
    assert badges and all(b.startswith(f"{judge}:") for b in badges)
    shown = [
        r.split("\t")[0].splitlines()[0].split(" small")[0].strip()  # the name, not its "3 runs" under it
        for r in page.locator("#results table.grid tbody tr").all_inner_texts()
    ]
    shot(page, "reviewer-3-filtered")
    with page.expect_download() as download:
        page.locator("#page-tools").get_by_role("link", name="Leaderboard (CSV)").click()
    assert download.value.suggested_filename == "octobench-leaderboard.csv"  # the benchmark and the page, once each
    exported = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert [r["model"] for r in exported] == shown

    # into an attempt, then find a word in its trajectory
    page.locator("#results table.grid tbody tr td a").first.click()
    page.locator("#rows tbody tr td a").first.click()
    page.wait_for_url(re.compile(r"/attempts/\d+/$"))
    texts = page.locator("article.msg").all_inner_texts()
    words = sorted({w for t in texts for w in re.findall(r"[A-Za-z]{5,}", t)}, key=lambda w: (-len(w), w))
    assert words, texts
    word = words[0]
    page.get_by_placeholder("Find in this thread").fill(word)
    page.get_by_role("button", name="Find").click()
    page.wait_for_url(re.compile(rf"[?&]q={word}"))
    found = page.locator("article.msg")
    assert re.fullmatch(rf"{found.count()} matching messages?", page.locator("form.find .note").inner_text())
    assert all(word.lower() in t.lower() for t in found.all_inner_texts())
    shot(page, "reviewer-4-find")

    # the dialogue and multiple-choice benchmarks
    page.goto(f"{url}/")
    page.get_by_role("link", name="EvolIF", exact=True).click()
    page.get_by_role("link", name=re.compile("^Survival")).first.click()
    _chart_drawn(page, "survival-figure")
    steepest = page.locator("table", has=page.locator("th", has_text="Steepest drop at turn")).locator("tbody tr")
    assert steepest.count() >= 2 and re.search(r"\d+\.\d\d% → \d+\.\d\d%", steepest.first.inner_text())
    shot(page, "reviewer-5-survival")
    page.goto(f"{url}/")
    page.get_by_role("link", name="GuideBench", exact=True).click()
    _chart_drawn(page, "fig-accuracy")
    overall = page.locator("#tables table").first.locator("tbody tr")
    assert overall.count() >= 2 and re.search(r"\d+\.\d", overall.first.inner_text())
    shot(page, "reviewer-6-choice")
    assert console.errors == []


# lead --------------------------------------------------------------------------------------
def _job_finished(page, state: str) -> None:
    """Wait until the job page shows `state`, then check its polling stopped."""
    page.locator("#job-status .badge-state", has_text=state).wait_for(timeout=30_000)
    assert page.locator("#job-status").get_attribute("hx-trigger") is None  # htmx stops asking
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/jobs/" in r.url else None)
    page.wait_for_timeout(1500)  # more than the 1 s polling interval
    assert requests == []


def _import(page, url: str, fmt: str, path: Path, **options) -> None:
    if page.url != f"{url}/import/":
        page.get_by_role("link", name="New import").click()
    page.locator(f"input[name=format][value='{fmt}']").check()
    page.set_input_files("#id_files", str(path))
    for name, value in options.items():
        page.fill(f"#id_{name}", value)
    page.get_by_role("button", name="Start import").click()
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))


def test_a_lead_imports_retries_a_failed_job_starts_an_audit_and_reads_its_agreement(
    transactional_db, settings, session, live_server, console, django_user_model, shot
):
    from audits import services
    from audits.models import Campaign

    # As deployed without Celery, a job runs in a thread while its page polls. Not on the tests' SQLite: its
    # in-memory shared-cache database answers "database table is locked" at once to a page reading while the
    # job writes (no busy timeout there; the portal's own SQLite file uses WAL and waits), so jobs run inline.
    settings.IFPORTAL_JOBS = "thread" if connection.vendor == "postgresql" else "inline"
    lead = _user(django_user_model, "lena", "lead")
    annotators = [_user(django_user_model, n, "annotator") for n in ("ann_a", "ann_b")]
    url = live_server.url
    page = session("lena", "pw-lena-1")

    # scores before their instances: the job fails, says why, and stores nothing
    page.get_by_role("link", name="Import", exact=True).click()
    _import(page, url, "octobench-scores", FIXTURES / "octobench" / "scores.json", model="model-x", judge="judge-1")
    failed_url = page.url
    _job_finished(page, "failed")
    assert page.locator("#job-status .error-list li").count() >= 1
    assert "scores.json:" in page.locator("#job-status .error-list").inner_text()
    assert "nothing was stored" in page.locator("#job-status .job-message-failed").inner_text()
    shot(page, "lead-1-failed-import")

    # the instances, then the failed job again
    _import(page, url, "octobench-instances", FIXTURES / "octobench" / "instances.jsonl")
    _job_finished(page, "succeeded")
    created = page.locator(".stat", has_text="created").locator(".stat-value").inner_text()
    assert int(created.replace(",", "")) > 0
    shot(page, "lead-2-instances-imported")
    page.goto(failed_url)
    page.get_by_role("button", name="Retry").click()
    expect(page.get_by_text("The job was queued again.")).to_be_visible()
    assert page.url == failed_url
    _job_finished(page, "succeeded")
    assert page.locator("#job-status .error-list").count() == 0
    shot(page, "lead-3-retried")
    page.get_by_role("link", name="See benchmarks and runs").click()
    page.wait_for_url(f"{url}/")
    assert "model-x" in page.locator("main").inner_text()

    # a campaign over the imported checklist items
    page.get_by_role("link", name="Audits").click()
    page.get_by_role("link", name="New campaign").click()
    page.fill("#id_name", "Octo items")
    page.select_option("#id_subject", "checklist_items")
    page.locator("input[name=benchmarks]").first.check()
    page.fill("#id_size", "4")
    page.get_by_role("button", name="Create draft").click()
    expect(page.get_by_role("heading", name="Sample preview")).to_be_visible()
    shot(page, "lead-4-draft")
    page.get_by_role("button", name="Start: freeze the sample").click()
    expect(page.get_by_role("link", name="Start labelling")).to_be_visible()
    campaign = Campaign.objects.get(name="Octo items")
    for annotator, decidable in zip(annotators, ("yes", "no")):  # they disagree on every unit's first question
        while (assignment := services.assignment_next(campaign, annotator)) is not None:
            services.label_submit(
                assignment, {"decidable": decidable, "grounded": "yes", "duplicate": "none", "overall": "ok"}
            )

    page.get_by_role("link", name="Agreement").click()
    overall = page.locator("table", has=page.locator("th", has_text="Cohen's κ")).first.locator("tbody tr")
    decidable_row = overall.filter(has_text="decidable").first.inner_text()
    assert re.match(r"decidable\s+4 small n\s+0\.00\s", decidable_row)  # 4 units (flagged as few), 0 % agreement
    progress = page.locator("table", has=page.locator("th", has_text="Labels saved")).locator("tbody").inner_text()
    assert re.search(r"ann_a\s+4", progress) and re.search(r"ann_b\s+4", progress)
    shot(page, "lead-5-agreement")
    assert lead.is_authenticated and console.errors == []


# admin -------------------------------------------------------------------------------------
def test_an_admin_reaches_the_django_admin_and_a_reviewer_does_not(
    transactional_db, session, live_server, console, django_user_model, shot
):
    django_user_model.objects.create_superuser("ada", password="pw-ada-1")
    _user(django_user_model, "rita", "reviewer")
    url = live_server.url

    page = session("ada", "pw-ada-1")
    page.goto(f"{url}/admin/")
    assert page.get_by_role("heading", name="Site administration").is_visible()
    page.get_by_role("link", name="Users").first.click()
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    page.get_by_role("link", name="rita").click()
    assert page.locator("#id_username").input_value() == "rita"
    assert page.locator("#id_groups option:checked, #id_groups_to option").all_inner_texts() == ["reviewer"]
    shot(page, "admin-1-user")

    other = session("rita", "pw-rita-1")
    other.goto(f"{url}/admin/")
    assert other.url.startswith(f"{url}/admin/login/?next=/admin/")
    assert (
        "You are authenticated as rita, but are not authorized to access this page"
        in other.locator("#content").inner_text()
    )
    other.goto(f"{url}/admin/auth/user/")
    assert other.url.startswith(f"{url}/admin/login/")
    shot(other, "admin-2-refused")
    assert console.errors == []
