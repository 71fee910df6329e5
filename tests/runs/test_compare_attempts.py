"""Side by side: two attempts on one instance, verdict differences per judge first, both trajectories paged."""

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.metrics.attempt_diff import SideVerdict, judge_totals, verdict_diff
from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict
from runs.services import rollups_rebuild_for_attempts
from runs.trajectory_store import trajectory_save

XSS = "<script>alert(1)</script>"


# pure --------------------------------------------------------------------------------
def test_it_puts_items_with_the_most_differing_judges_first_then_checklist_order():
    items = [{"id": 1, "position": 0}, {"id": 2, "position": 1}, {"id": 3, "position": 2}]
    a = {
        (1, "j1"): SideVerdict("pass"),
        (2, "j1"): SideVerdict("pass"),
        (2, "j2"): SideVerdict("fail"),
        (3, "j1"): SideVerdict("fail"),
        (3, "j2"): SideVerdict("na"),
    }
    b = {
        (1, "j1"): SideVerdict("pass"),
        (2, "j1"): SideVerdict("fail"),
        (2, "j2"): SideVerdict("fail"),
        (3, "j1"): SideVerdict("pass"),
        (3, "j2"): SideVerdict("pass"),
    }

    diffs = verdict_diff(items, a, b, ["j1", "j2"])

    assert [d.item["id"] for d in diffs] == [3, 2, 1]
    assert [d.n_differ for d in diffs] == [2, 1, 0]
    assert [p.differs for p in diffs[1].pairs] == [True, False]


def test_it_does_not_count_a_missing_verdict_as_a_difference():
    diffs = verdict_diff([{"id": 1, "position": 0}], {(1, "j1"): SideVerdict("fail")}, {}, ["j1"])
    assert diffs[0].n_differ == 0 and diffs[0].pairs[0].b is None


def test_it_totals_applicable_and_passed_per_judge_leaving_na_out():
    items = [{"id": 1, "position": 0}, {"id": 2, "position": 1}]
    a = {(1, "j"): SideVerdict("pass"), (2, "j"): SideVerdict("na")}
    b = {(1, "j"): SideVerdict("fail"), (2, "j"): SideVerdict("pass")}
    [totals] = judge_totals(verdict_diff(items, a, b, ["j"]), ["j"])
    assert (totals.a, totals.b, totals.n_differ) == ((1, 1), (2, 1), 2)


# pages -------------------------------------------------------------------------------
def _world(n_messages=5):
    """One instance, three attempts (alpha r1, alpha r2, beta r1), judges j1 and j2; a second instance with one attempt."""
    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    judges = [Judge.objects.create(name=j) for j in ("j1", "j2")]
    inst = Instance.objects.create(
        benchmark=bench, external_id="task-1", content_hash="h", spec={"user_query": ["fix"]}
    )
    other = Instance.objects.create(benchmark=bench, external_id="task-2", content_hash="h")
    items = [
        ChecklistItem.objects.create(
            instance=inst,
            key=k,
            position=n,
            category="System Prompt",
            description=f"{k} description {XSS}",
            content_hash="h",
        )
        for n, k in enumerate(("c0", "c1", "c2"))
    ]
    attempts = {}
    for model, label in (("alpha", "alpha-r1"), ("alpha", "alpha-r2"), ("beta", "beta-r1")):
        run = Run.objects.create(benchmark=bench, model=AgentModel.objects.get_or_create(name=model)[0], label=label)
        attempts[label] = Attempt.objects.create(run=run, instance=inst, assistant_turns=2)
        messages = [{"role": "user", "content": f"task for {label}"}] + [
            {"role": "assistant", "content": f"{label} step {n} {XSS}"} for n in range(n_messages)
        ]
        trajectory_save(
            attempt_id=attempts[label].id, threads=[{"meta": {"thread": "main"}, "tools": [], "messages": messages}]
        )
    attempts["other"] = Attempt.objects.create(run=Run.objects.get(label="beta-r1"), instance=other)
    # c1: alpha-r1 fails under j1 only (j2 passes), beta passes everything; c2: j2 finds alpha-r1 not applicable
    for label, attempt in attempts.items():
        if label == "other":
            continue
        for judge in judges:
            for item in items:
                fail = label == "alpha-r1" and item.key == "c1" and judge.name == "j1"
                na = label == "alpha-r1" and item.key == "c2" and judge.name == "j2"
                Verdict.objects.create(
                    attempt=attempt,
                    item=item,
                    judge=judge,
                    result="fail" if fail else "na" if na else "pass",
                    reasoning=f"{label} {judge.name} {XSS}",
                    evidence={"thread": 0, "message": 3} if fail else None,
                )
    rollups_rebuild_for_attempts([a.id for a in attempts.values()])
    return inst, attempts


