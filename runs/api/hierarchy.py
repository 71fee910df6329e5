"""Hierarchy (ManyIH) API: privilege resolutions per sample and the metrics page's tables (docs/metrics.md#hierarchy).

GET /api/hierarchy/resolutions/?benchmark=<slug>&interface=<ordinal|scalar>
GET /api/hierarchy-metrics/?benchmark=<slug>|run=<label>[&run=...][&judge=<name>][&by=run][&a=&b=][&exclude=<policy>]

The metrics query is the metrics page's (runs.selectors.hierarchy reads it for both), so the same query string gives
the page's numbers, and a parameter the page shows an error for is answered 400 with the same words.
"""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import benchmark_for, blind_safe, may_open
from runs.api.core import PageQueryView
from runs.metrics import hierarchy as metrics
from runs.metrics import paired
from runs.models import BenchmarkKind, ChecklistItem, Instance, Run
from runs.scoring.hierarchy import resolve_privileges
from runs.selectors import hierarchy as selectors
from runs.serializers import health_flags_field

INTERFACES = ("ordinal", "scalar")


# resolutions --------------------------------------------------------------------------
class ResolutionsQuerySerializer(serializers.Serializer):
    """Which hierarchy benchmark, and in which interface its privileges are read and shown."""

    benchmark = serializers.SlugField(help_text="Slug of a hierarchy benchmark, e.g. manyih-coding.")
    interface = serializers.ChoiceField(
        choices=INTERFACES,
        default="scalar",
        help_text="scalar: privileges are the z values (higher wins); ordinal: the ranks 1..k (1 = highest z, lower wins). "
        "Both encode the same order, so active and suppressed are the same; only `privileges` differs.",
    )
    limit = serializers.IntegerField(required=False, min_value=1, help_text="Samples per page (default 100).")
    offset = serializers.IntegerField(required=False, min_value=0, help_text="Samples to skip.")


class SampleResolutionSerializer(serializers.Serializer):
    """One sample's resolution: instruction ids (item keys) in visiting order, highest privilege first."""

    sample = serializers.CharField(help_text="The sample's external id.")
    active = serializers.ListField(child=serializers.CharField(), help_text="Active instruction ids.")
    suppressed = serializers.ListField(child=serializers.CharField(), help_text="Suppressed instruction ids.")
    privileges = serializers.DictField(
        child=serializers.FloatField(),
        help_text="Instruction id -> privilege in the chosen interface (z value, or ordinal rank), in prompt order.",
    )


class ResolutionListSerializer(serializers.Serializer):
    """A page of samples (limit/offset), in natural order of their ids."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    benchmark = serializers.CharField()
    interface = serializers.CharField()
    results = SampleResolutionSerializer(many=True)


def sample_resolution(items: list[dict], *, interface: str) -> dict:
    """{"active", "suppressed", "privileges"} of one sample's stored items, read in `interface` (pure)."""

    def value(item: dict):
        return item["details"].get("rank") if interface == "ordinal" else item["privilege"]

    instructions = [
        {
            "id": item["key"],
            "privilege": value(item),
            "position": item["position"],
            "conflicts_with": [str(c) for c in item["details"].get("conflicts_with") or []],
        }
        for item in items
    ]
    resolution = resolve_privileges(instructions, interface=interface)
    return {
        "active": resolution.active,
        "suppressed": resolution.suppressed,
        "privileges": {i["id"]: i["privilege"] for i in sorted(instructions, key=lambda i: i["position"])},
    }


