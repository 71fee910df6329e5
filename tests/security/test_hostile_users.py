"""A signed-in user with bad intent, or a careless script: each attack tried on the portal and what stops it.

Every test makes the attack for real (requests through the whole stack, a real server for the
SQLite concurrency case) and asserts the outcome in numbers: cache entries and bytes, status codes,
what a page or job message holds. The Chromium half of the chart check is
tests/browser/test_hostile_charts.py. docs/security.md names the test behind each guarantee.
"""

import json
import os
import re
import runpy
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import OperationalError
from django.db.models import Sum
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs import jobs
from runs.cache import _database_tag
from runs.ingest import IngestFailed, Options, Source, ingest
from runs.middleware import UploadLimitMiddleware
from runs.models import Job, ShareLink, Verdict
from runs.sharing import StoredSize
from runs.templatetags.figures import figure_json

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "tests" / "fixtures" / "native" / "study.jsonl"
build_study = runpy.run_path(str(ROOT / "tests" / "runs" / "test_views_checklist.py"))["build_study"]
deploy = runpy.run_path(str(Path(__file__).with_name("test_deploy.py")))

#: an invented parameter of 3.8 KB, as in the issue's measurement
INVENTED = "x" * 3800


def cache_footprint() -> tuple[int, int]:
    """(entries, bytes) the leaderboard cache of this test database holds now, as the backend stores them."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        client = cache._cache.get_client(None, write=False)
        keys = list(client.scan_iter(match=cache.make_key(f"leaderboard:*:{_database_tag()}:*"), count=1000))
        return len(keys), sum(client.strlen(k) for k in keys)
    values = [v for k, v in cache._cache.items() if ":leaderboard:" in k]
    return len(values), sum(len(v) for v in values)


def signed_in(django_user_model, name: str) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user(name, password=f"pw-{name}-long-1"))
    return client


# fill the database with share links ---------------------------------------------------------------------
@pytest.mark.django_db
def test_one_user_cannot_fill_the_database_with_share_links(django_user_model, settings):
    """Each share link stores a frozen snapshot of its page. One user may make IFPORTAL_SHARE_LINKS_PER_DAY links a
    day, and their live links' snapshots may take IFPORTAL_SHARE_MB_PER_USER; past either the Share form says why
    (in its result box for htmx) and nothing is stored. Revoking a link drops its snapshot and frees its space."""
    from django.contrib.auth.models import Group

    bench, _ = build_study()
    attacker = signed_in(django_user_model, "sharer")
    django_user_model.objects.get(username="sharer").groups.add(Group.objects.get_or_create(name="editor")[0])
    colleague = signed_in(django_user_model, "colleague")
    django_user_model.objects.get(username="colleague").groups.add(Group.objects.get_or_create(name="editor")[0])
    url = reverse("runs:page-share-create", args=[bench.slug])
    path = reverse("runs:checklist-leaderboard", args=[bench.slug])
    settings.IFPORTAL_SHARE_LINKS_PER_DAY = 3
    for _ in range(3):
        assert "/s/" in attacker.post(url, {"path": path}).content.decode()
    refused = attacker.post(url, {"path": path})
    assert refused.status_code == 429 and "3 share links in the last 24 hours" in refused.content.decode()
    shown = attacker.post(url, {"path": path}, HTTP_HX_REQUEST="true")  # the form's result box: htmx swaps only 2xx
    assert shown.status_code == 200 and 'role="alert"' in shown.content.decode() and "/s/" not in shown.content.decode()
    assert ShareLink.objects.count() == 3
    ShareLink.objects.update(created_at=timezone.now() - timedelta(days=1, minutes=1))  # a day later
    assert "/s/" in attacker.post(url, {"path": path, "include_attempts": "on"}).content.decode()
    assert ShareLink.objects.order_by("-id").first().attempt_ids  # with its attempts: their list is dropped on revoke

    settings.IFPORTAL_SHARE_LINKS_PER_DAY = 100
    settings.IFPORTAL_SHARE_MB_PER_USER = 0  # no room for any snapshot
    refused = attacker.post(url, {"path": path})
    assert refused.status_code == 413 and "revoke links you no longer need" in refused.content.decode()
    assert ShareLink.objects.count() == 4
    for link in ShareLink.objects.all():  # revoked: their frozen data dropped, their space free again
        attacker.post(reverse("runs:share-revoke", args=[link.pk]), {"confirm": "1"})
    assert all(link.snapshot == {} and link.attempt_ids == [] for link in ShareLink.objects.all())
    settings.IFPORTAL_SHARE_MB_PER_USER = 0.05  # about 52 KB: a few links' snapshots
    made = ShareLink.objects.count()
    for _ in range(200):
        if attacker.post(url, {"path": path}).status_code != 200:
            break
    else:
        pytest.fail("the budget never ended the links")
    stored = ShareLink.objects.filter(created_by__username="sharer").aggregate(
        n=Sum(StoredSize("snapshot") + StoredSize("attempt_ids") + StoredSize("state"))
    )["n"]
    assert stored <= 0.05 * 2**20 and ShareLink.objects.count() > made
    # a colleague's budget is their own; revoking frees the attacker's
    assert "/s/" in colleague.post(url, {"path": path}).content.decode()
    assert attacker.post(url, {"path": path}).status_code == 413
    live = ShareLink.objects.filter(created_by__username="sharer", revoked_at__isnull=True).order_by("id")
    for link in live[:2]:
        attacker.post(reverse("runs:share-revoke", args=[link.pk]), {"confirm": "1"})
    assert "/s/" in attacker.post(url, {"path": path}).content.decode()
    settings.IFPORTAL_SHARE_LINKS_PER_DAY = 0  # sharing turned off: said, not a server error
    off = colleague.post(url, {"path": path})
    assert off.status_code == 403 and "Sharing is turned off" in off.content.decode()


# fill the cache ---------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_invented_parameters_add_no_cache_entries(django_user_model, django_capture_on_commit_callbacks):
    bench, _ = build_study()
    client = signed_in(django_user_model, "filler")
    url = f"/b/{bench.slug}/leaderboard/"
    with django_capture_on_commit_callbacks(execute=True):
        assert client.get(url).status_code == 200
    one_page = cache_footprint()

    for n in range(300):  # the issue's attack: an invented 3.8 KB parameter, a new value each time
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get(f"{url}?p{n}={INVENTED}&sort=-isr&run=alpha-r1&run=alpha-r1&q={n}")
        assert response.status_code == 200

    entries, size = cache_footprint()
    print(f"invented parameters: one page {one_page}, after 300 requests {(entries, size)}")
    # one more state (run=alpha-r1): its tables, fragment, form, usage figures and tie groups, the whole page as this
    # viewer gets it, and the budget's counter (the page as first opened is charged to no one, so its entries made
    # none); nothing per request
    assert entries - one_page[0] <= 6 + 1, (one_page, (entries, size))
    assert size < 3 * one_page[1], (one_page, (entries, size))
    assert INVENTED not in response.content.decode()  # links carry the state, not the invented parameter


@pytest.mark.django_db
def test_one_user_cannot_make_the_cache_hold_more_than_the_budget(
    django_user_model, settings, django_capture_on_commit_callbacks
):
    settings.IFPORTAL_CACHE_ENTRIES_PER_USER = 12
    bench, _ = build_study()
    attacker, other = signed_in(django_user_model, "attacker"), signed_in(django_user_model, "colleague")
    url = f"/b/{bench.slug}/leaderboard/"
    states = [
        f"by={by}&sort={sort}{ci}"
        for by in ("model", "category", "judge", "scaffold")
        for sort in ("-isr", "isr", "-csr", "csr", "model", "-n")
        for ci in ("", "&ci=on")
    ]
    assert len(states) == 48  # distinct valid states: each would store its tables, fragment and form

    for query in states:
        with django_capture_on_commit_callbacks(execute=True):
            assert attacker.get(f"{url}?{query}").status_code == 200
    entries, size = cache_footprint()
    print(f"48 states, budget 12: {(entries, size)}")

    # the budget, the budget's own counter, and what there is one of per data generation whoever asks,
    # charged to no one (runs.cache, charged=False): the filter choices, the leaderboard summary (with and without
    # its per-facet cells), the unfiltered usage figures, and the page as first opened (by=model&sort=-isr: its tables, fragment and form,
    # and the whole page as each viewer gets it: one per viewer and benchmark, runs.leaderboard_page.full_page),
    # the per-instance counts tie groups are drawn from, and the unfiltered tie groups by ISR and by CSR
    assert entries <= 12 + 9 + 3
    fragments = (
        [len(v) for k, v in caches["default"]._cache.items() if ":leaderboard:" in k]
        if not isinstance(caches["default"], RedisCache)
        else []
    )
    assert size <= 19 * max(fragments or [size]), size
    # past the budget the attacker's pages still answer, and a colleague's pages are still cached
    page = attacker.get(f"{url}?by=judge&sort=csr&ci=on")
    assert page.status_code == 200 and "j1" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        other.get(f"{url}?by=category&sort=model&ci=on")
    assert cache_footprint()[0] > entries


# inject markup into charts ------------------------------------------------------------------------------
def test_chart_labels_are_escaped_for_plotly(hostile):
    figure = {
        "data": [
            {
                "type": "bar",
                "name": hostile.CHART_NAME,
                "x": [hostile.CHART_NAME, "a & b"],
                "y": [1, 2],
                "hovertemplate": "%{x}<br>%{y}<extra></extra>",
            }
        ],
        "layout": {"title": {"text": "ISR"}, "xaxis": {"categoryarray": [hostile.CHART_NAME]}},
    }

    encoded = json.loads(figure_json(figure))

    trace = encoded["data"][0]
    assert "<" not in trace["name"] + "".join(trace["x"]) + "".join(encoded["layout"]["xaxis"]["categoryarray"])
    assert trace["x"][0].startswith("&lt;a href=") and trace["x"][1] == "a &amp; b"
    assert trace["hovertemplate"] == "%{x}<br>%{y}<extra></extra>"  # the chart code's own markup stays
    assert trace["x"][0] == encoded["layout"]["xaxis"]["categoryarray"][0]  # categories still match


@pytest.mark.django_db
def test_a_model_named_with_plotly_markup_reaches_the_page_escaped(django_user_model, hostile):
    bench, attempts = build_study(models=(hostile.CHART_NAME, "beta"))
    page = signed_in(django_user_model, "viewer").get(f"/b/{bench.slug}/leaderboard/").content.decode()
    figure = json.loads(
        re.search(r'data-figure="([^"]*)"', page)
        .group(1)
        .replace("&quot;", '"')
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
    )

    assert all("<" not in x for x in figure["data"][0]["x"])
    assert any(x.startswith("&lt;a href=") for x in figure["data"][0]["x"])


# formula injection in exports ---------------------------------------------------------------------------
@pytest.mark.django_db
def test_judge_names_in_export_headers_cannot_run_as_formulas(django_user_model):
    bench, _ = build_study(judges=('=HYPERLINK("https://evil.example","x")', "j2"))

    csv = signed_in(django_user_model, "exporter").get(f"/b/{bench.slug}/leaderboard/?export=csv").content.decode()

    header = csv.splitlines()[0]
    assert "'=HYPERLINK" in header and ",=HYPERLINK" not in header and not header.startswith("=")


# guess passwords: tests/security/test_signin.py; guess API tokens --------------------------------------------
@pytest.mark.django_db
def test_bad_api_tokens_are_throttled_per_address(reviewer, settings):
    settings.IFPORTAL_TOKEN_FAILURE_RATE = "5/hour"
    good = Token.objects.create(user=reviewer).key
    guesser = APIClient()

    statuses = [guesser.get("/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {n:040x}").status_code for n in range(5)]
    blocked = guesser.get("/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {good}")

    assert statuses == [401] * 5
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) > 0
    other = APIClient(REMOTE_ADDR="10.1.2.3")
    assert other.get("/api/benchmarks/", HTTP_AUTHORIZATION=f"Token {good}").status_code == 200


# SQLite under concurrency ----------------------------------------------------------------------------------
def test_any_sqlite_database_gets_wal_immediate_transactions_and_a_timeout(tmp_path):
    result = deploy["_manage"](
        tmp_path,
        "shell",
        "-v",
        "0",
        "-c",
        "from django.conf import settings as s; import json; print(json.dumps(s.DATABASES['default']['OPTIONS']))",
        DATABASE_URL=f"sqlite:///{tmp_path}/named.sqlite3",
    )

    assert result.returncode == 0, result.stderr
    options = json.loads(result.stdout)
    assert options["transaction_mode"] == "IMMEDIATE" and options["timeout"] >= 30
    assert "journal_mode=WAL" in options["init_command"]


@pytest.mark.django_db
def test_a_job_that_cannot_start_is_failed_with_a_reason_and_can_be_retried(
    reviewer, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    job = jobs.job_create(
        kind="ingest",
        params={"format": "native", "options": {}},
        files=[{"path": str(NATIVE), "name": NATIVE.name}],
        user=reviewer,
    )
    real_claim = jobs._claim

    def locked(job_id):
        raise OperationalError("database is locked")

    monkeypatch.setattr(jobs, "_claim", locked)
    jobs.job_execute(job.id)
    job.refresh_from_db()

    assert job.state == "failed" and "could not start" in job.message and "Retry it" in job.message
    assert "database is locked" in caplog.text  # the cause is in the log
    monkeypatch.setattr(jobs, "_claim", real_claim)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.job_retry(job)
    job.refresh_from_db()
    assert job.state == "succeeded", job.errors


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _multipart(fields: dict[str, str], files: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ]
    parts += [
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode()
        + content
        + b"\r\n"
        for name, content in files
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_eight_concurrent_uploads_on_a_sqlite_database_url_all_finish(tmp_path):
    """The issue's run: three of eight uploads answered 500 and jobs stayed queued on a DATABASE_URL SQLite."""
    env = {k: v for k, v in os.environ.items() if k not in deploy["_UNSET"]}
    env.update(
        DJANGO_SETTINGS_MODULE="ifportal.settings",
        IFPORTAL_VAR_DIR=str(tmp_path / "var"),
        DATABASE_URL=f"sqlite:///{tmp_path}/named.sqlite3",
        IFPORTAL_JOBS="thread",
        MEDIA_ROOT=str(tmp_path / "media"),
        DB_CONN_MAX_AGE="0",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)
    made = subprocess.run(
        [
            *manage,
            "shell",
            "-v",
            "0",
            "-c",
            "from django.contrib.auth.models import Group, User; from rest_framework.authtoken.models import Token; "
            "u = User.objects.create_user('uploader', password='pw-up-123456'); "
            "u.groups.add(Group.objects.get(name='editor')); print(Token.objects.create(user=u).key)",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    token, port = made.stdout.strip(), _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "ifportal.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-k",
            "gthread",
            "--threads",
            "8",
            "--workers",
            "1",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        body, content_type = _multipart({"format": "native"}, [(NATIVE.name, NATIVE.read_bytes())])
        answers: list[tuple[int, dict]] = []

        def upload():
            request = urllib.request.Request(
                f"{base}/api/ingest/",
                data=body,
                method="POST",
                headers={"Content-Type": content_type, "Authorization": f"Token {token}"},
            )
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    answers.append((response.status, json.loads(response.read())))
            except urllib.error.HTTPError as exc:
                answers.append((exc.code, {"body": exc.read()[:300].decode(errors="replace")}))

        threads = [threading.Thread(target=upload) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=180)

        assert sorted(status for status, _ in answers) == [202] * 8, answers
        states = {}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            for _, answer in answers:
                request = urllib.request.Request(answer["url"], headers={"Authorization": f"Token {token}"})
                with urllib.request.urlopen(request, timeout=30) as response:
                    job = json.loads(response.read())
                states[job["id"]] = (job["state"], job["message"])
            if all(state in ("succeeded", "failed") for state, _ in states.values()):
                break
            time.sleep(0.5)
        assert {state for state, _ in states.values()} == {"succeeded"}, states  # none queued, none failed
        request = urllib.request.Request(
            f"{base}/api/runs/?benchmark=acme-agent-if", headers={"Authorization": f"Token {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            runs = json.loads(response.read())["results"]
        attempts_in_file = NATIVE.read_text().count('"type": "attempt"')
        assert [(r["label"], r["n_attempts"]) for r in runs] == [("model-x-r1", attempts_in_file)]  # stored once
    finally:
        server.terminate()
        stderr = server.communicate(timeout=30)[1].decode(errors="replace")
    assert "database is locked" not in stderr, stderr[-3000:]


# overflow the numbers -------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_score_too_large_for_a_float_is_a_file_line_problem(tmp_path):
    lines = NATIVE.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if '"type": "verdict"' in line)
    huge_int = json.loads(lines[n]) | {"score": 10**400}
    lines[n] = json.dumps(huge_int)
    path = tmp_path / "overflow.jsonl"
    path.write_text("\n".join(lines) + "\n")
    float_path = tmp_path / "float.jsonl"
    float_path.write_text("\n".join(lines).replace(str(10**400), "1e400") + "\n")

    for source, reason in ((path, "out of range"), (float_path, "out of range")):
        with pytest.raises(IngestFailed) as failed:
            ingest("native", [Source.of(source)], Options())
        assert any(f"{source.name}:{n + 1}" in str(p) and reason in str(p) for p in failed.value.problems), [
            str(p) for p in failed.value.problems
        ]
    assert not Verdict.objects.exists()


@pytest.mark.django_db
def test_a_repetition_beyond_the_column_is_a_clear_400(editor):
    client = APIClient()
    client.force_authenticate(editor)

    response = client.post(
        "/api/ingest/",
        {"format": "native", "repetition": str(10**30), "files": [SimpleUploadedFile("a.jsonl", NATIVE.read_bytes())]},
        format="multipart",
    )

    assert response.status_code == 400
    assert "less than or equal to 2147483647" in response.json()["repetition"][0]
    assert not Job.objects.exists()


# read server internals ------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_an_internal_error_shows_a_reason_and_an_id_never_a_path_or_traceback(
    reviewer, reviewer_client, monkeypatch, caplog, settings
):
    def broken(job):
        open(Path(settings.MEDIA_ROOT) / "uploads" / "missing" / "secret.jsonl")

    monkeypatch.setitem(jobs.JOB_KINDS, "ingest", broken)
    job = jobs.job_create(
        kind="ingest",
        params={"format": "native", "options": {}},
        files=[{"path": str(NATIVE), "name": NATIVE.name}],
        user=reviewer,
    )
    jobs.job_execute(job.id)
    job.refresh_from_db()

    error_id = re.search(r"error id ([0-9a-f]{12})", job.message).group(1)
    shown = [
        job.message,
        *job.errors,
        reviewer_client.get(f"/jobs/{job.id}/").content.decode(),
        reviewer_client.get(f"/api/jobs/{job.id}/").content.decode(),
    ]
    for text in shown:
        assert str(settings.MEDIA_ROOT) not in text and str(ROOT) not in text and "Traceback" not in text
        assert 'File "' not in text
    assert "FileNotFoundError" in job.errors[0] and error_id in job.errors[0]
    assert f"error id {error_id}" in caplog.text and "Traceback" in caplog.text  # the log has it all


# fill the disk and the memory --------------------------------------------------------------------------------
@pytest.mark.django_db
def test_uploads_are_deleted_after_the_retention_period(editor, editor_client, settings):
    settings.IFPORTAL_UPLOAD_RETENTION_DAYS = 7
    old, recent = (
        jobs.job_create(kind="ingest", params={"format": "native", "options": {}}, user=editor) for _ in range(2)
    )
    for job in (old, recent):
        folder = jobs.upload_dir(job.id)
        (folder / "01-a.jsonl").write_bytes(b"{not json\n")
        Job.objects.filter(pk=job.pk).update(
            files=[{"path": str(folder / "01-a.jsonl"), "name": "a.jsonl"}],
            state="failed",
            finished_at=timezone.now() - timedelta(days=1),
        )
    Job.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=8))
    orphan = Path(settings.MEDIA_ROOT) / "uploads" / "no-such-job"
    orphan.mkdir(parents=True)
    os.utime(orphan, (time.time() - 9 * 86400,) * 2)

    call_command("uploads_clean", stdout=open(os.devnull, "w"))

    assert not jobs.upload_dir(old.id).joinpath("01-a.jsonl").exists() and not orphan.exists()
    assert jobs.upload_dir(recent.id).joinpath("01-a.jsonl").exists()
    old.refresh_from_db()
    assert old.files == [{"name": "a.jsonl", "removed": True}]
    page = editor_client.get(f"/jobs/{old.id}/").content.decode()
    assert "deleted after the retention period" in page and "a.jsonl" in page
    assert editor_client.post(f"/jobs/{old.id}/retry/").status_code == 403


