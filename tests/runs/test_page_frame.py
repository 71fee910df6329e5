"""Every capability on every kind: each page of each benchmark kind, enumerated from the URL conf, has the frame
(breadcrumb, title, kind badge, tab pills, filter bar), CSV and JSON exports of its tables, a Share form that
freezes it into a public snapshot, frozen attempt pages for the attempts it links to, a "How is this computed"
link to a section of /help/metrics/, and no control that answers 403 for the user who sees it. A page added to a
kind without one of them fails here, named with what it lacks."""

import csv
import html
import io
import json
import re
from urllib.parse import urlencode, urlsplit

import pytest
from django.contrib.auth.models import Group
from django.db import transaction
from django.test import Client
from django.urls import Resolver404, resolve, reverse

from runs import pages, sharing, urls
from runs.demo import SCALES, conflict_plan, evolif_plan, guidebench_plan, manyih_plan, octobench_plan
from runs.help_pages import metrics_help
from runs.ingest import Source, ingest
from runs.models import Attempt, Judge, JudgeKind, Run, ShareLink, Verdict, VerdictResult
from runs.recheck import CHECKERS, RECHECK_PAGES, recheck_run
from runs.selectors import KIND_PAGES
from runs.services import rollups_rebuild_for_attempts
from runs.views import checklist as checklist_views
from runs.views import choice as choice_views
from runs.views import conflict as conflict_views
from runs.views import dialogue as dialogue_views
from runs.views import hierarchy as hierarchy_views

pytestmark = pytest.mark.django_db

#: kind -> (demo plan, benchmark slug)
DATA = {
    "checklist": (octobench_plan, "octobench"),
    "dialogue": (evolif_plan, "evolif"),
    "hierarchy": (manyih_plan, "manyih-coding"),
    "choice": (guidebench_plan, "guidebench"),
    "conflict": (conflict_plan, "octobench-conflict"),
}
#: routes named <kind>-<x> that take only the benchmark and are not pages, with the reason
NOT_PAGES = {
    "dialogue-rescore-start": "POST: queues a re-check job",
    "hierarchy-recheck-start": "POST: queues a re-check job",
}
#: roles whose controls are checked: name -> groups
ROLES = {
    "reviewer": ["reviewer"],
    "editor": ["editor"],
    "lead": ["lead"],
    "annotator who reviews": ["annotator", "reviewer"],
    "blind annotator": ["annotator"],
}
#: the groups of the user who walks every capability of a page, sharing included: a reviewer who may also write
WRITER = ["reviewer", "editor"]
#: a live page's links to attempt pages (the attempt page of each kind)
ATTEMPT_LINK = re.compile(
    r'href="(?:/attempts/(\d+)/|/b/[^/"]+/dialogue/dialogues/(\d+)/|/b/[^/"]+/hierarchy/attempts/(\d+)/'
    r'|/b/[^/"]+/choice/tasks/[^/"?]+/)'
)


def kind_pages() -> list[tuple[str, str]]:
    """Every page of every kind: the runs:<kind>-<page> routes whose only argument is the benchmark, but NOT_PAGES."""
    found = []
    for pattern in urls.urlpatterns:
        name = pattern.name or ""
        kind = name.split("-")[0]
        if kind in KIND_PAGES and set(pattern.pattern.converters) == {"slug"} and name not in NOT_PAGES:
            found.append((kind, f"runs:{name}"))
    return found


CASES = kind_pages()


