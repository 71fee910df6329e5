"""The compare page of any benchmark (/b/<slug>/compare/?a=&b=): two runs or models on the instances both cover,
per headline figure of the kind, with the paired interval and test (runs.selectors.compare). The checklist kind has
its own page (runs.views.checklist.compare: both sides' figures and the checklist items that flipped)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required

from runs.access import benchmark_for
from runs.exports import compare as exports
from runs.models import BenchmarkKind
from runs.pages import render_page
from runs.selectors import compare as selectors
from runs.views import checklist

#: each kind's main page, where the compare page's crumbs lead back
KIND_PAGES = {
    BenchmarkKind.DIALOGUE: "runs:dialogue-metrics",
    BenchmarkKind.HIERARCHY: "runs:hierarchy-metrics",
    BenchmarkKind.CHOICE: "runs:choice-metrics",
    BenchmarkKind.CONFLICT: "runs:conflict-metrics",
}


@login_required
def compare(request, slug):
    """Paired comparison of two runs (or two models): per figure, judge and category, B - A with its 95% paired
    interval and test, the instances that flipped, and for dialogues the two survival curves and their log-rank
    test."""
    benchmark = benchmark_for(request, slug)
    if benchmark.kind == BenchmarkKind.CHECKLIST:
        return checklist.compare(request, slug)
    runs = list(benchmark.runs.select_related("model").order_by("label"))
    labels = [r.label for r in runs]
    a, b = request.GET.get("a"), request.GET.get("b")
    context = {
        "benchmark": benchmark,
        "kind_page": KIND_PAGES[benchmark.kind],
        "labels": labels,
        "models": sorted({r.model.name for r in runs}),
        "a": a,
        "b": b,
        # before a choice, the form offers two different runs
        "offered": (a or (labels[0] if labels else ""), b or (labels[1] if len(labels) > 1 else "")),
    }
    if a and b:
        try:
            a, b = (selectors.side_of(benchmark.id, side) for side in (a, b))
        except selectors.UnknownSide as unknown:
            context["unknown_side"] = str(unknown)
        else:
            context["compared"] = selectors.compare_kind(benchmark, a, b)
    builder = exports.dialogue_compare_page if benchmark.kind == BenchmarkKind.DIALOGUE else exports.compare_page
    return render_page(request, "runs/compare.html", context, page_data=builder, fragment=None)
