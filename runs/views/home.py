"""Home page (benchmarks and runs with their counts) and the import page."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from runs import selectors
from runs.access import blind_safe, writes
from runs.forms import ImportForm


@blind_safe
@login_required
def home(request):
    """Every benchmark and every run, with how much is stored for each."""
    return render(request, "runs/home.html", {"overview": selectors.overview()})


@writes  # imports are for editors and leads; not blind_safe either (runs.access)
@login_required
@require_http_methods(["GET", "POST"])
def import_runs(request):
    """Upload files in one format; the import runs as a job and the job page shows its progress. Files that cannot
    be imported with the options given answer at once with the form's errors, and no job."""
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
    else:
        form = ImportForm(initial={"format": request.GET.get("format")})
    job = form.save(user=request.user) if form.is_bound and form.is_valid() else None
    if job is not None:
        return redirect("runs:job", job_id=job.id)
    recent = selectors.jobs_recent(limit=5)
    status = 400 if request.method == "POST" else 200
    return render(request, "runs/import.html", {"form": form, "recent_jobs": recent}, status=status)