def _load(kind: str, tmp_path) -> None:
    plan, slug = DATA[kind]
    for step in plan(1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    for run in Run.objects.filter(benchmark__slug=slug) if kind in CHECKERS else ():  # the re-check pages need it
        recheck_run(run=run)


@pytest.fixture(scope="module")
def portal(django_db_setup, django_db_blocker, tmp_path_factory):
    """The small demo of every kind, loaded once for the module and rolled back after it."""
    with django_db_blocker.unblock(), transaction.atomic():
        for kind in DATA:
            _load(kind, tmp_path_factory.mktemp(kind))
        yield
        transaction.set_rollback(True)


def _client(django_user_model, name: str, groups=()) -> Client:
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client = Client()
    client.force_login(user)
    return client


def _with(url: str, **params) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(params)


def _json(client, url: str) -> dict:
    return json.loads(client.get(_with(url, export="json")).content)


def _drill_query(name: str, document: dict) -> str:
    """A query that opens the page's drill-down (the rows that link to attempts), read from its default export."""
    rows = {t["name"]: t["rows"] for t in document["tables"]}
    if name == "runs:checklist-attempts":
        return "model=aurora-large"  # a leaderboard row of the demo
    if name == "runs:checklist-compare":
        return "a=model:aurora-large&b=model:borealis-pro"
    if name == "runs:dialogue-groups":
        row = next(r for r in rows["groups"] if r["passed"] is not None and r["passed"] < r["applicable"])
        return urlencode({"group": row["group"]})
    if name == "runs:hierarchy-conflicts":
        assert any(r["winner"] for r in rows["resolution"])
        return "outcome=winner"
    if name == "runs:conflict-metrics":
        row = rows["resolution"][0]
        return urlencode({"label": row["label"], "type": row["type"]})
    if name == "runs:choice-confusion":
        row = next(r for r in rows["confusion"] if r["count"] and not r["predicted"].startswith("no answer"))
        return urlencode({"crun": row["run"], "true": row["true"], "pred": row["predicted"]})
    return ""


def _disagree_once(slug: str) -> None:
    """Make the log and the checker disagree on one verdict (the demo's checkers agree with its logs everywhere)."""
    checked = Verdict.objects.filter(attempt__run__benchmark__slug=slug, judge__kind=JudgeKind.CHECKER).first()
    logged = Verdict.objects.filter(attempt=checked.attempt, item=checked.item, judge__kind=JudgeKind.LOGGED).first()
    logged.result = VerdictResult.FAIL if checked.result == VerdictResult.PASS else VerdictResult.PASS
    logged.save()


def _page_url(client, name: str, slug: str) -> str:
    url = reverse(name, args=[slug])
    if name in RECHECK_PAGES.values() and not next(
        t["rows"] for t in _json(client, url)["tables"] if t["name"] == "disagreements"
    ):
        _disagree_once(slug)
    query = _drill_query(name, _json(client, url))
    return f"{url}?{query}" if query else url


def _frame_gaps(body: str, kind: str) -> list[str]:
    gaps = []
    if not re.search(r'class="crumbs"><a href="/">', body):
        gaps.append("breadcrumb")
    if not re.search(r"<h1>\s*\S", body):
        gaps.append("title")
    if f"badge-kind-{kind}" not in body:
        gaps.append("kind badge")
    if not re.search(r'class="pill"[^>]*aria-current="true"', body):
        gaps.append("tab pills with the current page")
    forms = re.findall(r"<form[^>]*>", body)
    buttons = re.findall(r"<button[^>]*>", body)
    if not any('method="get"' in f and re.search(r'class="[^"]*\bfilters\b', f) for f in forms) or not any(
        'type="submit"' in b and re.search(r'class="[^"]*\bbtn-primary\b', b) for b in buttons
    ):
        gaps.append("filter bar with a styled submit button")
    return gaps


def _metrics_link_gaps(body: str) -> list[str]:
    anchors = re.findall(r'href="/help/metrics/#([A-Za-z0-9_-]+)"', body)
    if not anchors:
        return ["'How is this computed' link"]
    known = metrics_help().anchors
    return [f"metrics anchor #{a} that /help/metrics/ lacks" for a in anchors if a not in known]


def _export_gaps(client, url: str, name: str) -> tuple[list[str], dict]:
    gaps = []
    document = _json(client, url)
    builder_names = [t["name"] for t in document["tables"]]
    if not document["tables"] or not all(t["columns"] for t in document["tables"]):
        gaps.append("JSON export with tables")
    if not any(t["rows"] for t in document["tables"]):
        gaps.append("JSON export with rows")
    declared = [n for n, _ in pages.declared(_BUILDERS[name]).tables] if name in _BUILDERS else None
    if declared is not None and declared != builder_names:
        gaps.append(f"declared tables {declared} = built tables {builder_names}")
    # a table whose rows link to attempts holds single items: declared so, a blind annotator's exports leave it out
    per_item = pages.declared(_BUILDERS[name]).per_item if name in _BUILDERS else frozenset()
    linking = sorted(t["name"] for t in document["tables"] if any(c["link"] for c in t["columns"]))
    if name in _BUILDERS and not set(linking) <= per_item:
        gaps.append(f"per_item declaration of the tables whose rows link to attempts {linking}")
    for table in document["tables"]:
        response = client.get(_with(url, export="csv", table=table["name"]))
        if response.status_code != 200 or not response["Content-Type"].startswith("text/csv"):
            gaps.append(f"CSV of {table['name']}")
            continue
        lines = list(csv.reader(io.StringIO(response.content.decode())))
        if (
            lines[0] != [c["label"] if c["label"][:1] not in "=+-@" else "'" + c["label"] for c in table["columns"]]
            or len(lines) != len(table["rows"]) + 1
        ):
            gaps.append(f"CSV of {table['name']} matching its JSON")
    return gaps, document


#: page -> the PageData builder it renders with (caught from runs.pages.frame_response)
_BUILDERS: dict[str, object] = {}


def _share(client, slug: str, url: str, *, attempts: bool) -> str | None:
    data = {"path": url, "expires_in": "7", **({"include_attempts": "on"} if attempts else {})}
    created = client.post(reverse("runs:page-share-create", args=[slug]), data)
    found = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()) if created.status_code == 200 else None
    return found.group(1) if found else None


