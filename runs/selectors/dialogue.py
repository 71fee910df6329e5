"""Dialogue pages' state (EvolIF): the query string validated with its defaults, and what each page and
/api/dialogue-metrics/ show for it. Numbers come from runs.metrics.dialogue (definitions: docs/metrics.md#dialogue).

The recorded patience is the lowest patience the chosen dialogues were logged with, None when one of them was
logged without one; the dialogues are re-simulated at the asked patience, else at the recorded one (so every
dialogue is counted at one patience). A patience the logs cannot answer for is refused with
runs.metrics.dialogue.PatienceRefused's words: the page says so and shows the recorded patience, the API answers
400 with the same words."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from django import forms
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery

from runs.cache import cached, digest
from runs.checkers.evolif import LLM_JUDGED
from runs.exclusions import exclusion_box
from runs.metrics import dialogue as metrics
from runs.metrics import paired, survival
from runs.models import Attempt, Benchmark, ChecklistItem, GroupRollup, Judge, JudgeKind, Run, Verdict, VerdictResult
from runs.recheck import EVOLIF_CHECKER, logged_judge_for
from runs.selectors.state import KindQuery, kind_state, query_errors
from runs.trajectory_view import stored_threads

METRIC_COLUMNS = [
    ("csr", "CSR %"),
    ("isr", "ISR %"),
    ("act_len", "ACT len"),
    ("act_acc", "ACT acc"),
    ("act_succ", "ACT succ"),
    ("lss", "LSS"),
    ("rob", "ROB %"),
    ("rec", "REC %"),
]
SORTS = [("label", "name")] + [(f"-{k}", f"{label} (high first)") for k, label in METRIC_COLUMNS]
#: the metric rows are ranked by under an exclusion policy when the page is sorted by name (its default)
RANK_METRIC = "csr"


class DialogueQuery(KindQuery):
    """Which runs, judge and patience a dialogue page shows, and how rows are grouped and sorted."""

    patience = forms.IntegerField(required=False, min_value=1, label="Patience")
    sort = forms.ChoiceField(required=False, choices=SORTS, label="Sort")
    group = forms.CharField(required=False, max_length=100)

    field_order = ["run", "judge", "patience", "by", "sort", "group", "exclude"]


def dialogue_state(*, benchmark: Benchmark, query, exclusion: bool = False) -> dict:
    """The query validated with its defaults and the (re-simulated) dialogues it selects; with `exclusion`, under the
    chosen audit exclusion policy (only pages that say so pass it: the others count every item)."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = dialogue_judges(benchmark)
    form = DialogueQuery(query, runs=runs, judges=judges)
    state = kind_state(form, benchmark=benchmark, runs=runs, judges=judges, exclusion=exclusion)
    clean = form.cleaned_data
    judge = state["judge"]
    full = (
        dialogues_select(benchmark=benchmark, judge=judge, run_ids=state["run_ids"], excluded_items=state["excluded"])
        if judge
        else []
    )
    known = [d.patience for d in full]
    recorded = min(known) if known and None not in known else None
    asked = clean.get("patience")
    patience, refused = asked or recorded, None
    try:
        dialogues = metrics.resimulate(full, patience)
    except metrics.PatienceRefused as exc:
        refused, patience, dialogues = str(exc), recorded, metrics.resimulate(full, recorded)
    state.update(
        full=full,
        dialogues=dialogues,
        recorded=recorded,
        patience=patience,
        refused=refused,
        sort=clean.get("sort") or "label",
        group=clean.get("group") or "",
        patience_choices=list(range(1, (recorded or 0) + 1)),
        errors=query_errors(form, {"patience": refused} if refused else None),
    )
    return state


def rank_metric(sort: str) -> tuple[str, str]:
    """(key, column label) of the metric rows are ranked by under an exclusion policy: the one the page is sorted
    by, or CSR (the first metric column) when it is sorted by name."""
    key = sort.lstrip("-") if sort != "label" else RANK_METRIC
    return key, dict(METRIC_COLUMNS)[key]


