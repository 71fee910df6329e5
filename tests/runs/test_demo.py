"""The demo command: an empty database gets a realistic, deterministic study of every available benchmark."""

from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs.demo import PLANNERS, SCALES, demo_load, format_available, verdict_fingerprint
from runs.models import AttemptRollup, Benchmark, BenchmarkKind, JudgeReport, ReportStatus, Run, Verdict, VerdictResult

pytestmark = pytest.mark.django_db


def _available_kinds(directory) -> set[str]:
    kinds = {
        "octobench": BenchmarkKind.CHECKLIST,
        "evolif": BenchmarkKind.DIALOGUE,
        "manyih-coding": BenchmarkKind.HIERARCHY,
        "guidebench": BenchmarkKind.CHOICE,
        "octobench-conflict": BenchmarkKind.CONFLICT,
    }
    out = set()
    for planner in PLANNERS:
        plan = planner(1, SCALES["small"], directory)
        if all(format_available(f) for f in plan.formats):
            out.add(kinds[plan.slug])
    return out


@pytest.fixture
def small_study():
    """A small demo study in the test's database."""
    return demo_load(seed=7, scale="small")


def test_it_creates_every_available_benchmark_kind_at_small_scale(small_study, tmp_path):
    kinds = set(Benchmark.objects.values_list("kind", flat=True))
    assert kinds == _available_kinds(tmp_path)
    assert BenchmarkKind.CHECKLIST in kinds
    for result in small_study:
        if not result.skipped:
            assert result.counts["instances"] > 0 and result.counts["verdicts"] > 0


def test_it_makes_judges_disagree_on_some_but_not_most_items(small_study):
    verdicts = defaultdict(set)
    for attempt, item, result in Verdict.objects.filter(attempt__run__benchmark__slug="octobench").values_list(
        "attempt_id", "item_id", "result"
    ):
        verdicts[(attempt, item)].add(result)
    disagreeing = sum(len(results) > 1 for results in verdicts.values()) / len(verdicts)
    assert 0.02 < disagreeing < 0.15
    judges = Verdict.objects.filter(attempt__run__benchmark__slug="octobench").values("judge").distinct().count()
    assert judges == 3
    # the judges answer "success" or "fail" only, as evaluate.py's prompt asks
    assert not Verdict.objects.filter(
        attempt__run__benchmark__slug="octobench", result=VerdictResult.NOT_APPLICABLE
    ).exists()


def test_it_shows_what_evaluate_py_records_when_a_judge_goes_wrong(small_study):
    reports = JudgeReport.objects.filter(attempt__run__benchmark__slug="octobench")
    assert sorted(reports.exclude(status=ReportStatus.SCORED).values_list("status", "judge__name")) == [
        ("failed", "judge-lyra"),
        ("not_json", "judge-vega"),
    ]
    capitalised = [r.unrecognised for r in reports.exclude(unrecognised={})]
    assert capitalised and all(set(u.values()) == {"Success"} for u in capitalised)
    assert set(reports.exclude(unrecognised={}).values_list("judge__name", flat=True)) == {"judge-orion"}


def test_it_gives_models_different_results(small_study):
    rates = {}
    for model in Run.objects.filter(benchmark__slug="octobench").values_list("model__name", flat=True).distinct():
        rows = AttemptRollup.objects.filter(benchmark__slug="octobench", model__name=model)
        passed = sum(r.n_passed for r in rows)
        applicable = sum(r.n_applicable for r in rows)
        rates[model] = passed / applicable
    assert len(rates) == 6
    assert max(rates.values()) - min(rates.values()) > 0.05


def test_it_records_a_feedback_run_next_to_its_original(small_study):
    feedback = Run.objects.get(benchmark__slug="octobench", label__endswith="+ feedback")
    assert feedback.settings["feedback"] is True
    original = Run.objects.get(benchmark__slug="octobench", label=feedback.settings["compared_with"])
    assert original.model_id == feedback.model_id
    assert original.attempts.count() == feedback.attempts.count()


def test_it_is_deterministic_for_a_seed():
    demo_load(seed=3, scale="small")
    first = verdict_fingerprint()
    for benchmark in Benchmark.objects.all():
        Run.objects.filter(benchmark=benchmark).delete()
    Benchmark.objects.all().delete()
    demo_load(seed=3, scale="small")
    assert verdict_fingerprint() == first
    Run.objects.all().delete()
    Benchmark.objects.all().delete()
    demo_load(seed=4, scale="small")
    assert verdict_fingerprint() != first


def test_it_refuses_a_database_that_has_benchmarks():
    Benchmark.objects.create(slug="mine", name="Mine", kind=BenchmarkKind.CHECKLIST)
    with pytest.raises(CommandError, match="already has benchmarks"):
        call_command("demo", "--scale", "small", stdout=StringIO())
    assert Benchmark.objects.count() == 1


def test_it_prints_counts_and_time_per_benchmark():
    out = StringIO()
    call_command("demo", "--scale", "small", "--seed", "2", stdout=out)
    text = out.getvalue()
    assert "OctoBench:" in text and "verdicts" in text
    assert "Demo loaded:" in text and " s" in text


def test_the_manyih_conflict_resolution_table_is_filled_on_the_demo(small_study, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("reviewer-demo"))
    body = client.get(reverse("runs:hierarchy-conflicts", args=["manyih-coding"])).content.decode()
    assert "No style re-check yet" not in body and "No conflict group" not in body
    assert "Conflict groups</th>" in body and "Winner %" in body
