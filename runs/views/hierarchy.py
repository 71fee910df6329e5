"""Privilege-hierarchy pages (ManyIH): metrics, conflict resolution, style re-check agreement, sample viewer, API."""
from __future__ import annotations

from dataclasses import asdict

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render

from runs.access import blind_safe, may_open
from runs.charts import hierarchy as charts
from runs.checkers.manyih_style import extract_code
from runs.exclusions import (
    excluded_item_ids,
    exclusion_box,
    exclusion_policy_choices,
)
from runs.exports import hierarchy as exports
from runs.metrics import hierarchy as m
from runs.models import (
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    JudgeKind,
    Run,
    Verdict,
)
from runs.pages import render_page
from runs.querystring import query_with
from runs.recheck import logged_judge_for

EXAMPLES_LIMIT = 200


class HierarchyFilterForm(forms.Form):
    """Which runs and judge a hierarchy page shows, how rows are grouped, which two runs are compared."""

    run = forms.MultipleChoiceField(required=False, label="Runs")
    judge = forms.ChoiceField(required=False, label="Judge")
    by = forms.ChoiceField(required=False, choices=[("model", "model (runs pooled)"), ("run", "run")], label="Rows per")
    a = forms.ChoiceField(required=False, label="Compare run A")
    b = forms.ChoiceField(required=False, label="with run B")
    outcome = forms.ChoiceField(required=False, choices=[(o, o) for o in m.OUTCOMES])
    label = forms.CharField(required=False, max_length=200)
    tiers = forms.IntegerField(required=False, min_value=0)
    group = forms.CharField(required=False, max_length=100)
    exclude = forms.ChoiceField(required=False, label="Audit exclusion")

    def __init__(self, data, *, runs, judges):
        super().__init__(data)
        self.fields["exclude"].choices = exclusion_policy_choices()
        run_choices = [(r.label, f"{r.label} ({r.model.name})") for r in runs]
        self.fields["run"].choices = run_choices
        self.fields["a"].choices = self.fields["b"].choices = [("", "—")] + run_choices
        self.fields["judge"].choices = [(j.name, f"{j.name} ({j.get_kind_display()})") for j in judges]


def _benchmark(slug: str) -> Benchmark:
    """The hierarchy benchmark with this slug, or 404."""
    return get_object_or_404(Benchmark, slug=slug, kind=BenchmarkKind.HIERARCHY)


def _default_pair(runs: list[Run]) -> tuple[Run | None, Run | None]:
    """Two runs of one model under different interfaces (ordinal first), else none."""
    for a in runs:
        for b in runs:
            if a.model_id == b.model_id and a.id != b.id and a.settings.get("hierarchy_format") == "ordinal" \
                    and b.settings.get("hierarchy_format") == "scalar":
                return a, b
    return None, None