def _sorted(rows, sort: str):
    if sort == "label":
        return sorted(rows, key=lambda r: r.label)
    key = sort.lstrip("-")
    present = [r for r in rows if getattr(r.metrics, key) is not None]
    missing = [r for r in rows if getattr(r.metrics, key) is None]
    return sorted(present, key=lambda r: getattr(r.metrics, key), reverse=True) + missing


def dialogue_metrics(state: dict) -> dict:
    """The metrics page's data: a row per model (or run) in the page's order, each row's 95% rank interval and tie
    group by the rank metric (`ties`), and under an exclusion policy what it did to the ranking (each row's rank line
    and tie in `lines`)."""
    rows = _sorted(metrics.rows_by(state["dialogues"], by=state["by"]), state["sort"])
    ranked_by = rank_metric(state["sort"])
    exclusion = None if state["excluded"] is None or state["judge"] is None else _exclusion(state, ranked_by[0])
    effects = exclusion["lines"] if exclusion else {}
    ties = dialogue_ties(state, ranked_by[0])
    return {
        "rows": rows,
        "columns": METRIC_COLUMNS,
        "rank_metric": ranked_by,
        "exclusion": exclusion,
        "ties": ties,
        "lines": [{"row": r, "effect": effects.get(r.label), "tie": ties.get(r.label, paired.Tie())} for r in rows],
    }


def dialogue_ties(state: dict, metric: str) -> dict[str, paired.Tie]:
    """paired.ties of the rows' runs.metrics.dialogue.metric_sides on `metric` (one of METRIC_COLUMNS' keys) over the
    state's dialogues (the chosen judge, runs, patience, grouping and exclusion policy; an instance is a dialogue
    script), cached per data generation and those choices; empty without a judge."""
    if state["judge"] is None:
        return {}
    document = {
        "judge": state["judge"].id,
        "runs": sorted(state["run_ids"]),
        "by": state["by"],
        "patience": state["patience"],
        "excluded": sorted(state["excluded"]) if state["excluded"] is not None else None,
        "metric": metric,
    }
    return cached(
        state["benchmark"].id,
        f"dialogue-ties:{digest(document)}",
        lambda: paired.ties(metrics.metric_sides(state["dialogues"], metric, by=state["by"])),
        kind=dict,
    )


def _exclusion(state: dict, key: str) -> dict:
    """What the exclusion policy did to the ranking by `key`: ranks before and after, Kendall's tau, the swaps with
    the excluded items behind each, the turns and dialogues left with no item, the excluded items."""
    excluded, judge = state["excluded"], state["judge"]
    full = dialogues_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"])
    try:
        before = metrics.resimulate(full, state["patience"])
    except (
        metrics.PatienceRefused
    ):  # a dialogue the policy emptied was logged without a patience: none can be simulated
        before = metrics.resimulate(full, None)
    after_turns = {d.key: len(d.turns) for d in state["full"]}
    dropped_turns = sum(len(d.turns) - after_turns.get(d.key, 0) for d in full)
    dropped_dialogues = sum(d.key not in after_turns for d in full)
    verdicts = (
        excluded_verdicts_select(judge=judge, dialogues=before, item_ids=excluded, by=state["by"]) if excluded else {}
    )
    lines, tau, swaps = metrics.metric_rank_change(
        metrics.rows_by(before, by=state["by"]), metrics.rows_by(state["dialogues"], by=state["by"]), key, verdicts
    )
    items = {
        i["id"]: i
        for i in ChecklistItem.objects.filter(id__in=list(excluded)).values(
            "id", "key", "turn", "group", "description", "instance__external_id"
        )
    }
    shown = sorted(items.values(), key=lambda i: (i["instance__external_id"], i["turn"] or 0, i["key"]))
    return {
        **exclusion_box(state["exclude"], excluded, lines, tau, swaps, items, shown),
        "dropped_turns": dropped_turns,
        "dropped_dialogues": dropped_dialogues,
    }


def dialogue_survival(state: dict) -> dict:
    """The survival page's data: a row per model (or run) with its curve and steepest drop, its Kaplan-Meier curve
    with a 95% band (label -> points, the rows' labels), and the log-rank tests between the curves (none for one)."""
    samples = survival.observations_by(state["dialogues"], by=state["by"])
    return {
        "rows": metrics.rows_by(state["dialogues"], by=state["by"]),
        "bands": {label: survival.kaplan_meier(observations) for label, observations in samples},
        "log_rank": survival.log_rank_table(samples),
        "log_rank_vs_first": len(samples) > survival.ALL_PAIRS_UP_TO,
    }


