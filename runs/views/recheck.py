"""Starting a re-check of a benchmark's runs with the portal's checkers (runs.recheck), for every kind that has them.

The re-check pages themselves (agreement of the log with the checker) are pages of their kind
(`views/dialogue.py`, `views/hierarchy.py`), rendered with one template, `runs/recheck.html`.
"""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from runs.access import benchmark_for, blind_safe, writes
from runs.jobs import job_create, job_enqueue
from runs.models import Run
from runs.recheck import RECHECK_PAGES
from runs.selectors.recheck import RecheckPreview, recheck_preview


@writes
@blind_safe
@login_required
@require_POST
def start(request, slug, kind):
    """Queue a background re-check of the chosen runs (all runs of the benchmark if none chosen); `kind` comes
    from the route (`RECHECK_PAGES` with "-start"), so a benchmark of another kind is not found. The checker judge's
    verdicts then show on every user's pages, so a POST without `confirm=1` only shows what would change."""
    benchmark = benchmark_for(request, slug, kind=kind)
    labels = request.POST.getlist("run")
    runs = list(Run.objects.filter(benchmark=benchmark, **({"label__in": labels} if labels else {})).order_by("label"))
    if request.POST.get("confirm") != "1":
        preview = recheck_preview(benchmark=benchmark, runs=runs)
        back = reverse(RECHECK_PAGES[kind], args=[benchmark.slug]) + "?" + urlencode([("run", r.label) for r in runs])
        return render(
            request,
            "runs/confirm.html",
            {
                "heading": f"Re-check {len(runs)} run{'s' if len(runs) != 1 else ''} of {benchmark.name}?",
                "consequences": recheck_consequences(preview),
                "action": request.path,
                "fields": [("run", label) for label in labels],
                "confirm_label": "Confirm: start the re-check",
                "cancel_url": back,
            },
        )
    job = job_create(
        kind="recheck", params={"run_ids": [r.id for r in runs], "benchmark": benchmark.slug}, user=request.user
    )
    job_enqueue(job)
    return redirect("runs:job", job_id=job.id)


def recheck_consequences(preview: RecheckPreview) -> list[str]:
    """What a re-check changes for every user, in sentences, from its preview."""
    runs = f"{len(preview.runs)} run{'s' if len(preview.runs) != 1 else ''} ({', '.join(preview.runs)})"
    if preview.existing:
        lines = [
            f"Judge {preview.judge} already has {preview.existing:,} verdicts on {runs}. The re-check "
            f"judges up to {preview.verdicts:,} again from the stored responses of {preview.attempts:,} attempts "
            f"and replaces those that differ, so {preview.judge}'s numbers on these runs may change on every "
            f"user's pages."
        ]
    else:
        lines = [
            f"This adds up to {preview.verdicts:,} verdicts from judge {preview.judge} to {runs}, "
            f"{preview.attempts:,} attempts."
        ]
    if preview.new_judge:
        lines.append(
            f"Every user's leaderboard and metric pages of this benchmark will show judge {preview.judge}, "
            f"which they do not show today."
        )
    lines.append(
        "No verdict of another judge is changed. The re-check runs in the background; its job page says what it wrote."
    )
    return lines
