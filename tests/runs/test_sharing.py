"""Share links: tokens, hashing, revocation, expiry, frozen snapshots, scope, the owner's list."""

import csv
import hashlib
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from runs import sharing
from runs.access import EDITOR
from runs.models import Benchmark, Instance, Judge, ShareLink, Verdict
from runs.services import rollups_rebuild_for_attempts

from .test_views_checklist import XSS, build_study, trajectory

pytestmark = pytest.mark.django_db


def create(client, bench, query="", *, attempts=False, expires=""):
    """POST the leaderboard's share form; returns (response, token)."""
    data = {"query": query, "expires_in": expires}
    if attempts:
        data["include_attempts"] = "on"
    response = client.post(reverse("runs:share-create", args=[bench.slug]), data)
    found = re.search(r"/s/([A-Za-z0-9_-]+)/", response.content.decode())
    return response, found.group(1) if found else None


def share_url(token, name="runs:share", *args):
    return reverse(name, args=[token, *args])


# tokens ---------------------------------------------------------------------------------
def test_it_creates_long_random_tokens_and_stores_only_their_hash(editor_client):
    bench, _ = build_study()
    tokens = [create(editor_client, bench)[1] for _ in range(5)]
    assert len(set(tokens)) == 5
    assert all(len(t) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in tokens)
    stored = set(ShareLink.objects.values_list("token_hash", flat=True))
    assert stored == {hashlib.sha256(t.encode()).hexdigest() for t in tokens}
    for t in tokens:  # the token itself is nowhere in the row
        assert not ShareLink.objects.filter(token_hash=t).exists()
        assert t not in str(list(ShareLink.objects.values()))


def test_it_compares_the_token_hash_in_constant_time(editor_client, monkeypatch):
    bench, _ = build_study()
    _, token = create(editor_client, bench)
    calls = []
    real = sharing.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(sharing.hmac, "compare_digest", spy)
    assert sharing.share_link_resolve(token) is not None
    assert calls == [(sharing.token_hash(token), sharing.token_hash(token))]


def test_it_shows_the_url_once_and_never_again(editor_client):
    bench, _ = build_study()
    response, token = create(editor_client, bench)
    assert response.status_code == 200 and "shown only once" in response.content.decode()
    listing = editor_client.get(reverse("runs:share-list")).content.decode()
    assert token not in listing and "Revoke" in listing


