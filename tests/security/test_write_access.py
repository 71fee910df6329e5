"""The write rule (runs.access): imports, re-checks, share links and retries are for editors and leads; a reviewer
and a user in no group read everything and change nothing; pages offer them no write control; and a change every
user sees is confirmed first, with what it changes in words."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs import jobs
from runs.access import (
    ANNOTATOR,
    EDITOR,
    LEAD,
    REVIEWER,
    WRITE_GUARDED_NAMESPACES,
    can_write,
    is_blind_annotator,
    writes_of,
)
from runs.ingest import Options, Source, ingest
from runs.models import Benchmark, ChecklistItem, Job, JobState, Run, ShareLink, Verdict
from runs.pages import page_snapshot
from runs.recheck import CHECKERS
from runs.sharing import page_share_link_create

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "manyih"
SLUG = "manyih-coding"
JUDGE = CHECKERS["hierarchy"].judge
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def _user(django_user_model, name: str, *groups: str):
    user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def study():
    """A ManyIH benchmark with one run of two samples' attempts, and the run's label."""
    ingest("manyih-data", [Source.of(FIXTURES / "coding_small.json")], Options())
    ingest("manyih-results", [Source.of(FIXTURES / "results_small.json")], Options(model="acme", run="acme-ordinal"))
    return Run.objects.get(label="acme-ordinal")


def _link(user, rf) -> ShareLink:
    """A live share link of the hierarchy metrics page made by `user` (as the Share form makes one)."""
    path = reverse("runs:hierarchy-metrics", args=[SLUG])
    request = rf.get(path)
    request.user = user
    snapshot = page_snapshot(request, path=path, benchmark_slug=SLUG, include_attempts=False)
    return page_share_link_create(user=user, benchmark=Run.objects.get().benchmark, snapshot=snapshot)[0]


def _failed_job(user) -> Job:
    return Job.objects.create(
        kind="ingest",
        state=JobState.FAILED,
        params={"format": "native", "options": {}},
        files=[{"path": str(FIXTURES / "results_small.json"), "name": "results_small.json"}],
        created_by=user,
    )


# the declaration ----------------------------------------------------------------------------------
def _views(resolver: URLResolver, namespace: str | None = None):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = entry.namespace or namespace
            yield from _views(entry, inner if namespace is None or entry.namespace is None else f"{namespace}:{inner}")
        elif isinstance(entry, URLPattern):
            yield namespace, entry.name, entry.callback


def _unsafe_methods(view) -> set[str]:
    """The unsafe methods a view is made to take: a DRF view's handlers, or what a function view's
    require_http_methods/require_POST lets through (found in the closures of its decorators)."""
    view_class = getattr(view, "cls", None) or getattr(view, "view_class", None)
    if view_class is not None:
        return {m.upper() for m in ("post", "put", "patch", "delete") if hasattr(view_class, m)}
    found = view
    while found is not None:
        for cell in getattr(found, "__closure__", None) or ():
            value = cell.cell_contents
            if isinstance(value, list) and value and all(isinstance(v, str) and v.isupper() for v in value):
                return set(value) & UNSAFE
        found = getattr(found, "__wrapped__", None)
    return set()


def test_it_declares_every_route_of_the_results_app_that_takes_a_post_a_write():
    views = [(ns, name, view) for ns, name, view in _views(get_resolver()) if ns in WRITE_GUARDED_NAMESPACES]
    posting = {f"{ns}:{name}" for ns, name, view in views if _unsafe_methods(view)}
    undeclared = sorted(f"{ns}:{name}" for ns, name, view in views if _unsafe_methods(view) and not writes_of(view))

    assert {
        "runs:import",
        "api:ingest",
        "runs:dialogue-rescore-start",
        "runs:hierarchy-recheck-start",
        "runs:share-create",
        "runs:page-share-create",
        "runs:share-revoke",
        "runs:job-retry",
    } <= posting
    assert undeclared == []


def test_it_lets_editors_and_leads_write_and_keeps_everyone_else_reading(django_user_model):
    roles = {
        name: _user(django_user_model, name, *groups)
        for name, groups in {
            "editor": [EDITOR],
            "lead": [LEAD],
            "reviewer": [REVIEWER],
            "nobody": [],
            "annotator": [ANNOTATOR],
            "annotating-editor": [ANNOTATOR, EDITOR],
        }.items()
    }
    boss = django_user_model.objects.create_superuser("boss", password="pw-boss-12345")

    assert {name for name, user in roles.items() if can_write(user)} == {"editor", "lead", "annotating-editor"}
    assert can_write(boss)
    # being an editor too unblinds no annotator
    assert is_blind_annotator(roles["annotating-editor"]) and is_blind_annotator(roles["annotator"])


# refused, and nothing changes -----------------------------------------------------------------------
@pytest.mark.parametrize("groups", [[REVIEWER], []], ids=["reviewer", "no group"])
def test_a_reader_is_refused_every_write_and_nothing_changes(
    study, django_user_model, rf, groups, django_capture_on_commit_callbacks
):
    reader = _user(django_user_model, "reader", *groups)
    link, job = _link(reader, rf), _failed_job(reader)  # made before the editor role existed
    client = _client(reader)
    token = APIClient()
    token.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=reader).key}")
    upload = {
        "format": "manyih-data",
        "files": [SimpleUploadedFile("c.json", (FIXTURES / "coding_small.json").read_bytes())],
    }
    counts = (Job.objects.count(), ShareLink.objects.count(), Verdict.objects.count())
    metrics = reverse("runs:hierarchy-metrics", args=[SLUG])

    with django_capture_on_commit_callbacks(execute=True):
        answers = {
            "import page": client.get(reverse("runs:import")),
            "import": client.post(reverse("runs:import"), upload),
            "api ingest (session)": client.post(reverse("api:ingest"), upload),
            "api ingest (token)": token.post(reverse("api:ingest"), upload, format="multipart"),
            "re-check": client.post(reverse("runs:hierarchy-recheck-start", args=[SLUG]), {"confirm": "1"}),
            "re-check, unconfirmed": client.post(reverse("runs:hierarchy-recheck-start", args=[SLUG])),
            "share": client.post(reverse("runs:page-share-create", args=[SLUG]), {"path": metrics}),
            "share (old form)": client.post(reverse("runs:share-create", args=[SLUG]), {"query": ""}),
            "revoke": client.post(reverse("runs:share-revoke", args=[link.pk]), {"confirm": "1"}),
            "retry": client.post(reverse("runs:job-retry", args=[job.id])),
        }

    assert {what: r.status_code for what, r in answers.items()} == dict.fromkeys(answers, 403)
    assert (
        "editor" in answers["re-check"].content.decode() and "editor" in answers["api ingest (token)"].json()["detail"]
    )
    assert (Job.objects.count(), ShareLink.objects.count(), Verdict.objects.count()) == counts
    link.refresh_from_db()
    job.refresh_from_db()
    assert link.revoked_at is None and job.state == JobState.FAILED


def test_the_api_refuses_a_reader_however_drf_authenticated_them(django_user_model):
    """The middleware sees session and token users; a DRF view declared `writes` checks DRF's own user too."""
    client = APIClient()
    client.force_authenticate(_user(django_user_model, "reader", REVIEWER))

    response = client.post(reverse("api:ingest"), {"format": "manyih-data"}, format="multipart")

    assert response.status_code == 403 and "editor" in response.json()["detail"] and not Job.objects.exists()


