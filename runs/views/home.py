"""Home page (benchmarks and runs with their counts) and the import page."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from runs.access import blind_safe
from .. import selectors
from ..forms import ImportForm


@blind_safe
@login_required
def home(request):
    """Every benchmark and every run, with how much is stored for each."""
    return render(request, "runs/home.html", {"overview": selectors.overview()})


@login_required  # not blind_safe: annotators label, importing is for reviewers and leads (runs.access)
@require_http_methods(["GET", "POST"])
def import_page(request):
    """Upload files in one format; the import runs as a job and the job page shows its progress."""
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
    else:
        form = ImportForm(initial={"format": request.GET.get("format")})
    if form.is_bound and form.is_valid():
        job = form.save(user=request.user)
        return redirect("runs:job", job_id=job.id)
    recent = selectors.jobs_recent(limit=5)
    status = 400 if request.method == "POST" else 200
    return render(request, "runs/import.html", {"form": form, "recent_jobs": recent}, status=status)