def dialogue_groups(state: dict) -> dict:
    """The constraint-groups page's data: pass rate per group per model (or run), and the failing turns of the chosen
    group (verdicts: runs.access drops `group` for blind annotators)."""
    judge = state["judge"]
    per_attempt = group_rows_select(judge=judge, dialogues=state["dialogues"], full=state["full"]) if judge else {}
    data = metrics.group_profile(state["dialogues"], per_attempt, by=state["by"])
    if state["group"] and judge:
        data["failures"] = failing_turns(run_ids=state["run_ids"], judge=judge, group=state["group"])
    return data


def dialogue_list(state: dict) -> dict:
    """The dialogues page's data: every selected dialogue with its number of successful turns."""
    return {"items": [(d, sum(d.successes)) for d in state["dialogues"]]}


def dialogue_pooled(state: dict) -> dict:
    """One model's runs pooled, as /api/dialogue-metrics/ answers: the metrics page's row for them (rows per model),
    the excluded turns, the pass rate per constraint group over the turns counted (under the policy), and the
    Kaplan-Meier curve of its dialogues with a 95% band."""
    [row] = metrics.rows_by(state["dialogues"], by="model") or [None]
    excluded, judge = state["excluded"], state["judge"]
    excluded_turns = 0
    if excluded:
        every = dialogues_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"])
        excluded_turns = sum(d.length for d in every) - sum(d.length for d in state["full"])
    per_attempt = group_rows_select(
        judge=judge, dialogues=state["dialogues"], full=state["full"], excluded_items=excluded
    )
    groups = metrics.group_pass_rates(r for rows in per_attempt.values() for r in rows)
    return {
        "row": row,
        "excluded_turns": excluded_turns,
        "groups": groups,
        "ended_by": metrics.ending_counts(state["dialogues"]),
        "band": survival.kaplan_meier(survival.observation(d) for d in state["dialogues"]),
    }


def dialogue_judges(benchmark) -> list:
    """Judges with turn rollups on this benchmark, logged ones first."""
    ids = (
        GroupRollup.objects.filter(benchmark=benchmark, dimension="turn")
        .values_list("judge_id", flat=True)
        .distinct()
        .order_by()
    )
    judges = list(Judge.objects.filter(id__in=list(ids)))
    return sorted(judges, key=lambda j: (j.kind != JudgeKind.LOGGED, j.name))


def dialogues_select(
    *, benchmark, judge, run_ids: Sequence[int] | None = None, excluded_items: Collection[int] | None = None
) -> list[metrics.Dialogue]:
    """The dialogues of these runs (all runs of the benchmark if None) under one judge, from
    GroupRollup rows of dimension "turn" (two queries, whatever the number of dialogues).

    With `excluded_items` (an audit exclusion policy's items), the turns are counted from the
    verdicts without those items instead (`_verdict_turns`): a turn's success is that of its
    remaining items; a turn whose every verdict is left out is not counted (the dialogue keeps
    its other turns in order), and a dialogue with no turn left has none.
    """
    attempts = Attempt.objects.filter(run__benchmark=benchmark)
    if run_ids is not None:
        attempts = attempts.filter(run_id__in=list(run_ids))
    meta = {
        a["id"]: a
        for a in attempts.values(
            "id",
            "run__label",
            "run__model__name",
            "instance__external_id",
            "run__settings__patience",
            "outcome__patience",
            "outcome__ended_by",
            "outcome__ended_turn",
        )
    }
    turns = (
        _verdict_turns(judge, list(meta), excluded_items)
        if excluded_items
        else _rollup_turns(benchmark, judge, list(meta))
    )
    return metrics.build_dialogues(meta, turns)


def _rollup_turns(benchmark, judge, attempt_ids: list[int]) -> dict[int, list[metrics.TurnRow]]:
    """attempt -> its TurnRows, from the GroupRollup rows of dimension "turn" (one query)."""
    rollups = GroupRollup.objects.filter(
        benchmark=benchmark, dimension="turn", judge=judge, attempt_id__in=attempt_ids
    ).values_list("attempt_id", "value", "n_applicable", "n_passed")
    return metrics.turn_rows(rollups.order_by())


