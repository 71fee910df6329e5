"""An audit exclusion policy and item health flags together (runs.exclusions composes them, runs.selectors.state
parses `exclude` and `health`), on every kind with items: the items left out are exactly the union of both parts,
Kendall's tau and the swaps equal scipy's recomputation from the rankings before and after, and the page, its API,
its JSON export and a frozen snapshot carry the same figures. An old `exclude=health:<flag>` link still means the
same, an unknown flag is refused in the API's words, and a blind annotator's query loses both parameters.

The audit part is a policy registered by the test (what it leaves out is fixed here), so each figure can be checked
against the same page under one policy naming exactly the union. A conflict benchmark's verdicts are not pass or
fail (its resolution items record the side followed), so only the annotators' flag can flag its items: there the
test raises it on every fourth item, as a settled audit would."""

from dataclasses import replace
from itertools import combinations

import pytest
from django.contrib.auth.models import Group
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse
from scipy import stats

from runs import exclusions
from runs.demo import SCALES, conflict_plan, evolif_plan, manyih_plan, octobench_plan
from runs.ingest import Source, ingest
from runs.metrics.item_health import FLAGS
from runs.models import Benchmark, ChecklistItem
from runs.pages import page_snapshot
from runs.selectors import item_health
from runs.selectors.item_health import health_report
from runs.selectors.state import HEALTH_UNKNOWN

AUDIT, UNION = "test_audit", "test_union"
PLANS = {"checklist": octobench_plan, "dialogue": evolif_plan, "hierarchy": manyih_plan, "conflict": conflict_plan}
PAGES = {
    "checklist": "runs:checklist-leaderboard",
    "dialogue": "runs:dialogue-metrics",
    "hierarchy": "runs:hierarchy-metrics",
    "conflict": "runs:conflict-metrics",
}


@pytest.fixture
def register(monkeypatch):
    """Register a policy leaving out fixed items, undone after the test."""

    def add(name, items):
        monkeypatch.setitem(exclusions._PROVIDERS, name, lambda benchmark, policy, campaigns=None: set(items))
        monkeypatch.setitem(exclusions._LABELS, name, name.replace("_", " "))

    return add


def _benchmark(kind, tmp_path) -> Benchmark:
    for step in PLANS[kind](1, SCALES["small"], tmp_path).steps:
        ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    return Benchmark.objects.get(kind=kind)


def _client(django_user_model, name, groups):
    user = django_user_model.objects.create_user(name, password="pw-1-x")
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    client = Client()
    client.force_login(user)
    return client, user


def _parts(benchmark):
    """(audit items, health flags, health items, union): every third item by id for the audit part, the flags
    that flag some item (any of them, two at most) for the health part."""
    ids = sorted(ChecklistItem.objects.filter(instance__benchmark=benchmark).values_list("id", flat=True))
    audit = set(ids[::3])
    report = item_health.health_report(benchmark)
    flags = [f for f in FLAGS if any(f in i.flags for i in report.items)][:2]  # in the order the state keeps
    health = {i.item_id for i in report.items if set(i.flags) & set(flags)}
    assert flags and health - audit, "the demo data flags items the audit part does not name"
    return audit, flags, health, audit | health


def _tau_and_swaps(before: dict, after: dict):
    """scipy's Kendall tau-b between two rankings by a score (higher is better) over the labels both rank, and the
    pairs whose order changed, computed here from the scores."""
    common = sorted(k for k in before if before[k] is not None and after.get(k) is not None)
    tau = stats.kendalltau([before[k] for k in common], [after[k] for k in common]).statistic
    tau = None if tau != tau else tau  # undefined (a constant ranking): None, as the page says "—"
    sign = lambda x: (x > 0) - (x < 0)  # noqa: E731
    swaps = {
        frozenset((a, b))
        for a, b in combinations(common, 2)
        if sign(before[a] - before[b]) != sign(after[a] - after[b])
    }
    return tau, swaps


