"""Starting a re-check of a benchmark's runs with the portal's checkers (runs.recheck), for every kind that has them.

The re-check pages themselves (agreement of the log with the checker) are pages of their kind
(`views/dialogue.py`, `views/hierarchy.py`), rendered with one template, `runs/recheck.html`.
"""
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from runs.access import benchmark_for, blind_safe
from runs.jobs import job_create, job_enqueue
from runs.models import Run


@blind_safe
@login_required
@require_POST
def start(request, slug, kind):
    """Queue a background re-check of the chosen runs (all runs of the benchmark if none chosen); `kind` comes
    from the route (`<kind>-recheck-start`), so a benchmark of another kind is not found."""
    benchmark = benchmark_for(request, slug, kind=kind)
    labels = request.POST.getlist("run")
    runs = Run.objects.filter(benchmark=benchmark, **({"label__in": labels} if labels else {}))
    job = job_create(kind="recheck", params={"run_ids": list(runs.values_list("id", flat=True)),
                                             "benchmark": benchmark.slug}, user=request.user)
    job_enqueue(job)
    return redirect("runs:job", job_id=job.id)