def _state(request, benchmark: Benchmark) -> dict:
    """Parse the query string: chosen runs, judge, grouping, compared runs, drill-down."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = m.hierarchy_judges(benchmark)
    data = request.GET.copy()
    if "a" not in data and "b" not in data:  # preselect one model's ordinal and scalar runs
        a, b = _default_pair(runs)
        if a and b:
            data.update({"a": a.label, "b": b.label})
    form = HierarchyFilterForm(data, runs=runs, judges=judges)
    form.is_valid()  # a field that does not validate is left out (and its error shown); the others still apply
    clean = form.cleaned_data
    chosen = [r for r in runs if r.label in clean.get("run", [])] or runs
    judge = next((j for j in judges if j.name == clean.get("judge")), judges[0] if judges else None)
    by_label = {r.label: r for r in runs}
    a, b = by_label.get(clean.get("a") or ""), by_label.get(clean.get("b") or "")
    checker = next((j for j in judges if j.name == m.CHECKER_JUDGE), None)
    exclude = clean.get("exclude") or "none"
    return {
        "benchmark": benchmark, "form": form, "all_runs": runs, "runs": chosen, "run_ids": [r.id for r in chosen],
        "judge": judge, "judges": judges, "checker": checker, "by": clean.get("by") or "model", "a": a, "b": b,
        "outcome": clean.get("outcome") or "", "label": clean.get("label") or "", "tiers": clean.get("tiers"),
        "group": clean.get("group") or "", "query": request.GET.urlencode(),
        "exclude": exclude, "excluded": excluded_item_ids(benchmark, exclude),
    }


def _metrics(state: dict) -> dict:
    """Everything the metrics page and the API show for the chosen runs and judge (under the chosen exclusion policy)."""
    if state["judge"] is None:
        return {"rows": [], "tier_rows": [], "group_rates": [], "comparison": None, "exclusion": None}
    excluded = state["excluded"]
    rows = m.sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=state["run_ids"],
                                excluded_items=excluded)
    comparison = None
    if state["a"] and state["b"] and state["a"] != state["b"]:
        pair = m.sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=[state["a"].id, state["b"].id],
                                    excluded_items=excluded)
        comparison = m.compare_runs([r for r in pair if r.run == state["a"].label], [r for r in pair if r.run == state["b"].label],
                                    a=state["a"].label, b=state["b"].label)
    acc_rows = m.accuracy_by(rows, by=state["by"])
    return {"rows": acc_rows, "tier_rows": m.accuracy_by_tiers(rows, by=state["by"]),
            "group_rates": m.style_group_rates(rows, by=state["by"]), "comparison": comparison, "n_samples": len(rows),
            "exclusion": None if excluded is None else _exclusion(state, rows, acc_rows)}


def _exclusion(state: dict, after_rows: list, after: list) -> dict:
    """What the exclusion policy did to the Acc ranking: ranks before and after, Kendall's tau, the swaps with the
    excluded items behind each, the samples that lost every constraint, and the excluded items themselves."""
    excluded = state["excluded"]
    before_rows = m.sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=state["run_ids"])
    before = m.accuracy_by(before_rows, by=state["by"])
    kept = {r.attempt_id for r in after_rows}
    dropped = [r for r in before_rows if r.attempt_id not in kept]
    verdicts = m.excluded_verdicts_select(judge=state["judge"], run_ids=state["run_ids"], item_ids=excluded,
                                          by=state["by"]) if excluded else {}
    lines, tau, swaps = m.acc_rank_change(before, after, verdicts)
    items = {i["id"]: i for i in ChecklistItem.objects.filter(id__in=list(excluded)).values(
        "id", "key", "group", "description", "instance__external_id", "details__active")}
    shown = sorted(items.values(), key=lambda i: (m.natural_key(i["instance__external_id"]), m.natural_key(i["key"])))
    return {**exclusion_box(state["exclude"], excluded, lines, tau, swaps, items, shown),
            "n_dropped": len(dropped), "dropped_samples": sorted({r.sample for r in dropped}, key=m.natural_key)}


@blind_safe
@login_required
def metrics(request, slug):
    """Acc, Acc_test and Acc_style per model with intervals, per style group, by tiers, and a run-pair comparison;
    under an audit exclusion policy, each row's rank before and after and the swaps."""
    state = _state(request, _benchmark(slug))
    state.update(_metrics(state))
    exclusion = state["exclusion"]
    state["lines"] = [{"row": r, "effect": exclusion["lines"].get(r.label) if exclusion else None} for r in state["rows"]]
    state["off_query"] = query_with(request, exclude=None)
    state["groups"], state["group_table"] = m.group_matrix(state["group_rates"])
    state["figure"] = charts.accuracy_figure(state["rows"])
    state["tiers_figure"] = charts.tiers_figure(state["tier_rows"])
    return render_page(request, "runs/hierarchy/metrics.html", {**state, "active": "metrics"}, page_data=exports.metrics_page)


@blind_safe
@login_required
def api(request, slug):
    """The metrics page's rows as JSON (percentages; intervals as [low, high]); ?exclude=<policy> as on the page."""
    benchmark = _benchmark(slug)
    try:
        excluded_item_ids(benchmark, request.GET.get("exclude"))
    except ValueError as exc:  # the page's form would drop an unknown policy silently: the API says so
        return JsonResponse({"exclude": [str(exc)]}, status=400)
    state = _state(request, benchmark)
    data = _metrics(state)
    comparison, exclusion = data["comparison"], data["exclusion"]
    return JsonResponse({
        "benchmark": slug, "judge": state["judge"].name if state["judge"] else None, "by": state["by"],
        "exclude": state["exclude"], "excluded_items": len(state["excluded"] or ()),
        "rows": [asdict(r) for r in data["rows"]], "by_tiers": [asdict(r) for r in data["tier_rows"]],
        "by_style_group": [asdict(g) | {"rate": g.rate, "rate_errors_as_failures": g.rate_errors_as_failures}
                           for g in data["group_rates"]],
        "comparison": None if comparison is None else _comparison_json(request, comparison),
        "exclusion": None if exclusion is None else {
            "tau": exclusion["tau"],
            "ranks": [asdict(line) | {"rank_change": line.rank_change} for line in exclusion["lines"].values()],
            "swaps": [{"up": s["up"], "down": s["down"], "items": [
                {"item_id": d["item_id"], "sample": d["instance__external_id"], "key": d["key"], "group": d["group"],
                 "pass_rate_up": d["pass_rate_up"], "pass_rate_down": d["pass_rate_down"]} for d in s["items"]]}
                for s in exclusion["swaps"]],
        },
    })


def _comparison_json(request, comparison) -> dict:
    """The run comparison as JSON; the samples that flip (each one's pass/fail) only for those who may open a sample."""
    data = asdict(comparison)
    if not may_open(request, "runs:hierarchy-sample"):
        data.pop("flips")
    return data