def _page_box(kind, response):
    """(tau, swaps as sets of two labels, label -> (value before, value after), items left out) of a page's box."""
    box = response.context["exclusion"]
    if kind == "checklist":
        lines = {m: (r.isr_before, r.isr_after) for m, r in box["rows"].items()}
        swaps = {frozenset(s) for s in box["swaps"]}
    else:
        lines = {k: (line.value_before, line.value_after) for k, line in box["lines"].items()}
        swaps = {frozenset((s["up"], s["down"])) for s in box["swaps"]}
    return box["tau"], swaps, lines, box["n_excluded"]


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(PLANS))
def test_it_leaves_out_the_union_and_says_how_the_ranks_moved(kind, tmp_path, django_user_model, register, monkeypatch):
    benchmark = _benchmark(kind, tmp_path)
    if kind == "conflict":
        report = health_report(benchmark)
        flagged = replace(
            report, items=[replace(i, flags=["annotators"] if n % 4 == 1 else []) for n, i in enumerate(report.items)]
        )
        monkeypatch.setattr(item_health, "health_report", lambda b: flagged)
    audit, flags, health, union = _parts(benchmark)
    register(AUDIT, audit)
    register(UNION, union)
    client, user = _client(django_user_model, "rev", ["reviewer"])
    page = reverse(PAGES[kind], args=[benchmark.slug])
    composed_query = f"exclude={AUDIT}&" + "&".join(f"health={f}" for f in flags)
    composed = client.get(f"{page}?{composed_query}", HTTP_HX_REQUEST="true")
    single = client.get(f"{page}?exclude={UNION}", HTTP_HX_REQUEST="true")
    assert composed.status_code == 200 and single.status_code == 200

    # exactly the union: the same count and the same figures as one policy naming the union
    tau, swaps, lines, n_excluded = _page_box(kind, composed)
    assert n_excluded == len(union)
    assert (tau, swaps, lines) == _page_box(kind, single)[:3]
    # tau and the swaps as scipy and this test compute them from the figures before and after
    expected_tau, expected_swaps = _tau_and_swaps(
        {k: v[0] for k, v in lines.items()}, {k: v[1] for k, v in lines.items()}
    )
    assert tau == pytest.approx(expected_tau) and swaps == expected_swaps
    # the box names both parts
    policy = f"{AUDIT}+" + "+".join(f"health:{f}" for f in flags)
    html = composed.content.decode()
    assert "Items left out: test audit + item health:" in html
    assert composed.context["exclusion"]["policy"] == policy

    # the JSON export and a frozen snapshot carry the same figures
    exported = client.get(f"{page}?{composed_query}&export=json").json()["facts"]["exclusion"]
    request = HttpRequest()
    request.user, request.META = user, {"SERVER_NAME": "portal", "SERVER_PORT": "80"}
    frozen = page_snapshot(request, path=f"{page}?{composed_query}", benchmark_slug=benchmark.slug)
    for facts in (exported, frozen["facts"]["exclusion"]):
        assert facts["policy"] == policy and facts["n_excluded"] == len(union)
        assert facts["tau"] == pytest.approx(expected_tau)
        assert {frozenset(s) for s in facts["swaps"]} == expected_swaps
    assert "Items left out: test audit + item health:" in frozen["shown"]["html"]

    # the API: the same figures under the composed query as under the union
    _api_agrees(kind, client, benchmark, composed_query, expected_tau, expected_swaps, len(union))