def test_a_session_upload_over_the_limit_is_refused_before_its_body_is_read(settings):
    settings.IFPORTAL_MAX_UPLOAD_BYTES = 1000

    class Unreadable:
        def read(self, *args):
            raise AssertionError("the body was read")

        readline = read

    request = RequestFactory().post("/import/", data={"format": "native"})
    request.META["CONTENT_LENGTH"] = str(10 * 1024**3)
    request._stream = Unreadable()
    response = UploadLimitMiddleware(lambda r: pytest.fail("the view ran"))(request)

    assert response.status_code == 413
    assert "one import takes at most 1000" in response.content.decode().replace("\xa0", " ")


@pytest.mark.django_db
def test_a_signed_in_browser_upload_over_the_limit_gets_413_and_stores_nothing(editor_client, settings):
    settings.IFPORTAL_MAX_UPLOAD_BYTES = 1000

    response = editor_client.post(
        "/import/", {"format": "native", "files": [SimpleUploadedFile("a.jsonl", b"{}\n" * 200_000)]}
    )

    assert response.status_code == 413 and "Nothing was read or stored" in response.content.decode()
    assert not Job.objects.exists() and not (Path(settings.MEDIA_ROOT) / "uploads").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/import/", "/api/ingest/"])
def test_too_many_files_get_the_apps_own_error(editor, editor_client, settings, path):
    assert settings.DATA_UPLOAD_MAX_NUMBER_FILES == settings.IFPORTAL_MAX_UPLOAD_FILES == 1000  # one limit
    settings.IFPORTAL_MAX_UPLOAD_FILES = settings.DATA_UPLOAD_MAX_NUMBER_FILES = 5
    files = [SimpleUploadedFile(f"part{n}.jsonl", b"{}\n") for n in range(6)]

    response = editor_client.post(path, {"format": "native", "files": files})

    assert response.status_code == 400
    assert (
        "More than 5 files; one import takes at most 5. Split them into several imports." in response.content.decode()
    )
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_huge_reasoning_is_cut_like_trajectory_text_on_the_attempt_and_share_pages(
    django_user_model, editor, editor_client
):
    bench, attempts = build_study()
    huge = "<script>window.__pwned=1</script>" + "R" * (5 * 1024 * 1024)
    verdict = Verdict.objects.filter(attempt=attempts[0]).first()
    Verdict.objects.filter(pk=verdict.pk).update(reasoning=huge)
    token = _share(editor_client, bench, include_attempts="on")
    other = Verdict.objects.exclude(attempt=attempts[0]).first()

    for page, text in (
        (f"/attempts/{attempts[0].id}/", f"/attempts/{attempts[0].id}/text/"),
        (f"/s/{token}/attempts/{attempts[0].id}/", f"/s/{token}/attempts/{attempts[0].id}/text/"),
    ):
        body = editor_client.get(page).content.decode()
        assert len(body) < 300_000, (page, len(body))
        assert f"show all {len(huge)} characters" in body and f"{text}?verdict={verdict.id}" in body
        full = editor_client.get(f"{text}?verdict={verdict.id}").content.decode()
        assert len(full) > len(huge) and "&lt;script&gt;" in full and "<script>" not in full
    # the share link's text endpoint reads only verdicts of the attempts in its scope
    assert editor_client.get(f"/s/{token}/attempts/{attempts[0].id}/text/?verdict={other.id}").status_code == 404