def _share_gaps(client, slug: str, url: str, document: dict) -> list[str]:
    token = _share(client, slug, url, attempts=False)
    if token is None:
        return ["share"]
    anonymous = Client()
    shared = anonymous.get(reverse("runs:share", args=[token]))
    gaps = []
    if shared.status_code != 200 or document["title"] not in html.unescape(shared.content.decode()):
        gaps.append("public snapshot page")
    frozen = json.loads(anonymous.get(reverse("runs:share-export", args=[token]) + "?format=json").content)
    if [t["rows"] for t in frozen["tables"]] != [t["rows"] for t in document["tables"]]:
        gaps.append("snapshot export equal to the page's")
    return gaps


def _frozen_attempt_gaps(client, slug: str, url: str, body: str, *, declared: bool) -> list[str]:
    """A page that links to attempts (or declares it does): its share link made with them opens them, frozen (the
    link's judges only, no verdict imported after it), and lists every attempt the live page links to."""
    linked = {int(next(g for g in m.groups() if g)) for m in ATTEMPT_LINK.finditer(body) if any(m.groups())}
    links_any = bool(ATTEMPT_LINK.search(body)) or declared
    if links_any and 'name="include_attempts"' not in body:
        return ["Share form offering the attempts the page links to"]
    token = _share(client, slug, url, attempts=True)
    if token is None:
        return ["share with its attempts"] if links_any else []
    link = ShareLink.objects.get(token_hash=sharing.token_hash(token))
    if not links_any and not link.attempt_ids:
        return []
    gaps = []
    if not link.attempt_ids:
        return ["frozen attempt pages (the share link lists none of the attempts the page links to)"]
    if not linked <= set(link.attempt_ids):
        gaps.append(
            f"frozen attempt pages for every linked attempt (missing {sorted(linked - set(link.attempt_ids))[:5]})"
        )
    anonymous = Client()
    public = anonymous.get(reverse("runs:share", args=[token])).content.decode()
    lists = re.findall(rf'href="(/s/{token}/attempts/\?[^"]+)"', public)
    if lists:  # the leaderboard: a cell's frozen list first
        public = anonymous.get(html.unescape(lists[0])).content.decode()
    ids = [int(i) for i in re.findall(rf'href="/s/{token}/attempts/(\d+)/', public)]
    if not ids:
        return gaps + ["links from the shared page to its frozen attempt pages"]
    attempt = Attempt.objects.get(pk=ids[0])
    later = Judge.objects.create(name="judge-imported-later")
    item = attempt.instance.items.first()
    if item is not None:
        Verdict.objects.create(attempt=attempt, item=item, judge=later, result="fail", reasoning="LATER-REASONING")
    page = anonymous.get(reverse("runs:share-attempt", args=[token, attempt.id]))
    text = page.content.decode()
    if page.status_code != 200:
        return gaps + [f"frozen attempt page ({page.status_code})"]
    if "LATER-REASONING" in text or "judge-imported-later" in text:
        gaps.append("frozen attempt page without verdicts imported after the link")
    judges = (link.snapshot.get("drilldown") or {}).get("judges") or link.snapshot.get("judges")  # what the page read
    if judges is not None:
        others = set(
            Verdict.objects.filter(attempt=attempt)
            .exclude(judge__name__in=judges)
            .values_list("judge__name", flat=True)
        ) - {later.name}
        shown = [j for j in others if re.search(rf">\s*[✓✗–] {re.escape(j)}: ", text)]
        if shown:
            gaps.append(f"frozen attempt page showing only the link's judges (also shows {shown})")
    return gaps


