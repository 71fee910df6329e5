"""Hierarchy (ManyIH) API: privilege resolutions per sample and one run's Acc metrics (METRICS.md section 4).

GET /api/hierarchy/resolutions/?benchmark=<slug>&interface=<ordinal|scalar>
GET /api/hierarchy-metrics/?run=<label>[&judge=<name>][&exclude=<policy>]
"""
from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import blind_safe
from runs.exclusions import excluded_item_ids, exclusion_policies
from runs.hierarchy import resolve_privileges
from runs.metrics import hierarchy as m
from runs.models import Benchmark, BenchmarkKind, ChecklistItem, Instance, Judge, Run
from runs.recheck import logged_judge_for

INTERFACES = ("ordinal", "scalar")


# resolutions --------------------------------------------------------------------------
class ResolutionsQuerySerializer(serializers.Serializer):
    """Which hierarchy benchmark, and in which interface its privileges are read and shown."""

    benchmark = serializers.SlugField(help_text="Slug of a hierarchy benchmark, e.g. manyih-coding.")
    interface = serializers.ChoiceField(
        choices=INTERFACES, default="scalar",
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

    instructions = [{
        "id": item["key"], "privilege": value(item), "position": item["position"],
        "conflicts_with": [str(c) for c in item["details"].get("conflicts_with") or []],
    } for item in items]
    resolution = resolve_privileges(instructions, interface=interface)
    return {"active": resolution.active, "suppressed": resolution.suppressed,
            "privileges": {i["id"]: i["privilege"] for i in sorted(instructions, key=lambda i: i["position"])}}


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
        description="Computed on request by the resolution engine (runs.hierarchy.resolve_privileges) from the stored "
        "instructions: visit from highest to lowest privilege (ties: later in the prompt first); an instruction is "
        "active unless one it conflicts with is already active. `interface` selects how privileges are read and "
        "shown (scalar z values or ordinal ranks); the two encode the same order and give the same resolution. "
        "Paginated with limit/offset (default 100 samples).",
    )
    def get(self, request):
        query = ResolutionsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        benchmark = Benchmark.objects.filter(slug=params["benchmark"], kind=BenchmarkKind.HIERARCHY).first()
        if benchmark is None:
            return Response({"detail": f"No hierarchy benchmark has the slug '{params['benchmark']}'."},
                            status=status.HTTP_404_NOT_FOUND)
        samples = sorted(Instance.objects.filter(benchmark=benchmark).values_list("id", "external_id").order_by(),
                         key=lambda s: (m.natural_key(s[1]), s[0]))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(samples, request, view=self)
        items: dict[int, list[dict]] = {pk: [] for pk, _ in page}
        for item in ChecklistItem.objects.filter(instance_id__in=list(items)).values(
                "instance_id", "key", "position", "privilege", "details").order_by("instance_id", "position"):
            items[item["instance_id"]].append(item)
        results = [{"sample": external_id, **sample_resolution(items[pk], interface=params["interface"])}
                   for pk, external_id in page]
        response = paginator.get_paginated_response(results)
        response.data = ResolutionListSerializer({**response.data, "benchmark": benchmark.slug,
                                                  "interface": params["interface"]}).data
        return response


# metrics ------------------------------------------------------------------------------
class HierarchyMetricsQuerySerializer(serializers.Serializer):
    """Which run, and which judge's verdicts."""

    run = serializers.CharField(max_length=200, help_text="Run label.")
    judge = serializers.CharField(required=False, max_length=200,
                                  help_text="Judge name (default: the judge whose verdicts the harness logged).")
    benchmark = serializers.SlugField(required=False, help_text="Benchmark slug, when two hierarchy benchmarks have this label.")
    exclude = serializers.CharField(required=False, default="none", allow_blank=True, max_length=100, help_text="Audit exclusion policy: "
                                    "none, flagged_by_either, flagged_by_both, adjudicated_invalid or superseded (the "
                                    "generated constraints it flags are left out and Acc is recomputed from the verdicts).")

    def validate_exclude(self, value: str) -> str:
        """An unknown policy is refused before any run is looked up (400, as /api/leaderboards/ does)."""
        value = value or "none"
        if value != "none" and value not in exclusion_policies():
            raise serializers.ValidationError(
                f"unknown exclusion policy {value!r}; one of: none, {', '.join(exclusion_policies())}")
        return value


class StyleGroupSerializer(serializers.Serializer):
    """One style group's counts: passed and total over the style-checked samples, and the samples left out."""

    passed = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Samples with the group active that the evaluator style-checked.")
    left_out = serializers.IntegerField(help_text="Samples with the group active left out: no code, or an evaluator error.")
    rate = serializers.FloatField(allow_null=True, help_text="passed / total in %: the evaluator's per-category rate.")
    rate_errors_as_failures = serializers.FloatField(
        allow_null=True, help_text="passed / (total + left_out) in %: the left-out samples counted as failures.")