def test_an_editor_imports_shares_and_retries(study, django_user_model, rf, django_capture_on_commit_callbacks):
    editor = _user(django_user_model, "ed", EDITOR)
    client = _client(editor)
    metrics = reverse("runs:hierarchy-metrics", args=[SLUG])

    assert client.get(reverse("runs:import")).status_code == 200
    assert "/s/" in client.post(reverse("runs:page-share-create", args=[SLUG]), {"path": metrics}).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        retried = client.post(reverse("runs:job-retry", args=[_failed_job(editor).id]))
    assert retried.status_code == 302


# what pages offer -----------------------------------------------------------------------------------
def test_pages_offer_a_reader_no_write_control_and_an_editor_every_one(study, django_user_model, rf):
    pages = {
        "home": reverse("runs:home"),
        "jobs": reverse("runs:jobs"),
        "metrics": reverse("runs:hierarchy-metrics", args=[SLUG]),
        "re-check": reverse("runs:hierarchy-recheck", args=[SLUG]),
        "links": reverse("runs:share-list"),
    }
    controls = {
        "Import": 'href="/import/"',
        "Re-check": reverse("runs:hierarchy-recheck-start", args=[SLUG]),
        "Share": reverse("runs:page-share-create", args=[SLUG]),
        "Revoke": "/revoke/",
        "Retry": "/retry/",
    }

    def offered(user) -> set[str]:
        _link(user, rf)
        client = _client(user)
        body = "".join(client.get(url).content.decode() for url in pages.values())
        body += client.get(reverse("runs:job", args=[_failed_job(user).id])).content.decode()
        return {name for name, mark in controls.items() if mark in body}

    assert offered(_user(django_user_model, "reader", REVIEWER)) == set()
    assert offered(_user(django_user_model, "nobody")) == set()
    assert offered(_user(django_user_model, "ed", EDITOR)) == set(controls)