_REACH: dict[tuple[str, str], int] = {}


def _control_gaps(client, role: str, body: str) -> list[str]:
    """Every link, form and htmx control on the page answers the role with something other than 403 (one check per
    route and role: objects of one route share its access rule)."""
    gaps = []
    for target in sorted(set(re.findall(r'(?:href|action|hx-get|hx-post)="([^"#][^"]*)"', body))):
        path = urlsplit(html.unescape(target)).path
        if not path.startswith("/") or path.startswith(("/static/", "/s/")):
            continue
        try:
            route = resolve(path).view_name
        except Resolver404:
            continue
        key = (role, route)
        if key not in _REACH:
            _REACH[key] = client.get(html.unescape(target)).status_code
        if _REACH[key] == 403:
            gaps.append(f"control to {route} that answers 403 for the {role}")
    return gaps


def test_every_kind_has_pages_and_data():
    assert {kind for kind, _ in CASES} == set(KIND_PAGES) == set(DATA)
    names = {p.name for p in urls.urlpatterns}
    assert set(NOT_PAGES) <= names, f"NOT_PAGES names routes that are gone: {set(NOT_PAGES) - names}"


def _capability_gaps(reviewer, django_user_model, slug: str, url: str, name: str, body: str) -> list[str]:
    """What the page at `url` (route `name`, shown to the reviewer as `body`) lacks of the frame's capabilities:
    rendering through the frame, the toolbar, exports, a share link, frozen attempt pages, controls every role may
    use."""
    gaps = []
    if name not in _BUILDERS:
        gaps.append("rendering through the frame (runs.pages)")
    if 'class="toolbar page-tools"' not in body or "Share…" not in body:
        gaps.append("toolbar with exports and Share")
    export_gaps, document = _export_gaps(reviewer, url, name)
    gaps += export_gaps + _share_gaps(reviewer, slug, url, document)
    gaps += _frozen_attempt_gaps(
        reviewer, slug, url, body, declared=name in _BUILDERS and pages.declared(_BUILDERS[name]).links_attempts
    )
    for role, groups in ROLES.items():
        client = _client(django_user_model, role.replace(" ", "-"), groups)
        seen = client.get(url)
        if seen.status_code == 403:
            continue  # the page itself is closed to the role: other pages must not link to it (checked there)
        gaps += _control_gaps(client, role, seen.content.decode())
    return gaps


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[name for _, name in CASES])
def test_every_page_of_every_kind_has_every_capability(kind, name, portal, django_user_model, monkeypatch):
    slug = DATA[kind][1]
    reviewer = _client(django_user_model, "writer", WRITER)
    real = pages.frame_response

    def spy(request, context, *, page_data):  # which builder the page renders with
        _BUILDERS[name] = page_data
        return real(request, context, page_data=page_data)

    monkeypatch.setattr(pages, "frame_response", spy)
    for module in (checklist_views, dialogue_views, hierarchy_views, choice_views, conflict_views):
        if hasattr(module, "frame_response"):  # a view that calls the frame itself (the leaderboard)
            monkeypatch.setattr(module, "frame_response", spy)
    url = _page_url(reviewer, name, slug)
    page = reviewer.get(url)
    assert page.status_code == 200, f"{name}: {page.status_code}"
    body = page.content.decode()
    gaps = _frame_gaps(body, kind) + _metrics_link_gaps(body)
    gaps += _capability_gaps(reviewer, django_user_model, slug, url, name, body)
    assert not gaps, f"{name} lacks: " + "; ".join(gaps)


