"""Dialogue-benchmark pages (EvolIF): metrics, survival curves, constraint groups, dialogue viewer, rescore."""
from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from runs.access import blind_safe
from runs.charts import dialogue as dialogue_charts
from runs.exclusions import (
    excluded_item_ids,
    exclusion_box,
    exclusion_policy_choices,
)
from runs.exports import dialogue as exports
from runs.metrics import dialogue as m
from runs.models import (
    Attempt,
    Benchmark,
    BenchmarkKind,
    ChecklistItem,
    Judge,
    JudgeKind,
    Run,
    Verdict,
)
from runs.pages import render_page
from runs.querystring import query_with
from runs.rescore import CHECKER_JUDGE, logged_judge_for
from runs.services import job_create, job_enqueue
from runs.trajectory_view import stored_threads

METRIC_COLUMNS = [
    ("csr", "CSR %"), ("isr", "ISR %"), ("act_len", "ACT len"), ("act_acc", "ACT acc"),
    ("act_succ", "ACT succ"), ("lss", "LSS"), ("rob", "ROB %"), ("rec", "REC %"),
]
SORTS = [("label", "name")] + [(f"-{k}", f"{label} (high first)") for k, label in METRIC_COLUMNS]
#: the metric rows are ranked by under an exclusion policy when the page is sorted by name (its default)
RANK_METRIC = "csr"


class DialogueFilterForm(forms.Form):
    """Which runs, judge and patience a dialogue page shows, and how rows are grouped and sorted."""

    run = forms.MultipleChoiceField(required=False, label="Runs")
    judge = forms.ChoiceField(required=False, label="Judge")
    patience = forms.IntegerField(required=False, min_value=1, label="Patience")
    by = forms.ChoiceField(required=False, choices=[("model", "model (runs pooled)"), ("run", "run")], label="Rows per")
    sort = forms.ChoiceField(required=False, choices=SORTS, label="Sort")
    group = forms.CharField(required=False, max_length=100)
    exclude = forms.ChoiceField(required=False, label="Audit exclusion")

    def __init__(self, data, *, runs, judges):
        super().__init__(data)
        self.fields["exclude"].choices = exclusion_policy_choices()
        self.fields["run"].choices = [(r.label, f"{r.label} ({r.model.name})") for r in runs]
        self.fields["judge"].choices = [(j.name, f"{j.name} ({j.get_kind_display()})") for j in judges]


def _benchmark(slug: str) -> Benchmark:
    """The dialogue benchmark with this slug, or 404."""
    return get_object_or_404(Benchmark, slug=slug, kind=BenchmarkKind.DIALOGUE)


def _state(request, benchmark: Benchmark, *, exclusion: bool = False) -> dict:
    """Parse the query string and compute the (re-simulated) dialogues it selects; with `exclusion`, under the
    chosen audit exclusion policy (only pages that say so pass it: the others show every item)."""
    runs = list(Run.objects.filter(benchmark=benchmark).select_related("model").order_by("label"))
    judges = m.dialogue_judges(benchmark)
    form = DialogueFilterForm(request.GET, runs=runs, judges=judges)
    form.is_valid()  # a field that does not validate is left out (and its error shown); the others still apply
    clean = form.cleaned_data
    chosen = [r for r in runs if r.label in clean.get("run", [])] or runs
    judge = next((j for j in judges if j.name == clean.get("judge")), judges[0] if judges else None)
    exclude = clean.get("exclude") or "none"
    excluded = excluded_item_ids(benchmark, exclude) if exclusion else None
    full = m.dialogues_select(benchmark=benchmark, judge=judge, run_ids=[r.id for r in chosen],
                              excluded_items=excluded) if judge else []
    known = [d.patience for d in full]
    recorded = min(known) if known and None not in known else None
    patience, refused = clean.get("patience") or recorded, None
    try:
        dialogues = m.resimulate(full, patience if recorded else None)
    except m.PatienceRefused as exc:
        refused, patience, dialogues = str(exc), recorded, m.resimulate(full, recorded)
    by = clean.get("by") or "model"
    return {
        "benchmark": benchmark, "form": form, "runs": chosen, "judge": judge, "judges": judges, "full": full,
        "dialogues": dialogues, "recorded": recorded, "patience": patience, "refused": refused, "by": by,
        "sort": clean.get("sort") or "label", "group": clean.get("group") or "", "query": request.GET.urlencode(),
        "patience_choices": list(range(1, (recorded or 0) + 1)), "exclude": exclude, "excluded": excluded,
    }


def _sorted(rows, sort: str):
    if sort == "label":
        return sorted(rows, key=lambda r: r.label)
    key = sort.lstrip("-")
    present = [r for r in rows if getattr(r.metrics, key) is not None]
    missing = [r for r in rows if getattr(r.metrics, key) is None]
    return sorted(present, key=lambda r: getattr(r.metrics, key), reverse=True) + missing


@blind_safe
@login_required
def metrics(request, slug):
    """The eight EvolIF metrics per model (or run) with dialogue counts, at a chosen patience."""
    state = _state(request, _benchmark(slug), exclusion=True)
    state["rows"] = _sorted(m.rows_by(state["dialogues"], by=state["by"]), state["sort"])
    state["columns"] = METRIC_COLUMNS
    state["rank_metric"] = rank_metric(state["sort"])
    state["exclusion"] = None if state["excluded"] is None or state["judge"] is None else _exclusion(state)
    effects = state["exclusion"]["lines"] if state["exclusion"] else {}
    state["lines"] = [{"row": r, "effect": effects.get(r.label)} for r in state["rows"]]
    state["off_query"] = query_with(request, exclude=None)
    return render_page(request, "runs/dialogue/metrics.html", {**state, "active": "metrics"}, page_data=exports.metrics_page)


