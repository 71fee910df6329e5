"""GET /api/dialogue-metrics/?run=<label>&patience=<P>: EvolIF metrics of one model's runs (docs/metrics.md#dialogue).

The query is the dialogue metrics page's (runs.selectors.dialogue reads it for both), so the same query string gives
the page's row for the model, and a parameter the page shows an error for is answered 400 with the same words."""

from __future__ import annotations

import math

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from runs.access import benchmark_for, blind_safe
from runs.api.core import PageQueryView
from runs.metrics import dialogue as metrics
from runs.metrics import paired
from runs.models import BenchmarkKind, Run
from runs.selectors import dialogue as selectors
from runs.serializers import exclusion_effect_data, health_flags_field


class DialogueMetricsQuerySerializer(serializers.Serializer):
    """Which runs (repeat `run` to pool runs of one model), which patience and judge."""

    run = serializers.ListField(
        child=serializers.CharField(max_length=200),
        min_length=1,
        help_text="Run label; repeat to pool several runs of one model.",
    )
    patience = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="Re-simulate at this patience (at most the recorded one; default: the "
        "lowest patience the dialogues were recorded with).",
    )
    judge = serializers.CharField(
        required=False, help_text="Judge name (default: the logged verdicts, as on the page)."
    )
    benchmark = serializers.SlugField(
        required=False, help_text="Benchmark slug, when a label exists in two benchmarks."
    )
    exclude = serializers.CharField(
        required=False,
        default="none",
        help_text="Audit exclusion policy: none, flagged_by_either, flagged_by_both, "
        "adjudicated_invalid (the constraints of flagged user queries are left out).",
    )
    health = health_flags_field()


class ReferenceMetricsSerializer(serializers.Serializer):
    """What EvolIF's src/score.py prints for the same dialogues (rates x 100, as the portal's)."""

    dialogues = serializers.IntegerField(help_text="score.py's 'Total dialog number'.")
    turns = serializers.IntegerField()
    csr = serializers.FloatField(allow_null=True, help_text="'Constraint Satisfaction Rate (CSR)' x 100.")
    isr = serializers.FloatField(allow_null=True, help_text="'Instruction Satisfaction Rate (ISR)' x 100.")
    act_len = serializers.FloatField(allow_null=True, help_text="'Endurance', first figure.")
    act_acc = serializers.FloatField(allow_null=True, help_text="'Endurance', second figure.")
    act_succ = serializers.FloatField(allow_null=True, help_text="'Endurance', third figure.")
    lss = serializers.FloatField(allow_null=True, help_text="'Endurance_LSS'.")
    rob = serializers.FloatField(allow_null=True, help_text="'Robustness' x 100 (null where score.py prints nan).")
    rec = serializers.FloatField(allow_null=True, help_text="'Recovery' x 100 (null where score.py prints nan or inf).")
    survival = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="'Turn number survival ratio': dialogues that reached turn 1, 2, ...",
    )
    undefined = serializers.DictField(
        child=serializers.CharField(), help_text="Metric -> 'nan', 'inf' or '-inf' where score.py prints that."
    )
    differs = serializers.ListField(
        child=serializers.CharField(),
        help_text="Metrics where score.py's value is not the portal's (see docs/formats.md).",
    )


def _reference_data(reference: metrics.ReferenceMetrics, counted: metrics.DialogueMetrics) -> dict:
    data = {name: getattr(reference, name) for name in ("dialogues", "turns", *metrics.REFERENCE_FIELDS)}
    undefined = {k: str(v) for k, v in data.items() if isinstance(v, float) and not math.isfinite(v)}
    data.update(dict.fromkeys(undefined))
    return {
        **data,
        "survival": list(reference.survival),
        "undefined": undefined,
        "differs": list(reference.differs_from(counted)),
    }


class SurvivalBandSerializer(serializers.Serializer):
    """The Kaplan-Meier S(t) at one turn with its 95% band (docs/metrics.md#dialogue-survival-km)."""

    turn = serializers.IntegerField()
    at_risk = serializers.IntegerField(help_text="Dialogues lasting at least `turn` turns.")
    percent = serializers.FloatField(
        help_text="Kaplan-Meier S(t) in percent: a dialogue the script or the log ended is censored, not failed "
        "(equals `survival` when no dialogue is censored)."
    )
    se = serializers.FloatField(help_text="Greenwood standard error of S(t), in percentage points.")
    lower = serializers.FloatField(help_text="95% pointwise lower bound (log(-log) transform), in percent.")
    upper = serializers.FloatField(help_text="95% pointwise upper bound (log(-log) transform), in percent.")


