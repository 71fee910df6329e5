"""The dialogue metrics page's rank intervals and tie groups: runs.metrics.paired over each row's per-dialogue-script
shares of the rank metric (CSR unless the page is sorted by another metric), whose figure is the row's, the same
on the page, in its exports, in the API and in a share link's snapshot, per grouping and exclusion policy.

The study: 24 dialogue scripts of four turns, two constraints a turn (format, length), logged at patience 3. Each run
plays every script for a seeded number of turns (2 to 4) and fails each constraint with its model's rate, never
three turns in a row (so no patience cut): alpha and beta (two runs) fail rarely, gamma and delta often."""

import csv
import io
import re

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from runs import exclusions
from runs.metrics import dialogue as metrics
from runs.metrics import paired
from runs.models import (
    AgentModel,
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Instance,
    Judge,
    JudgeKind,
    Run,
    ShareLink,
    Verdict,
)
from runs.selectors.dialogue import dialogue_metrics, dialogue_state
from runs.services import rollups_rebuild_for_attempts

pytestmark = pytest.mark.django_db

SLUG = "evolif-ties"
PAGE = f"/b/{SLUG}/dialogue/"
API = "/api/dialogue-metrics/"
SCRIPTS = [f"d{n:02d}" for n in range(24)]
GROUPS = ("format", "length")
#: run -> (model, chance that a constraint fails)
RUNS = {
    "alpha-r1": ("alpha", 0.08),
    "beta-r1": ("beta", 0.12),
    "beta-r2": ("beta", 0.12),
    "gamma-r1": ("gamma", 0.4),
    "delta-r1": ("delta", 0.45),
}


def _played() -> dict[tuple[str, str], list[int]]:
    """(run, script) -> constraints passed at each turn played (of two), seeded; never three failed turns in a row."""
    rng = np.random.default_rng(35)
    played = {}
    for run, (_model, rate) in RUNS.items():
        for script in SCRIPTS:
            turns = []
            for _ in range(int(rng.integers(2, 5))):
                passed = int((rng.random(len(GROUPS)) >= rate).sum())
                if len(turns) >= 2 and turns[-1] < 2 and turns[-2] < 2:
                    passed = 2
                turns.append(passed)
            played[(run, script)] = turns
    return played


PLAYED = _played()


@pytest.fixture
def study(db):
    benchmark = Benchmark.objects.create(slug=SLUG, name="EvolIF ties", kind=BenchmarkKind.DIALOGUE)
    judge = Judge.objects.create(name="evolif-log", kind=JudgeKind.LOGGED)
    items = {}
    for script in SCRIPTS:
        spec = {
            "turns": [{"turn": t, "active_topic": "a", "user_query_verified": f"{script} {t}"} for t in range(1, 5)]
        }
        instance = Instance.objects.create(benchmark=benchmark, external_id=script, spec=spec, content_hash="h")
        for turn in range(1, 5):
            for position, group in enumerate(GROUPS):
                items[(script, turn, group)] = ChecklistItem.objects.create(
                    instance=instance,
                    key=f"t{turn}:{group}",
                    turn=turn,
                    group=group,
                    position=position,
                    content_hash="h",
                )
    instances = {i.external_id: i for i in benchmark.instances.all()}
    models = {}
    attempts = []
    for label, (model, _rate) in RUNS.items():
        if model not in models:
            models[model] = AgentModel.objects.create(name=model)
        run = Run.objects.create(benchmark=benchmark, model=models[model], label=label, settings={"patience": 3})
        for script in SCRIPTS:
            turns = PLAYED[(label, script)]
            attempt = Attempt.objects.create(
                run=run,
                instance=instances[script],
                response="...",
                outcome={"patience": 3, "ended_by": "script_end", "ended_turn": len(turns)},
            )
            attempts.append(attempt.id)
            for turn, passed in enumerate(turns, start=1):
                for position, group in enumerate(GROUPS):
                    Verdict.objects.create(
                        attempt=attempt,
                        item=items[(script, turn, group)],
                        judge=judge,
                        result="pass" if position < passed else "fail",
                    )
    rollups_rebuild_for_attempts(attempts)
    return benchmark


def _sides(metric: str, by: str, *, without_turn: int | None = None) -> dict[str, paired.Side]:
    """Each row's side, counted here from what the study played (independently of runs.metrics.dialogue): per script,
    CSR sums the turns' satisfied share over the turns, ISR the turns with both constraints over the turns, ACT_len
    the turns over the dialogues and ACT_succ the successful turns over the dialogues (in turns: / 100). `without_turn` leaves that turn out of every dialogue (an
    exclusion policy that drops its constraints)."""
    labels = sorted({model if by == "model" else run for run, (model, _) in RUNS.items()})
    sides = {label: (np.zeros((len(SCRIPTS), 1)), np.zeros((len(SCRIPTS), 1))) for label in labels}
    for (run, script), turns in PLAYED.items():
        label = RUNS[run][0] if by == "model" else run
        kept = [p for t, p in enumerate(turns, start=1) if t != without_turn]
        num, den = sides[label][0][SCRIPTS.index(script)], sides[label][1][SCRIPTS.index(script)]
        if metric == "csr":
            num += sum(p / 2 for p in kept)
            den += len(kept)
        elif metric == "isr":
            num += sum(p == 2 for p in kept)
            den += len(kept)
        elif metric == "act_len":
            num += len(kept) / 100
            den += 1
        else:
            num += sum(p == 2 for p in kept) / 100
            den += 1
    return sides


def _expected(sides) -> dict[str, tuple[int, int, int]]:
    ranks, groups = paired.rank_intervals(sides), paired.tie_groups(sides)
    assert all(ranks.values()) and all(groups.values())
    return {label: (*ranks[label], groups[label]) for label in sides}


