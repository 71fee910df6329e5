"""GET /api/compare/<slug>/: two runs' (or models') paired comparison on a benchmark of any kind, manage.py compare
--json's document (runs.selectors.compare.paired_comparison_document)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import benchmark_for
from runs.exclusions import excluded_item_ids
from runs.selectors import compare as selectors

SIDE_HELP = (
    "A run label, or model:<name> for every run of a model (a bare model name that is no run label is the model)."
)


class CompareQuerySerializer(serializers.Serializer):
    """Query parameters of GET /api/compare/<slug>/ (manage.py compare's options)."""

    baseline = serializers.CharField(help_text="Side A. " + SIDE_HELP)
    candidate = serializers.CharField(help_text="Side B. " + SIDE_HELP)
    metric = serializers.ListField(
        child=serializers.ChoiceField(choices=list(selectors.ALL_METRICS)),
        required=False,
        help_text="A figure of the benchmark's kind to compare; repeat (or separate by commas) for several (default: "
        "all). Checklist: isr, csr, macro_csr; dialogue: completed, isr, csr, rob, rec, act_len, act_acc, act_succ, "
        "lss; hierarchy: acc, acc_test, acc_style; choice: accuracy; conflict: sp_rate, neither.",
    )
    judge = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Judge name; repeat (or separate by commas) for several (default: every judge).",
    )
    exclude = serializers.CharField(
        required=False,
        default="none",
        help_text="Audit exclusion policy: none, flagged_by_either, flagged_by_both or adjudicated_invalid.",
    )


class PairedRowSerializer(serializers.Serializer):
    """B - A on one metric, under one judge (or pooled), on one category (or all), on the shared instances."""

    metric = serializers.ChoiceField(choices=list(selectors.ALL_METRICS))
    judge = serializers.CharField(allow_null=True, help_text="null: pooled (the mean across judges).")
    category = serializers.CharField(
        allow_null=True,
        help_text="Instances' category (checklist and dialogue: primary category; hierarchy: privilege tiers; choice: "
        "task category; conflict: conflict type); null: all.",
    )
    a = serializers.FloatField(
        allow_null=True,
        help_text="The baseline's figure on the shared instances, percent (dialogue ACT and LSS: turns).",
    )
    b = serializers.FloatField(allow_null=True, help_text="The candidate's figure on the shared instances, percent.")
    diff = serializers.FloatField(allow_null=True, help_text="b - a in points.")
    low = serializers.FloatField(allow_null=True, help_text="95% paired bootstrap interval of diff, lower end.")
    high = serializers.FloatField(allow_null=True, help_text="Upper end.")
    n_instances = serializers.IntegerField(help_text="Instances both sides cover (the unit resampled).")
    test = serializers.CharField(help_text="McNemar exact (pass/fail under one judge) or paired permutation.")
    p = serializers.FloatField(allow_null=True, help_text="Two-sided p of the test.")
    b_count = serializers.IntegerField(allow_null=True, help_text="McNemar: instances A passed and B failed.")
    c_count = serializers.IntegerField(allow_null=True, help_text="McNemar: instances A failed and B passed.")
    regression = serializers.BooleanField(help_text="p < alpha and high < 0: B significantly worse.")


class FlippedItemSerializer(serializers.Serializer):
    """A checklist item, or an instance of another kind, that passed on one side and failed on the other."""

    instance = serializers.CharField(help_text="The instance's external id.")
    instance_url = serializers.CharField(help_text="The instance's page (other kinds: side A's attempt at it).")
    item = serializers.CharField(allow_null=True, required=False, help_text="Checklist: the item's key.")
    a_url = serializers.CharField(required=False, help_text="Other kinds: side A's attempt at the instance.")
    b_url = serializers.CharField(required=False, help_text="Other kinds: side B's attempt at the instance.")
    category = serializers.CharField(allow_null=True)
    judges = serializers.ListField(child=serializers.CharField(), help_text="Judges under which it flipped.")


class LogRankSerializer(serializers.Serializer):
    """Dialogue: the log-rank test of the two sides' survival on the dialogue scripts both played, under one judge."""

    judge = serializers.CharField()
    test = serializers.CharField()
    n_instances = serializers.IntegerField(help_text="Dialogue scripts both sides played.")
    n_a = serializers.IntegerField(help_text="A's dialogues on them.")
    events_a = serializers.IntegerField(help_text="A's dialogues ended by patience (the others are censored).")
    n_b = serializers.IntegerField()
    events_b = serializers.IntegerField()
    chi2 = serializers.FloatField(allow_null=True, help_text="Chi-square, 1 df; null when no dialogue failed.")
    p = serializers.FloatField(allow_null=True)


class CompareSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    kind = serializers.CharField(required=False, help_text="The benchmark's kind (absent for checklist).")
    baseline = serializers.CharField(help_text="Side A as resolved (run label or model:<name>).")
    candidate = serializers.CharField(help_text="Side B as resolved.")
    metrics = serializers.ListField(child=serializers.CharField())
    judges = serializers.ListField(child=serializers.CharField(), help_text="Judges of either side.")
    categories = serializers.ListField(child=serializers.CharField())
    excluded_items = serializers.IntegerField(help_text="Checklist items the exclusion policy left out.")
    resampled = serializers.CharField(help_text="What every interval and test resamples.")
    alpha = serializers.FloatField(help_text="The significance level of `regression`.")
    rows = PairedRowSerializer(many=True)
    regressions = serializers.ListField(
        child=serializers.CharField(), help_text="Metrics whose pooled figure is significantly worse in B."
    )
    flip_metric = serializers.CharField(
        required=False, help_text="Other kinds: the pass/fail figure whose flipped instances are listed."
    )
    n_fixed = serializers.IntegerField(
        help_text="Checklist: items failed in A and passed in B, per instance and item; other kinds: instances."
    )
    n_broken = serializers.IntegerField(help_text="Items passed in A and failed in B.")
    fixed = FlippedItemSerializer(many=True, help_text="The first 200 fixed items.")
    broken = FlippedItemSerializer(many=True, help_text="The first 200 broken items.")
    survival = LogRankSerializer(many=True, required=False, help_text="Dialogue: the log-rank test per judge.")


class CompareView(APIView):
    """Paired comparison of two runs (or models) of a benchmark of any kind: manage.py compare --json's document."""

    @extend_schema(
        operation_id="compare_retrieve",
        parameters=[CompareQuerySerializer],
        responses={
            200: CompareSerializer,
            400: OpenApiResponse(
                description="A parameter is malformed, or names a side, judge or exclusion policy the benchmark does "
                "not have, as {parameter: [words naming it]}."
            ),
            404: OpenApiResponse(description="No benchmark has this slug."),
        },
        description="Per headline figure of the benchmark's kind, pooled across judges, per judge and per category: "
        "B - A on the instances both sides cover, its 95% paired bootstrap interval, the test and its p "
        "(/help/metrics/#paired); the items (checklist) or instances fixed and broken in B; for dialogues, the "
        "log-rank test of the two survival curves.",
    )
    def get(self, request, slug):
        benchmark = benchmark_for(request, slug)
        query = CompareQuerySerializer(data=_comma_lists(request.query_params, ("metric", "judge")))
        if not query.is_valid():
            return Response(query.errors, status=status.HTTP_400_BAD_REQUEST)
        chosen, errors = query.validated_data, {}
        sides = {}
        for role in ("baseline", "candidate"):
            try:
                sides[role] = selectors.side_of(benchmark.id, chosen[role])
            except selectors.UnknownSide as unknown:
                errors[role] = [str(unknown)]
        unknown_metrics = selectors.metric_unknown(benchmark, chosen.get("metric", []))
        if unknown_metrics:
            errors["metric"] = [
                f"{', '.join(map(repr, unknown_metrics))} is no figure of a {benchmark.kind} benchmark (its figures: "
                f"{', '.join(selectors.metrics_of(benchmark))})"
            ]
        unknown_judges = selectors.judge_unknown(benchmark, chosen.get("judge", []))
        if unknown_judges:
            errors["judge"] = [f"no judge named {', '.join(map(repr, unknown_judges))} scored this benchmark"]
        try:
            excluded = excluded_item_ids(benchmark, chosen["exclude"])
        except ValueError as unknown:
            errors["exclude"] = [str(unknown)]
        if errors:
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        document = selectors.paired_comparison_document(
            benchmark,
            sides["baseline"],
            sides["candidate"],
            metrics=chosen.get("metric", []),
            judges=chosen.get("judge", []),
            excluded_items=excluded,
        )
        return Response(CompareSerializer(document).data)


def _comma_lists(params, names: tuple[str, ...]):
    """The parameters with each of `names` split at commas (repeated and comma-separated values both count)."""
    query = params.copy()
    for name in names:
        values = [v.strip() for v in ",".join(query.getlist(name)).split(",") if v.strip()]
        if values:
            query.setlist(name, values)
        else:
            query.pop(name, None)
    return query