class DialogueMetricsSerializer(serializers.Serializer):
    """Rates in percent; ACT_len, ACT_acc, ACT_succ and LSS in turns; survival as percent alive per turn, and
    survival_band as its Kaplan-Meier estimate with a 95% band."""

    run = serializers.ListField(child=serializers.CharField())
    model = serializers.CharField()
    benchmark = serializers.CharField()
    judge = serializers.CharField()
    patience = serializers.IntegerField(allow_null=True)
    recorded_patience = serializers.IntegerField(allow_null=True)
    exclude = serializers.CharField(help_text="The audit exclusion policy applied (none: every item).")
    excluded_items = serializers.IntegerField(help_text="Constraints the policy leaves out of this benchmark.")
    excluded_turns = serializers.IntegerField(
        help_text="Turns of these dialogues left with no constraint (not counted)."
    )
    dialogues = serializers.IntegerField()
    csr = serializers.FloatField(allow_null=True)
    isr = serializers.FloatField(allow_null=True)
    act_len = serializers.FloatField(allow_null=True)
    act_acc = serializers.FloatField(allow_null=True)
    act_succ = serializers.FloatField(allow_null=True)
    lss = serializers.FloatField(allow_null=True)
    rob = serializers.FloatField(allow_null=True)
    rec = serializers.FloatField(allow_null=True)
    rec_dialogues = serializers.IntegerField(
        help_text="D': dialogues with at least one lapse, over which REC is averaged."
    )
    survival = serializers.ListField(child=serializers.FloatField())
    survival_band = SurvivalBandSerializer(
        many=True, help_text="Kaplan-Meier S(t) with its 95% band at each turn of `survival`."
    )
    constraints = serializers.DictField(child=serializers.FloatField(allow_null=True))
    ended_by = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Dialogues per ending: patience, script_end, stopped (the harness stopped "
        "early, e.g. a failed model call; eval.py resumes it when run again).",
    )
    reference = ReferenceMetricsSerializer(help_text="EvolIF src/score.py's figures for the same dialogues.")
    ranked_by = serializers.CharField(
        help_text="The metric rank_low, rank_high and tie_group rank by: the one ?sort= names, else csr (as the "
        "metrics page)."
    )
    rank_low = serializers.IntegerField(
        allow_null=True,
        help_text="Lower end of the 95% interval of the model's rank (1 = best) by `ranked_by` over bootstrap "
        "resamples of dialogue scripts, among every model of the benchmark under the same judge, patience and "
        "exclusion policy, as the metrics page with no run selected shows it (its rows pool each model's runs, "
        "not only those asked for here; /help/metrics/#paired). null for a model without that figure, or when the "
        "other models' dialogues cannot be re-simulated at this patience.",
    )
    rank_high = serializers.IntegerField(allow_null=True, help_text="Upper end of that interval (null as rank_low).")
    tie_group = serializers.IntegerField(
        allow_null=True,
        help_text="Tie group on `ranked_by` among those models: 1 is the leader and every model whose paired "
        "difference from it is not significant at 5% after Holm's correction; the next group starts at the best "
        "model outside it (/help/metrics/#paired). null as rank_low.",
    )
    exclusion = serializers.DictField(
        allow_null=True,
        help_text="Under an exclusion policy (exclude= or health=): what it did to the ranking of every model by "
        "`ranked_by`, as the metrics page with no run selected shows it: Kendall's tau, each model's score and rank "
        "before and after, and the pairs that swapped (/help/metrics/#audits-effect). null without a policy.",
    )


