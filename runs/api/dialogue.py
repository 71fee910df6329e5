"""GET /api/dialogue-metrics/?run=<label>&patience=<P>: EvolIF metrics of one model's runs (METRICS.md section 3)."""
from __future__ import annotations

import math

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import blind_safe
from runs.exclusions import excluded_item_ids
from runs.metrics import dialogue as m
from runs.models import BenchmarkKind, Judge, Run


class DialogueMetricsQuerySerializer(serializers.Serializer):
    """Which runs (repeat `run` to pool runs of one model), which patience and judge."""

    run = serializers.ListField(child=serializers.CharField(max_length=200), min_length=1,
                                help_text="Run label; repeat to pool several runs of one model.")
    patience = serializers.IntegerField(required=False, min_value=1,
                                        help_text="Re-simulate at this patience (at most the recorded one).")
    judge = serializers.CharField(required=False, help_text="Judge name (default: the logged verdicts).")
    benchmark = serializers.SlugField(required=False, help_text="Benchmark slug, when a label exists in two benchmarks.")
    exclude = serializers.CharField(required=False, default="none",
                                    help_text="Audit exclusion policy: none, flagged_by_either, flagged_by_both, "
                                              "adjudicated_invalid (the constraints of flagged user queries are left out).")


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
    survival = serializers.ListField(child=serializers.IntegerField(),
                                     help_text="'Turn number survival ratio': dialogues that reached turn 1, 2, ...")
    undefined = serializers.DictField(child=serializers.CharField(),
                                      help_text="Metric -> 'nan', 'inf' or '-inf' where score.py prints that.")
    differs = serializers.ListField(child=serializers.CharField(),
                                    help_text="Metrics where score.py's value is not the portal's (see docs/formats.md).")


def _reference_data(reference: m.ReferenceMetrics, metrics: m.DialogueMetrics) -> dict:
    data = {name: getattr(reference, name) for name in ("dialogues", "turns", *m.REFERENCE_FIELDS)}
    undefined = {k: str(v) for k, v in data.items() if isinstance(v, float) and not math.isfinite(v)}
    data.update({k: None for k in undefined})
    return {**data, "survival": list(reference.survival), "undefined": undefined,
            "differs": list(reference.differs_from(metrics))}


class DialogueMetricsSerializer(serializers.Serializer):
    """Rates in percent; ACT_len, ACT_acc, ACT_succ and LSS in turns; survival as percent alive per turn."""

    run = serializers.ListField(child=serializers.CharField())
    model = serializers.CharField()
    benchmark = serializers.CharField()
    judge = serializers.CharField()
    patience = serializers.IntegerField(allow_null=True)
    recorded_patience = serializers.IntegerField(allow_null=True)
    exclude = serializers.CharField(help_text="The audit exclusion policy applied (none: every item).")
    excluded_items = serializers.IntegerField(help_text="Constraints the policy leaves out of this benchmark.")
    excluded_turns = serializers.IntegerField(help_text="Turns of these dialogues left with no constraint (not counted).")
    dialogues = serializers.IntegerField()
    csr = serializers.FloatField(allow_null=True)
    isr = serializers.FloatField(allow_null=True)
    act_len = serializers.FloatField(allow_null=True)
    act_acc = serializers.FloatField(allow_null=True)
    act_succ = serializers.FloatField(allow_null=True)
    lss = serializers.FloatField(allow_null=True)
    rob = serializers.FloatField(allow_null=True)
    rec = serializers.FloatField(allow_null=True)
    rec_dialogues = serializers.IntegerField(help_text="D': dialogues with at least one lapse, over which REC is averaged.")
    survival = serializers.ListField(child=serializers.FloatField())
    constraints = serializers.DictField(child=serializers.FloatField(allow_null=True))
    ended_by = serializers.DictField(child=serializers.IntegerField(),
                                     help_text="Dialogues per ending: patience, script_end, stopped (the harness stopped "
                                               "early, e.g. a failed model call; eval.py resumes it when run again).")
    reference = ReferenceMetricsSerializer(help_text="EvolIF src/score.py's figures for the same dialogues.")


