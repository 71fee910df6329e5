"""The permission matrix of docs/security.md, enforced on every URL pattern for every role.

The matrix is read from the document itself, so the two cannot drift: a URL pattern
without a row fails, a row without a pattern fails, and each cell is requested as that
role with ids of objects made here (the study is the hostile corpus, one benchmark of each
kind, plus an audit campaign, jobs and share links of every user).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]
ROLES = ["anonymous", "share-link holder", "annotator", "reviewer", "editor", "lead", "admin"]
CELLS = {"yes", "no", "own", "assigned", "token"}
ADMIN_WILDCARD = "admin:*"


def matrix() -> dict[tuple[str, str | None], dict[str, str]]:
    """(route name, method or None) -> role -> cell, from the table in docs/security.md."""
    rows = {}
    for line in (ROOT / "docs" / "security.md").read_text().splitlines():
        match = re.match(r"\| `([^`]+)`( [A-Z]+)? \|", line)
        if not match:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        values = cells[2:]
        assert len(values) == len(ROLES), f"row {match.group(1)} has {len(values)} role cells"
        assert set(values) <= CELLS, f"row {match.group(1)}: unknown cell in {values}"
        rows[(match.group(1), (match.group(2) or "").strip() or None)] = dict(zip(ROLES, values))
    return rows


def _row_key(route) -> str | None:
    if route.admin and route.name not in ("admin:login", "admin:logout"):
        return ADMIN_WILDCARD
    return route.name


def test_it_has_a_matrix_row_for_every_url_pattern_and_a_pattern_for_every_row(routes):
    rows = matrix()
    keys = {_row_key(r) for r in routes}

    missing = sorted(f"{r.pattern} ({r.name or 'unnamed'})" for r in routes if _row_key(r) not in {k for k, _ in rows})
    stale = sorted(k for k, _ in rows if k not in keys)

    assert len(rows) > 50
    assert missing == [], "URL patterns without a row in docs/security.md"
    assert stale == [], "rows in docs/security.md naming no URL pattern"


# the study and its actors ---------------------------------------------------------------
def _user(django_user_model, name: str, group: str | None = None, **extra):
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1", **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def study(db, django_user_model, tmp_path, hostile, django_capture_on_commit_callbacks):
    """Users of every role (plus a second annotator), the corpus, a started campaign, jobs and share links."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.http import QueryDict

    from audits import services as audit
    from runs.forms import ingest_job_start
    from runs.models import Attempt, Benchmark, Instance, Judge, JudgeReport, ReportStatus
    from runs.selectors.checklist import checklist_query
    from runs.sharing import share_link_create

    hostile.ingest_all(tmp_path)
    users = {
        "annotator": _user(django_user_model, "p-annotator", "annotator"),
        "reviewer": _user(django_user_model, "p-reviewer", "reviewer"),
        "editor": _user(django_user_model, "p-editor", "editor"),
        "lead": _user(django_user_model, "p-lead", "lead"),
        "admin": _user(django_user_model, "p-admin", is_staff=True, is_superuser=True),
    }
    other = _user(django_user_model, "p-annotator-2", "annotator")
    checklist = Benchmark.objects.get(slug="hostile")
    campaign = audit.campaign_start(
        audit.campaign_create(
            name="permissions",
            subject="checklist_items",
            benchmarks=[checklist],
            strata=["category"],
            allocation="proportional",
            size=3,
            seed=1,
            user=users["lead"],
        )
    )
    assignments = {
        who: audit.assignment_next(campaign, user)
        for who, user in [*users.items(), ("other", other)]
        if who not in ("reviewer", "editor")
    }
    assert all(assignments.values()), "every labeller needs an assignment"
    unassigned = campaign.units.exclude(assignments__annotator=users["annotator"]).first()
    assert unassigned is not None
    # routes that end a reservation (skip, release) get a fresh one each time, from a campaign with room for many
    spare = audit.campaign_start(
        audit.campaign_create(
            name="spare",
            subject="checklist_items",
            benchmarks=[checklist],
            strata=[],
            allocation="proportional",
            size=8,
            seed=1,
            annotators_per_unit=10,
            user=users["lead"],
        )
    )

    def fresh(user):
        from django.utils import timezone

        from audits.models import Assignment

        unit = spare.units.exclude(assignments__annotator=user).order_by("position").first()
        now = timezone.now()
        slot = max(unit.assignments.values_list("slot", flat=True), default=0) + 1
        return Assignment.objects.create(
            unit=unit, annotator=user, slot=slot, reserved_at=now, expires_at=now + timezone.timedelta(minutes=30)
        )

    def failed_job(user):
        with django_capture_on_commit_callbacks(execute=True):  # the inline job runs, as after a real commit
            # scores of a benchmark not imported yet: a failure a retry may fix (after that import), so Retry is open
            job = ingest_job_start(
                format_name="octobench-scores",
                files=[SimpleUploadedFile("s.json", b'{"results": []}')],
                options={"model": "m", "judge": "j", "benchmark": "not-imported-yet"},
                user=user,
            )
        job.refresh_from_db()
        assert job.state == "failed"
        return job

    def link(user, **kw):
        state = checklist_query(checklist, QueryDict("")).state
        return share_link_create(user=user, benchmark=checklist, state=state, **kw)

    shared, token = link(users["lead"], include_attempts=True)
    in_scope = Attempt.objects.select_related("run__model").get(pk=shared.attempt_ids[0])
    attempt = Attempt.objects.filter(run__benchmark=checklist).order_by("pk").first()
    reply = JudgeReport.objects.create(
        attempt=attempt,
        judge=Judge.objects.create(name="p-judge"),
        status=ReportStatus.REPLY_NOT_JSON,
        raw_reply="<script>alert(1)</script>",
    )
    return SimpleNamespace(
        users=users,
        other=other,
        campaign=campaign,
        assignments=assignments,
        unassigned=unassigned,
        fresh=fresh,
        jobs={**{who: failed_job(u) for who, u in users.items()}, "other": failed_job(other)},
        links={**{who: link(u)[0] for who, u in users.items()}, "other": link(other)[0]},
        token=token,
        shared=shared,
        in_scope=in_scope,
        attempt=attempt,
        reply=reply,
        instance=Instance.objects.filter(benchmark=checklist).order_by("pk").first(),
        dialog=Attempt.objects.filter(run__benchmark__slug="evolif").first(),
        sample=Attempt.objects.filter(run__benchmark__slug="manyih-coding").first(),
        task=Instance.objects.filter(benchmark__slug="guidebench").first(),
    )