def _error(message: str, code=status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": message}, status=code)


@blind_safe
class DialogueMetricsView(PageQueryView):
    """The eight EvolIF metrics, the survival curve and per-constraint pass rates of one model's runs."""

    @extend_schema(
        operation_id="dialogue_metrics_retrieve",
        parameters=[DialogueMetricsQuerySerializer],
        responses={
            200: DialogueMetricsSerializer,
            400: OpenApiResponse(
                description="Runs of different models or benchmarks, or a parameter the metrics page "
                "shows an error for (a patience the logs cannot answer for, an unknown "
                "judge or exclusion policy), as {parameter: [the page's words]}."
            ),
            404: OpenApiResponse(description="No dialogue run has one of these labels, or no judge scored them."),
        },
        description="Definitions: /help/metrics/#dialogue. A patience above the one the logs were recorded with is refused: "
        "those turns were never played. Under an exclusion policy each turn succeeds when its remaining "
        "constraints are satisfied; a turn with none left is not counted.",
    )
    def get(self, request):
        labels = request.query_params.getlist("run")
        if not labels:
            return Response(
                {"run": ["Name one model's runs: ?run=<label>, repeated to pool several."]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        slug = request.query_params.get("benchmark")
        runs = Run.objects.filter(label__in=labels, benchmark__kind=BenchmarkKind.DIALOGUE).select_related(
            "benchmark", "model"
        )
        if slug:
            runs = runs.filter(benchmark=benchmark_for(request, slug, kind=BenchmarkKind.DIALOGUE))
        runs = list(runs)
        missing = sorted(set(labels) - {r.label for r in runs})
        if missing:
            return _error(
                f"No dialogue run is labelled {', '.join(repr(x) for x in missing)}.", status.HTTP_404_NOT_FOUND
            )
        if len({r.benchmark_id for r in runs}) > 1:
            return _error("These labels exist in more than one dialogue benchmark: add ?benchmark=<slug>.")
        if len({r.model_id for r in runs}) > 1:
            return _error("Runs of different models cannot be pooled: ask for one model's runs at a time.")
        benchmark = benchmark_for(request, runs[0].benchmark.slug, kind=BenchmarkKind.DIALOGUE)
        state = selectors.dialogue_state(benchmark=benchmark, query=request.query_params, exclusion=True)
        if state["errors"]:
            return Response(state["errors"], status=status.HTTP_400_BAD_REQUEST)
        if state["judge"] is None:
            return _error("These runs have no evaluated turns yet.", status.HTTP_404_NOT_FOUND)
        pooled = selectors.dialogue_pooled(state)
        row, counted = pooled["row"], pooled["row"].metrics if pooled["row"] else metrics.dialogue_metrics([])
        return Response(
            DialogueMetricsSerializer(
                {
                    "run": [r.label for r in state["runs"]],
                    "model": runs[0].model.name,
                    "benchmark": benchmark.slug,
                    "judge": state["judge"].name,
                    "patience": state["patience"],
                    "recorded_patience": state["recorded"],
                    "exclude": state["exclude"],
                    "excluded_items": len(state["excluded"] or ()),
                    "excluded_turns": pooled["excluded_turns"],
                    "dialogues": counted.dialogues,
                    "csr": counted.csr,
                    "isr": counted.isr,
                    "act_len": counted.act_len,
                    "act_acc": counted.act_acc,
                    "act_succ": counted.act_succ,
                    "lss": counted.lss,
                    "rob": counted.rob,
                    "rec": counted.rec,
                    "rec_dialogues": counted.rec_dialogues,
                    "survival": [p.percent for p in row.survival] if row else [],
                    "survival_band": pooled["band"],
                    "constraints": {g.group: g.percent for g in pooled["groups"]},
                    "ended_by": pooled["ended_by"],
                    "reference": _reference_data(row.reference if row else metrics.reference_metrics([]), counted),
                    "ranked_by": selectors.rank_metric(state["sort"])[0],
                    **_among_every_model(request, benchmark, state, runs[0].model.name),
                }
            ).data
        )


def _among_every_model(request, benchmark, state: dict, model: str) -> dict:
    """rank_low, rank_high and tie_group of the model among every model of the benchmark (the metrics page's rows
    with no run selected) under the state's judge, patience, exclusion policy and rank metric, and what the policy
    did to that ranking (`exclusion`)."""
    query = request.query_params.copy()
    query.pop("run", None)
    query["by"] = "model"
    query["judge"] = state["judge"].name
    if state["patience"] is not None:
        query["patience"] = str(state["patience"])
    every = selectors.dialogue_state(benchmark=benchmark, query=query, exclusion=True)
    if every["refused"] or every["judge"] is None:
        return {**paired.Tie().fields(), "exclusion": None}
    page = selectors.dialogue_metrics(every)
    return {**page["ties"].get(model, paired.Tie()).fields(), "exclusion": exclusion_effect_data(page["exclusion"])}