def _url(inst, a=None, b=None, **extra):
    params = {k: v for k, v in {"a": a.id if a else None, "b": b.id if b else None, **extra}.items() if v is not None}
    return reverse("runs:instance-compare", args=[inst.id]) + (
        "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    )


@pytest.mark.django_db
def test_it_shows_differing_items_first_highlighted_with_both_trajectories(reviewer_client):
    inst, at = _world()
    body = reviewer_client.get(_url(inst, at["alpha-r1"], at["beta-r1"])).content.decode()

    assert "2 items judged differently" in body
    assert body.index("c1 description") < body.index("c2 description") < body.index("c0 description")
    assert body.count('class="pair differs"') == 2  # c1 under j1, c2 under j2
    assert "alpha-r1 j1 &lt;script&gt;" in body and XSS not in body
    assert 'id="a-m-0-3"' in body and 'id="b-m-0-3"' in body  # both trajectories, anchors kept apart
    assert "alpha-r1 step 0" in body and "beta-r1 step 0" in body
    assert "a_thread=0&amp;a_at=3#a-m-0-3" in body  # the failing verdict's message in A's column
    assert "2 / 3" in body and "2 / 2" in body and "3 / 3" in body  # A: j1 fails c1, j2 finds c2 n/a; B passes all


@pytest.mark.django_db
def test_it_compares_two_repetitions_of_one_model(reviewer_client):
    inst, at = _world()
    body = reviewer_client.get(_url(inst, at["alpha-r1"], at["alpha-r2"])).content.decode()
    assert "A = alpha · run alpha-r1; B = alpha · run alpha-r2" in body and "2 items judged differently" in body


@pytest.mark.django_db
def test_it_refuses_attempts_of_another_instance_and_unknown_ids(reviewer_client):
    inst, at = _world()
    assert reviewer_client.get(_url(inst, at["alpha-r1"], at["other"])).status_code == 404
    assert reviewer_client.get(_url(inst, at["other"], at["alpha-r1"])).status_code == 404
    assert reviewer_client.get(reverse("runs:instance-compare", args=[inst.id]) + "?a=x&b=1").status_code == 404
    assert reviewer_client.get(_url(at["other"].instance, at["alpha-r1"], at["beta-r1"])).status_code == 404


@pytest.mark.django_db
def test_it_offers_a_picker_without_two_attempts_and_for_the_same_attempt_twice(reviewer_client):
    inst, at = _world()
    body = reviewer_client.get(_url(inst)).content.decode()
    assert 'name="a"' in body and "Compare side by side" in body and "judged differently" not in body
    same = reviewer_client.get(_url(inst, at["beta-r1"], at["beta-r1"])).content.decode()
    assert "Pick two different attempts" in same and "judged differently" not in same


@pytest.mark.django_db
def test_it_pages_each_column_on_its_own(reviewer_client):
    inst, at = _world(n_messages=60)
    url = _url(inst, at["alpha-r1"], at["beta-r1"])
    first = reviewer_client.get(url).content.decode()
    assert "alpha-r1 step 38 &lt;" in first and "alpha-r1 step 39 &lt;" not in first
    assert 'hx-get="?a=' in first and "a_page=2" in first and "b_page=2" in first
    more = reviewer_client.get(url + "&b_page=2", HTTP_HX_REQUEST="true").content.decode()
    assert "beta-r1 step 39 &lt;" in more and "alpha-r1" not in more and "<html" not in more
    assert 'id="b-m-0-40"' in more
    opened = reviewer_client.get(url + "&a_at=50").content.decode()
    assert "alpha-r1 step 49 &lt;" in opened and "beta-r1 step 0 &lt;" in opened


@pytest.mark.django_db
def test_it_keeps_queries_independent_of_the_checklist_size(reviewer_client):
    inst, at = _world()
    url = _url(inst, at["alpha-r1"], at["beta-r1"])
    with CaptureQueriesContext(connection) as small:
        reviewer_client.get(url)
    for n in range(3, 30):
        ChecklistItem.objects.create(instance=inst, key=f"x{n}", position=n, category="Memory", content_hash="h")
    with CaptureQueriesContext(connection) as large:
        assert reviewer_client.get(url).status_code == 200
    assert len(large.captured_queries) == len(small.captured_queries) <= 11


@pytest.mark.django_db
def test_it_is_reachable_from_the_instance_and_the_attempt_pages(reviewer_client):
    inst, at = _world()
    instance_page = reviewer_client.get(reverse("runs:instance", args=[inst.id])).content.decode()
    assert f'action="{reverse("runs:instance-compare", args=[inst.id])}"' in instance_page
    attempt_page = reviewer_client.get(reverse("runs:attempt", args=[at["alpha-r1"].id])).content.decode()
    assert "compare with…" in attempt_page
    for label in ("alpha-r2", "beta-r1"):
        assert f"?a={at['alpha-r1'].id}&amp;b={at[label].id}" in attempt_page
    assert f"b={at['other'].id}" not in attempt_page and f'b={at["alpha-r1"].id}"' not in attempt_page


@pytest.mark.django_db
def test_it_sends_anonymous_visitors_to_the_login_page(client):
    inst, at = _world()
    response = client.get(_url(inst, at["alpha-r1"], at["beta-r1"]))
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.django_db
def test_it_has_the_frame_crumbs_kind_badge_exports_and_share(reviewer_client):
    inst, at = _world()
    url = _url(inst, at["alpha-r1"], at["beta-r1"])
    body = reviewer_client.get(url).content.decode()
    assert 'class="crumbs"' in body and f'href="{reverse("runs:instance", args=[inst.id])}"' in body
    assert "badge-kind-checklist" in body and 'id="page-tools"' in body
    assert 'class="btn btn-primary btn-small" type="submit">Compare side by side' in body
    rows = list(csv.DictReader(io.StringIO(reviewer_client.get(url + "&export=csv&table=items").content.decode())))
    assert [(r["Item"], r["Judge"], r["A"], r["B"], r["Differs"]) for r in rows] == [
        ("c1", "j1", "fail", "pass", "yes"),
        ("c1", "j2", "pass", "pass", "no"),
        ("c2", "j1", "pass", "pass", "no"),
        ("c2", "j2", "na", "pass", "yes"),
        ("c0", "j1", "pass", "pass", "no"),
        ("c0", "j2", "pass", "pass", "no"),
    ]
    totals = reviewer_client.get(url + "&export=json&table=judges").json()
    assert [(r["judge"], r["a_passed"], r["a_applicable"], r["n_differ"]) for r in totals["tables"][0]["rows"]] == [
        ("j1", 2, 3, 1),
        ("j2", 2, 2, 1),
    ]
