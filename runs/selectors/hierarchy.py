"""Hierarchy pages' state (ManyIH): the query string validated with its defaults, and what the metrics and conflict
pages and /api/hierarchy-metrics/ show for it. Numbers come from runs.metrics.hierarchy (docs/metrics.md#hierarchy)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from django import forms
from django.db.models import Count, OuterRef, Q, Subquery

from runs.cache import cached, digest
from runs.checkers.manyih_style import extract_code
from runs.exclusions import exclusion_box
from runs.metrics import hierarchy as metrics
from runs.metrics import paired
from runs.models import (
    Attempt,
    AttemptRollup,
    Benchmark,
    ChecklistItem,
    GroupRollup,
    Judge,
    JudgeKind,
    Run,
    Verdict,
    VerdictResult,
)
from runs.recheck import logged_judge_for
from runs.selectors.state import KindQuery, kind_state

#: drill-down rows (conflict examples) shown at most
EXAMPLES_LIMIT = 200


class HierarchyQuery(KindQuery):
    """Which runs and judge a hierarchy page shows, how rows are grouped, which two runs are compared, which
    conflict outcome is drilled into."""

    a = forms.ChoiceField(required=False, label="Compare run A")
    b = forms.ChoiceField(required=False, label="with run B")
    outcome = forms.ChoiceField(required=False, choices=[(o, o) for o in metrics.OUTCOMES])
    label = forms.CharField(required=False, max_length=200)
    tiers = forms.IntegerField(required=False, min_value=0)
    group = forms.CharField(required=False, max_length=100)

    field_order = ["run", "judge", "by", "a", "b", "outcome", "label", "tiers", "group", "exclude"]

    def __init__(self, data, *, runs, judges):
        super().__init__(data, runs=runs, judges=judges)
        self.fields["a"].choices = self.fields["b"].choices = [("", "—")] + list(self.fields["run"].choices)


def _default_pair(runs: list[Run]) -> tuple[Run | None, Run | None]:
    """Two runs of one model under different interfaces (ordinal first), else none."""
    for a in runs:
        for b in runs:
            if (
                a.model_id == b.model_id
                and a.id != b.id
                and a.settings.get("hierarchy_format") == "ordinal"
                and b.settings.get("hierarchy_format") == "scalar"
            ):
                return a, b
    return None, None


def _pools_conditions(runs: list[Run]) -> bool:
    """Whether rows per model would pool one model's runs under different privilege interfaces (ordinal and scalar
    prompts are two experimental conditions, not repetitions of one)."""
    formats: dict[int, set] = {}
    for run in runs:
        formats.setdefault(run.model_id, set()).add(run.settings.get("hierarchy_format"))
    return any(len(found) > 1 for found in formats.values())


def hierarchy_state(*, benchmark: Benchmark, query) -> dict:
    """The query validated with its defaults: chosen runs, judge (the logged one unless chosen), grouping (per run
    when rows per model would pool a model's ordinal and scalar runs, else per model), the compared runs (one
    model's ordinal and scalar runs unless chosen), the drill-down, the exclusion policy."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = hierarchy_judges(benchmark)
    data = query.copy()
    default_by = "run" if _pools_conditions(runs) else "model"
    if "by" not in data and default_by != "model":  # the filter bar shows the default it applies
        data["by"] = default_by
    if "a" not in data and "b" not in data:  # preselect one model's ordinal and scalar runs
        a, b = _default_pair(runs)
        if a and b:
            data.update({"a": a.label, "b": b.label})
    form = HierarchyQuery(data, runs=runs, judges=judges)
    logged = next((j for j in judges if j.kind == JudgeKind.LOGGED), None)
    state = kind_state(form, benchmark=benchmark, runs=runs, judges=judges, default_judge=logged, default_by=default_by)
    clean = form.cleaned_data
    by_label = {r.label: r for r in runs}
    state.update(
        a=by_label.get(clean.get("a") or ""),
        b=by_label.get(clean.get("b") or ""),
        checker=next((j for j in judges if j.name == metrics.CHECKER_JUDGE), None),
        outcome=clean.get("outcome") or "",
        label=clean.get("label") or "",
        tiers=clean.get("tiers"),
        group=clean.get("group") or "",
    )
    return state


def hierarchy_metrics(state: dict) -> dict:
    """The metrics page's data for the chosen runs and judge, under the chosen exclusion policy: Acc rows per model
    (or run), by tiers, per style group, the run-pair comparison, what the policy did to the ranking, and the
    sample rows they are computed from."""
    if state["judge"] is None:
        return {
            "rows": [],
            "tier_rows": [],
            "group_rates": [],
            "groups": [],
            "group_table": [],
            "comparison": None,
            "exclusion": None,
            "lines": [],
            "ties": {},
            "sample_rows": [],
            "n_samples": 0,
        }
    excluded = state["excluded"]
    rows = sample_rows_select(
        benchmark=state["benchmark"], judge=state["judge"], run_ids=state["run_ids"], excluded_items=excluded
    )
    comparison = None
    if state["a"] and state["b"] and state["a"] != state["b"]:
        pair = sample_rows_select(
            benchmark=state["benchmark"],
            judge=state["judge"],
            run_ids=[state["a"].id, state["b"].id],
            excluded_items=excluded,
        )
        comparison = metrics.compare_runs(
            [r for r in pair if r.run == state["a"].label],
            [r for r in pair if r.run == state["b"].label],
            a=state["a"].label,
            b=state["b"].label,
        )
    acc_rows = metrics.accuracy_by(rows, by=state["by"])
    exclusion = None if excluded is None else _exclusion(state, rows, acc_rows)
    ties = hierarchy_ties(state, rows)
    group_rates = metrics.style_group_rates(rows, by=state["by"])
    groups, group_table = metrics.group_matrix(group_rates)
    return {
        "rows": acc_rows,
        "tier_rows": metrics.accuracy_by_tiers(rows, by=state["by"]),
        "group_rates": group_rates,
        "groups": groups,
        "group_table": group_table,
        "comparison": comparison,
        "n_samples": len(rows),
        "exclusion": exclusion,
        "sample_rows": rows,
        "ties": ties,
        "lines": [
            {
                "row": r,
                "effect": exclusion["lines"].get(r.label) if exclusion else None,
                "tie": ties.get(r.label, paired.Tie()),
            }
            for r in acc_rows
        ],
    }


def acc_sides(rows: Sequence[metrics.SampleRow], *, by: str = "model") -> dict[str, paired.Side]:
    """Per row of the Acc table (model or run, by label), its runs.metrics.paired Side on Acc: one judge (the
    page's), per sample num = attempts that passed (unit tests and every active instruction) and den = attempts.
    paired.figure(side) is the row's AccRow.acc."""
    return paired.one_judge_sides((r.model if by == "model" else r.run, r.instance_id, r.passed) for r in rows)


def hierarchy_ties(state: dict, rows: Sequence[metrics.SampleRow]) -> dict[str, paired.Tie]:
    """paired.ties of the acc_sides of the page's sample rows (the chosen judge, runs, grouping and exclusion), cached
    per data generation and those choices."""
    document = {
        "judge": state["judge"].id,
        "runs": sorted(state["run_ids"]),
        "by": state["by"],
        "excluded": sorted(state["excluded"]) if state["excluded"] is not None else None,
    }
    return cached(
        state["benchmark"].id,
        f"hierarchy-ties:{digest(document)}",
        lambda: paired.ties(acc_sides(rows, by=state["by"])),
        kind=dict,
    )


def _exclusion(state: dict, after_rows: list, after: list) -> dict:
    """What the exclusion policy did to the Acc ranking: ranks before and after, Kendall's tau, the swaps with the
    excluded items behind each, the samples that lost every constraint, and the excluded items themselves."""
    excluded = state["excluded"]
    before_rows = sample_rows_select(benchmark=state["benchmark"], judge=state["judge"], run_ids=state["run_ids"])
    before = metrics.accuracy_by(before_rows, by=state["by"])
    kept = {r.attempt_id for r in after_rows}
    dropped = [r for r in before_rows if r.attempt_id not in kept]
    verdicts = (
        excluded_verdicts_select(judge=state["judge"], run_ids=state["run_ids"], item_ids=excluded, by=state["by"])
        if excluded
        else {}
    )
    lines, tau, swaps = metrics.acc_rank_change(before, after, verdicts)
    items = {
        i["id"]: i
        for i in ChecklistItem.objects.filter(id__in=list(excluded)).values(
            "id", "key", "group", "description", "instance__external_id", "details__active"
        )
    }
    shown = sorted(
        items.values(), key=lambda i: (metrics.natural_key(i["instance__external_id"]), metrics.natural_key(i["key"]))
    )
    return {
        **exclusion_box(state["exclude"], excluded, lines, tau, swaps, items, shown),
        "n_dropped": len(dropped),
        "dropped_samples": sorted({r.sample for r in dropped}, key=metrics.natural_key),
    }


def hierarchy_run(sample_rows: list, *, label: str) -> dict:
    """One run's figures from its sample rows, as /api/hierarchy-metrics/?run=<label> answers: Acc with intervals,
    per style group, and what the ManyIH evaluator prints."""
    return {
        "accuracy": metrics.accuracy(sample_rows, label=label),
        "groups": metrics.style_group_rates(sample_rows, by="run"),
        "evaluator": metrics.evaluator_summary(sample_rows, label=label),
    }


def hierarchy_conflicts(state: dict) -> dict:
    """The conflicts page's data: how each conflict group was resolved per model (or run) and tiers, by the style
    checker, and the outcomes of the chosen drill-down cell."""
    outcomes = (
        conflict_outcomes_select(benchmark=state["benchmark"], checker=state["checker"], run_ids=state["run_ids"])
        if state["checker"]
        else []
    )
    rates = metrics.resolution_rates(outcomes, by=state["by"])
    data = {"rates": rates, "places": sorted({p for r in rates for p in r.places}), "n_outcomes": len(outcomes)}
    if state["outcome"]:
        key = (lambda o: o.model) if state["by"] == "model" else (lambda o: o.run)
        picked = [
            o
            for o in outcomes
            if o.outcome == state["outcome"]
            and (not state["label"] or key(o) == state["label"])
            and (state["tiers"] is None or o.tiers == state["tiers"])
        ]
        data.update(examples=picked[:EXAMPLES_LIMIT], n_examples=len(picked))
    return data


def hierarchy_judges(benchmark) -> list:
    """Judges with rollups on this benchmark: the logged one first, then the checker, then others by name."""
    ids = AttemptRollup.objects.filter(benchmark=benchmark).values_list("judge_id", flat=True).distinct().order_by()
    judges = list(Judge.objects.filter(id__in=list(ids)))
    order = {metrics.LOGGED_JUDGE: 0, metrics.CHECKER_JUDGE: 1}
    return sorted(judges, key=lambda j: (order.get(j.name, 2 if j.kind == "logged" else 3), j.name))


def instance_facts(benchmark) -> dict[int, dict[str, Any]]:
    """instance id -> {"tiers", "n_instructions"} from its items' privileges (one query)."""
    return metrics.instance_facts(
        ChecklistItem.objects.filter(instance__benchmark=benchmark).values_list("instance_id", "privilege").order_by()
    )


def _rollup_facts(judge, run_ids: Sequence[int]) -> tuple[dict[int, tuple[int, int]], dict[int, dict[str, bool]]]:
    """runs.metrics.hierarchy.rollup_facts of the judge's attempt and style group rollups on these runs."""
    totals = list(
        AttemptRollup.objects.filter(judge=judge, run_id__in=list(run_ids))
        .values_list("attempt_id", "n_applicable", "n_passed")
        .order_by()
    )
    groups = (
        GroupRollup.objects.filter(
            judge=judge, dimension="group", attempt__run_id__in=list(run_ids), n_applicable__gt=0
        )
        .values_list("attempt_id", "value", "n_applicable", "n_passed")
        .order_by()
    )
    return metrics.rollup_facts(totals, groups)


def _verdict_facts(
    judge, run_ids: Sequence[int], excluded_items: Collection[int]
) -> tuple[dict[int, tuple[int, int]], dict[int, dict[str, bool]]]:
    """runs.metrics.hierarchy.verdict_facts of the judge's verdicts on these runs with `excluded_items` left out
    (one query)."""
    counts = (
        Verdict.objects.filter(judge=judge, attempt__run_id__in=list(run_ids))
        .exclude(item_id__in=list(excluded_items))
        .values("attempt_id", "item__group")
        .annotate(
            n_app=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
            n_pass=Count("id", filter=Q(result=VerdictResult.PASS)),
        )
        .values_list("attempt_id", "item__group", "n_app", "n_pass")
        .order_by()
    )
    return metrics.verdict_facts(counts)


def sample_rows_select(
    *, benchmark, judge, run_ids: Sequence[int], excluded_items: Collection[int] | None = None
) -> list[metrics.SampleRow]:
    """One SampleRow per attempt of these runs that the judge scored (four queries whatever the size).

    With `excluded_items` (an audit exclusion policy's items), the per-sample facts are counted
    from the verdicts without those items instead of read from the rollups: a sample passes
    Acc_style when its remaining active instructions all pass; an attempt whose every verdict
    is left out has no row. Tiers and instruction counts stay those of the prompt.
    """
    facts = instance_facts(benchmark)
    totals, groups = _verdict_facts(judge, run_ids, excluded_items) if excluded_items else _rollup_facts(judge, run_ids)
    attempts = (
        Attempt.objects.filter(run_id__in=list(run_ids))
        .values_list(
            "id",
            "run__label",
            "run__model__name",
            "run__settings",
            "instance_id",
            "instance__external_id",
            "outcome",
            "instance__spec__interface",
        )
        .order_by("run__label", "instance__external_id")
    )
    return metrics.sample_rows(attempts, facts, totals, groups)


def excluded_verdicts_select(
    *, judge, run_ids: Sequence[int], item_ids: Collection[int], by: str = "model"
) -> dict[str, dict[int, dict[str, int]]]:
    """Model (or run) -> excluded item id -> {"pass": n, "fail": n}: the judge's verdicts on the items an exclusion
    policy leaves out, suppressed ("na") ones not counted (what rank_change.items_behind reads; one query)."""
    metrics.check_grouping(by)
    label = "attempt__run__model__name" if by == "model" else "attempt__run__label"
    counts = (
        Verdict.objects.filter(judge=judge, attempt__run_id__in=list(run_ids), item_id__in=list(item_ids))
        .exclude(result=VerdictResult.NOT_APPLICABLE)
        .values(label, "item_id", "result")
        .annotate(n=Count("id"))
        .values_list(label, "item_id", "result", "n")
        .order_by()
    )
    return metrics.verdicts_behind(counts)


def conflict_outcomes_select(*, benchmark, checker, run_ids: Sequence[int]) -> list[metrics.ConflictOutcome]:
    """Every conflict group of every attempt of these runs, with which member the checker found satisfied."""
    facts = instance_facts(benchmark)
    items = list(
        ChecklistItem.objects.filter(instance__benchmark=benchmark)
        .values_list("id", "instance_id", "key", "position", "group", "details")
        .order_by()
    )
    scores = list(
        Verdict.objects.filter(judge=checker, attempt__run_id__in=list(run_ids))
        .values_list("attempt_id", "item_id", "score")
        .order_by()
    )
    attempts = (
        Attempt.objects.filter(run_id__in=list(run_ids))
        .values_list("id", "run__label", "run__model__name", "instance_id", "instance__external_id")
        .order_by("run__label", "instance__external_id")
    )
    return metrics.conflict_outcomes(items=items, satisfied_scores=scores, attempts=attempts, facts=facts)


def agreement_pairs_select(*, run_ids: Sequence[int], logged, checker) -> list[dict]:
    """(attempt, item) pairs on active instructions with both a logged and a checker verdict (one query); samples the
    evaluator did not style-check (no code, an evaluator error) are left out: their logged fails judge no style."""
    checker_result = Verdict.objects.filter(
        attempt_id=OuterRef("attempt_id"), item_id=OuterRef("item_id"), judge=checker
    )
    return list(
        Verdict.objects.filter(judge=logged, attempt__run_id__in=list(run_ids))
        .exclude(result="na")
        .exclude(attempt__outcome__status__in=metrics.UNCHECKED)
        .annotate(
            checker=Subquery(checker_result.values("result")[:1]),
            checker_reason=Subquery(checker_result.values("reasoning")[:1]),
        )
        .exclude(checker__isnull=True)
        .order_by("attempt__run__label", "attempt__instance__external_id", "item__position")
        .values(
            "attempt_id",
            "attempt__run__label",
            "attempt__instance__external_id",
            "item__key",
            "item__group",
            "item__details__style_id",
            "result",
            "checker",
            "checker_reason",
        )
    )


def hierarchy_sample(attempt: Attempt) -> dict:
    """The page of one attempt at one sample: its items with why each wins or loses and every judge's verdict, the
    conflict groups with the checker's outcome, the tagged prompt, the code that was checked and the other runs'
    attempts at the same sample."""
    items = [
        {
            "key": i.key,
            "position": i.position,
            "privilege": i.privilege,
            "group": i.group,
            "description": i.description,
            "check_type": i.check_type,
            "id": i.id,
            **(i.details or {}),
        }
        for i in attempt.instance.items.all()
    ]
    by_key = {i["key"]: i for i in items}
    verdicts = Verdict.objects.filter(attempt=attempt).values("item_id", "judge__name", "result", "reasoning", "score")
    by_item: dict[int, dict] = {}
    for v in verdicts:
        by_item.setdefault(v["item_id"], {})[v["judge__name"]] = v
    for i in items:
        i["why"], i["verdicts"] = metrics.why(i, by_key), by_item.get(i["id"], {})
    judges = sorted({name for v in by_item.values() for name in v}, key=lambda n: (n != metrics.LOGGED_JUDGE, n))
    for i in items:
        i["verdict_list"] = [(name, i["verdicts"].get(name)) for name in judges]
    groups = metrics.conflict_groups(items)
    segments = [
        dict(s, item=_item_at(items, s["position"])) if "tag" in s else s
        for s in metrics.prompt_segments(str(attempt.instance.spec.get("prompt") or ""))
    ]
    others = (
        Attempt.objects.filter(instance=attempt.instance)
        .exclude(pk=attempt.pk)
        .select_related("run__model")
        .order_by("run__label")
    )
    outcome = attempt.outcome or {}
    logged_code = outcome.get("extracted_code")
    code_logged = isinstance(logged_code, str)
    return {
        "benchmark": attempt.run.benchmark,
        "attempt": attempt,
        "items": items,
        "groups": groups,
        "judges": judges,
        "segments": segments,
        "code": logged_code if code_logged else extract_code(attempt.response),
        "code_logged": code_logged,
        "others": others,
        "tiers": metrics.tiers_of(i["privilege"] for i in items),
        "outcome": outcome,
    }


def _item_at(items: list[dict], position: int) -> dict | None:
    """The item shown at this 1-based position in the prompt."""
    return next((i for i in items if i["position"] == position), None)


def hierarchy_recheck(state: dict) -> dict:
    """The re-check page's data for a validated state: the logged judge the style checkers are compared with, their
    agreement per style group and the disagreeing samples (the first EXAMPLES_LIMIT; none without either judge)."""
    logged = next((j for j in state["judges"] if j.kind == JudgeKind.LOGGED), None) or (
        logged_judge_for(state["runs"][0]) if state["runs"] else None
    )
    data = {"logged": logged, "checker_name": metrics.CHECKER_JUDGE}
    if state["checker"] and logged:
        pairs = agreement_pairs_select(run_ids=state["run_ids"], logged=logged, checker=state["checker"])
        data["agreement"] = metrics.agreement((p["item__group"], p["result"], p["checker"]) for p in pairs)
        wrong = [
            p
            for p in pairs
            if p["result"] != p["checker"] and (not state["group"] or p["item__group"] == state["group"])
        ]
        data.update(disagreements=wrong[:EXAMPLES_LIMIT], n_disagreements=len(wrong))
    return data
