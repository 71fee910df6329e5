"""The runs of a benchmark that are not a finished, scored evaluation, as the leaderboard and attempt pages say
them (templates/runs/partials/_run_status.html): the status its harness logged, the samples done of those
planned, whether it was scored. Any format may set them in a run's settings (`status`, `samples_planned`,
`scored`, `error`); the Inspect AI import sets them from the log (docs/formats.md, "Inspect AI logs"), and
runs.ingest.watch sets "started" on the runs of a file still being written. Every kind's main page takes
`page_status` into its context: the "Runs not complete" partial and the results region's polling
(templates/runs/partials/_live_poll.html) read it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.db.models import Count

from runs.models import Attempt, Run

#: the status a harness logs for an evaluation that ran to its end
FINISHED = "success"
#: the status of an evaluation still being written (Inspect AI's until it writes its header; runs.ingest.watch
#: sets it on the runs of a file that keeps changing)
IN_PROGRESS = "started"


@dataclass(frozen=True)
class RunStatus:
    """One run's status as its harness logged it, with the samples it holds of those planned."""

    label: str
    model: str
    status: str
    error: str
    done: int
    #: samples planned over the run (None: the harness did not say)
    planned: int | None
    scored: bool

    def as_dict(self) -> dict:
        """The API's fields."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def in_progress(self) -> bool:
        """Still being written: its figures grow as its samples land."""
        return self.status == IN_PROGRESS

    @property
    def complete(self) -> bool:
        """Finished, scored and holding every sample planned (or the harness did not say how many)."""
        return self.status in ("", FINISHED) and self.scored and (self.planned is None or self.done >= self.planned)


def run_statuses(*, benchmark_id: int, incomplete_only: bool = True) -> list[RunStatus]:
    """The benchmark's runs with their status, by label; only the incomplete ones by default. The runs' settings
    are one query; their samples are counted (a second) only for the runs that may be incomplete: a run the harness
    logged as finished and scored with no samples planned is complete whatever it holds."""
    rows = list(
        Run.objects.filter(benchmark_id=benchmark_id)
        .values_list("id", "label", "model__name", "settings")
        .order_by("label")
    )
    statuses = [(pk, _status(label, model, settings)) for pk, label, model, settings in rows]
    maybe_incomplete = {pk for pk, status in statuses if not incomplete_only or not status.complete}
    done = (
        dict(
            Attempt.objects.filter(run_id__in=maybe_incomplete)
            .values("run_id")
            .annotate(n=Count("id"))
            .values_list("run_id", "n")
            .order_by()
        )
        if maybe_incomplete
        else {}
    )
    counted = [replace(status, done=done.get(pk, 0)) for pk, status in statuses if pk in maybe_incomplete]
    return [status for status in counted if not (incomplete_only and status.complete)]


def _status(label: str, model: str, settings) -> RunStatus:
    """A run's status from its settings, before its samples are counted (done 0)."""
    settings = settings if isinstance(settings, dict) else {}
    planned = settings.get("samples_planned")
    return RunStatus(
        label=label,
        model=model,
        status=str(settings.get("status") or ""),
        error=str(settings.get("error") or ""),
        done=0,
        planned=planned if isinstance(planned, int) and not isinstance(planned, bool) else None,
        scored=settings.get("scored") is not False,
    )


def page_status(*, benchmark_id: int) -> dict:
    """What every kind's main page shows of its runs' status, read live (one query, never from a page cache):
    `statuses`, the incomplete runs for templates/runs/partials/_run_status.html, and `live`, whether one is still
    being written, for templates/runs/partials/_live_poll.html (the results region asks for itself while it is)."""
    statuses = run_statuses(benchmark_id=benchmark_id)
    return {"statuses": statuses, "live": any(s.in_progress for s in statuses)}