SLUG_BY_PREFIX = [
    ("runs:dialogue", "evolif"),
    ("runs:hierarchy", "manyih-coding"),
    ("runs:choice", "guidebench"),
    ("runs:conflict", "hostile-conflict"),
]


def _slug(name: str) -> str:
    return next((slug for prefix, slug in SLUG_BY_PREFIX if name.startswith(prefix)), "hostile")


def fill(route, s: SimpleNamespace, whose: str, token_ok: bool) -> tuple[dict, str]:
    """(kwargs, query) for a route: objects of `whose` ("annotator", ..., or "other") where ownership matters."""
    name = route.name or ""
    if route.admin:
        values = {"object_id": "1", "id": "1", "app_label": "runs", "content_type_id": "1", "url": "no-such-page/"}
        return {p: values[p] for p in route.params}, ""
    token = s.token if token_ok else "not-a-live-token-" + "x" * 30
    by_name = {
        "runs:job": ({"job_id": s.jobs[whose].id}, ""),
        "runs:job-retry": ({"job_id": s.jobs[whose].id}, ""),
        "api:job-detail": ({"pk": s.jobs[whose].id}, ""),
        "runs:attempt": ({"pk": s.attempt.pk}, ""),
        "runs:attempt-text": ({"pk": s.attempt.pk}, "thread=0&msg=1"),
        "runs:attempt-judge-reply": ({"pk": s.attempt.pk}, f"judge={s.reply.judge_id}"),
        "api:attempt-verdicts": ({"pk": s.attempt.pk}, ""),
        "runs:instance": ({"pk": s.instance.pk}, ""),
        "runs:instance-compare": ({"pk": s.instance.pk}, ""),
        "runs:share-revoke": ({"pk": s.links[whose].pk}, ""),
        "signin-link": ({"uidb64": "MQ", "token": "not-a-live-token"}, ""),  # answers that the link does not work
        "runs:share": ({"token": token}, ""),
        "runs:share-export": ({"token": token}, "format=csv"),
        "runs:share-attempts": ({"token": token}, urlencode({"model": s.in_scope.run.model.name})),
        "runs:share-attempt": ({"token": token, "pk": s.in_scope.pk}, ""),
        "runs:share-attempt-text": ({"token": token, "pk": s.in_scope.pk}, "thread=0&msg=0"),
        "runs:checklist-attempts": ({"slug": "hostile"}, urlencode({"model": s.attempt.run.model.name})),
        "runs:dialogue-viewer": ({"slug": "evolif", "pk": s.dialog.pk}, ""),
        "runs:hierarchy-attempt": ({"slug": "manyih-coding", "pk": s.sample.pk}, ""),
        "runs:choice-task": ({"slug": "guidebench", "external_id": s.task.external_id}, ""),
        "runs:search": ({"slug": "hostile"}, "q=alert"),
        "api:search": ({}, "benchmark=hostile&q=alert"),
        "audits:label-save": ({"pk": s.assignments.get(whose, s.assignments["other"]).pk}, ""),
        "audits-api:assignment": ({"pk": s.assignments.get(whose, s.assignments["other"]).pk}, ""),
        "audits:assignment-correct": ({"pk": s.assignments.get(whose, s.assignments["other"]).pk}, ""),
        "audits:assignment-skip": lambda: ({"pk": s.fresh(s.users.get(whose, s.other)).pk}, ""),
        "audits:assignment-release": lambda: ({"pk": s.fresh(s.users.get(whose, s.other)).pk}, ""),
        "audits-api:release": lambda: ({"pk": s.fresh(s.users.get(whose, s.other)).pk}, ""),
        "audits-api:label": ({"pk": s.assignments.get(whose, s.assignments["other"]).pk}, ""),
        "audits:unit": ({"pk": (s.assignments[whose].unit if whose in s.assignments else s.unassigned).pk}, ""),
        "audits-api:unit": ({"pk": (s.assignments[whose].unit if whose in s.assignments else s.unassigned).pk}, ""),
        "audits:unit-text": (
            {"pk": (s.assignments[whose].unit if whose in s.assignments else s.unassigned).pk},
            "thread=0&msg=0&field=content",
        ),
        "audits:adjudicate": ({"pk": s.unassigned.pk}, ""),
        "audits-api:adjudicate": ({"pk": s.unassigned.pk}, ""),
        "audits:unit-rewrite": ({"pk": s.unassigned.pk}, ""),  # an empty form: refused for leads, nothing rewritten
        "audits-api:item-rewrite": ({"pk": s.unassigned.item_id}, ""),
        "audits-api:excluded-items": ({"slug": "hostile"}, "exclude=adjudicated_invalid"),
        "audits-api:effect": ({"slug": "hostile"}, "exclude=adjudicated_invalid"),
    }
    if name in by_name:  # a callable makes its object only when that route is requested
        return by_name[name]() if callable(by_name[name]) else by_name[name]
    kwargs = {}
    for param in route.params:
        if param == "slug":
            kwargs["slug"] = _slug(name)
        elif param == "pk" and name.startswith(("audits:", "audits-api:")):
            kwargs["pk"] = s.campaign.pk
        else:
            raise AssertionError(f"{name}: no filler for <{param}>; add one to fill() in {Path(__file__).name}")
    return kwargs, ""


