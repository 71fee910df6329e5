"""Blindness is a guarantee: a blind annotator learns nothing, before their own label settles, about a
judge's verdict on the items they may label or about another annotator's label, on any route.

The study seeds unique markers into everything a blind annotator must not read (every verdict's reasoning and
evidence, every attempt's outcome, the other annotator's notes and links), gives the blind annotator a disputed
unit and a held reservation in a running campaign, and lets the other annotator flag items further on in the
sample. The walk then requests every URL pattern of the resolver as the blind annotator, filling each path
parameter by its converter with every seeded object (so a new route is walked without editing this file), in
plain, htmx and query variants (exclusion policies, compare a/b, drill-down cells, fragment=1), and fails on any
marker or pass/fail signal in any answer. An exclusion policy must change nothing they see.

Every export a page offers is asked too: each table a page has (as a reviewer's JSON export lists them) as CSV, and
the JSON export, in every query variant, and each format a DRF endpoint renders (?format=json, api, csv...). In an
export a per-sample pass/fail cell, or a table whose rows link to attempts (one row per attempt), fails the walk: a
table the page keeps from a blind annotator is absent from their exports.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from types import SimpleNamespace
from urllib.parse import urlencode, urlsplit

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, QueryDict
from django.test import Client, RequestFactory
from django.urls import resolve, reverse
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import BlindnessMiddleware, blind_safe

MARK = "BLINDMARK"
#: what no answer to a blind annotator may contain: the markers, and the pass/fail fields of outcomes and units
SIGNALS = re.compile(
    "|".join(
        [
            # a per-sample outcome's pass/fail fields with their value (field names in the API schema, the help page's
            # definitions and per-run counts such as the evaluator's "style_passed": 3 are no verdict on a sample)
            MARK,
            r'"?overall_ok"?\s*:\s*(?:true|false|True|False)',
            r'"?style_passed"?\s*:\s*(?:true|false|True|False)',
            r'"correct"\s*:',
            r"awaiting adjudication",
            r'"disputed"',
            r'"agreement"\s*:\s*-?[0-9]',
            r'badge-(?:pass|fail)">(?:pass|fail)<',
            r'"[ab]_passed"',
        ]
    )
)
#: a per-sample verdict in an export or API answer: a CSV cell, or a JSON value (raw or HTML-escaped, as the browsable
#: API shows it), that is just "pass" or "fail"
PER_SAMPLE = {
    "csv": re.compile(r"(?m)(?:^|,)(?:pass|fail)(?=,|\r?$)"),
    "json": re.compile(r'(?:"|&quot;)\s*:\s*(?:"|&quot;)(?:pass|fail)(?:"|&quot;)'),
}
#: routes whose answers describe the API with made-up examples (a verdict "result": "fail"), no sample's verdict
DESCRIBES_THE_API = ("api-schema",)
#: per-request tokens that differ between two otherwise equal answers
VOLATILE = re.compile(r'(csrfmiddlewaretoken" value="|csrf-token" content="|"X-CSRFToken": ")[^"]*')


def _user(django_user_model, name, group):
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def study(db, django_user_model, tmp_path, hostile):
    """The hostile corpus (one benchmark of each kind) with markers, a running campaign and a share link."""
    from audits import services as audit
    from audits.models import Assignment, AuditUnit
    from audits.rubrics import rubric_for
    from audits.selectors import POLICIES
    from runs.jobs import job_create
    from runs.models import Attempt, Benchmark, ChecklistItem, Instance, Job, Run, ShareLink, Verdict
    from runs.selectors.checklist import checklist_query
    from runs.sharing import share_link_create

    hostile.ingest_all(tmp_path)
    for benchmark in Benchmark.objects.all():
        _twin_with_flipped_verdicts(Run.objects.filter(benchmark=benchmark).order_by("pk").first())
    Verdict.objects.update(reasoning=f"{MARK}-REASONING", evidence={"quote": f"{MARK}-EVIDENCE"})
    for attempt in Attempt.objects.all():
        attempt.outcome = {**(attempt.outcome or {}), "blind_walk": f"{MARK}-OUTCOME"}
        attempt.save(update_fields=["outcome"])

    lead = _user(django_user_model, "w-lead", "lead")
    reviewer = _user(django_user_model, "w-reviewer", "reviewer")
    blind, other = _user(django_user_model, "w-blind", "annotator"), _user(django_user_model, "w-other", "annotator")
    checklist = Benchmark.objects.get(slug="hostile")
    campaign = audit.campaign_start(
        audit.campaign_create(
            name="walk",
            subject="checklist_items",
            benchmarks=[checklist],
            strata=["category"],
            allocation="proportional",
            size=6,
            seed=3,
            user=lead,
        )
    )
    ok = {"decidable": "yes", "grounded": "yes", "duplicate": "none", "overall": "ok"}

    def other_labels(assignment):
        """The other annotator flags the unit: an invalid answer to every criterion of its rubric."""
        rubric = rubric_for(assignment.unit.campaign.subject)
        flagged = {c.name: next(v for v in c.values if v not in c.valid) for c in rubric.criteria}
        audit.label_submit(assignment, flagged, note=f"{MARK}-NOTE", link=f"{MARK}-LINK")

    settled_mine = audit.assignment_next(campaign, blind)  # the blind annotator labels; the other disagrees
    audit.label_submit(settled_mine, ok, note="my own note")
    theirs = audit.assignment_next(campaign, other)
    assert theirs.unit_id == settled_mine.unit_id
    other_labels(theirs)
    for _ in range(3):  # the other annotator runs ahead, flagging units the blind annotator will be given
        ahead = audit.assignment_next(campaign, other)
        if ahead is None:
            break
        other_labels(ahead)
    held = audit.assignment_next(campaign, blind)  # a reservation on a unit the other annotator flagged
    assert held.unit_id != settled_mine.unit_id and held.unit.assignments.filter(annotator=other).exists()
    assert campaign.units.filter(state="disputed").count() == 1

    job_create(kind="recheck", params={"run_ids": [], "benchmark": "evolif"}, user=blind)  # a job of their own
    for subject, slug in (
        ("dialogue_queries", "evolif"),
        ("hierarchy_constraints", "manyih-coding"),
        ("verdicts", "hostile"),  # a unit is an attempt's trajectory against an item: the judges' verdicts stay hidden
    ):
        more = audit.campaign_start(
            audit.campaign_create(
                name=f"walk {slug}",
                subject=subject,
                benchmarks=[Benchmark.objects.get(slug=slug)],
                strata=["benchmark"],
                allocation="proportional",
                size=4,
                seed=3,
                user=lead,
            )
        )
        other_labels(audit.assignment_next(more, other))  # then the blind annotator holds the unit they flagged
        assert audit.assignment_next(more, blind) is not None
    state = checklist_query(checklist, QueryDict("")).state
    shared, token = share_link_create(user=lead, benchmark=checklist, state=state, include_attempts=True)
    attempts = [Attempt.objects.filter(run__benchmark=b).order_by("pk").first() for b in Benchmark.objects.all()]
    instances = [Instance.objects.filter(benchmark=b).order_by("pk").first() for b in Benchmark.objects.all()]
    units = list(AuditUnit.objects.all())
    assignments = list(Assignment.objects.all())
    ints = sorted(
        {o.pk for o in [*attempts, *instances, *units, *assignments, campaign, shared, *Run.objects.all()]}
        | {u.item_id for u in units if u.item_id}
    )
    runs = list(Run.objects.order_by("benchmark_id", "label").select_related("model"))
    evolif_groups = sorted(
        set(
            ChecklistItem.objects.filter(instance__benchmark__slug="evolif")
            .exclude(group="")
            .values_list("group", flat=True)
        )
    )[:2]
    return SimpleNamespace(
        blind=blind,
        reviewer=reviewer,
        campaign=campaign,
        token=token,
        policies=list(POLICIES),
        values={
            "int": ints,
            "slug": list(Benchmark.objects.values_list("slug", flat=True)),
            "uuid": [str(j.id) for j in Job.objects.all()[:3]] or [str(uuid.uuid4())],
            "str": [token, *(i.external_id for i in instances)],
            "path": [token],
            "regex": ["1"],
        },
        variants=_variants(runs, attempts, evolif_groups, list(POLICIES)),
        run_labels=sorted(set(Run.objects.values_list("label", flat=True))),
        share_links=ShareLink.objects.count(),
    )


def _twin_with_flipped_verdicts(run) -> None:
    """A second run of the same model whose every verdict is the opposite (so compare pages have flips)."""
    from runs.models import Attempt, Run, Trajectory, Verdict, VerdictResult
    from runs.services import rollups_rebuild_for_attempts
    from runs.trajectory_store import trajectory_save
    from runs.trajectory_view import stored_threads

    twin = Run.objects.create(
        benchmark=run.benchmark,
        model=run.model,
        label=f"{run.label}-twin",
        scaffold=run.scaffold,
        settings=run.settings,
    )
    flipped = {VerdictResult.PASS: VerdictResult.FAIL, VerdictResult.FAIL: VerdictResult.PASS}
    made = []
    for attempt in Attempt.objects.filter(run=run):
        copy = Attempt.objects.create(
            run=twin,
            instance=attempt.instance,
            response=attempt.response,
            outcome=attempt.outcome,
            assistant_turns=attempt.assistant_turns,
        )
        if Trajectory.objects.filter(attempt=attempt).exists():
            trajectory_save(attempt_id=copy.id, threads=stored_threads(attempt.id))
        Verdict.objects.bulk_create(
            Verdict(
                attempt=copy,
                item_id=v.item_id,
                judge_id=v.judge_id,
                score=v.score,
                result=flipped.get(v.result, v.result),
                reasoning=v.reasoning,
            )
            for v in Verdict.objects.filter(attempt=attempt)
        )
        made.append(copy.id)
    rollups_rebuild_for_attempts(made)


def _variants(runs, attempts, groups, policies) -> list[dict]:
    """Query strings that matter: drill-downs, compare sides, fragments and exports (exclusion policies separately)."""
    from runs.metrics import conflict as metrics

    models = sorted({r.model.name for r in runs})
    out = [{"fragment": "1"}, {"format": "csv"}, {"format": "json"}, {"page": "1"}, {"thread": "0", "msg": "0"}]
    out += [{"a": a.label, "b": b.label} for a, b in zip(runs, runs[1:])]
    out.append({"a": str(attempts[0].pk), "b": str(attempts[1].pk)})
    out += [{"model": m} for m in models]
    out += [{"group": g} for g in groups]
    out += [{"outcome": o} for o in ("wrong", "right", "winner", "suppressed", "none")]
    out += [
        {"label": models[0] if models else "", "type": t, "followed": f}
        for t, f in itertools.product(list(metrics.TYPES)[:2], ("SP", "other"))
    ]
    out += [{"crun": r.label, "missing": "false"} for r in runs[:1]]
    out += [{"scenario": "x", "sp": "1"}, {"by": "judge"}, {"by": "instance"}]
    return out


def _urls(route, values) -> list[str]:
    """Every URL of a route with each combination of the study's values for its parameters."""
    if route.admin:
        return []  # the admin refuses non-staff users itself (runs.access.SELF_GUARDED_NAMESPACES)
    choices = [values[kind] for kind in route.converters]
    urls = []
    for combo in itertools.product(*choices):
        try:
            urls.append(reverse(route.name, kwargs=dict(zip(route.params, combo))))
        except Exception:  # a value the converter rejects (e.g. a token as a slug)
            continue
    return urls