class HierarchyResolutionsView(APIView):
    """Active and suppressed instructions of every sample of a hierarchy benchmark."""

    pagination_class = LimitOffsetPagination

    @extend_schema(
        operation_id="hierarchy_resolutions_list",
        parameters=[ResolutionsQuerySerializer],
        responses={
            200: ResolutionListSerializer,
            404: OpenApiResponse(description="No hierarchy benchmark has this slug."),
        },
        description="Computed on request by the resolution engine (runs.scoring.hierarchy.resolve_privileges) from the stored "
        "instructions: visit from highest to lowest privilege (ties: later in the prompt first); an instruction is "
        "active unless one it conflicts with is already active. `interface` selects how privileges are read and "
        "shown (scalar z values or ordinal ranks); the two encode the same order and give the same resolution. "
        "Paginated with limit/offset (default 100 samples).",
    )
    def get(self, request):
        query = ResolutionsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        benchmark = benchmark_for(request, params["benchmark"], kind=BenchmarkKind.HIERARCHY)
        samples = sorted(
            Instance.objects.filter(benchmark=benchmark).values_list("id", "external_id").order_by(),
            key=lambda s: (metrics.natural_key(s[1]), s[0]),
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(samples, request, view=self)
        items: dict[int, list[dict]] = {pk: [] for pk, _ in page}
        for item in (
            ChecklistItem.objects.filter(instance_id__in=list(items))
            .values("instance_id", "key", "position", "privilege", "details")
            .order_by("instance_id", "position")
        ):
            items[item["instance_id"]].append(item)
        results = [
            {"sample": external_id, **sample_resolution(items[pk], interface=params["interface"])}
            for pk, external_id in page
        ]
        response = paginator.get_paginated_response(results)
        response.data = ResolutionListSerializer(
            {**response.data, "benchmark": benchmark.slug, "interface": params["interface"]}
        ).data
        return response


# metrics ------------------------------------------------------------------------------
class HierarchyMetricsQuerySerializer(serializers.Serializer):
    """The metrics page's query (documentation only: runs.selectors.hierarchy reads it, for the page too)."""

    benchmark = serializers.SlugField(
        required=False,
        help_text="Benchmark slug (needed without ?run=, or when two hierarchy benchmarks have a run with this label).",
    )
    run = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="Run label; repeat for several (default: every run of the benchmark). With "
        "exactly one, the answer also has that run's own figures.",
    )
    judge = serializers.CharField(
        required=False, max_length=200, help_text="Judge name (default: the judge whose verdicts the harness logged)."
    )
    by = serializers.ChoiceField(choices=["model", "run"], required=False, help_text="Rows per model (default) or run.")
    a = serializers.CharField(required=False, help_text="Compare run A (default: one model's ordinal run) ...")
    b = serializers.CharField(required=False, help_text="... with run B (default: its scalar run).")
    exclude = serializers.CharField(
        required=False,
        help_text="Audit exclusion policy: none, flagged_by_either, "
        "flagged_by_both, adjudicated_invalid or superseded (the generated constraints it "
        "flags are left out and Acc is recomputed from the verdicts).",
    )
    health = health_flags_field()


class StyleGroupSerializer(serializers.Serializer):
    """One style group's counts: passed and total over the style-checked samples, and the samples left out."""

    passed = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Samples with the group active that the evaluator style-checked.")
    left_out = serializers.IntegerField(
        help_text="Samples with the group active left out: no code, or an evaluator error."
    )
    rate = serializers.FloatField(allow_null=True, help_text="passed / total in %: the evaluator's per-category rate.")
    rate_errors_as_failures = serializers.FloatField(
        allow_null=True, help_text="passed / (total + left_out) in %: the left-out samples counted as failures."
    )


class EvaluatorSummarySerializer(serializers.Serializer):
    """The ManyIH evaluator's printout (`_print_analysis`): counts of samples, rates as fractions 0-1."""

    total = serializers.IntegerField(help_text='Samples ("Total samples").')
    test_passed = serializers.IntegerField()
    style_passed = serializers.IntegerField()
    overall_passed = serializers.IntegerField()
    no_code = serializers.IntegerField(help_text="Samples whose response had no code (code_extracted false).")
    errors = serializers.IntegerField(
        help_text="Samples with an evaluator error (API failure, code its checkers cannot read)."
    )
    test_failure_reasons = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="timeout, assertion_error, syntax_error, runtime_error, other -> samples.",
    )
    assertion_pass_rate = serializers.FloatField(
        allow_null=True, help_text="Mean per-sample assertion pass rate over the samples that logged one."
    )
    total_assertions = serializers.IntegerField()
    passed_assertions = serializers.IntegerField()
    style_satisfaction_rate = serializers.FloatField(
        allow_null=True, help_text="Mean per-sample share of style groups passed, over the style-checked samples."
    )