def test_a_cached_leaderboard_follows_the_viewers_write_role(django_user_model):
    """The whole leaderboard page is cached per viewer: a reader made an editor gets the Share form on their next
    request, not a copy cached while they could not write."""
    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    user = _user(django_user_model, "reader", REVIEWER)
    client = _client(user)
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])

    assert "Share…" not in client.get(url).content.decode()
    user.groups.add(Group.objects.get(name=EDITOR))
    assert "Share…" in client.get(url).content.decode()


# confirmation before a change everyone sees ---------------------------------------------------------
def test_a_re_check_says_what_it_adds_and_starts_only_when_confirmed(
    study, django_user_model, django_capture_on_commit_callbacks
):
    client = _client(_user(django_user_model, "ed", EDITOR))
    start = reverse("runs:hierarchy-recheck-start", args=[SLUG])
    instructions = CHECKERS["hierarchy"].items

    asked = client.post(start, {"run": [study.label]})
    expected = ChecklistItem.objects.filter(instructions, instance__attempts__run=study).count()
    body = asked.content.decode()
    assert (
        asked.status_code == 200 and not Job.objects.exists() and not Verdict.objects.filter(judge__name=JUDGE).exists()
    )
    assert f"This adds up to {expected:,} verdicts from judge {JUDGE} to 1 run (acme-ordinal)" in body
    assert f"Every user&#x27;s leaderboard and metric pages of this benchmark will show judge {JUDGE}" in body
    assert 'name="confirm" value="1"' in body and f'name="run" value="{study.label}"' in body

    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(start, {"run": [study.label], "confirm": "1"})
    job = Job.objects.get()
    assert started.status_code == 302 and started["Location"] == reverse("runs:job", args=[job.id])
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert Verdict.objects.filter(judge__name=JUDGE).count() == expected  # "up to" held, and to the verdict

    again = client.post(start, {"run": [study.label]}).content.decode()
    assert f"Judge {JUDGE} already has {expected:,} verdicts on 1 run (acme-ordinal)" in again
    assert "which they do not show today" not in again and Job.objects.count() == 1


def test_revoking_a_live_link_says_who_loses_it_and_revokes_only_when_confirmed(study, django_user_model, rf):
    editor = _user(django_user_model, "ed", EDITOR)
    client, link = _client(editor), _link(editor, rf)
    revoke = reverse("runs:share-revoke", args=[link.pk])

    asked = client.post(revoke)
    link.refresh_from_db()
    body = asked.content.decode()
    assert asked.status_code == 200 and link.revoked_at is None
    assert "Anyone holding this link will get a 404" in body and "cannot be undone" in body
    assert f"{link.created_at:%Y-%m-%d %H:%M} UTC" in body and "does not record when a link is opened" in body

    assert client.post(revoke, {"confirm": "1"}).status_code == 302
    link.refresh_from_db()
    assert link.revoked_at is not None
    assert Client().get(reverse("runs:share-list")).status_code == 302


# upgrading an installation -----------------------------------------------------------------------------
def test_the_migration_makes_editors_of_those_who_wrote_before(django_user_model, rf, study):
    migration = importlib.import_module("runs.migrations.0015_editor_role")
    importer, sharer, reader = (_user(django_user_model, n) for n in ("importer", "sharer", "reader"))
    lead = _user(django_user_model, "leader", LEAD)
    boss = django_user_model.objects.create_superuser("boss", password="pw-boss-12345")
    for user in (importer, lead, boss):
        jobs.job_create(kind="ingest", params={"format": "native", "options": {}}, user=user)
    _link(sharer, rf)
    Group.objects.filter(name=EDITOR).delete()  # as before the migration

    migration.editors_create(apps, None)

    editors = set(Group.objects.get(name=EDITOR).user_set.values_list("username", flat=True))
    assert editors == {"importer", "sharer"}  # leads and superusers write anyway; the reader stays a reader
    assert not can_write(django_user_model.objects.get(username="reader"))