def _with(url: str, params: dict) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"


def _leaks(body: str) -> list[str]:
    return sorted({m.group(0) for m in SIGNALS.finditer(body)})


def _per_sample(response, body: str) -> list[str]:
    """Per-sample values in an answer: pass/fail cells of a CSV or values of JSON (API, export, browsable API), and
    the tables of a page's JSON export whose rows link to attempts."""
    if response.resolver_match is not None and response.resolver_match.view_name in DESCRIBES_THE_API:
        return []
    kind = response.get("Content-Type", "").split(";")[0]
    found = sorted({m.group(0) for m in PER_SAMPLE["csv"].finditer(body)}) if kind == "text/csv" else []
    found += sorted({m.group(0) for m in PER_SAMPLE["json"].finditer(body)})
    if kind == "application/json":
        found += [f"table {name!r} (rows link to attempts)" for name in _attempt_tables(body)]
    return found


def _attempt_tables(body: str) -> list[str]:
    """The tables of a page's JSON export (runs.pages.export_document) with a column linking its rows to attempts."""
    try:
        document = json.loads(body)
    except ValueError:
        return []
    tables = document.get("tables") if isinstance(document, dict) else None
    return [t["name"] for t in tables or () if isinstance(t, dict) and any(c.get("link") for c in t.get("columns", ()))]