def _client(role: str, s: SimpleNamespace) -> Client:
    client = Client()
    if role in s.users:
        client.force_login(s.users[role])
    elif role == "share-link holder":
        assert client.get(reverse("runs:share", args=[s.token])).status_code == 200
    return client


def _request(client: Client, url: str, method: str | None):
    if method == "POST":
        return client.post(url, {})
    response = client.get(url)
    if response.status_code == 405 and method is None:
        response = client.post(url, {})
    return response


def _outcome(response) -> str:
    """ "error", "login" (sent to a login form), "denied" (401/403/404) or "allowed"."""
    if response.status_code >= 500:
        return "error"
    location = response.get("Location", "")
    if response.status_code in (301, 302, 303) and location.startswith(("/login/?next=", "/admin/login/?next=")):
        return "login"
    if response.status_code in (401, 403, 404):
        return "denied"
    return "allowed"


def _denied_as_expected(route, url: str, role: str, response) -> bool:
    outcome, signed_in = _outcome(response), role in ("annotator", "reviewer", "editor", "lead", "admin")
    if route.admin:
        return outcome == "login" and response["Location"].startswith("/admin/login/")
    if url.startswith("/s/"):  # a blind annotator is refused before the token is read (runs.access)
        return response.status_code == 404 or (role == "annotator" and response.status_code == 403)
    if signed_in:
        return outcome == "denied"
    if url.startswith("/api/"):
        return response.status_code in (401, 403)
    return outcome == "login" and response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("role", ROLES)
def test_it_enforces_the_matrix_for_every_url_pattern(study, role, routes):
    rows = matrix()
    problems = []
    checked = 0
    for route in routes:
        key = _row_key(route)
        for method in [m for (k, m) in rows if k == key]:
            cell = rows[(key, method)][role]
            own_kind = role if role in study.users else "other"
            cases = (
                [("allowed", own_kind), ("denied", "other")]
                if cell in ("own", "assigned")
                else [("allowed" if cell in ("yes", "token") else "denied", "other")]
            )
            for expect, whose in cases:
                kwargs, query = fill(route, study, whose, token_ok=(cell == "token"))
                url = reverse(route.name, kwargs=kwargs) if route.name else "/admin/" + kwargs.get("url", "")
                url += f"?{query}" if query else ""
                response = _request(_client(role, study), url, method)
                outcome = _outcome(response)
                ok = (
                    (outcome == "allowed" or (route.admin and outcome == "denied"))
                    if expect == "allowed"
                    else _denied_as_expected(route, url, role, response)
                )
                checked += 1
                if not ok:
                    problems.append(
                        f"{route.name or route.pattern} {method or ''} {url}: {cell} for {role} "
                        f"(whose={whose}) but {response.status_code} {response.get('Location', '')}"
                    )

    assert checked > 150
    assert problems == [], "\n".join(problems)


def test_it_refuses_a_token_outside_its_scope_and_an_unknown_one(study):
    from runs.models import Attempt

    outside = Attempt.objects.exclude(pk__in=study.shared.attempt_ids).first()
    client = Client()

    assert client.get(f"/s/{study.token}/attempts/{study.in_scope.pk}/").status_code == 200
    assert client.get(f"/s/{study.token}/attempts/{outside.pk}/").status_code == 404
    assert client.get(f"/s/{uuid.uuid4().hex}/").status_code == 404
