"""Privilege-hierarchy pages (ManyIH): metrics, conflict resolution, style re-check agreement, sample viewer."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required

from runs.access import attempt_for, benchmark_for, blind_safe
from runs.charts import hierarchy as charts
from runs.checkers.manyih_style import extract_code
from runs.exports import hierarchy as exports
from runs.metrics import hierarchy as m
from runs.models import (
    Attempt,
    Benchmark,
    BenchmarkKind,
    JudgeKind,
    Verdict,
)
from runs.pages import render_page
from runs.querystring import query_with
from runs.recheck import logged_judge_for
from runs.selectors import hierarchy as selectors
from runs.selectors.hierarchy import EXAMPLES_LIMIT


def _benchmark(request, slug: str) -> Benchmark:
    """The hierarchy benchmark with this slug, or 404."""
    return benchmark_for(request, slug, kind=BenchmarkKind.HIERARCHY)


def _state(request, benchmark: Benchmark) -> dict:
    """The page state of the query string (runs.selectors.hierarchy, as /api/hierarchy-metrics/ reads it)."""
    return {**selectors.hierarchy_state(benchmark=benchmark, query=request.GET), "query": request.GET.urlencode()}


@blind_safe
@login_required
def metrics(request, slug):
    """Acc, Acc_test and Acc_style per model with intervals, per style group, by tiers, and a run-pair comparison;
    under an audit exclusion policy, each row's rank before and after and the swaps."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.hierarchy_metrics(state), off_query=query_with(request, exclude=None))
    state["figure"] = charts.accuracy_figure(state["rows"])
    state["tiers_figure"] = charts.tiers_figure(state["tier_rows"])
    return render_page(request, "runs/hierarchy/metrics.html", {**state, "active": "metrics"}, page_data=exports.metrics_page)


@blind_safe(drop=("outcome",))
@login_required
def conflicts(request, slug):
    """How each conflict group was resolved (winner, a suppressed instruction, none) per model and tiers; examples."""
    state = _state(request, _benchmark(request, slug))
    state.update(selectors.hierarchy_conflicts(state))
    state["figure"] = charts.resolution_figure([r for r in state["rates"] if r.tiers is not None] or state["rates"])
    return render_page(request, "runs/hierarchy/conflicts.html", {**state, "active": "conflicts"}, page_data=exports.conflicts_page)


@login_required
def recheck(request, slug):
    """Agreement of the logged per-group verdicts with the style checkers, with the disagreeing samples."""
    state = _state(request, _benchmark(request, slug))
    logged = next((j for j in state["judges"] if j.kind == JudgeKind.LOGGED), None) or (
        logged_judge_for(state["runs"][0]) if state["runs"] else None)
    if state["checker"] and logged:
        pairs = selectors.agreement_pairs_select(run_ids=state["run_ids"], logged=logged, checker=state["checker"])
        state["agreement"] = m.agreement((p["item__group"], p["result"], p["checker"]) for p in pairs)
        wrong = [p for p in pairs if p["result"] != p["checker"] and (not state["group"] or p["item__group"] == state["group"])]
        state.update(disagreements=wrong[:EXAMPLES_LIMIT], n_disagreements=len(wrong))
    state.update(logged=logged, checker_name=m.CHECKER_JUDGE, active="recheck")
    return render_page(request, "runs/recheck.html", state, page_data=exports.recheck_page)



@login_required
def sample(request, slug, pk):
    """One attempt at one sample: tagged prompt, conflict groups with the winner and why, code, verdicts, tests."""
    attempt = attempt_for(request, pk, kinds=(BenchmarkKind.HIERARCHY,), slug=slug)
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
    others = Attempt.objects.filter(instance=attempt.instance).exclude(pk=pk).select_related("run__model").order_by("run__label")
    outcome = attempt.outcome or {}
    logged_code = outcome.get("extracted_code")
    code_logged = isinstance(logged_code, str)
    context = {"benchmark": attempt.run.benchmark, "attempt": attempt, "items": items, "groups": groups, "judges": judges,
               "segments": segments, "code": logged_code if code_logged else extract_code(attempt.response),
               "code_logged": code_logged, "others": others, "active": "samples",
               "tiers": m.tiers_of(i["privilege"] for i in items), "outcome": outcome}
    return render_page(request, "runs/hierarchy/sample.html", context, page_data=exports.sample_page, fragment=None)


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
