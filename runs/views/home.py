"""Home page (benchmarks and runs with their counts) and the import page."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from ifportal.roles import importer_required

from .. import selectors
from ..forms import ImportForm


@login_required
def home(request):
    """Every benchmark and every run, with how much is stored for each."""
    return render(request, "runs/home.html", {"overview": selectors.overview()})


@importer_required
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