def _share(client, bench, **fields) -> str:
    """Freeze the benchmark's leaderboard through the frame's share form; the link's token."""
    path = reverse("runs:checklist-leaderboard", args=[bench.slug])
    response = client.post(reverse("runs:page-share-create", args=[bench.slug]), {"path": path, **fields})
    return re.search(r"/s/([A-Za-z0-9_-]+)/", response.content.decode()).group(1)


# production footguns --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("hosts", ["*", "example.org,*"])
def test_production_refuses_allowed_hosts_star(tmp_path, hosts):
    result = deploy["_manage"](tmp_path, "check", **deploy["_production"](ALLOWED_HOSTS=hosts))

    assert result.returncode != 0
    assert "ALLOWED_HOSTS must name the portal's host(s), not '*'" in result.stderr


def test_an_all_digit_password_is_refused():
    with pytest.raises(ValidationError, match="entirely numeric"):
        validate_password("80417365921843")


@pytest.mark.django_db
def test_an_admin_revokes_anyone_s_leaked_share_link(django_user_model, editor):
    bench, _ = build_study()
    owner = Client()
    owner.force_login(editor)
    token = _share(owner, bench)
    link = ShareLink.objects.get()
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("boss", password="boss-pass-123"))
    assert Client().get(f"/s/{token}/").status_code == 200

    listing = admin.get("/admin/runs/sharelink/").content.decode()
    response = admin.post("/admin/runs/sharelink/", {"action": "revoke", "_selected_action": [link.pk]})

    assert "editor" in listing and "active" in listing
    assert response.status_code == 302
    link.refresh_from_db()
    assert link.revoked_at is not None and Client().get(f"/s/{token}/").status_code == 404
