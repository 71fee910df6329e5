"""Dialogue pages' state (EvolIF): the query string validated with its defaults, and what each page and
/api/dialogue-metrics/ show for it. Numbers come from runs.metrics.dialogue (definitions: docs/metrics.md#dialogue).

The recorded patience is the lowest patience the chosen dialogues were logged with, None when one of them was
logged without one; the dialogues are re-simulated at the asked patience, else at the recorded one (so every
dialogue is counted at one patience). A patience the logs cannot answer for is refused with
runs.metrics.dialogue.PatienceRefused's words: the page says so and shows the recorded patience, the API answers
400 with the same words."""
from __future__ import annotations

from django import forms

from runs.exclusions import exclusion_box
from runs.metrics import dialogue as m
from runs.models import Benchmark, ChecklistItem, Run
from runs.selectors.state import KindQuery, kind_state, query_errors

METRIC_COLUMNS = [
    ("csr", "CSR %"), ("isr", "ISR %"), ("act_len", "ACT len"), ("act_acc", "ACT acc"),
    ("act_succ", "ACT succ"), ("lss", "LSS"), ("rob", "ROB %"), ("rec", "REC %"),
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
    judges = m.dialogue_judges(benchmark)
    form = DialogueQuery(query, runs=runs, judges=judges)
    state = kind_state(form, benchmark=benchmark, runs=runs, judges=judges, exclusion=exclusion)
    clean = form.cleaned_data
    judge = state["judge"]
    full = m.dialogues_select(benchmark=benchmark, judge=judge, run_ids=state["run_ids"],
                              excluded_items=state["excluded"]) if judge else []
    known = [d.patience for d in full]
    recorded = min(known) if known and None not in known else None
    asked = clean.get("patience")
    patience, refused = asked or recorded, None
    try:
        dialogues = m.resimulate(full, patience)
    except m.PatienceRefused as exc:
        refused, patience, dialogues = str(exc), recorded, m.resimulate(full, recorded)
    state.update(full=full, dialogues=dialogues, recorded=recorded, patience=patience, refused=refused,
                 sort=clean.get("sort") or "label", group=clean.get("group") or "",
                 patience_choices=list(range(1, (recorded or 0) + 1)),
                 errors=query_errors(form, {"patience": refused} if refused else None))
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
    """The metrics page's data: a row per model (or run) in the page's order, and under an exclusion policy what it
    did to the ranking (each row's rank line in `lines`)."""
    rows = _sorted(m.rows_by(state["dialogues"], by=state["by"]), state["sort"])
    ranked_by = rank_metric(state["sort"])
    exclusion = None if state["excluded"] is None or state["judge"] is None else _exclusion(state, ranked_by[0])
    effects = exclusion["lines"] if exclusion else {}
    return {"rows": rows, "columns": METRIC_COLUMNS, "rank_metric": ranked_by, "exclusion": exclusion,
            "lines": [{"row": r, "effect": effects.get(r.label)} for r in rows]}


def _exclusion(state: dict, key: str) -> dict:
    """What the exclusion policy did to the ranking by `key`: ranks before and after, Kendall's tau, the swaps with
    the excluded items behind each, the turns and dialogues left with no item, the excluded items."""
    excluded, judge = state["excluded"], state["judge"]
    full = m.dialogues_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"])
    try:
        before = m.resimulate(full, state["patience"])
    except m.PatienceRefused:  # a dialogue the policy emptied was logged without a patience: none can be simulated
        before = m.resimulate(full, None)
    after_turns = {d.key: len(d.turns) for d in state["full"]}
    dropped_turns = sum(len(d.turns) - after_turns.get(d.key, 0) for d in full)
    dropped_dialogues = sum(d.key not in after_turns for d in full)
    verdicts = m.excluded_verdicts_select(judge=judge, dialogues=before, item_ids=excluded, by=state["by"]) \
        if excluded else {}
    lines, tau, swaps = m.metric_rank_change(m.rows_by(before, by=state["by"]), m.rows_by(state["dialogues"], by=state["by"]),
                                             key, verdicts)
    items = {i["id"]: i for i in ChecklistItem.objects.filter(id__in=list(excluded)).values(
        "id", "key", "turn", "group", "description", "instance__external_id")}
    shown = sorted(items.values(), key=lambda i: (i["instance__external_id"], i["turn"] or 0, i["key"]))
    return {**exclusion_box(state["exclude"], excluded, lines, tau, swaps, items, shown),
            "dropped_turns": dropped_turns, "dropped_dialogues": dropped_dialogues}


def dialogue_survival(state: dict) -> dict:
    """The survival page's data: a row per model (or run) with its curve and steepest drop."""
    return {"rows": m.rows_by(state["dialogues"], by=state["by"])}


def dialogue_groups(state: dict) -> dict:
    """The constraint-groups page's data: pass rate per group per model (or run), and the failing turns of the chosen
    group (verdicts: runs.access drops `group` for blind annotators)."""
    judge = state["judge"]
    per_attempt = m.group_rows_select(judge=judge, dialogues=state["dialogues"], full=state["full"]) if judge else {}
    data = m.group_profile(state["dialogues"], per_attempt, by=state["by"])
    if state["group"] and judge:
        data["failures"] = m.failing_turns(run_ids=state["run_ids"], judge=judge, group=state["group"])
    return data


def dialogue_list(state: dict) -> dict:
    """The dialogues page's data: every selected dialogue with its number of successful turns."""
    return {"items": [(d, sum(d.successes)) for d in state["dialogues"]]}


def dialogue_pooled(state: dict) -> dict:
    """One model's runs pooled, as /api/dialogue-metrics/ answers: the metrics page's row for them (rows per model),
    the excluded turns, and the pass rate per constraint group over the turns counted (under the policy)."""
    [row] = m.rows_by(state["dialogues"], by="model") or [None]
    excluded, judge = state["excluded"], state["judge"]
    excluded_turns = 0
    if excluded:
        every = m.dialogues_select(benchmark=state["benchmark"], judge=judge, run_ids=state["run_ids"])
        excluded_turns = sum(d.length for d in every) - sum(d.length for d in state["full"])
    per_attempt = m.group_rows_select(judge=judge, dialogues=state["dialogues"], full=state["full"], excluded_items=excluded)
    groups = m.group_pass_rates(r for rows in per_attempt.values() for r in rows)
    return {"row": row, "excluded_turns": excluded_turns, "groups": groups,
            "ended_by": m.ending_counts(state["dialogues"])}