def test_it_answers_htmx_with_the_created_fragment(editor_client):
    bench, _ = build_study()
    response = editor_client.post(
        reverse("runs:share-create", args=[bench.slug]), {"query": ""}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200 and "/s/" in body and "<html" not in body


def test_it_refuses_a_get_and_an_anonymous_post_to_create(client, editor_client):
    bench, _ = build_study(n_instances=1)
    url = reverse("runs:share-create", args=[bench.slug])
    assert editor_client.get(url).status_code == 405
    response = client.post(url, {"query": ""})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not ShareLink.objects.exists()


# what a link shows ----------------------------------------------------------------------
def test_anonymous_can_open_a_share_link_but_not_the_private_leaderboard(editor_client, client):
    bench, _ = build_study()
    _, token = create(editor_client, bench, "by=category")
    response = client.get(share_url(token))
    body = response.content.decode()
    assert response.status_code == 200
    assert "Frozen snapshot of" in body and "data may have changed since" in body
    assert "System Prompt" in body and "User Query" in body and "66.67" in body
    assert (
        'data-plotly="leaderboard-figure" data-figure="{' in body
        and "METRICS.md" not in body
        and "ISR = share of instances" in body
    )
    assert response["Cache-Control"].count("no-store") == 1
    private = client.get(reverse("runs:checklist-leaderboard", args=[bench.slug]))
    assert private.status_code == 302 and "/login/" in private["Location"]


def test_the_public_page_links_to_no_private_page(editor_client, client, editor):
    bench, attempts = build_study()
    _, token = create(editor_client, bench, "by=category", attempts=True)
    bodies = [
        client.get(share_url(token)).content.decode(),
        client.get(share_url(token, "runs:share-attempts") + "?model=alpha").content.decode(),
        client.get(share_url(token, "runs:share-attempt", attempts[0].id)).content.decode(),
    ]
    private = [
        reverse("runs:home"),
        reverse("runs:jobs"),
        reverse("runs:import"),
        "/admin/",
        "/api/",
        reverse("runs:checklist-leaderboard", args=[bench.slug]),
        reverse("runs:attempt", args=[attempts[0].id]),
        reverse("runs:instance", args=[attempts[0].instance_id]),
        reverse("runs:share-list"),
    ]
    for body in bodies:
        hrefs = re.findall(r'(?:href|hx-get|action)="([^"]*)"', body)
        assert hrefs
        for href in hrefs:
            assert href.startswith((f"/s/{token}/", "?", "#", "/static/", "/login/", "/help/")), href
        assert not any(p in hrefs for p in private)
        assert editor.username not in body  # no user names, not even the creator's
        assert XSS not in body


def test_a_link_keeps_its_snapshot_after_new_verdicts_arrive(editor_client, client):
    bench, attempts = build_study()
    _, token = create(editor_client, bench)
    before = client.get(share_url(token)).content.decode()
    assert "66.67" in before
    version = ShareLink.objects.get().data_version
    Verdict.objects.filter(attempt__run__model__name="alpha").update(result="fail")  # alpha now fails everything
    build_study(n_instances=2)
    rollups_rebuild_for_attempts([a.id for a in attempts])
    live = editor_client.get(reverse("runs:checklist-leaderboard", args=[bench.slug])).content.decode()
    assert "66.67" not in live
    after = client.get(share_url(token)).content.decode()
    assert "66.67" in after and "83.33" in after
    assert sharing.data_version(bench.id) != version


def test_the_snapshot_equals_the_page_rows_in_the_page_order(editor_client):
    bench, _ = build_study(models=("alpha", "beta", "gamma"))
    create(editor_client, bench, "sort=model&judge=j1")
    link = ShareLink.objects.get()
    assert [r["model"] for r in link.snapshot["overall"]] == ["alpha", "beta", "gamma"]
    assert link.state["judge"] == ["j1"] and link.state["sort"] == "model"
    assert set(link.snapshot["overall"][0]["per_judge"]) == {"j1"}
    assert link.snapshot["overall"][0]["isr"] == pytest.approx(200 / 3)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda link: setattr(link, "revoked_at", timezone.now()),
        lambda link: setattr(link, "expires_at", timezone.now() - timedelta(seconds=1)),
    ],
)
def test_revoked_and_expired_links_are_404_everywhere(editor_client, client, mutate):
    bench, attempts = build_study()
    _, token = create(editor_client, bench, attempts=True)
    link = ShareLink.objects.get()
    urls = [
        share_url(token),
        share_url(token, "runs:share-export") + "?format=csv",
        share_url(token, "runs:share-attempts") + "?model=alpha",
        share_url(token, "runs:share-attempt", attempts[0].id),
    ]
    assert all(client.get(u).status_code == 200 for u in urls)
    mutate(link)
    link.save()
    assert [client.get(u).status_code for u in urls] == [404] * 4


def test_unknown_revoked_and_expired_tokens_get_the_same_answer(editor_client, client):
    bench, _ = build_study(n_instances=1)
    _, revoked = create(editor_client, bench)
    _, expired = create(editor_client, bench, expires="1")
    ShareLink.objects.filter(token_hash=sharing.token_hash(revoked)).update(revoked_at=timezone.now())
    ShareLink.objects.filter(token_hash=sharing.token_hash(expired)).update(
        expires_at=timezone.now() - timedelta(days=1)
    )
    answers = [client.get(share_url(t)) for t in (revoked, expired, "x" * 43, "A" * 500)]
    assert {r.status_code for r in answers} == {404}
    assert len({r.content for r in answers}) == 1


def test_a_link_with_an_expiry_works_until_then(editor_client, client):
    bench, _ = build_study(n_instances=1)
    _, token = create(editor_client, bench, expires="7")
    link = ShareLink.objects.get()
    assert timedelta(days=6, hours=23) < link.expires_at - timezone.now() <= timedelta(days=7)
    assert client.get(share_url(token)).status_code == 200


# scope ----------------------------------------------------------------------------------
def test_a_link_without_attempt_scope_opens_no_attempt(editor_client, client):
    bench, attempts = build_study()
    trajectory(attempts[0])
    _, token = create(editor_client, bench)
    body = client.get(share_url(token)).content.decode()
    assert "/attempts/" not in body
    assert client.get(share_url(token, "runs:share-attempts") + "?model=alpha").status_code == 404
    for a in attempts:
        assert client.get(share_url(token, "runs:share-attempt", a.id)).status_code == 404
        assert client.get(share_url(token, "runs:share-attempt-text", a.id) + "?thread=0&msg=3").status_code == 404