@blind_safe(drop=("outcome",))
@login_required
def conflicts(request, slug):
    """How each conflict group was resolved (winner, a suppressed instruction, none) per model and tiers; examples."""
    state = _state(request, _benchmark(slug))
    outcomes = m.conflict_outcomes_select(benchmark=state["benchmark"], checker=state["checker"],
                                          run_ids=state["run_ids"]) if state["checker"] else []
    state["rates"] = m.resolution_rates(outcomes, by=state["by"])
    state["places"] = sorted({p for r in state["rates"] for p in r.places})
    state["figure"] = charts.resolution_figure([r for r in state["rates"] if r.tiers is not None] or state["rates"])
    if state["outcome"]:
        key = (lambda o: o.model) if state["by"] == "model" else (lambda o: o.run)
        picked = [o for o in outcomes if o.outcome == state["outcome"] and (not state["label"] or key(o) == state["label"])
                  and (state["tiers"] is None or o.tiers == state["tiers"])]
        state.update(examples=picked[:EXAMPLES_LIMIT], n_examples=len(picked))
    state["n_outcomes"] = len(outcomes)
    return render_page(request, "runs/hierarchy/conflicts.html", {**state, "active": "conflicts"}, page_data=exports.conflicts_page)


@login_required
def recheck(request, slug):
    """Agreement of the logged per-group verdicts with the style checkers, with the disagreeing samples."""
    state = _state(request, _benchmark(slug))
    logged = next((j for j in state["judges"] if j.kind == JudgeKind.LOGGED), None) or (
        logged_judge_for(state["runs"][0]) if state["runs"] else None)
    if state["checker"] and logged:
        pairs = m.agreement_pairs_select(run_ids=state["run_ids"], logged=logged, checker=state["checker"])
        state["agreement"] = m.agreement((p["item__group"], p["result"], p["checker"]) for p in pairs)
        wrong = [p for p in pairs if p["result"] != p["checker"] and (not state["group"] or p["item__group"] == state["group"])]
        state.update(disagreements=wrong[:EXAMPLES_LIMIT], n_disagreements=len(wrong))
    state.update(logged=logged, checker_name=m.CHECKER_JUDGE, active="recheck")
    return render_page(request, "runs/recheck.html", state, page_data=exports.recheck_page)



@login_required
def sample(request, slug, pk):
    """One attempt at one sample: tagged prompt, conflict groups with the winner and why, code, verdicts, tests."""
    attempt = get_object_or_404(Attempt.objects.select_related("run__model", "run__benchmark", "instance"), pk=pk,
                                run__benchmark__slug=slug, run__benchmark__kind=BenchmarkKind.HIERARCHY)
    items = [{"key": i.key, "position": i.position, "privilege": i.privilege, "group": i.group, "description": i.description,
              "check_type": i.check_type, "id": i.id, **(i.details or {})} for i in attempt.instance.items.all()]
    by_key = {i["key"]: i for i in items}
    verdicts = Verdict.objects.filter(attempt=attempt).values("item_id", "judge__name", "result", "reasoning", "score")
    by_item: dict[int, dict] = {}
    for v in verdicts:
        by_item.setdefault(v["item_id"], {})[v["judge__name"]] = v
    for i in items:
        i["why"], i["verdicts"] = m.why(i, by_key), by_item.get(i["id"], {})
    judges = sorted({name for v in by_item.values() for name in v}, key=lambda n: (n != m.LOGGED_JUDGE, n))
    for i in items:
        i["verdict_list"] = [(name, i["verdicts"].get(name)) for name in judges]
    groups = _conflict_groups(items)
    segments = [dict(s, item=_item_at(items, s["position"])) if "tag" in s else s
                for s in m.prompt_segments(str(attempt.instance.spec.get("prompt") or ""))]
    others = Attempt.objects.filter(instance=attempt.instance).exclude(pk=pk).select_related("run").order_by("run__label")
    outcome = attempt.outcome or {}
    logged_code = outcome.get("extracted_code")
    code_logged = isinstance(logged_code, str)
    context = {"benchmark": attempt.run.benchmark, "attempt": attempt, "items": items, "groups": groups, "judges": judges,
               "segments": segments, "code": logged_code if code_logged else extract_code(attempt.response),
               "code_logged": code_logged, "others": others, "active": "samples",
               "tiers": m.tiers_of(i["privilege"] for i in items), "outcome": outcome}
    return render(request, "runs/hierarchy/sample.html", context)


def _item_at(items: list[dict], position: int) -> dict | None:
    """The item shown at this 1-based position in the prompt."""
    return next((i for i in items if i["position"] == position), None)


def _conflict_groups(items: list[dict]) -> list[dict]:
    """Conflict groups of a sample, members in privilege order (rank, later first), with the checker's outcome if known."""
    numbers = sorted({i["conflict_group"] for i in items if i.get("conflict_group")})
    out = []
    for n in numbers:
        members = sorted((i for i in items if i.get("conflict_group") == n), key=lambda i: (i["rank"], -i["position"]))
        checked = [i["verdicts"].get(m.CHECKER_JUDGE) for i in members]
        outcome = None
        if all(c is not None and c["score"] is not None for c in checked):
            outcome = m.conflict_outcome([m.Member(i["key"], str(i.get("style_id") or ""), i["rank"], i["position"],
                                                   bool(i.get("active")), c["score"] >= 0.5) for i, c in zip(members, checked)])
        out.append({"number": n, "style_group": members[0]["group"], "members": members, "outcome": outcome})
    return out