def _api_formats(url: str) -> list[str]:
    """The formats the DRF view behind a URL renders (?format=), none for a view that is not DRF's."""
    view = getattr(resolve(urlsplit(url).path).func, "cls", None)
    return sorted({renderer.format for renderer in view.renderer_classes}) if view is not None else []


class Walk:
    def __init__(self, study):
        self.study = study
        self.client = Client()
        self.problems: list[str] = []
        self.requests = 0
        self.open_urls: list[str] = []
        self.exported = 0  # pages with exports
        self.reviewer = Client()
        self.reviewer.force_login(study.reviewer)

    def get(self, url: str, *, htmx: bool = False):
        if "_auth_user_id" not in self.client.session:  # a route that logs out must not end the walk unnoticed
            self.client.force_login(self.study.blind)
        headers = {"HX-Request": "true", "HX-Target": "results"} if htmx else {}
        response = self.client.get(url, headers=headers)
        if response.status_code == 405:
            response = self.client.post(url, {}, headers=headers)
        self.requests += 1
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8", "replace")
        if response.status_code >= 500:
            self.problems.append(f"{url}: {response.status_code}")
        leaks = _leaks(text) + _per_sample(response, text)
        if leaks:
            self.problems.append(f"{url}{' (htmx)' if htmx else ''}: {response.status_code} shows {leaks}")
        return response, text

    def tables_of(self, url: str) -> dict[str, bool]:
        """Every table of the page at `url` as a reviewer's JSON export lists them (a reviewer reads every table),
        each with whether its rows link to attempts; {} for a URL that is not a page of the frame (runs.pages)."""
        response = self.reviewer.get(_with(url, {"export": "json"}))
        self.requests += 1
        if response.status_code != 200 or response.get("Content-Type") != "application/json":
            return {}
        document = json.loads(response.content)
        if not isinstance(document, dict) or not isinstance(document.get("tables"), list):
            return {}
        linking = set(_attempt_tables(response.content.decode()))
        return {t["name"]: t["name"] in linking for t in document["tables"]}

    def exports(self, url: str, tables: dict[str, bool]) -> None:
        """Every export of the page, as the blind annotator: JSON, and each table as CSV; a table whose rows link to
        attempts must be refused like a table the page does not have."""
        self.get(_with(url, {"export": "json"}))
        for name, per_item in tables.items():
            response, text = self.get(_with(url, {"export": "csv", "table": name}))
            if per_item and response.status_code != 400:
                self.problems.append(
                    f"{_with(url, {'export': 'csv', 'table': name})}: {response.status_code} "
                    f"answers a table whose rows link to attempts"
                )