def _api_agrees(kind, client, benchmark, query, tau, swaps, n_excluded):
    if kind == "checklist":
        composed = client.get(reverse("api:leaderboard", args=[benchmark.slug]) + f"?{query}").json()
        single = client.get(reverse("api:leaderboard", args=[benchmark.slug]) + f"?exclude={UNION}").json()
        assert composed["excluded_items"] == n_excluded == len(composed["exclusion"]["items"])
        assert composed["rows"] == single["rows"]
        assert composed["exclusion"]["tau"] == pytest.approx(tau)
        assert {frozenset(s) for s in composed["exclusion"]["swaps"]} == swaps
        assert composed["state"]["health"] and composed["state"]["exclude"].startswith(f"{AUDIT}+health:")
        return
    if kind == "dialogue":
        run = benchmark.runs.order_by("label").first()
        url = reverse("api:dialogue-metrics") + f"?run={run.label}&"
        composed, single = client.get(url + query).json(), client.get(url + f"exclude={UNION}").json()
        assert composed["excluded_items"] == n_excluded
        assert {k: v for k, v in composed.items() if k != "exclude"} == {
            k: v for k, v in single.items() if k != "exclude"
        }
        # the model's answer carries what the policy did to the ranking of every model, as the page shows it
        assert composed["exclusion"]["ranks"] and run.model.name in {r["label"] for r in composed["exclusion"]["ranks"]}
    else:
        url = reverse(f"api:{kind}-metrics") + f"?benchmark={benchmark.slug}&"
        composed, single = client.get(url + query).json(), client.get(url + f"exclude={UNION}").json()
    assert composed["excluded_items"] == n_excluded
    assert composed["exclusion"]["tau"] == pytest.approx(tau)
    assert {frozenset((s["up"], s["down"])) for s in composed["exclusion"]["swaps"]} == swaps
    assert composed["exclusion"]["tau"] == single["exclusion"]["tau"]


@pytest.mark.django_db
def test_an_old_health_link_means_the_same_and_an_unknown_flag_is_refused(tmp_path, django_user_model):
    benchmark = _benchmark("hierarchy", tmp_path)
    client, _ = _client(django_user_model, "rev", ["reviewer"])
    page = reverse("runs:hierarchy-metrics", args=[benchmark.slug])
    old = client.get(f"{page}?exclude=health:any")
    new = client.get(f"{page}?health=any")
    assert old.context["exclude"] == new.context["exclude"] == "health:any"
    assert old.context["excluded"] == new.context["excluded"]
    # the old link shows its flag where the page shows item health flags, the audit control at none
    assert 'name="health" value="any" id="id_health_6" checked' in old.content.decode()
    api = client.get(reverse("api:hierarchy-metrics") + f"?benchmark={benchmark.slug}&health=nonsense")
    assert api.status_code == 400 and api.json()["health"] == [HEALTH_UNKNOWN % {"value": "nonsense"}]
    leaderboard = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    refused = client.get(reverse("api:leaderboard", args=[leaderboard.slug]) + "?health=nonsense")
    assert refused.status_code == 400 and refused.json()["health"] == [HEALTH_UNKNOWN % {"value": "nonsense"}]


@pytest.mark.django_db
def test_a_blind_annotator_gets_no_exclusion_from_either_parameter(tmp_path, django_user_model):
    benchmark = _benchmark("hierarchy", tmp_path)
    client, _ = _client(django_user_model, "ann", ["annotator"])
    response = client.get(reverse("runs:hierarchy-metrics", args=[benchmark.slug]) + "?health=any")
    assert response.status_code == 200 and response.context["excluded"] is None
    assert 'name="health"' not in response.content.decode()


def test_composed_names_flatten_and_label_every_part(register):
    register(AUDIT, {1, 2})
    name = exclusions.exclusion_policy_compose(["none", AUDIT, f"{AUDIT}+health:floor", None])
    assert name == f"{AUDIT}+health:floor"
    assert exclusions.exclusion_policy_parts(name) == [AUDIT, "health:floor"]
    assert exclusions.exclusion_policy_label(name).startswith("test audit + item health: floor")
    assert exclusions.exclusion_policy_compose([]) == "none" and exclusions.excluded_item_ids(None, "none") is None
    with pytest.raises(ValueError, match="unknown exclusion policy 'nope'"):
        exclusions.excluded_item_ids(None, f"{AUDIT}+nope")
