"""GET /api/leaderboards/<slug>/ (the leaderboard page's rows) and GET /api/attempts/<id>/verdicts/
(GET /api/compare/<slug>/ is runs.api.compare's, for every kind).

The leaderboard's query is its page's (runs.selectors.checklist.checklist_query reads it for both), so the same
query string gives the page's rows, and a parameter the page cannot use is answered 400 with the page's words."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import attempt_for, benchmark_for, blind_safe
from runs.metrics.checklist import GROUPINGS
from runs.models import BenchmarkKind, ChecklistItem, Verdict
from runs.selectors import checklist as selectors
from runs.selectors.reported import reported_figures
from runs.selectors.run_status import run_statuses
from runs.serializers import health_flags_field

#: the API's comma-separated parameters, and the page's repeatable one each adds its values to
_COMMA_LISTS = {"runs": "run", "judges": "judge"}


# input -------------------------------------------------------------------------------
class LeaderboardQuerySerializer(serializers.Serializer):
    """Query parameters of GET /api/leaderboards/<slug>/: the leaderboard page's own URL state (the schema's
    description of them; the page's form validates them, runs.selectors.checklist.checklist_query)."""

    by = serializers.ChoiceField(
        choices=list(GROUPINGS),
        default="model",
        help_text="model: one row per model; otherwise one row per model and group value.",
    )
    run = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Run label; repeat for several (default: all)."
    )
    judge = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Judge name; repeat for several (default: all)."
    )
    scaffold = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Instance scaffold; repeat for several."
    )
    primary_category = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Instance primary category; repeat for several."
    )
    runs = serializers.CharField(required=False, help_text="Comma-separated run labels (added to run).")
    judges = serializers.CharField(required=False, help_text="Comma-separated judge names (added to judge).")
    sort = serializers.ChoiceField(
        choices=list(selectors.SORTS), default="-isr", help_text="Row order, as on the page."
    )
    ci = serializers.BooleanField(
        default=False, help_text="Add 95% bootstrap intervals over instances (1,000 resamples, fixed seed)."
    )
    exclude = serializers.CharField(
        required=False,
        default="none",
        help_text="Audit exclusion policy: none, "
        "flagged_by_either, flagged_by_both or adjudicated_invalid (items it flags are left out).",
    )
    health = health_flags_field()


# output ------------------------------------------------------------------------------
MACRO_CSR_HELP = (
    "Macro CSR in percent: the mean over attempts of each one's share of passed checks "
    "(OctoBench: evaluate.py's avg_reward x 100; it rounds each reward to 3 decimals first)."
)
UNSCORED_HELP = (
    "Attempts the judge could not score, by reason: not_json (the judge's reply was not JSON), "
    "error (its reply was read as an error), no_checks (its reply had no checks), failed (the judge API "
    "call failed). Each counts as an attempt whose checks all failed (reward 0), as evaluate.py counts it."
)
UNRECOGNISED_HELP = (
    "Verdicts whose result string the reference scorer does not recognise (OctoBench: anything "
    "but 'success' and 'fail', such as 'Success'); counted as failed, as evaluate.py counts them."
)


class JudgeRateSerializer(serializers.Serializer):
    isr = serializers.FloatField(allow_null=True)
    csr = serializers.FloatField(allow_null=True)
    macro_csr = serializers.FloatField(allow_null=True, help_text=MACRO_CSR_HELP)
    n_instances = serializers.IntegerField()
    n_attempts = serializers.IntegerField(help_text="Attempts counted (OctoBench: evaluate.py's summary `total`).")
    n_success = serializers.IntegerField(
        help_text="Attempts whose every counted check passed (OctoBench: evaluate.py's `pass_count`)."
    )
    unscored = serializers.DictField(child=serializers.IntegerField(), help_text=UNSCORED_HELP)
    n_unrecognised = serializers.IntegerField(help_text=UNRECOGNISED_HELP)


class SpreadSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="Attempts of the row whose source logged this figure.")
    mean = serializers.FloatField(allow_null=True, help_text="Mean per attempt over those; null: not logged.")
    median = serializers.FloatField(allow_null=True, help_text="Median per attempt over those; null: not logged.")


