"""GET /api/choice-metrics/?run=<label>: a choice run's per-category metrics in percent (docs/metrics.md#choice).

The query is the choice pages' (runs.selectors.choice reads it for both), so ?run=<label>&view=... gives the metrics
page's row for that run, and a parameter the page leaves at its default is answered 400 with the form's words."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from runs.access import benchmark_for, blind_safe
from runs.api.core import PageQueryView
from runs.metrics import choice as metrics
from runs.metrics import paired
from runs.models import BenchmarkKind, Run
from runs.selectors import choice as selectors


class ChoiceMetricsQuerySerializer(serializers.Serializer):
    """Which run, and which comparison."""

    run = serializers.CharField(max_length=200, help_text="Run label.")
    benchmark = serializers.SlugField(
        required=False, help_text="Benchmark slug; needed only when two choice benchmarks have a run with this label."
    )
    view = serializers.ChoiceField(
        choices=[metrics.EXACT, metrics.NORMALISED],
        default=metrics.EXACT,
        help_text="exact: the reference scorer's comparison (default); normalised: the lenient one.",
    )


class ChoiceCategorySerializer(serializers.Serializer):
    """One category: task count, accuracy and macro precision/recall/F1 in percent, unanswered count."""

    n = serializers.IntegerField()
    accuracy = serializers.FloatField()
    precision = serializers.FloatField()
    recall = serializers.FloatField()
    f1 = serializers.FloatField()
    unanswered = serializers.IntegerField(
        help_text="Missing, empty or unparsable answers (scored as the reference's default)."
    )
    accuracy_ci = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        help_text="Bootstrap 95% interval of accuracy (1,000 resamples, fixed seed).",
    )


class ChoiceMetricsSerializer(serializers.Serializer):
    """A run's metrics per category and its overall accuracy weighted by task count, all in percent."""

    run = serializers.CharField()
    benchmark = serializers.CharField()
    model = serializers.CharField()
    view = serializers.CharField()
    categories = serializers.DictField(child=ChoiceCategorySerializer())
    overall_accuracy = serializers.FloatField(allow_null=True)
    overall_accuracy_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    reference_overall_accuracy = serializers.FloatField(
        allow_null=True,
        help_text="GuideBench evaluate.py's 'all' figure: the accuracies of price, relevance, math, chat, summary and "
        "hallu weighted by the full benchmark's task counts (442, 192, 52, 180, 58, 118) whatever was imported, other "
        "categories ignored; null unless the run has all six. overall_accuracy weights by the tasks imported instead.",
    )
    n = serializers.IntegerField()
    unanswered = serializers.IntegerField()
    rank_low = serializers.IntegerField(
        allow_null=True,
        help_text="Lower end of the 95% interval of the run's rank (1 = best) by overall_accuracy over bootstrap "
        "resamples of tasks, among every run of the benchmark under this view, as the metrics page with no run "
        "selected shows it (/help/metrics/#paired). null for a run without scored answers.",
    )
    rank_high = serializers.IntegerField(allow_null=True, help_text="Upper end of that interval (null as rank_low).")
    tie_group = serializers.IntegerField(
        allow_null=True,
        help_text="Tie group on overall_accuracy among those runs: 1 is the leader and every run whose paired "
        "difference from it is not significant at 5% after Holm's correction; the next group starts at the best run "
        "outside it (/help/metrics/#paired). null as rank_low.",
    )


@blind_safe
class ChoiceMetricsView(PageQueryView):
    """Per-category accuracy, macro P/R/F1 and unanswered counts of one choice-benchmark run."""

    @extend_schema(
        operation_id="choice_metrics_retrieve",
        parameters=[ChoiceMetricsQuerySerializer],
        responses={
            200: ChoiceMetricsSerializer,
            400: OpenApiResponse(
                description="No run given, the label is ambiguous without ?benchmark=, or a parameter "
                "the pages leave at its default (an unknown view...), as {parameter: [words]}."
            ),
            404: OpenApiResponse(description="No choice-benchmark run has this label."),
        },
        description="Numbers in percent, computed as GuideBench's reference scorer (definitions: /help/metrics/#choice): "
        "macro averages over the union of true and predicted labels with zero_division=0.",
    )
    def get(self, request):
        label = request.query_params.get("run")
        if not label:
            return Response({"run": ["Name a run: ?run=<label>."]}, status=status.HTTP_400_BAD_REQUEST)
        runs = Run.objects.filter(label=label, benchmark__kind=BenchmarkKind.CHOICE).select_related(
            "benchmark", "model"
        )
        if request.query_params.get("benchmark"):
            runs = runs.filter(
                benchmark=benchmark_for(request, request.query_params["benchmark"], kind=BenchmarkKind.CHOICE)
            )
        found = list(runs[:2])
        if not found:
            return Response(
                {"detail": f"No choice-benchmark run is labelled '{label}'."}, status=status.HTTP_404_NOT_FOUND
            )
        if len(found) > 1:
            return Response(
                {"detail": "Several choice benchmarks have a run with this label; pass ?benchmark=<slug>."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        run = found[0]
        benchmark = benchmark_for(request, run.benchmark.slug, kind=BenchmarkKind.CHOICE)
        query = request.query_params.copy()
        query.setlist("run", [run.label])  # one run (the page pools none: a row per run)
        chosen = selectors.choice_state(benchmark=benchmark, query=query)
        if chosen["errors"]:
            return Response(chosen["errors"], status=status.HTTP_400_BAD_REQUEST)
        state = chosen["state"]
        [result] = selectors.choice_metrics(benchmark=benchmark, state=state)["run_rows"] or [None]
        body = {
            "run": run.label,
            "benchmark": benchmark.slug,
            "model": run.model.name,
            "view": state["view"],
            "categories": {},
            "overall_accuracy": None,
            "overall_accuracy_ci": None,
            "reference_overall_accuracy": None,
            "n": 0,
            "unanswered": 0,
            **_tie_fields(benchmark, run.label, state["view"]),
        }
        if result is not None:
            body.update(
                categories={
                    name: {
                        "n": c.n,
                        "accuracy": c.accuracy,
                        "precision": c.precision,
                        "recall": c.recall,
                        "f1": c.f1,
                        "unanswered": c.unanswered,
                        "accuracy_ci": [c.ci_low, c.ci_high],
                    }
                    for name, c in result.categories.items()
                },
                overall_accuracy=result.accuracy,
                overall_accuracy_ci=[result.ci_low, result.ci_high],
                reference_overall_accuracy=result.reference_accuracy,
                n=result.n,
                unanswered=result.unanswered,
            )
        return Response(ChoiceMetricsSerializer(body).data)


def _tie_fields(benchmark, label: str, view: str) -> dict:
    """rank_low, rank_high and tie_group of the run among every run of the benchmark (the page's default rows)."""
    every_run = list(Run.objects.filter(benchmark=benchmark).values_list("label", flat=True))
    return selectors.choice_ties(benchmark.id, every_run, view=view).get(label, paired.Tie()).fields()