def test_a_plain_render_does_not_build_the_pages_tables(portal, django_user_model, monkeypatch):
    from runs.exports import choice as exports
    from runs.views import choice as views

    calls = []
    real = exports.tasks_page

    def counting(context):
        calls.append(1)
        return real(context)

    counting.declared = real.declared
    monkeypatch.setattr(views.exports, "tasks_page", counting)
    reviewer = _client(django_user_model, "reviewer", ["reviewer"])
    url = reverse("runs:choice-tasks", args=["guidebench"])
    body = reviewer.get(url).content.decode()
    assert "Tasks (CSV)" in body and calls == []  # the toolbar lists the declared tables
    assert reviewer.get(url + "?export=json").status_code == 200 and calls == [1]  # the export builds them, once


def test_a_page_snapshot_stays_as_it_was_when_the_data_changes(portal, django_user_model):
    slug = "evolif"
    reviewer = _client(django_user_model, "writer", WRITER)
    url = reverse("runs:dialogue-metrics", args=[slug])
    token = _share(reviewer, slug, url, attempts=False)
    export = reverse("runs:share-export", args=[token]) + "?format=csv"
    before = Client().get(export).content
    verdicts = Verdict.objects.filter(attempt__run__benchmark__slug=slug)
    verdicts.update(result="fail")
    rollups_rebuild_for_attempts(set(verdicts.values_list("attempt_id", flat=True)))
    assert reviewer.get(url + "?export=csv").content != before  # the live page changed ...
    assert Client().get(export).content == before  # ... the snapshot did not


def test_a_share_without_its_attempts_opens_none(portal, django_user_model):
    reviewer = _client(django_user_model, "writer", WRITER)
    url = reverse("runs:dialogue-list", args=["evolif"])
    token = _share(reviewer, "evolif", url, attempts=False)
    link = ShareLink.objects.get()
    assert link.scope == "leaderboard" and link.attempt_ids == []
    attempt = Attempt.objects.filter(run__benchmark__slug="evolif").first()
    assert f"/s/{token}/attempts/" not in Client().get(reverse("runs:share", args=[token])).content.decode()
    assert Client().get(reverse("runs:share-attempt", args=[token, attempt.id])).status_code == 404


def test_a_blind_annotator_sees_exports_but_no_share_form_and_cannot_share(portal, django_user_model):
    annotator = _client(django_user_model, "annotator", ["annotator"])
    url = reverse("runs:dialogue-survival", args=["evolif"])
    body = annotator.get(url).content.decode()
    assert "Share…" not in body and "(CSV)" in body
    assert annotator.post(reverse("runs:page-share-create", args=["evolif"]), {"path": url}).status_code == 403


def test_a_page_asks_a_blind_annotator_to_click_only_what_is_a_link(portal, django_user_model):
    """Found walking the demo as an annotator: the confusion matrices and the conflict rates said "Click a count" and
    "Click a rate" where, for a blind annotator, the counts and rates are no links; the matrices lost their green and
    red too (the colour was the link's). The reviewer's pages keep both."""
    annotator = _client(django_user_model, "annotator-b", ["annotator"])
    reviewer = _client(django_user_model, "reviewer-b", ["reviewer"])
    for name, slug, words in (
        ("runs:choice-confusion", DATA["choice"][1], "Click a count"),
        ("runs:conflict-metrics", DATA["conflict"][1], "Click a rate"),
    ):
        url = reverse(name, args=[slug])
        assert words in reviewer.get(url).content.decode()
        assert words not in annotator.get(url).content.decode(), name
    body = annotator.get(reverse("runs:choice-confusion", args=[DATA["choice"][1]])).content.decode()
    assert re.search(r'<span class="badge badge-pass"[^>]*>\d+</span>', body)
    assert re.search(r'<span class="badge badge-fail"[^>]*>\d+</span>', body)


@pytest.mark.parametrize(
    "path",
    [
        "https://example.com/b/evolif/dialogue/",
        "//example.com/b/evolif/dialogue/",
        "/b/octobench/leaderboard/",
        "/b/evolif/dialogue/123/",
        "/admin/",
    ],
)
def test_it_refuses_to_freeze_what_is_not_a_page_of_this_benchmark(path, portal, django_user_model):
    reviewer = _client(django_user_model, "writer", WRITER)
    response = reviewer.post(reverse("runs:page-share-create", args=["evolif"]), {"path": path})
    assert response.status_code == 400