class UsageSerializer(serializers.Serializer):
    """Where the tokens and the time went, per attempt of the row (/help/metrics/#usage)."""

    n_attempts = serializers.IntegerField(
        help_text="The model's attempts at the instances the filters keep, every repetition, scored or "
        "not (with a judges filter: those the judges scored)."
    )
    input_tokens = SpreadSerializer()
    output_tokens = SpreadSerializer()
    total_tokens = SpreadSerializer()
    model_seconds = SpreadSerializer()
    wall_seconds = SpreadSerializer()
    model_calls = SpreadSerializer()
    tool_calls = SpreadSerializer()


class LeaderboardRowSerializer(serializers.Serializer):
    """One row (or model x group cell): mean and population std across judges, in percent, with n."""

    model = serializers.CharField()
    group = serializers.CharField(allow_null=True, help_text="null when by=model.")
    runs = serializers.ListField(
        child=serializers.CharField(),
        help_text="The labels of the runs a by-model row "
        "pools (a model run twice has both); empty in model x group cells.",
    )
    isr = serializers.FloatField(allow_null=True)
    isr_std = serializers.FloatField(allow_null=True)
    csr = serializers.FloatField(allow_null=True)
    csr_std = serializers.FloatField(allow_null=True)
    macro_csr = serializers.FloatField(allow_null=True, help_text=MACRO_CSR_HELP + " Mean across judges.")
    macro_csr_std = serializers.FloatField(allow_null=True)
    isr_ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="[low, high] with ci=true, else null."
    )
    csr_ci = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="[low, high] with ci=true, else null."
    )
    rank_low = serializers.IntegerField(
        allow_null=True,
        help_text="Lower end of the 95% interval of the model's rank (1 = best) over bootstrap resamples of instances, "
        "ranked by CSR when sort is csr or -csr, else by ISR (/help/metrics/#paired). null in model x group cells "
        "and for a model without data.",
    )
    rank_high = serializers.IntegerField(allow_null=True, help_text="Upper end of that interval (null as rank_low).")
    tie_group = serializers.IntegerField(
        allow_null=True,
        help_text="Tie group on that figure: 1 is the leader and every model whose paired difference from it is not "
        "significant at 5% after Holm's correction; the next group starts at the best model outside it "
        "(/help/metrics/#paired). null as rank_low.",
    )
    n_instances = serializers.IntegerField()
    n_attempts = serializers.IntegerField()
    n_empty = serializers.IntegerField(help_text="Attempts left out because no item applied.")
    small = serializers.BooleanField(help_text="Fewer instances than the page's small-cell threshold.")
    n_unscored = serializers.IntegerField(
        help_text="Judge results that scored nothing, summed over judges (see per_judge.unscored)."
    )
    n_unrecognised = serializers.IntegerField(help_text=UNRECOGNISED_HELP + " Summed over judges.")
    per_judge = serializers.DictField(child=JudgeRateSerializer())
    usage = UsageSerializer(
        allow_null=True,
        help_text="Tokens, time and tool calls per attempt (by=model rows; null in model x group cells).",
    )


class LeaderboardSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    by = serializers.CharField()
    state = serializers.DictField(
        help_text="The filters, grouping, sort and exclusion policy the rows were computed with."
    )
    excluded_items = serializers.IntegerField(help_text="Checklist items the exclusion policy left out.")
    exclusion = serializers.DictField(
        allow_null=True,
        help_text="Under an exclusion policy (null without): policy (its parts joined by +), parts, label, "
        "n_excluded, items (the ids left out), tau (Kendall's tau-b between the rankings by ISR with every item and "
        "after), swaps ([gainer, other] pairs whose order changed) and ranks (model -> isr_before, isr_after, "
        "rank_before, rank_after), as the page's exclusion box shows them.",
    )
    rows = LeaderboardRowSerializer(many=True)
    reported = serializers.ListField(
        child=serializers.DictField(),
        help_text="The figures each run's harness reported for the whole task, as written (runs.ReportedFigure: "
        "value, or null with value_text NaN/Infinity/N/A; stderr likewise; direction; aggregation; per_sample), "
        "whatever the filters (definitions: /help/metrics/#reported).",
    )
    runs_incomplete = serializers.ListField(
        child=serializers.DictField(),
        help_text="The runs that are not a finished, scored evaluation: label, model, the status their harness "
        "logged (cancelled, error, started), error, samples done and planned (null: not said), scored.",
    )


class VerdictItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = ChecklistItem
        fields = ["id", "key", "description", "category", "category_original", "check_type", "turn", "group"]
        read_only_fields = fields


class AttemptVerdictSerializer(serializers.ModelSerializer):
    """One verdict with its judge and checklist item."""

    judge = serializers.CharField(source="judge.name", read_only=True)
    judge_kind = serializers.CharField(source="judge.kind", read_only=True)
    item = VerdictItemSerializer(read_only=True)

    class Meta:
        model = Verdict
        fields = ["id", "judge", "judge_kind", "item", "result", "reasoning", "score", "evidence"]
        read_only_fields = fields


# views -------------------------------------------------------------------------------
@blind_safe
class LeaderboardView(APIView):
    """A checklist benchmark's leaderboard: the same rows, in the same order, as its page for the same state."""

    @extend_schema(
        operation_id="leaderboard_retrieve",
        parameters=[LeaderboardQuerySerializer],
        responses={
            200: LeaderboardSerializer,
            400: OpenApiResponse(
                description="A parameter is malformed, or names a run, judge, scaffold, category or "
                "exclusion policy the benchmark does not have, as {parameter: [the "
                "page's words]}."
            ),
            404: OpenApiResponse(description="No checklist benchmark has this slug."),
        },
        description="ISR, CSR and macro CSR in percent per model (or model x group with ?by=), each judge scored "
        "separately and shown as mean ± population std across judges (definitions: /help/metrics/#checklist). Per judge, "
        "n_attempts, n_success and macro_csr are OctoBench evaluate.py's total, pass_count and avg_reward (x 100); "
        "unscored and n_unrecognised say which judge results it counted in its own way (see the leaderboard's notes).",
    )
    def get(self, request, slug):
        benchmark = benchmark_for(request, slug, kind=BenchmarkKind.CHECKLIST)
        parsed = selectors.checklist_query(benchmark, _page_query(request.query_params))
        if parsed.errors:
            return Response(parsed.errors, status=status.HTTP_400_BAD_REQUEST)
        board = selectors.leaderboard(benchmark, parsed.state)
        body = {
            "benchmark": benchmark.slug,
            "by": parsed.state["by"],
            "state": board.layout["state"],
            "excluded_items": len(board.excluded or ()),
            "exclusion": board.layout.get("exclusion"),
            "rows": board.layout["rows"],
            "reported": [row.as_dict() for row in reported_figures(benchmark_id=benchmark.id)],
            "runs_incomplete": [status.as_dict() for status in run_statuses(benchmark_id=benchmark.id)],
        }
        return Response(LeaderboardSerializer(body).data)


def _page_query(params):
    """The API's parameters as the leaderboard page's query string: each comma-separated list (runs=, judges=)
    added to the page's repeatable parameter (run=, judge=)."""
    query = params.copy()
    for plural, name in _COMMA_LISTS.items():
        values = [v.strip() for v in ",".join(query.pop(plural, [])).split(",") if v.strip()]
        if values:
            query.setlist(name, query.getlist(name) + values)
    return query


class AttemptVerdictListView(generics.ListAPIView):
    """Every verdict on one attempt, with its judge and checklist item, in checklist order."""

    serializer_class = AttemptVerdictSerializer

    @extend_schema(
        operation_id="attempt_verdicts_list",
        responses={200: AttemptVerdictSerializer(many=True), 404: OpenApiResponse(description="No such attempt.")},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        attempt = attempt_for(self.request, self.kwargs["pk"])
        return (
            Verdict.objects.filter(attempt=attempt)
            .select_related("judge", "item")
            .order_by("item__position", "item__key", "judge__name", "id")
        )