class HierarchyMetricsSerializer(serializers.Serializer):
    """The metrics page's tables in percent (intervals as [low, high]); with one ?run=, that run's own figures too."""

    benchmark = serializers.CharField()
    judge = serializers.CharField()
    by = serializers.CharField(help_text="model or run: what each row of `rows` is.")
    exclude = serializers.CharField(
        help_text="The audit exclusion policy the numbers were computed with (none = every constraint)."
    )
    excluded_items = serializers.IntegerField(
        help_text="Generated constraints of the benchmark the exclusion policy left out."
    )
    rows = serializers.ListField(
        child=serializers.DictField(),
        help_text="Acc, Acc_test, Acc_style with intervals per row, and rank_low, rank_high (the 95% interval of the "
        "row's rank by Acc over bootstrap resamples of samples, 1 = best) and tie_group (1 is the leader and every "
        "row whose paired difference in Acc from it is not significant at 5% after Holm's correction; the next group "
        "starts at the best row outside it), among the rows of the same query (/help/metrics/#paired).",
    )
    by_tiers = serializers.ListField(
        child=serializers.DictField(), help_text="The same per row and number of privilege tiers."
    )
    style_group_rows = serializers.ListField(
        child=serializers.DictField(), help_text="Pass rate per row and style group."
    )
    comparison = serializers.DictField(
        allow_null=True,
        help_text="The compared runs (?a=, ?b=); the samples that flip only for those who may open a sample.",
    )
    exclusion = serializers.DictField(
        allow_null=True,
        help_text="Under a policy: Kendall's tau, each row's rank before "
        "and after, and the swaps with the excluded items behind each.",
    )
    run = serializers.CharField(required=False)
    model = serializers.CharField(required=False)
    samples = serializers.IntegerField(required=False, help_text="Attempts the judge scored (one per sample).")
    acc = serializers.FloatField(allow_null=True, required=False)
    acc_test = serializers.FloatField(allow_null=True, required=False)
    acc_style = serializers.FloatField(allow_null=True, required=False)
    acc_ci = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        required=False,
        help_text="95% percentile bootstrap interval of Acc over samples (1,000 resamples, fixed seed).",
    )
    acc_test_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False)
    acc_style_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False)
    by_style_group = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        required=False,
        help_text="Style group -> % of samples with the group active whose active instructions of the group all pass, "
        "over the samples the evaluator style-checked (as its per-category rates: samples with no code or an "
        "evaluator error are left out; see style_groups for them).",
    )
    style_groups = serializers.DictField(
        child=StyleGroupSerializer(),
        required=False,
        help_text="Style group -> counts behind by_style_group, and the rate with the left-out samples counted as failures.",
    )
    evaluator = EvaluatorSummarySerializer(
        required=False,
        help_text="The figures the ManyIH evaluator prints for this run, computed from the stored samples.",
    )


@blind_safe
class HierarchyMetricsView(PageQueryView):
    """The hierarchy metrics page's tables for the same query; with one ?run=, that run's Acc, style groups and
    evaluator figures."""

    @extend_schema(
        operation_id="hierarchy_metrics_retrieve",
        parameters=[HierarchyMetricsQuerySerializer],
        responses={
            200: HierarchyMetricsSerializer,
            400: OpenApiResponse(
                description="Neither ?benchmark= nor ?run=, a label ambiguous without ?benchmark=, or a "
                "parameter the metrics page shows an error for (an unknown judge or "
                "exclusion policy...), as {parameter: [the page's words]}."
            ),
            404: OpenApiResponse(
                description="No hierarchy benchmark has this slug, no hierarchy run has this label, or "
                "no judge scored its runs."
            ),
        },
        description="Definitions: /help/metrics/#hierarchy; in percent; the same numbers as the hierarchy metrics page "
        "(/b/<slug>/hierarchy/) for the same query string, including ?exclude=.",
    )
    def get(self, request):
        labels = request.query_params.getlist("run")
        slug = request.query_params.get("benchmark")
        if slug:
            benchmark = benchmark_for(request, slug, kind=BenchmarkKind.HIERARCHY)
        elif labels:
            found = {
                r.benchmark_id: r.benchmark
                for r in Run.objects.filter(label__in=labels, benchmark__kind=BenchmarkKind.HIERARCHY).select_related(
                    "benchmark"
                )
            }
            if not found:
                return _error(
                    f"No hierarchy run is labelled {', '.join(repr(x) for x in labels)}.", status.HTTP_404_NOT_FOUND
                )
            if len(found) > 1:
                return _error("Several hierarchy benchmarks have a run with this label; pass ?benchmark=<slug>.")
            benchmark = benchmark_for(request, next(iter(found.values())).slug, kind=BenchmarkKind.HIERARCHY)
        else:
            return _error("Name a hierarchy benchmark (?benchmark=<slug>) or a run (?run=<label>).")
        state = selectors.hierarchy_state(benchmark=benchmark, query=request.query_params)
        if state["errors"]:
            missing = [x for x in labels if x not in {r.label for r in state["all_runs"]}]
            if missing and not slug:  # a label no hierarchy run has (another of them named the benchmark)
                return _error(
                    f"No hierarchy run is labelled {', '.join(repr(x) for x in missing)}.", status.HTTP_404_NOT_FOUND
                )
            return Response(state["errors"], status=status.HTTP_400_BAD_REQUEST)
        if state["judge"] is None:
            return _error("No judge has scored the runs of this benchmark.", status.HTTP_404_NOT_FOUND)
        data = selectors.hierarchy_metrics(state)
        body = {
            "benchmark": benchmark.slug,
            "judge": state["judge"].name,
            "by": state["by"],
            "exclude": state["exclude"],
            "excluded_items": len(state["excluded"] or ()),
            **_tables(request, data),
        }
        if len(labels) == 1:
            [run] = state["runs"]
            body.update(_run_figures(run, selectors.hierarchy_run(data["sample_rows"], label=run.label)))
        return Response(HierarchyMetricsSerializer(body).data)


