"""Job pages: the list of recent jobs and one job with live progress (page and htmx fragment)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseForbidden
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from runs import jobs as job_runner
from runs import selectors
from runs.access import blind_safe, job_for, writes
from runs.forms import JobFilterForm


@blind_safe
@login_required
def job_list(request):
    """Recent jobs, newest first; the table refreshes itself while any of them runs."""
    form = JobFilterForm(request.GET)
    state = form.cleaned_data["state"] if form.is_valid() else ""
    jobs = [job_runner.job_check_alive(job) for job in selectors.jobs_recent(state=state)]
    context = {"form": form, "jobs": jobs, "state": state, "polling": any(not j.finished for j in jobs)}
    template = "runs/jobs.html#jobs-table" if request.htmx else "runs/jobs.html"
    return render(request, template, context)


@blind_safe
@login_required
def job_detail(request, job_id):
    """One job; the htmx fragment polls every second until the job has finished. A re-check links to the runs
    it checked."""
    job = job_runner.job_check_alive(job_for(request, job_id))
    context = {
        "status": selectors.job_status(job),
        "job": job,
        "can_retry": selectors.job_can_retry(request.user, job),
        "files_removed": selectors.job_files_removed(job),
        "rechecked": selectors.job_rechecked(job),
    }
    template = "runs/job.html#job-status" if request.htmx else "runs/job.html"
    return render(request, template, context)


@writes
@blind_safe
@login_required
@require_POST
def job_retry(request, job_id):
    """Queue a failed job again with the same files and options."""
    job = job_runner.job_check_alive(job_for(request, job_id))
    if not selectors.job_can_retry(request.user, job):
        return HttpResponseForbidden(
            "Only the person who started a failed job can retry it, while its uploaded "
            "files are kept, and only when a retry may end otherwise (a job whose own "
            "files were refused would fail the same way)."
        )
    job_runner.job_retry(job)
    messages.info(request, "The job was queued again.")
    return redirect("runs:job", job_id=job.id)
