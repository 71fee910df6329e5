"""GET /api/conflict-metrics/?benchmark=<slug>: the conflict page's resolution and SP rates (docs/metrics.md#conflict).

The query is the conflict page's (runs.selectors.conflict reads it for both), so the same query string gives the
page's numbers, and a parameter the page shows an error for is answered 400 with the same words. The drill-down
(attempts behind a cell) stays on the page: the API answers aggregates only.
"""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from runs.access import benchmark_for, blind_safe
from runs.api.core import PageQueryView
from runs.metrics import paired
from runs.models import BenchmarkKind
from runs.selectors import conflict as selectors
from runs.serializers import exclusion_effect_data, health_flags_field


class ConflictMetricsQuerySerializer(serializers.Serializer):
    """The conflict page's query (documentation only: runs.selectors.conflict reads it, for the page too)."""

    benchmark = serializers.SlugField(help_text="Slug of a conflict benchmark.")
    run = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="Run label; repeat for several (default: every run of the benchmark).",
    )
    judge = serializers.CharField(
        required=False, help_text="Judge name (default: the first that read the resolutions, as on the page)."
    )
    by = serializers.ChoiceField(choices=["model", "run"], required=False, help_text="Rows per model (default) or run.")
    exclude = serializers.CharField(required=False, help_text="Audit exclusion policy (none: every item).")
    health = health_flags_field()


class ResolutionRateSerializer(serializers.Serializer):
    """One model (or run) and conflict type: attempts, and % that followed each side or neither."""

    label = serializers.CharField()
    type = serializers.CharField(help_text="UQ vs SP, SP vs MD or UQ vs MD.")
    n = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Source (or neither) -> attempts.")
    first = serializers.FloatField(allow_null=True, help_text="% that followed the type's first-named source.")
    second = serializers.FloatField(allow_null=True, help_text="% that followed the type's second-named source.")
    neither = serializers.FloatField(allow_null=True)


class ScenarioRateSerializer(serializers.Serializer):
    """One model (or run) and scenario (or all scenarios), over conflicts with a system-prompt side."""

    label = serializers.CharField()
    scenario = serializers.CharField()
    n = serializers.IntegerField()
    sp = serializers.IntegerField()
    other = serializers.IntegerField()
    neither = serializers.IntegerField()
    sp_rate = serializers.FloatField(allow_null=True)
    other_rate = serializers.FloatField(allow_null=True)
    neither_rate = serializers.FloatField(allow_null=True)
    rank_low = serializers.IntegerField(
        allow_null=True,
        help_text="Lower end of the 95% interval of the row's (model's or run's) rank by SP rate over all scenarios "
        "(1 = best) over bootstrap resamples of conflicts, among the rows of the same query (/help/metrics/#paired); "
        "the same on each of the row's scenarios.",
    )
    rank_high = serializers.IntegerField(allow_null=True, help_text="Upper end of that interval.")
    tie_group = serializers.IntegerField(
        allow_null=True,
        help_text="Tie group on SP rate over all scenarios: 1 is the leader and every row whose paired difference "
        "from it is not significant at 5% after Holm's correction; the next group starts at the best row outside it "
        "(/help/metrics/#paired).",
    )


class ConflictMetricsSerializer(serializers.Serializer):
    """The conflict page's tables: resolution rates per type, SP rates per scenario, the exclusion's rank change."""

    benchmark = serializers.CharField()
    judge = serializers.CharField()
    by = serializers.CharField()
    exclude = serializers.CharField(help_text="The audit exclusion policy applied (none: every item).")
    excluded_items = serializers.IntegerField(help_text="Items the policy leaves out of this benchmark.")
    attempts = serializers.IntegerField(help_text="Attempts counted (one conflict reading each).")
    resolution_rates = ResolutionRateSerializer(many=True)
    sp_rates = ScenarioRateSerializer(many=True)
    exclusion = serializers.DictField(
        allow_null=True,
        help_text="Under a policy: Kendall's tau, each row's rank by SP rate before and after, and the swaps.",
    )


@blind_safe
class ConflictMetricsView(PageQueryView):
    """Resolution rate per model (or run) and conflict type, and SP rate per scenario, as the conflict page shows."""

    @extend_schema(
        operation_id="conflict_metrics_retrieve",
        parameters=[ConflictMetricsQuerySerializer],
        responses={
            200: ConflictMetricsSerializer,
            400: OpenApiResponse(
                description="No ?benchmark=, or a parameter the page shows an error for (an unknown "
                "run, judge or exclusion policy...), as {parameter: [the page's words]}."
            ),
            404: OpenApiResponse(description="No conflict benchmark has this slug, or no judge read its resolutions."),
        },
        description="Definitions: /help/metrics/#conflict; in percent; the same numbers as the conflict page "
        "(/b/<slug>/conflict/) for the same query string, including ?exclude=.",
    )
    def get(self, request):
        slug = request.query_params.get("benchmark")
        if not slug:
            return Response(
                {"benchmark": ["Name a conflict benchmark: ?benchmark=<slug>."]}, status=status.HTTP_400_BAD_REQUEST
            )
        benchmark = benchmark_for(request, slug, kind=BenchmarkKind.CONFLICT)
        state = selectors.conflict_state(benchmark=benchmark, query=request.query_params)
        if state["errors"]:
            return Response(state["errors"], status=status.HTTP_400_BAD_REQUEST)
        if state["judge"] is None:
            return Response(
                {"detail": "No judge has read the resolutions of this benchmark."}, status=status.HTTP_404_NOT_FOUND
            )
        state["cell"] = {}  # aggregates only (the page's drill-down lists attempts)
        data = selectors.conflict_metrics(state)
        return Response(
            ConflictMetricsSerializer(
                {
                    "benchmark": benchmark.slug,
                    "judge": state["judge"].name,
                    "by": state["by"],
                    "exclude": state["exclude"],
                    "excluded_items": len(state["excluded"] or ()),
                    "attempts": len(data["rows"]),
                    "resolution_rates": data["rates"],
                    "sp_rates": [
                        asdict(r)
                        | {"sp_rate": r.sp_rate, "other_rate": r.other_rate, "neither_rate": r.neither_rate}
                        | data["ties"].get(r.label, paired.Tie()).fields()
                        for r in data["scenario_rates"]
                    ],
                    "exclusion": exclusion_effect_data(data["exclusion"]),
                }
            ).data
        )