def test_a_blind_annotator_reads_no_verdict_and_no_other_label_on_any_route(study, routes):
    walk = Walk(study)
    for route in routes:
        for url in _urls(route, study.values):
            response, text = walk.get(url)
            if response.status_code == 200:
                walk.open_urls.append(url)
            elif response.status_code == 400:  # an API endpoint that needs a run: ask for each
                walk.open_urls += [
                    asked
                    for asked in (_with(url, {"run": label}) for label in study.run_labels)
                    if walk.get(asked)[0].status_code == 200
                ]
    assert walk.open_urls, "the blind annotator reached no page at all"

    for url in walk.open_urls:
        walk.get(url, htmx=True)
        tables = walk.tables_of(url)
        walk.exported += bool(tables)
        walk.exports(url, tables)
        for fmt in _api_formats(url):
            walk.get(_with(url, {"format": fmt}))
        for params in study.variants:
            variant = _with(url, params)
            walk.get(variant)
            walk.get(variant, htmx=True)
            if tables:
                walk.exports(variant, tables)
        for policy in study.policies:  # asked right after the page without it (job pages say "n seconds ago")
            plain = _normalised(walk.get(url)[1])
            response, text = walk.get(_with(url, {"exclude": policy}))
            if response.status_code == 200 and _normalised(_unechoed(text, policy)) != plain:
                walk.problems.append(f"{_with(url, {'exclude': policy})}: differs from the page without the policy")

    print(
        f"blind walk: {walk.requests} requests, {len(walk.open_urls)} pages open, {walk.exported} with exports:",
        *walk.open_urls,
        sep="\n  ",
    )
    assert walk.requests > 500 and walk.exported
    assert walk.problems == [], "\n".join(walk.problems)