def test_a_link_with_attempt_scope_opens_only_the_attempts_behind_its_rows(editor_client, client):
    bench, attempts = build_study()
    for a in attempts:
        trajectory(a)
    _, token = create(editor_client, bench, "run=alpha-r1", attempts=True)
    link = ShareLink.objects.get()
    alpha = [a for a in attempts if a.run.label == "alpha-r1"]
    beta = [a for a in attempts if a.run.label == "beta-r1"]
    assert sorted(link.attempt_ids) == sorted(a.id for a in alpha)
    drill = client.get(share_url(token, "runs:share-attempts") + "?model=alpha")
    assert drill.status_code == 200
    body = drill.content.decode()
    assert "task-1" in body and "c1" in body  # failing item of the odd instance, failing first
    assert body.index("task-1") < body.index("task-0")
    assert client.get(share_url(token, "runs:share-attempts") + "?model=beta").status_code == 404
    page = client.get(share_url(token, "runs:share-attempt", alpha[1].id))
    assert page.status_code == 200
    text = page.content.decode()
    assert "I will look" in text and "missing tests" in text and XSS not in text
    assert "show all 5000 characters" in text
    full = client.get(share_url(token, "runs:share-attempt-text", alpha[1].id) + "?thread=0&msg=3&field=content")
    assert full.status_code == 200 and len(full.content) > 5000
    for a in beta:
        assert client.get(share_url(token, "runs:share-attempt", a.id)).status_code == 404


def test_an_attempt_of_another_benchmark_is_404_even_if_listed(editor_client, client):
    bench, attempts = build_study(n_instances=1)
    _, token = create(editor_client, bench, attempts=True)
    other = Benchmark.objects.create(slug="octo2", name="Octo 2", kind="checklist")
    stranger = Instance.objects.create(benchmark=other, external_id="x", content_hash="x")
    from runs.models import Attempt, Run

    run = Run.objects.create(benchmark=other, label="alpha-r1", model=attempts[0].run.model)
    foreign = Attempt.objects.create(run=run, instance=stranger)
    link = ShareLink.objects.get()
    link.attempt_ids = link.attempt_ids + [foreign.id]  # even a tampered scope cannot reach another benchmark
    link.save()
    assert client.get(share_url(token, "runs:share-attempt", foreign.id)).status_code == 404
    assert client.get(share_url(token, "runs:share-attempt", attempts[0].id)).status_code == 200


def test_a_grouped_link_freezes_the_attempts_of_each_cell(editor_client, client):
    bench, _ = build_study()
    _, token = create(editor_client, bench, "by=category", attempts=True)
    url = share_url(token, "runs:share-attempts")
    body = client.get(url + "?model=alpha&group=User%20Query").content.decode()
    assert "task-1" in body and "adds tests" in body
    body = client.get(url + "?model=alpha&group=System%20Prompt").content.decode()
    assert "no failing item" in body and "adds tests" not in body
    assert client.get(url + "?model=alpha&group=Nonexistent").status_code == 404
    assert client.get(url + "?model=alpha").status_code == 200  # the whole model row of the matrix


