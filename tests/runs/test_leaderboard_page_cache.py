"""The leaderboard page's cached parts: the rendered #results fragment and the filter choices are
kept per (benchmark, data generation, validated state), never shared between states, htmx
swaps or users' pages, retired when the generation moves; jobs warm the default page after they
commit. Runs on SQLite and PostgreSQL (with Redis when CACHE_URL says so)."""

import io
import re
import runpy
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs import cache_warming, jobs, leaderboard_page, services
from runs.cache import cache_key, data_generation
from runs.models import Benchmark, Run, Verdict
from runs.selectors.checklist import filter_choices
from runs.services import rollups_rebuild_for_attempts

NATIVE = Path(__file__).resolve().parents[1] / "fixtures" / "native" / "study.jsonl"


build_study = runpy.run_path(str(Path(__file__).with_name("test_views_checklist.py")))["build_study"]


def results(body: str) -> str:
    """The #results section of a page."""
    found = re.search(r'<section id="results">.*?</section>', body, re.S)
    assert found, body[:2000]
    return found.group(0)


def client_of(django_user_model, name: str) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user(name, password=f"pw-{name}-1"))
    return client


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run a request as if its transaction committed: what it computed is stored in the cache."""

    def get(client, url, **headers):
        with django_capture_on_commit_callbacks(execute=True):
            return client.get(url, **headers)

    return get


@pytest.mark.django_db
def test_a_warm_page_reads_neither_rollups_nor_filter_choices(django_user_model, committed):
    bench, _ = build_study()
    client = client_of(django_user_model, "warm-reader")
    url = reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?by=category"
    cold = committed(client, url).content.decode()
    with CaptureQueriesContext(connection) as queries:
        warm = client.get(url).content.decode()
    tables = {t for q in queries for t in re.findall(r'"(runs_\w+)"', q["sql"])}
    assert tables == {"runs_benchmark"}, [q["sql"] for q in queries]  # the benchmark, then its generation
    assert results(warm) == results(cold) and "83.33" in results(warm)


@pytest.mark.django_db
def test_the_fragment_moves_with_the_data_generation(django_user_model, committed):
    bench, attempts = build_study()
    client = client_of(django_user_model, "gen-reader")
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    before = results(committed(client, url).content.decode())
    assert "66.67" in before  # alpha fails c1 on one instance of three
    alpha = [a.id for a in attempts if a.run.model.name == "alpha"]
    Verdict.objects.filter(attempt_id__in=alpha).update(result="pass")
    assert results(committed(client, url).content.decode()) == before  # rollups and generation unchanged
    generation = data_generation(bench.id)
    rollups_rebuild_for_attempts(alpha)  # bumps the generation in its transaction
    assert data_generation(bench.id) == generation + 1
    after = results(committed(client, url).content.decode())
    assert after != before and "66.67" not in after


@pytest.mark.django_db
def test_query_strings_htmx_swaps_and_slugs_have_their_own_fragments(django_user_model, committed):
    bench, _ = build_study()
    client = client_of(django_user_model, "query-reader")
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    pages = {}
    for query in ("", "sort=isr", "run=alpha-r1", "by=judge&sort=model"):
        pages[query] = results(committed(client, f"{url}?{query}" if query else url).content.decode())
    assert len(set(pages.values())) == len(pages)
    # an invented parameter, a repeat: the same state, so the same fragment, linking the state only
    same = results(client.get(f"{url}?invented=x&run=alpha-r1&run=alpha-r1").content.decode())
    assert same == pages["run=alpha-r1"] and "invented" not in same
    # a run that does not exist makes the run filter invalid: it is dropped, the default state
    assert results(client.get(f"{url}?run=alpha-r1&run=nope").content.decode()) == pages[""]
    # every fragment, read back warm, is the one of its own query string
    for query, fragment in pages.items():
        assert results(client.get(f"{url}?{query}" if query else url).content.decode()) == fragment
    swap = committed(client, url + "?sort=isr", HTTP_HX_REQUEST="true").content.decode()
    assert swap.lstrip().startswith('<section id="results">') and 'hx-swap-oob="true"' in swap
    assert "hx-swap-oob" not in results(client.get(url + "?sort=isr").content.decode())
    # the swap's results come from the cache; the toolbar out of band after them is the user's (its CSRF token)
    assert 'id="page-tools" hx-swap-oob="true"' in swap.split("</section>")[-1]
    again = client.get(url + "?sort=isr", HTTP_HX_REQUEST="true").content.decode()
    assert again.split('<div class="toolbar page-tools"')[0] == swap.split('<div class="toolbar page-tools"')[0]
    Benchmark.objects.filter(pk=bench.pk).update(slug="octo-renamed")  # the admin does not move the generation
    renamed = results(client.get(reverse("runs:checklist-leaderboard", args=["octo-renamed"])).content.decode())
    assert "/b/octo-renamed/" in renamed and "/b/octo/" not in renamed


@pytest.mark.django_db
def test_the_fragment_holds_nothing_of_the_user(django_user_model, committed):
    bench, _ = build_study()
    url = reverse("runs:checklist-leaderboard", args=[bench.slug]) + "?by=scaffold"
    first = committed(client_of(django_user_model, "first-reader"), url).content.decode()
    second = client_of(django_user_model, "second-reader").get(url).content.decode()
    assert results(first) == results(second)
    assert "first-reader" in first and "first-reader" not in second and "second-reader" in second
    for page in (first, second):
        assert "csrf" not in results(page).lower()
        assert 'name="csrfmiddlewaretoken"' in page  # the Share form and the log-out form, outside #results


@pytest.mark.django_db
def test_filter_choices_are_cached_until_a_new_run_moves_the_generation(django_capture_on_commit_callbacks):
    bench, attempts = build_study()
    with django_capture_on_commit_callbacks(execute=True):
        choices = filter_choices(bench)
    assert choices == {
        "run": ["alpha-r1", "beta-r1"],
        "judge": ["j1", "j2"],
        "scaffold": ["claudecode"],
        "primary_category": ["Skill.md"],
    }
    Run.objects.filter(label="beta-r1").update(label="beta-r2")
    assert filter_choices(bench) == choices  # no write that moves the generation yet
    rollups_rebuild_for_attempts([a.id for a in attempts])
    assert filter_choices(bench)["run"] == ["alpha-r1", "beta-r2"]


def _ingest_job():
    return jobs.job_create(
        kind="ingest", params={"format": "native", "options": {}}, files=[{"path": str(NATIVE), "name": NATIVE.name}]
    )


@pytest.mark.django_db(transaction=True)
def test_an_ingest_job_warms_the_default_page_after_it_commits(django_user_model):
    job = _ingest_job()
    jobs.job_execute(job.id)
    job.refresh_from_db()
    assert job.state == "succeeded", job.errors
    bench = Benchmark.objects.get(slug="acme-agent-if")
    generation = data_generation(bench.id)
    assert isinstance(cache.get(cache_key(bench.id, generation, "choices")), dict)
    form = cache.get(cache_key(bench.id, generation, leaderboard_page._part("filters", bench, "", False)))
    assert form is not None and 'name="run"' in form  # the rendered filter form of the page as first opened
    client = client_of(django_user_model, "first-viewer")
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]))
    assert page.status_code == 200 and "model-x" in results(page.content.decode())
    tables = {t for q in queries for t in re.findall(r'FROM "(\w+)"', q["sql"])}
    # the user, their roles (runs.access: blind or not) and the benchmark (the session is in the cache); nothing computed
    assert tables == {"auth_user", "auth_group", "runs_benchmark"}, "the first viewer computed part of the page"


@pytest.mark.django_db(transaction=True)
def test_after_a_deploy_leaderboards_warm_precomputes_what_the_first_viewer_would(django_user_model):
    jobs.job_execute(_ingest_job().id)
    bench = Benchmark.objects.get(slug="acme-agent-if")
    cache.clear()  # a deploy: the new code version keys nothing that is stored
    out = io.StringIO()
    call_command("leaderboards_warm", stdout=out)
    assert "warmed 1 leaderboard(s)" in out.getvalue() and "acme-agent-if" in out.getvalue()
    client = client_of(django_user_model, "first-viewer-after-deploy")
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]))
    assert page.status_code == 200 and "model-x" in results(page.content.decode())
    read = {t for q in queries for t in re.findall(r'FROM "(\w+)"', q["sql"]) if t.startswith("runs_")}
    assert read == {"runs_benchmark"}, "the first viewer after the deploy computed part of the page"
    with pytest.raises(CommandError, match="no-such"):
        call_command("leaderboards_warm", "--benchmark", "no-such")


@pytest.mark.django_db(transaction=True)
def test_a_failure_while_warming_never_fails_the_job(monkeypatch, caplog):
    def broken(benchmark_ids):
        raise RuntimeError("cache exploded")

    monkeypatch.setattr(cache_warming, "leaderboards_default", broken)  # as every writer calls it
    job = _ingest_job()
    jobs.job_execute(job.id)
    job.refresh_from_db()
    assert job.state == "succeeded" and Verdict.objects.exists()
    assert "warming the leaderboards" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_writers_warm_once_they_committed_jobs_once_they_finished_and_nothing_without_rollups(monkeypatch):
    calls = []
    monkeypatch.setattr(cache_warming, "leaderboards_default", lambda ids: calls.append(set(ids)))
    bench, attempts = build_study()
    calls.clear()
    with transaction.atomic():
        services.rollups_rebuild_for_attempts([a.id for a in attempts])
        assert calls == []  # not before the change commits
    assert calls == [{bench.id}]  # a writer outside jobs: on commit
    calls.clear()
    job = jobs.job_create(kind="rollups", params={"benchmark_id": bench.id})
    jobs.job_execute(job.id)
    assert calls == [{bench.id}]  # a job: once, when it has finished
    calls.clear()
    with services.leaderboards_warmed_at_end():  # many commits (an import file by file): once, at the end
        services.rollups_rebuild_for_attempts([attempts[0].id])
        services.rollups_rebuild_for_attempts([attempts[1].id])
        assert calls == []
    assert calls == [{bench.id}]
    monkeypatch.undo()
    empty = Benchmark.objects.create(slug="empty", name="Empty", kind="checklist")
    cache_warming.leaderboards_default([empty.id])  # no rollups: nothing computed, nothing stored
    assert cache.get(cache_key(empty.id, data_generation(empty.id), "choices")) is None


@pytest.mark.django_db
def test_the_cached_filter_form_follows_its_query_string_and_the_generation(django_user_model, committed):
    bench, attempts = build_study()
    client = client_of(django_user_model, "form-reader")
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    selected = 'value="alpha-r1" id="id_run_0" checked>'
    assert selected in committed(client, url + "?run=alpha-r1").content.decode()
    assert selected not in committed(client, url).content.decode()
    assert selected in client.get(url + "?run=alpha-r1").content.decode()  # warm: its own query's form
    assert selected not in client.get(url).content.decode()
    Run.objects.filter(label="beta-r1").update(label="beta-r9")
    assert 'value="beta-r9"' not in client.get(url).content.decode()  # generation unchanged: cached form
    rollups_rebuild_for_attempts([a.id for a in attempts])
    assert 'value="beta-r9"' in committed(client, url).content.decode()


def stored_leaderboard_bytes() -> list[bytes]:
    """Every leaderboard entry of the cache as stored (pickled), in process memory or in Redis."""
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return [value for key, value in backend._cache.items() if ":leaderboard:" in key]
    client = backend._cache.get_client(None, write=True)
    return [client.get(key) for key in client.scan_iter(match=backend.make_key("leaderboard:*"), count=1000)]


def _token(body: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', body)
    assert found, body[:2000]
    return found.group(1)


@pytest.mark.django_db
def test_the_whole_page_is_kept_per_viewer_with_a_fresh_csrf_token_each_time(django_user_model, committed):
    """A warm page is read whole from the cache (no template rendered) with this request's CSRF token in
    place of the placeholder; the cache holds no token; a post with the token of a cached page is accepted."""
    from django.contrib.auth.models import Group
    from django.template import Template

    from runs.access import EDITOR

    bench, _ = build_study()
    user = django_user_model.objects.create_user("page-reader", password="pw-page-reader-1")
    user.groups.add(Group.objects.get_or_create(name=EDITOR)[0])  # may share
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    first = committed(client, url).content.decode()
    rendered = []
    real_render = Template.render
    try:
        Template.render = lambda self, *a, **k: rendered.append(self) or real_render(self, *a, **k)
        second = client.get(url).content.decode()
    finally:
        Template.render = real_render
    assert rendered == []  # read whole, not rendered
    placeholder = leaderboard_page.csrf_placeholder()
    assert placeholder not in first and placeholder not in second
    assert re.sub(r'value="[^"]+"|"X-CSRFToken": "[^"]+"', "", first) == re.sub(
        r'value="[^"]+"|"X-CSRFToken": "[^"]+"', "", second
    )
    token = _token(second)
    assert len(token) == len(placeholder) and f'"X-CSRFToken": "{token}"' in second
    assert stored_leaderboard_bytes() and not any(token.encode() in value for value in stored_leaderboard_bytes())
    # the token of the cached page passes the CSRF check (the share form's post: 200 or 400, never 403)
    share = client.post(
        reverse("runs:page-share-create", args=[bench.slug]), {"path": url, "csrfmiddlewaretoken": token}
    )
    assert share.status_code != 403


@pytest.mark.django_db
def test_each_viewer_gets_their_own_page_and_a_message_is_shown_once(django_user_model, committed):
    from django.contrib import messages
    from django.contrib.auth.models import Group
    from django.contrib.messages.storage.base import Message
    from django.contrib.messages.storage.cookie import CookieStorage
    from django.test import RequestFactory

    from runs.access import ANNOTATOR, EDITOR, REVIEWER

    bench, _ = build_study()
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    pages = {}
    for name, role in (("rita", EDITOR), ("anna", ANNOTATOR), ("rolf", REVIEWER)):
        user = django_user_model.objects.create_user(name, password=f"pw-{name}-1")
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        client = Client()
        client.force_login(user)
        for _ in range(2):  # rendered, then from the cache
            body = committed(client, url).content.decode()
            assert f"Signed in as {name}" in body
            pages[name] = (client, body)
    assert "Share…" in pages["rita"][1]
    assert "Share…" not in pages["anna"][1]  # a blind annotator's page has no control that answers 403
    assert "Share…" not in pages["rolf"][1]  # nor a reviewer's, who reads only

    client = pages["rita"][0]
    storage = CookieStorage(RequestFactory().get("/"))
    client.cookies[storage.cookie_name] = storage._encode([Message(messages.INFO, "Import finished")])
    assert "Import finished" in committed(client, url).content.decode()  # rendered for it, not cached
    again = committed(client, url).content.decode()
    assert "Import finished" not in again and "Signed in as rita" in again