@pytest.mark.parametrize("by", ["model", "run"])
@pytest.mark.parametrize("metric", ["csr", "isr", "act_len", "act_acc", "act_succ", "lss", "rob", "rec"])
def test_a_rows_side_reproduces_the_pages_figure(study, by, metric):
    state = dialogue_state(benchmark=Benchmark.objects.get(slug=SLUG), query={"by": by})
    rows = dialogue_metrics(state)["rows"]
    sides = metrics.metric_sides(state["dialogues"], metric, by=by)
    assert list(sides) == sorted(r.label for r in rows)
    for row in rows:
        expected = getattr(row.metrics, metric)
        assert paired.figure(sides[row.label]) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("metric", ["csr", "isr", "act_len", "act_succ"])
def test_the_sides_equal_the_ones_counted_from_what_was_played(study, metric):
    state = dialogue_state(benchmark=Benchmark.objects.get(slug=SLUG), query={"by": "run"})
    got = metrics.metric_sides(state["dialogues"], metric, by="run")
    for label, (num, den) in _sides(metric, "run").items():
        assert np.allclose(got[label][0], num, rtol=0, atol=1e-12) and np.array_equal(got[label][1], den)


def _shown(low, high, group) -> str:
    rank = f"{low}–{high}" if low != high else f"{low}"
    return f'<td class="num">{rank}</td>\n        <td class="num">{group}</td>'


@pytest.mark.parametrize(
    "query,metric",
    [
        ({"by": "model"}, "csr"),
        ({"by": "run"}, "csr"),
        ({"by": "model", "sort": "-isr"}, "isr"),
        ({"by": "run", "sort": "-act_succ"}, "act_succ"),
    ],
)
def test_page_export_api_and_snapshot_show_what_paired_computes(editor_client, study, query, metric):
    expected = _expected(_sides(metric, query["by"]))
    assert len({group for *_, group in expected.values()}) > 1  # the study splits: the test can tell rows apart
    response = editor_client.get(PAGE, query)
    page = response.content.decode()
    assert "Tie group" in page and "/help/metrics/#paired" in page
    assert {
        line["row"].label: (*line["tie"].rank_interval, line["tie"].tie_group) for line in response.context["lines"]
    } == expected
    for values in expected.values():
        assert _shown(*values) in page
    exported = editor_client.get(PAGE, {**query, "export": "json"}).json()
    [table] = [t for t in exported["tables"] if t["name"] == "metrics"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in table["rows"]} == expected
    assert exported["facts"]["ranked_by"] == metric
    text = editor_client.get(PAGE, {**query, "export": "csv", "table": "metrics"}).content.decode()
    label = "Run" if query["by"] == "run" else "Model"
    got = {r[label]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in csv.DictReader(io.StringIO(text))}
    assert got == {k: tuple(str(v) for v in values) for k, values in expected.items()}

    path = PAGE + "?" + "&".join(f"{k}={v}" for k, v in query.items())
    created = editor_client.post(reverse("runs:page-share-create", args=[SLUG]), {"path": path})
    token = re.search(r"/s/([A-Za-z0-9_-]+)/", created.content.decode()).group(1)
    [frozen] = [t for t in ShareLink.objects.get().snapshot["tables"] if t["name"] == "metrics"]
    assert {r["label"]: (r["rank_low"], r["rank_high"], r["tie_group"]) for r in frozen["rows"]} == expected
    public = Client().get(reverse("runs:share", args=[token])).content.decode()
    assert "Tie group" in public
    for low, high, group in expected.values():
        rank = f"{low}–{high}" if low != high else f"{low}"
        assert re.search(rf'<td class="num">{rank}</td>\s*<td class="num">{group}</td>', public)


@pytest.mark.parametrize("sort,metric", [("", "csr"), ("-isr", "isr")])
def test_the_api_gives_each_model_its_rank_among_every_model(reviewer_client, study, sort, metric):
    expected = _expected(_sides(metric, "model"))
    for model in expected:
        runs = [run for run, (m, _) in RUNS.items() if m == model]
        answer = reviewer_client.get(API, {"run": runs, **({"sort": sort} if sort else {})}).json()
        assert answer["ranked_by"] == metric
        assert (answer["rank_low"], answer["rank_high"], answer["tie_group"]) == expected[model]


def test_under_an_exclusion_policy_the_ties_count_the_turns_it_leaves(editor_client, study, monkeypatch):
    """A policy that leaves out every turn-2 constraint: turn 2 is not counted, on the page and in the API."""
    dropped = set(ChecklistItem.objects.filter(instance__benchmark__slug=SLUG, turn=2).values_list("id", flat=True))
    monkeypatch.setitem(exclusions._PROVIDERS, "adjudicated_invalid", lambda benchmark, policy, *_: dropped)
    kept, every = _sides("csr", "model", without_turn=2), _sides("csr", "model")
    expected = _expected(kept)
    response = editor_client.get(PAGE, {"exclude": "adjudicated_invalid"})
    assert response.context["exclusion"] is not None
    for row in response.context["rows"]:  # the policy changes the figures the ties are computed from
        assert row.metrics.csr == pytest.approx(paired.figure(kept[row.label]), abs=1e-9)
        assert row.metrics.csr != pytest.approx(paired.figure(every[row.label]), abs=1e-6)
    assert {
        line["row"].label: (*line["tie"].rank_interval, line["tie"].tie_group) for line in response.context["lines"]
    } == expected
    runs = [run for run, (m, _) in RUNS.items() if m == "beta"]
    answer = editor_client.get(API, {"run": runs, "exclude": "adjudicated_invalid"}).json()
    assert (answer["rank_low"], answer["rank_high"], answer["tie_group"]) == expected["beta"]