# the owner's list and revocation -------------------------------------------------------
def test_it_lists_only_the_users_own_links_and_revokes_them(editor_client, outsider, client):
    bench, _ = build_study(n_instances=1)
    _, token = create(editor_client, bench, "judge=j1")
    outsider.groups.add(Group.objects.get_or_create(name=EDITOR)[0])  # someone else who may share
    other = Client()
    other.force_login(outsider)
    create(other, bench)
    mine, theirs = ShareLink.objects.get(created_by__username="editor"), ShareLink.objects.get(created_by=outsider)
    listing = editor_client.get(reverse("runs:share-list")).content.decode()
    assert reverse("runs:share-revoke", args=[mine.pk]) in listing
    assert reverse("runs:share-revoke", args=[theirs.pk]) not in listing
    assert "judges: j1" in listing and "active" in listing
    assert editor_client.post(reverse("runs:share-revoke", args=[theirs.pk])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    asked = editor_client.post(reverse("runs:share-revoke", args=[mine.pk]))  # first, what it changes
    mine.refresh_from_db()
    assert asked.status_code == 200 and mine.revoked_at is None
    assert "will get a 404" in asked.content.decode() and 'name="confirm" value="1"' in asked.content.decode()
    response = editor_client.post(reverse("runs:share-revoke", args=[mine.pk]), {"confirm": "1"})
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.revoked_at is not None
    assert client.get(share_url(token)).status_code == 404
    assert "revoked" in editor_client.get(reverse("runs:share-list")).content.decode()
    assert editor_client.get(reverse("runs:share-revoke", args=[mine.pk])).status_code == 405


def test_the_list_needs_a_login(client):
    response = client.get(reverse("runs:share-list"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_leaderboard_offers_share_and_export_in_one_toolbar_row_with_the_current_state(editor_client):
    bench, _ = build_study()
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    page = editor_client.get(url + "?by=scaffold").content.decode()
    toolbar = page.split('id="page-tools"')[1].split('<section id="results">')[0]
    assert page.count('id="page-tools"') == 1
    assert "Share…" in toolbar and f"{url}?by=scaffold&amp;export=csv&amp;table=leaderboard" in toolbar  # one row
    assert f'name="path" value="{url}?by=scaffold"' in toolbar and 'name="include_attempts"' in toolbar
    assert reverse("runs:page-share-create", args=[bench.slug]) in toolbar
    assert re.findall(r'<option value="(\d*)"', toolbar.split('name="expires_in"')[1]) == list(sharing.EXPIRY_DAYS)
    assert "export=" not in page.split('<section id="results">')[1]  # the cached results hold no per-state toolbar
    # an htmx filter change swaps the results and, out of band, the toolbar of the new state
    fragment = editor_client.get(url + "?by=judge", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="page-tools" hx-swap-oob="true"' in fragment
    assert f"{url}?by=judge&amp;export=csv&amp;table=leaderboard" in fragment and f'value="{url}?by=judge"' in fragment


def test_the_leaderboards_share_form_freezes_it_through_the_frame(editor_client, client):
    bench, attempts = build_study()
    url = reverse("runs:checklist-leaderboard", args=[bench.slug])
    response = editor_client.post(
        reverse("runs:page-share-create", args=[bench.slug]), {"path": f"{url}?by=category", "include_attempts": "on"}
    )
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", response.content.decode()).group(1)
    link = ShareLink.objects.get()
    assert link.scope == "attempts" and link.snapshot["by"] == "category" and link.snapshot["kind"] == "page"
    assert sorted(link.attempt_ids) == sorted(a.id for a in attempts)
    body = client.get(share_url(token)).content.decode()
    assert "System Prompt" in body and share_url(token, "runs:share-attempts") in body
    assert client.get(share_url(token, "runs:share-attempt", attempts[0].id)).status_code == 200


def test_the_public_page_reads_no_rollups_or_verdicts(editor_client, client):
    bench, _ = build_study()
    _, token = create(editor_client, bench, "by=category")
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(share_url(token)).status_code == 200
    sql = " ".join(q["sql"] for q in ctx.captured_queries)
    assert "rollup" not in sql.lower() and "verdict" not in sql.lower()
    assert len(ctx.captured_queries) <= 3


def test_a_judge_renamed_later_does_not_change_the_snapshot(editor_client, client):
    bench, _ = build_study()
    _, token = create(editor_client, bench)
    Judge.objects.filter(name="j1").update(name="renamed")
    body = client.get(share_url(token)).content.decode()
    assert "j1:" in body and "renamed" not in body


def test_a_shared_attempt_shows_only_the_links_judges_and_no_verdict_imported_after_it(editor_client, client):
    from runs.models import Judge

    bench, attempts = build_study()
    judges = sorted(Verdict.objects.filter(attempt=attempts[0]).values_list("judge__name", flat=True).distinct())
    assert len(judges) >= 2
    _, token = create(editor_client, bench, f"judge={judges[0]}", attempts=True)
    later = Judge.objects.create(name="judge-imported-later")
    item = attempts[0].instance.items.first()
    Verdict.objects.create(attempt=attempts[0], item=item, judge=later, result="fail", reasoning="LATER-REASONING")
    page = client.get(share_url(token, "runs:share-attempt", attempts[0].id)).content.decode()
    assert f"{judges[0]}: " in page
    assert f"{judges[1]}: " not in page  # a link made for one judge shows that judge's reasoning only
    assert "LATER-REASONING" not in page and "judge-imported-later" not in page


def test_a_shared_attempts_full_reasoning_keeps_to_the_links_judges(editor_client, client):
    bench, attempts = build_study()
    verdicts = list(Verdict.objects.filter(attempt=attempts[0]).order_by("judge__name"))
    inside = next(v for v in verdicts if v.judge.name == verdicts[0].judge.name)
    outside = next(v for v in verdicts if v.judge.name != inside.judge.name)
    _, token = create(editor_client, bench, f"judge={inside.judge.name}", attempts=True)
    text = share_url(token, "runs:share-attempt-text", attempts[0].id)
    assert client.get(f"{text}?verdict={inside.id}").status_code == 200
    assert client.get(f"{text}?verdict={outside.id}").status_code == 404


def test_the_drill_down_exports_every_attempt_behind_its_cell_and_shares_through_the_frame(editor_client, client):
    """The drill-down was the one checklist page without the frame: no CSV or JSON of the attempts behind a cell
    and no share link. Its export holds every attempt (not one page), each judge's counts and the failing items."""
    bench, attempts = build_study(n_instances=3)
    url = reverse("runs:checklist-attempts", args=[bench.slug])
    page = editor_client.get(url + "?model=alpha").content.decode()
    toolbar = page.split('id="page-tools"')[1].split('<section id="rows">')[0]
    assert f"{url}?model=alpha&amp;export=csv&amp;table=attempts" in toolbar and 'name="include_attempts"' in toolbar
    lines = list(csv.DictReader(io.StringIO(editor_client.get(url + "?model=alpha&export=csv").content.decode())))
    alpha = [a for a in attempts if a.run.model.name == "alpha"]
    assert len(lines) == len(alpha) == 3
    assert [line["Failing items (judges that failed them)"] for line in lines] == [
        "c1 (j1, j2)",
        "",
        "",
    ]  # failing first
    assert lines[0]["j1 passed"] == "1" and lines[0]["j1 applicable"] == "2" and lines[1]["j2 passed"] == "2"
    document = editor_client.get(url + "?model=alpha&export=json").json()
    assert document["facts"] == {"model": "alpha"} and len(document["tables"][0]["rows"]) == 3
    response = editor_client.post(
        reverse("runs:page-share-create", args=[bench.slug]), {"path": f"{url}?model=alpha", "include_attempts": "on"}
    )
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", response.content.decode()).group(1)
    link = ShareLink.objects.get()
    assert sorted(link.attempt_ids) == sorted(a.id for a in alpha)
    public = client.get(share_url(token)).content.decode()  # the drill-down as it was shown: c1 failed by both judges
    assert (
        f'<a href="/s/{token}/attempts/{alpha[1].id}/#item-' in public
        and "<code>c1</code>" in public
        and "✗ j1, j2" in public
    )


def test_an_instance_page_exports_its_pass_rates_and_shares_for_its_own_benchmark_only(editor_client, client):
    """The instance page (item x model pass rates) had neither exports nor a share link; its address names no
    benchmark, so a share is accepted only from the instance's own."""
    bench, attempts = build_study(n_instances=2)
    instance = attempts[2].instance  # task-1: alpha fails c1 under both judges
    url = reverse("runs:instance", args=[instance.id])
    body = editor_client.get(url).content.decode()
    assert f"{url}?export=csv&amp;table=items" in body and "Share…" in body
    lines = list(csv.DictReader(io.StringIO(editor_client.get(url + "?export=csv&table=items").content.decode())))
    assert [
        (line["Item"], line["alpha pass rate %"], line["alpha passed"], line["alpha applicable"]) for line in lines
    ] == [("c0", "100.00", "2", "2"), ("c1", "0.00", "0", "2")]
    assert lines[1]["beta pass rate %"] == "100.00"
    other = Benchmark.objects.create(slug="other", name="Other", kind="checklist")
    refused = editor_client.post(reverse("runs:page-share-create", args=[other.slug]), {"path": url})
    assert not ShareLink.objects.exists() and "/s/" not in refused.content.decode()
    response = editor_client.post(
        reverse("runs:page-share-create", args=[bench.slug]), {"path": url, "include_attempts": "on"}
    )
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", response.content.decode()).group(1)
    link = ShareLink.objects.get()
    assert sorted(link.attempt_ids) == sorted(a.id for a in attempts if a.instance_id == instance.id)
    shared = client.get(share_url(token)).content.decode()
    assert "Checklist × model pass rates" in shared and "0.00" in shared


def test_the_logo_on_a_shared_page_leads_to_the_links_first_page_not_to_a_sign_in_form(editor_client, client):
    bench, attempts = build_study()
    _, token = create(editor_client, bench, "by=category", attempts=True)
    for path in (
        share_url(token),
        share_url(token, "runs:share-attempts") + "?model=alpha",
        share_url(token, "runs:share-attempt", attempts[0].id),
    ):
        brand = re.search(r'<a class="brand" href="([^"]*)"', client.get(path).content.decode()).group(1)
        assert brand == share_url(token), path
    assert (
        re.search(r'<a class="brand" href="([^"]*)"', client.get(reverse("login")).content.decode()).group(1)
        == "/login/"
    )