def _verdict_turns(judge, attempt_ids: list[int], excluded_items: Collection[int]) -> dict[int, list[metrics.TurnRow]]:
    """The same rows as `_rollup_turns`, counted from the verdicts with `excluded_items` left out (one query).

    Counts as runs.services rebuilds the "turn" rollups: verdicts on items with a turn, grouped by
    attempt and turn; applicable = result other than "na", passed = result "pass". A turn is there
    when the judge gave it any verdict that is not left out.
    """
    return metrics.turn_rows(
        Verdict.objects.filter(judge=judge, attempt_id__in=attempt_ids, item__turn__isnull=False)
        .exclude(item_id__in=list(excluded_items))
        .values("attempt_id", "item__turn")
        .annotate(
            a=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
            p=Count("id", filter=Q(result=VerdictResult.PASS)),
        )
        .values_list("attempt_id", "item__turn", "a", "p")
        .order_by()
    )


def excluded_verdicts_select(
    *, judge, dialogues: Sequence[metrics.Dialogue], item_ids: Collection[int], by: str = "model"
) -> dict[str, dict[int, dict[str, int]]]:
    """Model (or run) -> excluded item id -> {"pass": n, "fail": n}: the judge's verdicts on the items an exclusion
    policy leaves out, over the turns these dialogues kept ("na" not counted; what rank_change.items_behind reads)."""
    counts = (
        Verdict.objects.filter(judge=judge, attempt_id__in=[d.key for d in dialogues], item_id__in=list(item_ids))
        .exclude(result=VerdictResult.NOT_APPLICABLE)
        .values("attempt_id", "item__turn", "item_id", "result")
        .annotate(n=Count("id"))
        .values_list("attempt_id", "item__turn", "item_id", "result", "n")
        .order_by()
    )
    return metrics.verdicts_behind(counts, dialogues, by=by)


def group_rows_select(
    *,
    judge,
    dialogues: Sequence[metrics.Dialogue],
    full: Sequence[metrics.Dialogue],
    excluded_items: Collection[int] | None = None,
) -> dict[Any, list[tuple[str, int, int]]]:
    """(group, n_applicable, n_passed) rows per attempt, over the turns each dialogue kept.

    When no dialogue was cut and no item is excluded these are the attempt's "group" rollups;
    after a patience cut the rollups pool turns that no longer count (and under an exclusion
    policy they count the excluded items), so the rows come from one grouped query over the
    verdicts of these attempts, by group and turn, without `excluded_items`.
    """
    attempt_ids = list(dict.fromkeys(d.key for d in dialogues))
    if not metrics.any_cut(dialogues, full) and not excluded_items:
        rows = GroupRollup.objects.filter(dimension="group", judge=judge, attempt_id__in=attempt_ids)
        return metrics.group_rows(rows.values_list("attempt_id", "value", "n_applicable", "n_passed").order_by())
    counts = (
        Verdict.objects.filter(judge=judge, attempt_id__in=attempt_ids)
        .exclude(item__group="")
        .exclude(item_id__in=list(excluded_items or ()))
        .values("attempt_id", "item__group", "item__turn")
        .annotate(
            a=Count("id", filter=~Q(result=VerdictResult.NOT_APPLICABLE)),
            p=Count("id", filter=Q(result=VerdictResult.PASS)),
        )
        .values_list("attempt_id", "item__group", "item__turn", "a", "p")
        .order_by()
    )
    return metrics.group_rows_by_turn(counts, dialogues)


def _paired_verdicts(*, run_ids: Sequence[int], logged, checker) -> QuerySet:
    """The logged judge's applicable verdicts on deterministic constraints that the checker also judged, each with
    the checker's result as `checker`."""
    other = Verdict.objects.filter(
        judge=checker, attempt_id=OuterRef("attempt_id"), item_id=OuterRef("item_id")
    ).values("result")[:1]
    return (
        Verdict.objects.filter(judge=logged, attempt__run_id__in=list(run_ids))
        .exclude(item__group__in=LLM_JUDGED)
        .exclude(result=VerdictResult.NOT_APPLICABLE)
        .annotate(checker=Subquery(other))
        .exclude(checker__isnull=True)
    )