def _error(message: str, code=status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": message}, status=code)


@blind_safe
class DialogueMetricsView(APIView):
    """The eight EvolIF metrics, the survival curve and per-constraint pass rates of one model's runs."""

    @extend_schema(
        operation_id="dialogue_metrics_retrieve",
        parameters=[DialogueMetricsQuerySerializer],
        responses={
            200: DialogueMetricsSerializer,
            400: OpenApiResponse(description="Runs of different models or benchmarks, a patience the logs cannot answer "
                                             "for, or an unknown exclusion policy."),
            404: OpenApiResponse(description="No dialogue run has one of these labels, or no such judge."),
        },
        description="Definitions: /help/metrics/#dialogue. A patience above the one the logs were recorded with is refused: "
        "those turns were never played. Under an exclusion policy each turn succeeds when its remaining "
        "constraints are satisfied; a turn with none left is not counted.",
    )
    def get(self, request):
        query = DialogueMetricsQuerySerializer(data={**request.query_params.dict(), "run": request.query_params.getlist("run")})
        query.is_valid(raise_exception=True)
        params = query.validated_data
        runs = Run.objects.filter(label__in=params["run"], benchmark__kind=BenchmarkKind.DIALOGUE).select_related("benchmark", "model")
        if params.get("benchmark"):
            runs = runs.filter(benchmark__slug=params["benchmark"])
        runs = list(runs)
        missing = sorted(set(params["run"]) - {r.label for r in runs})
        if missing:
            return _error(f"No dialogue run is labelled {', '.join(repr(x) for x in missing)}.", status.HTTP_404_NOT_FOUND)
        if len({r.benchmark_id for r in runs}) > 1 or len(runs) > len(set(params["run"])):
            return _error("These labels exist in more than one dialogue benchmark: add ?benchmark=<slug>.")
        if len({r.model_id for r in runs}) > 1:
            return _error("Runs of different models cannot be pooled: ask for one model's runs at a time.")
        benchmark = runs[0].benchmark
        if params.get("judge"):
            judge = Judge.objects.filter(name=params["judge"]).first()
            if judge is None:
                return _error(f"No judge is named {params['judge']!r}.", status.HTTP_404_NOT_FOUND)
        else:
            judges = m.dialogue_judges(benchmark)
            if not judges:
                return _error("These runs have no evaluated turns yet.", status.HTTP_404_NOT_FOUND)
            judge = judges[0]
        try:
            excluded = excluded_item_ids(benchmark, params["exclude"])
        except ValueError as exc:
            return Response({"exclude": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        full = m.dialogues_select(benchmark=benchmark, judge=judge, run_ids=[r.id for r in runs], excluded_items=excluded)
        excluded_turns = 0
        if excluded:
            every = m.dialogues_select(benchmark=benchmark, judge=judge, run_ids=[r.id for r in runs])
            excluded_turns = sum(d.length for d in every) - sum(d.length for d in full)
        recorded = min((d.patience for d in full if d.patience), default=None)
        try:
            dialogues = m.resimulate(full, params.get("patience"))
        except m.PatienceRefused as exc:
            return _error(str(exc))
        metrics = m.dialogue_metrics(dialogues)
        per_attempt = m.group_rows_select(judge=judge, dialogues=dialogues, full=full, excluded_items=excluded)
        groups = m.group_pass_rates(row for rows in per_attempt.values() for row in rows)
        return Response(DialogueMetricsSerializer({
            "run": [r.label for r in runs], "model": runs[0].model.name, "benchmark": benchmark.slug, "judge": judge.name,
            "patience": params.get("patience") or recorded, "recorded_patience": recorded,
            "exclude": params["exclude"] if excluded is not None else "none", "excluded_items": len(excluded or ()),
            "excluded_turns": excluded_turns,
            "dialogues": metrics.dialogues, "csr": metrics.csr, "isr": metrics.isr, "act_len": metrics.act_len,
            "act_acc": metrics.act_acc, "act_succ": metrics.act_succ, "lss": metrics.lss, "rob": metrics.rob,
            "rec": metrics.rec, "rec_dialogues": metrics.rec_dialogues,
            "survival": [p.percent for p in m.survival_curve(d.length for d in dialogues)],
            "constraints": {g.group: g.percent for g in groups},
            "ended_by": m.ending_counts(dialogues),
            "reference": _reference_data(m.reference_metrics(dialogues), metrics),
        }).data)