def _tables(request, data: dict) -> dict:
    """The metrics page's tables as JSON (the numbers as computed; intervals as [low, high])."""
    comparison, exclusion = data["comparison"], data["exclusion"]
    return {
        "rows": [asdict(r) | data["ties"].get(r.label, paired.Tie()).fields() for r in data["rows"]],
        "by_tiers": [asdict(r) for r in data["tier_rows"]],
        "style_group_rows": [
            asdict(g) | {"rate": g.rate, "rate_errors_as_failures": g.rate_errors_as_failures}
            for g in data["group_rates"]
        ],
        "comparison": None if comparison is None else _comparison_json(request, comparison),
        "exclusion": None
        if exclusion is None
        else {
            "tau": exclusion["tau"],
            "ranks": [asdict(line) | {"rank_change": line.rank_change} for line in exclusion["lines"].values()],
            "swaps": [
                {
                    "up": s["up"],
                    "down": s["down"],
                    "items": [
                        {
                            "item_id": d["item_id"],
                            "sample": d["instance__external_id"],
                            "key": d["key"],
                            "group": d["group"],
                            "pass_rate_up": d["pass_rate_up"],
                            "pass_rate_down": d["pass_rate_down"],
                        }
                        for d in s["items"]
                    ],
                }
                for s in exclusion["swaps"]
            ],
        },
    }


def _comparison_json(request, comparison) -> dict:
    """The run comparison as JSON; the samples that flip (each one's pass/fail) only for those who may open a sample."""
    data = asdict(comparison)
    if not may_open(request, "runs:hierarchy-attempt"):
        data.pop("flips")
    return data


def _run_figures(run: Run, figures: dict) -> dict:
    """One run's own figures (runs.selectors.hierarchy.hierarchy_run) in the API's flat shape."""
    acc, groups = figures["accuracy"], figures["groups"]
    return {
        "run": run.label,
        "model": run.model.name,
        "samples": acc.n,
        "acc": acc.acc,
        "acc_test": acc.acc_test,
        "acc_style": acc.acc_style,
        "acc_ci": _pair(acc.acc_ci),
        "acc_test_ci": _pair(acc.acc_test_ci),
        "acc_style_ci": _pair(acc.acc_style_ci),
        "by_style_group": {g.group: g.rate for g in groups},
        "style_groups": {
            g.group: {
                "passed": g.passed,
                "total": g.n,
                "left_out": g.errors,
                "rate": g.rate,
                "rate_errors_as_failures": g.rate_errors_as_failures,
            }
            for g in groups
        },
        "evaluator": asdict(figures["evaluator"]),
    }


def _pair(interval) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def _error(message: str, code=status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": message}, status=code)