def _unechoed(text: str, policy: str) -> str:
    """An answer without echoes of the policy in the query string (a page polling its own full path)."""
    return re.sub(rf"[?&](?:amp;)?exclude={policy}\b", "", text)


def _normalised(text: str) -> str:
    """An answer without its per-request tokens (CSRF)."""
    return VOLATILE.sub(r"\1", text)


def test_the_walk_sees_the_markers_a_reviewer_may_read(study):
    """The walk can fail: a reviewer, who may read verdicts, meets the same markers the blind annotator must not."""
    from runs.models import Attempt

    client = Client()
    client.force_login(study.reviewer)
    attempt = Attempt.objects.filter(run__benchmark__slug="hostile").order_by("pk").first()
    assert _leaks(client.get(f"/api/attempts/{attempt.pk}/verdicts/").content.decode())
    assert _leaks(client.get("/api/attempts/").content.decode())
    unit = study.campaign.units.filter(state="disputed").get()
    assert _leaks(client.get(f"/api/audits/units/{unit.pk}/").content.decode())
    assert _leaks(client.get(f"/audits/units/{unit.pk}/").content.decode())
    run = Attempt.objects.filter(run__benchmark__slug="manyih-coding").order_by("pk").first().run  # and its twin
    flips = _with(reverse("runs:hierarchy-metrics", args=["manyih-coding"]), {"a": run.label, "b": f"{run.label}-twin"})
    for export in ({"export": "csv", "table": "flips"}, {"export": "json"}):
        response = client.get(_with(flips, export))
        assert _per_sample(response, response.content.decode())


def test_a_blind_annotators_api_token_is_held_to_the_same_rule(study):
    """DRF authenticates tokens inside the view; the middleware reads the token itself, so a script gets no more."""
    from rest_framework.authtoken.models import Token

    client = Client(headers={"Authorization": f"Token {Token.objects.create(user=study.blind).key}"})
    refused = client.get("/api/attempts/")
    assert refused.status_code == 403 and "Annotators label blind" in refused.json()["detail"]
    unit = study.campaign.units.get(state="disputed")
    body = client.get(f"/api/audits/units/{unit.pk}/").json()
    assert body["state"] == "unsettled" and body["agreement"] is None and len(body["labels"]) == 1
    leaderboard = client.get("/api/leaderboards/hostile/?exclude=flagged_by_either")
    assert leaderboard.status_code == 200 and leaderboard.json() == client.get("/api/leaderboards/hostile/").json()
    assert Client(headers={"Authorization": "Token not-a-token"}).get("/api/attempts/").status_code == 401


def test_a_new_route_is_closed_to_blind_annotators_until_declared_safe(study):
    """A view nobody declared: refused to the blind annotator, served to a reviewer (runs.access is default-deny)."""
    middleware = BlindnessMiddleware(lambda request: HttpResponse())

    def ask(user, view):
        request = RequestFactory().get("/new/?exclude=flagged_by_either&cell=1")
        request.user, request.resolver_match = user, None
        return request, middleware.process_view(request, view, (), {})

    with pytest.raises(PermissionDenied, match="Annotators label blind"):
        ask(study.blind, _undeclared)
    refused = ask(study.blind, _UndeclaredApi.as_view())[1]
    assert refused.status_code == 403 and b"Annotators label blind" in refused.content
    request, answer = ask(study.blind, _declared)
    assert answer is None and dict(request.GET) == {}  # served, without the policy or the cell
    request, answer = ask(study.reviewer, _undeclared)
    assert answer is None and set(request.GET) == {"exclude", "cell"}


def _undeclared(request):
    return HttpResponse(f"{MARK}-NEW-ROUTE")


@blind_safe(drop=("cell",))
def _declared(request):
    return HttpResponse("nothing secret")


class _UndeclaredApi(APIView):
    def get(self, request):
        return Response({"reasoning": f"{MARK}-NEW-API"})
