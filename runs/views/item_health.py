"""The item health page of a benchmark with checklist items: which items carry signal (issue 34)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.urls import reverse

from runs.access import benchmark_for
from runs.exports.item_health import item_health_page
from runs.metrics.item_health import FIT_MIN_MODELS, FLAG_LABELS
from runs.pages import render_page
from runs.selectors.item_health import ITEMS_SHOWN
from runs.selectors.item_health import item_health_page as health_selector

#: the page's template per kind: each is framed by its kind's head (crumbs, title, badge, pills)
TEMPLATES = {"checklist": "runs/checklist/item_health.html"}


@login_required
def health(request, slug, kind):
    """Per item and per instance: pass rate, judge split, rest correlation, 2PL fit, audit labels and flags.

    Not blind_safe: every figure is a verdict aggregate of single items a blind annotator may label."""
    benchmark = benchmark_for(request, slug, kind=kind)
    page = health_selector(benchmark, request.GET)
    context = {
        "benchmark": benchmark,
        "health": page,
        "form": page.form,
        "shown": page.items[:ITEMS_SHOWN],
        "flag_pills": [(FLAG_LABELS[flag], count) for flag, count in page.flag_counts.items()],
        "action": reverse(f"runs:{kind}-item-health", args=[slug]),
        "fit_min_models": FIT_MIN_MODELS,
        "query": request.GET.urlencode(),
    }
    return render_page(request, TEMPLATES[kind], context, page_data=item_health_page)