def agreement_rows(*, run_ids: Sequence[int], logged, checker) -> list[metrics.AgreementRow]:
    """Agreement of the logged verdicts with the checker's, per deterministic constraint group (one grouped query)."""
    rows = _paired_verdicts(run_ids=run_ids, logged=logged, checker=checker).values("item__group", "result", "checker")
    counts = rows.annotate(n=Count("id")).order_by()
    return metrics.agreement_rows((r["item__group"], r["result"], r["checker"], r["n"]) for r in counts)


def disagreements(*, run_ids: Sequence[int], logged, checker, group: str | None = None, limit: int = 200) -> list[dict]:
    """The turns where the log and the checker disagree: dialogue, turn, constraint, both verdicts."""
    qs = _paired_verdicts(run_ids=run_ids, logged=logged, checker=checker).exclude(checker=F("result"))
    if group:
        qs = qs.filter(item__group=group)
    return list(
        qs.order_by("attempt__run__label", "attempt__instance__external_id", "item__turn", "item__position").values(
            "attempt_id",
            "attempt__run__label",
            "attempt__instance__external_id",
            "item__turn",
            "item__key",
            "item__group",
            "result",
            "checker",
        )[:limit]
    )


def failing_turns(*, run_ids: Sequence[int], judge, group: str, limit: int = 200) -> list[dict]:
    """Drill-down of a constraint group: the turns where it failed under this judge."""
    return list(
        Verdict.objects.filter(
            judge=judge, attempt__run_id__in=list(run_ids), item__group=group, result=VerdictResult.FAIL
        )
        .order_by("attempt__run__model__name", "attempt__run__label", "attempt__instance__external_id", "item__turn")
        .values(
            "attempt_id",
            "attempt__run__label",
            "attempt__run__model__name",
            "attempt__instance__external_id",
            "item__turn",
            "item__key",
            "reasoning",
        )[:limit]
    )


def dialogue_viewer(attempt: Attempt) -> dict:
    """The viewer's data for one dialogue: its turns (user message, constraint changes, response, each judge's
    verdicts), the judges that scored it and the patience it was logged with."""
    threads = stored_threads(attempt.id)  # a dialogue: a few dozen messages
    messages = [msg for thread in threads for msg in thread.get("messages", [])]
    items = list(
        attempt.instance.items.filter(turn__isnull=False).values("id", "key", "turn", "group", "description", "details")
    )
    verdicts = list(
        Verdict.objects.filter(attempt=attempt).values("item_id", "judge__name", "result", "reasoning", "score")
    )
    for v in verdicts:
        v["judge"] = v.pop("judge__name")
    turns = metrics.viewer_turns(
        spec=attempt.instance.spec, outcome=attempt.outcome, messages=messages, items=items, verdicts=verdicts
    )
    return {
        "benchmark": attempt.run.benchmark,
        "attempt": attempt,
        "turns": turns,
        "judges": sorted({v["judge"] for v in verdicts}),
        "patience": attempt.outcome.get("patience"),
    }


def dialogue_recheck(state: dict) -> dict:
    """The re-check page's data for a validated state: the portal's checker, the logged judge it is compared with,
    their agreement per run and the disagreeing turns (none when either judge is missing)."""
    run_ids = [r.id for r in state["runs"]]
    checker = Judge.objects.filter(name=EVOLIF_CHECKER, kind=JudgeKind.CHECKER).first()
    logged = next((j for j in state["judges"] if j.kind == JudgeKind.LOGGED), None) or (
        logged_judge_for(state["runs"][0]) if state["runs"] else None
    )
    data = {"checker": checker, "checker_name": EVOLIF_CHECKER, "logged": logged}
    if checker and logged:
        data["agreement"] = agreement_rows(run_ids=run_ids, logged=logged, checker=checker)
        data["disagreements"] = disagreements(
            run_ids=run_ids, logged=logged, checker=checker, group=state["group"] or None
        )
    return data