def test_csv_keeps_negative_numbers_numeric_and_neutralises_formula_text():
    from runs.pages import Column, Table, table_csv

    table = Table(
        "t", "T", (Column("name", "=label"), Column("gain", "gain", "pct")), [{"name": "=HYPERLINK(1)", "gain": -2.5}]
    )
    assert table_csv(table).splitlines() == ["'=label,gain", "'=HYPERLINK(1),-2.50"]


def test_the_leaderboard_shows_its_share_form_only_to_those_who_may_share(portal, django_user_model):
    url = reverse("runs:checklist-leaderboard", args=["octobench"])
    assert "Share…" in _client(django_user_model, "editor", ["editor"]).get(url).content.decode()
    for name, groups in (("reviewer", ["reviewer"]), ("nobody", []), ("annotator", ["annotator"])):
        body = _client(django_user_model, name, groups).get(url).content.decode()  # read only: no Share form
        assert "Share…" not in body and "Leaderboard (CSV)" in body, name


def test_the_pages_of_one_instance_dialogue_or_sample_link_to_how_their_numbers_are_computed(portal, django_user_model):
    """The instance page, the dialogue viewer and the hierarchy sample show rates, patience and verdicts with only
    plain-text notes: each now links to its section of the metrics help, which exists."""
    reviewer = _client(django_user_model, "reviewer", ["reviewer"])
    instance = Attempt.objects.filter(run__benchmark__slug="octobench").first().instance_id
    dialogue = Attempt.objects.filter(run__benchmark__slug="evolif").first().pk
    sample = Attempt.objects.filter(run__benchmark__slug="manyih-coding").first().pk
    for url, anchors in (
        (reverse("runs:instance", args=[instance]), {"checklist-groups"}),
        (reverse("runs:dialogue-viewer", args=["evolif", dialogue]), {"dialogue", "dialogue-patience"}),
        (reverse("runs:hierarchy-attempt", args=["manyih-coding", sample]), {"hierarchy", "hierarchy-recheck"}),
    ):
        body = reviewer.get(url).content.decode()
        assert anchors <= set(re.findall(r'href="/help/metrics/#([a-z-]+)"', body)), url
        assert not _metrics_link_gaps(body), url


def _object_page(kind: str) -> tuple[str, str]:
    """The page of one object of the kind (an attempt, a dialogue, a sample, a task) and its route name."""
    slug = DATA[kind][1]
    attempt = (
        Attempt.objects.filter(run__benchmark__slug=slug, verdicts__isnull=False).order_by("pk").first()
        or Attempt.objects.filter(run__benchmark__slug=slug).order_by("pk").first()
    )
    if kind in ("checklist", "conflict"):
        return reverse("runs:attempt", args=[attempt.pk]), "runs:attempt"
    if kind == "dialogue":
        return reverse("runs:dialogue-viewer", args=[slug, attempt.pk]), "runs:dialogue-viewer"
    if kind == "hierarchy":
        return reverse("runs:hierarchy-attempt", args=[slug, attempt.pk]), "runs:hierarchy-attempt"
    return reverse("runs:choice-task", args=[slug, attempt.instance.external_id]), "runs:choice-task"


@pytest.mark.parametrize("kind", sorted(DATA))
def test_the_page_of_one_attempt_dialogue_sample_or_task_has_every_capability(
    kind, portal, django_user_model, monkeypatch
):
    """The pages of one object (the attempt page of checklist and conflict benchmarks, the dialogue viewer, the
    hierarchy sample, the choice task) had neither exports nor a share link. Each now renders through the frame:
    CSV and JSON of what it shows, a share link freezing it (with its attempt, opened frozen), how its numbers are
    computed, and no control that answers 403 for any role."""
    slug = DATA[kind][1]
    url, name = _object_page(kind)
    reviewer = _client(django_user_model, "writer", WRITER)
    real = pages.frame_response

    def spy(request, context, *, page_data):
        _BUILDERS[name] = page_data
        return real(request, context, page_data=page_data)

    monkeypatch.setattr(pages, "frame_response", spy)
    _BUILDERS.pop(name, None)
    page = reviewer.get(url)
    assert page.status_code == 200, f"{url}: {page.status_code}"
    body = page.content.decode()
    gaps = _metrics_link_gaps(body) + _capability_gaps(reviewer, django_user_model, slug, url, name, body)
    assert not gaps, f"{url} lacks: " + "; ".join(gaps)