class EvaluatorSummarySerializer(serializers.Serializer):
    """The ManyIH evaluator's printout (`_print_analysis`): counts of samples, rates as fractions 0-1."""

    total = serializers.IntegerField(help_text="Samples (\"Total samples\").")
    test_passed = serializers.IntegerField()
    style_passed = serializers.IntegerField()
    overall_passed = serializers.IntegerField()
    no_code = serializers.IntegerField(help_text="Samples whose response had no code (code_extracted false).")
    errors = serializers.IntegerField(help_text="Samples with an evaluator error (API failure, code its checkers cannot read).")
    test_failure_reasons = serializers.DictField(
        child=serializers.IntegerField(), help_text="timeout, assertion_error, syntax_error, runtime_error, other -> samples.")
    assertion_pass_rate = serializers.FloatField(
        allow_null=True, help_text="Mean per-sample assertion pass rate over the samples that logged one.")
    total_assertions = serializers.IntegerField()
    passed_assertions = serializers.IntegerField()
    style_satisfaction_rate = serializers.FloatField(
        allow_null=True, help_text="Mean per-sample share of style groups passed, over the style-checked samples.")


class HierarchyMetricsSerializer(serializers.Serializer):
    """Acc, Acc_test, Acc_style and per style group pass rates of one run, in percent."""

    run = serializers.CharField()
    model = serializers.CharField()
    benchmark = serializers.CharField()
    judge = serializers.CharField()
    exclude = serializers.CharField(help_text="The audit exclusion policy the numbers were computed with (none = every constraint).")
    excluded_items = serializers.IntegerField(help_text="Generated constraints of the benchmark the exclusion policy left out.")
    samples = serializers.IntegerField(help_text="Attempts the judge scored (one per sample).")
    acc = serializers.FloatField(allow_null=True)
    acc_test = serializers.FloatField(allow_null=True)
    acc_style = serializers.FloatField(allow_null=True)
    acc_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True,
                                   help_text="95% percentile bootstrap interval of Acc over samples (1,000 resamples, fixed seed).")
    acc_test_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    acc_style_ci = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    by_style_group = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="Style group -> % of samples with the group active whose active instructions of the group all pass, "
        "over the samples the evaluator style-checked (as its per-category rates: samples with no code or an "
        "evaluator error are left out; see style_groups for them).")
    style_groups = serializers.DictField(
        child=StyleGroupSerializer(),
        help_text="Style group -> counts behind by_style_group, and the rate with the left-out samples counted as failures.")
    evaluator = EvaluatorSummarySerializer(
        help_text="The figures the ManyIH evaluator prints for this run, computed from the stored samples.")


@blind_safe
class HierarchyMetricsView(APIView):
    """Acc (tests and every active instruction), Acc_test, Acc_style with intervals, per style group, of one run."""

    @extend_schema(
        operation_id="hierarchy_metrics_retrieve",
        parameters=[HierarchyMetricsQuerySerializer],
        responses={
            200: HierarchyMetricsSerializer,
            400: OpenApiResponse(description="The label is ambiguous without ?benchmark=, or ?exclude= names no exclusion policy."),
            404: OpenApiResponse(description="No hierarchy run has this label, no such judge, or no judge scored it."),
        },
        description="Definitions: /help/metrics/#hierarchy; in percent; the same numbers as the hierarchy metrics page with rows per run "
        "(and the same ?exclude= audit exclusion policy).",
    )
    def get(self, request):
        query = HierarchyMetricsQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        runs = Run.objects.filter(label=params["run"], benchmark__kind=BenchmarkKind.HIERARCHY).select_related("benchmark", "model")
        if params.get("benchmark"):
            runs = runs.filter(benchmark__slug=params["benchmark"])
        found = list(runs[:2])
        if not found:
            return _error(f"No hierarchy run is labelled '{params['run']}'.", status.HTTP_404_NOT_FOUND)
        if len(found) > 1:
            return _error("Several hierarchy benchmarks have a run with this label; pass ?benchmark=<slug>.")
        run = found[0]
        judge = Judge.objects.filter(name=params["judge"]).first() if params.get("judge") else logged_judge_for(run)
        if judge is None:
            detail = f"No judge is named '{params['judge']}'." if params.get("judge") else "No logged verdicts for this run."
            return _error(detail, status.HTTP_404_NOT_FOUND)
        excluded = excluded_item_ids(run.benchmark, params["exclude"])
        rows = m.sample_rows_select(benchmark=run.benchmark, judge=judge, run_ids=[run.id], excluded_items=excluded)
        acc = m.accuracy(rows, label=run.label)
        groups = m.style_group_rates(rows, by="run")
        return Response(HierarchyMetricsSerializer({
            "run": run.label, "model": run.model.name, "benchmark": run.benchmark.slug, "judge": judge.name,
            "exclude": params["exclude"], "excluded_items": len(excluded or ()),
            "samples": acc.n, "acc": acc.acc, "acc_test": acc.acc_test, "acc_style": acc.acc_style,
            "acc_ci": _pair(acc.acc_ci), "acc_test_ci": _pair(acc.acc_test_ci), "acc_style_ci": _pair(acc.acc_style_ci),
            "by_style_group": {g.group: g.rate for g in groups},
            "style_groups": {g.group: {"passed": g.passed, "total": g.n, "left_out": g.errors, "rate": g.rate,
                                       "rate_errors_as_failures": g.rate_errors_as_failures} for g in groups},
            "evaluator": asdict(m.evaluator_summary(rows, label=run.label)),
        }).data)


def _pair(interval) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def _error(message: str, code=status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": message}, status=code)
