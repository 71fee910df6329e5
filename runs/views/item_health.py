"""The item health page of a benchmark: which items (a choice benchmark's tasks) carry signal."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.urls import reverse

from runs.access import benchmark_for, is_lead
from runs.exports.item_health import item_health_page, task_health_page
from runs.metrics.item_health import FIT_MIN_MODELS, FLAG_LABELS, TASK
from runs.pages import render_page
from runs.selectors.item_health import ITEMS_SHOWN
from runs.selectors.item_health import item_health_page as health_selector

#: one page template for every kind, framed by the kind's own head (crumbs, title, badge, page tabs)
HEADS = {
    "checklist": "runs/checklist/_head.html",
    "dialogue": "runs/dialogue/_head.html",
    "hierarchy": "runs/hierarchy/_head.html",
    "conflict": "runs/conflict/_head.html",
    "choice": "runs/choice/_nav.html",
}


@login_required
def health(request, slug, kind):
    """Per item and per instance: pass rate, judge split, rest correlation, 2PL fit, audit labels and flags.

    Not blind_safe: every figure is a verdict aggregate of single items a blind annotator may label."""
    benchmark = benchmark_for(request, slug, kind=kind)
    page = health_selector(benchmark, request.GET)
    context = {
        "benchmark": benchmark,
        "head_template": HEADS[kind],
        "health": page,
        "form": page.form,
        "shown": page.items[:ITEMS_SHOWN],
        "flag_pills": [(FLAG_LABELS[flag], count) for flag, count in page.flag_counts.items()],
        # a choice benchmark's tasks have no judges' verdicts and no audit labels: those columns would stay empty
        "tasks": page.report.unit == TASK,
        "judged_twice": page.report.judged_twice,
        "action": reverse(f"runs:{kind}-item-health", args=[slug]),
        "fit_min_models": FIT_MIN_MODELS,
        "query": request.GET.urlencode(),
        # a lead may start an audit of the flagged items (the audits app's form; its "item health flag" stratum)
        "audit_link": _audit_link(benchmark) if is_lead(request.user) else "",
    }
    return render_page(
        request, "runs/item_health.html", context, page_data=task_health_page if context["tasks"] else item_health_page
    )


def _audit_link(benchmark) -> str:
    """The audits app's new-campaign form, proposing an audit of this benchmark's items stratified by health flag."""
    subject = {"checklist": "checklist_items", "conflict": "checklist_items", "hierarchy": "hierarchy_constraints"}.get(
        benchmark.kind
    )
    if subject is None:  # a dialogue audit's units are turns, which carry no item flags; a choice task is no item
        return ""
    query = urlencode(
        {
            "name": f"{benchmark.name}: item health flags",
            "subject": subject,
            "strata": "health",
            "benchmarks": benchmark.id,
        }
    )
    return f"{reverse('audits:campaign-create')}?{query}"