def rank_metric(sort: str) -> tuple[str, str]:
    """(key, column label) of the metric rows are ranked by under an exclusion policy: the one the page is sorted
    by, or CSR (the first metric column) when it is sorted by name."""
    key = sort.lstrip("-") if sort != "label" else RANK_METRIC
    return key, dict(METRIC_COLUMNS)[key]


def _exclusion(state: dict) -> dict:
    """What the exclusion policy did to the ranking by the page's metric: ranks before and after, Kendall's tau,
    the swaps with the excluded items behind each, the turns and dialogues left with no item, the excluded items."""
    excluded, judge, key = state["excluded"], state["judge"], state["rank_metric"][0]
    full = m.dialogues_select(benchmark=state["benchmark"], judge=judge, run_ids=[r.id for r in state["runs"]])
    try:
        before = m.resimulate(full, state["patience"] if state["recorded"] else None)
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


@blind_safe
@login_required
def survival(request, slug):
    """Survival curves per model with the turn of each model's steepest drop."""
    state = _state(request, _benchmark(slug))
    rows = m.rows_by(state["dialogues"], by=state["by"])
    state.update(rows=rows, figure=dialogue_charts.survival_figure(rows, patience=state["patience"]))
    return render_page(request, "runs/dialogue/survival.html", {**state, "active": "survival"}, page_data=exports.survival_page)


@blind_safe(drop=("group",))
@login_required
def groups(request, slug):
    """Pass rate per constraint group per model, as a table and a chart; drill down to failing turns."""
    state = _state(request, _benchmark(slug))
    per_attempt = m.group_rows_select(judge=state["judge"], dialogues=state["dialogues"], full=state["full"]) if state["judge"] else {}
    table = m.group_profile(state["dialogues"], per_attempt, by=state["by"])
    state.update(table, figure=dialogue_charts.groups_figure(table["series"], table["groups"]))
    if state["group"] and state["judge"]:  # the failing turns are verdicts: runs.access drops `group` for blind annotators
        state["failures"] = m.failing_turns(run_ids=[r.id for r in state["runs"]], judge=state["judge"], group=state["group"])
    return render_page(request, "runs/dialogue/groups.html", {**state, "active": "groups"}, page_data=exports.groups_page)


@login_required
def dialogues(request, slug):
    """Every selected dialogue with its length and how it ended, linking to the viewer."""
    state = _state(request, _benchmark(slug))
    state["items"] = [(d, sum(d.successes)) for d in state["dialogues"]]
    return render_page(request, "runs/dialogue/dialogues.html", {**state, "active": "dialogues"}, page_data=exports.dialogues_page)


@login_required
def viewer(request, slug, pk):
    """One dialogue turn by turn: user message, constraint changes, response, verdicts, patience."""
    attempt = get_object_or_404(
        Attempt.objects.select_related("run__model", "run__benchmark", "instance"), pk=pk,
        run__benchmark__slug=slug, run__benchmark__kind=BenchmarkKind.DIALOGUE,
    )
    threads = stored_threads(attempt.id)  # a dialogue: a few dozen messages
    messages = [msg for thread in threads for msg in thread.get("messages", [])]
    items = list(attempt.instance.items.filter(turn__isnull=False).values("id", "key", "turn", "group", "description", "details"))
    verdicts = list(Verdict.objects.filter(attempt=attempt).values("item_id", "judge__name", "result", "reasoning", "score"))
    for v in verdicts:
        v["judge"] = v.pop("judge__name")
    turns = m.viewer_turns(spec=attempt.instance.spec, outcome=attempt.outcome, messages=messages, items=items, verdicts=verdicts)
    judges = sorted({v["judge"] for v in verdicts})
    context = {"benchmark": attempt.run.benchmark, "attempt": attempt, "turns": turns, "judges": judges,
               "patience": attempt.outcome.get("patience"), "active": "dialogues"}
    return render(request, "runs/dialogue/viewer.html", context)


@login_required
def rescore(request, slug):
    """Agreement between logged verdicts and the portal's checkers, with the disagreeing turns."""
    state = _state(request, _benchmark(slug))
    run_ids = [r.id for r in state["runs"]]
    checker = Judge.objects.filter(name=CHECKER_JUDGE, kind=JudgeKind.CHECKER).first()
    logged = next((j for j in state["judges"] if j.kind == JudgeKind.LOGGED), None) or (
        logged_judge_for(state["runs"][0]) if state["runs"] else None)
    if checker and logged:
        state["agreement"] = m.agreement_rows(run_ids=run_ids, logged=logged, checker=checker)
        state["disagreements"] = m.disagreements(run_ids=run_ids, logged=logged, checker=checker, group=state["group"] or None)
    state.update(checker=checker, logged=logged, active="rescore")
    return render_page(request, "runs/dialogue/rescore.html", state, page_data=exports.recheck_page)


@blind_safe
@login_required
@require_POST
def rescore_start(request, slug):
    """Queue a background re-check of the chosen runs (all runs of the benchmark if none chosen)."""
    benchmark = _benchmark(slug)
    labels = request.POST.getlist("run")
    runs = Run.objects.filter(benchmark=benchmark, **({"label__in": labels} if labels else {}))
    job = job_create(kind="rescore-evolif", params={"run_ids": list(runs.values_list("id", flat=True)),
                                                    "benchmark": benchmark.slug}, user=request.user)
    job_enqueue(job)
    return redirect("runs:job", job_id=job.id)
