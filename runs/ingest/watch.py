"""Watching a results folder while a harness writes it: `python manage.py ingest FORMAT DIR --watch`.

`Watcher.once()` is one look at the folders: every file the format reads (runs.ingest.layout) whose size,
modification time and SHA-256 differ from what was last stored is imported on its own, all or nothing, through
the same per-file path as `ingest --per-file` (`runs.ingest.ingest_units` with the folder's layout and manifest).
It returns one line per import. `Watcher.run()` repeats it every `interval` seconds until stopped; the clock and
the sleep are injected, so the bookkeeping is tested without waiting.

- A file caught half-written (a parse error, a truncated zip, a partial last JSONL line) stores nothing and is
  tried again when it changes, or after another file was stored (it may have waited for that one: scores for
  trajectories not yet imported); it is said once per state, and listed again when the watch stops.
- The state compared is the one taken before reading: a file that changes while it is read is imported again.
- A run still being written shows "in progress" on its pages. An Inspect AI log says so itself (status
  `started` until inspect_ai writes its header). For the other formats the watcher says it: a run stored from a
  file that appeared or changed after the watch began gets the status `started` in its settings (with
  `watched: true`, so only the watcher's own mark is ever taken off), cleared once the file has not changed for
  `settle` seconds, and when the watch stops.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from runs.ingest import IngestFailed, Options, Unit, ingest_units
from runs.ingest.layout import LayoutError, entries_of, manifest_read, plan_import
from runs.models import Run
from runs.selectors.run_status import IN_PROGRESS
from runs.services import benchmarks_generation_bump, leaderboards_warmed_at_end

#: formats whose files say their run's status themselves: the watcher never marks their runs
SAYS_STATUS = frozenset({"inspect"})
#: how long a file must stay unchanged before the watcher takes its run's "in progress" off (seconds, at least)
SETTLE_SECONDS = 60.0


@dataclass(frozen=True)
class FileState:
    """What a file was when it was read: size, modification time (ns) and SHA-256 of its bytes."""

    size: int
    mtime_ns: int
    sha256: str

    def same_stat(self, size: int, mtime_ns: int) -> bool:
        return self.size == size and self.mtime_ns == mtime_ns


@dataclass
class Tracked:
    """One file's bookkeeping: the state last stored, the state last refused and why, when it last changed."""

    stored: FileState | None = None
    refused: FileState | None = None
    reason: str = ""
    #: how many files had been stored when it was last refused (retried once another one is)
    refused_at: int = 0
    changed_at: float = 0.0
    #: the runs the watcher marked in progress from this file
    marked: set[int] = field(default_factory=set)


def file_state(path: Path) -> FileState:
    """The file's size, modification time and SHA-256 (read in 1 MB chunks)."""
    before = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return FileState(before.st_size, before.st_mtime_ns, digest.hexdigest())


class Watcher:
    """Imports the files of `paths` as `format_name` as they appear and change (see the module's docstring)."""

    def __init__(
        self,
        format_name: str,
        paths: Sequence[str | Path],
        options: Options,
        *,
        manifest: str | Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        settle: float = SETTLE_SECONDS,
    ):
        missing = [str(p) for p in paths if not Path(p).exists()]
        if missing:
            raise LayoutError(f"{missing[0]}: no such file or folder")
        self.format_name = format_name
        self.paths = [str(p) for p in paths]
        self.options = options
        self.manifest = Path(manifest) if manifest else None
        self.clock = clock
        self.settle = settle
        self.files: dict[Path, Tracked] = {}
        self.stored = 0
        self.steps = 0

    # one look ----------------------------------------------------------------------------
    def once(self) -> list[str]:
        """Import what is new or changed since the last look; one line per file imported or refused."""
        first = self.steps == 0
        self.steps += 1
        now = self.clock()
        try:
            entries, manifests = self._entries()
        except (LayoutError, OSError) as exc:
            return [f"not read this time: {exc}"]
        due: dict[Path, FileState] = {}
        for entry in entries:
            tracked = self.files.setdefault(entry.path, Tracked(changed_at=now))
            state = self._changed(entry.path, tracked)
            if state is None:
                continue
            if state != tracked.refused:
                tracked.changed_at = now
            if state == tracked.refused and tracked.refused_at == self.stored:
                continue  # refused as it is, and nothing stored since that it may have waited for
            due[entry.path] = state
        lines: list[str] = []
        if due:
            try:
                units = plan_import(self.format_name, entries, self.options, manifests)
            except (LayoutError, OSError) as exc:
                return [f"not read this time: {exc}"]
            with leaderboards_warmed_at_end():  # one leaderboard precompute per look, not one per file
                for unit in units:
                    for source in unit.sources:
                        if source.path in due:
                            lines.append(self._import(unit, source, due[source.path], live=not first))
        lines.extend(self._settled(now))
        return lines

    def _entries(self):
        """The format's files in the paths (a folder with none yet is empty, not an error) and the manifests."""
        entries, found = [], []
        for raw in self.paths:
            try:
                more, manifests = entries_of([raw], self.format_name)
            except LayoutError:
                if Path(raw).is_dir():
                    continue
                raise
            entries.extend(more)
            found.extend(manifests)
        chosen = [manifest_read(self.manifest)] if self.manifest else [manifest_read(m) for m in found]
        return entries, chosen

    @staticmethod
    def _changed(path: Path, tracked: Tracked) -> FileState | None:
        """The file's state if it differs from the one stored (hashed only when its size or time moved)."""
        try:
            stat = path.stat()
        except OSError:
            return None  # gone between the walk and now: looked at again next time
        for known in (tracked.stored, tracked.refused):
            if known is not None and known.same_stat(stat.st_size, stat.st_mtime_ns):
                return None if known is tracked.stored else known
        try:
            state = file_state(path)
        except OSError:
            return None
        if tracked.stored is not None and state.sha256 == tracked.stored.sha256:
            tracked.stored = state  # touched, not changed
            return None
        return state

    def _import(self, unit: Unit, source, state: FileState, *, live: bool) -> str:
        tracked = self.files[source.path]
        try:
            report = ingest_units(self.format_name, [Unit(unit.options, [source])])
        except IngestFailed as failed:
            said = str(failed.problems[0]) if failed.problems else str(failed).splitlines()[0]
            if failed.total > 1:
                said += f" (and {failed.total - 1} more problem(s))"
            repeat = tracked.refused is not None and said == tracked.reason
            tracked.refused, tracked.reason, tracked.refused_at = state, said, self.stored
            if repeat:
                return f"{source.name}: still not stored ({said})"
            return f"{source.name}: not stored yet, tried again when it changes: {said}"
        tracked.stored, tracked.refused, tracked.reason = state, None, ""
        self.stored += 1
        line = f"{source.name}: {report.summary().splitlines()[0]}"
        if live and self.format_name not in SAYS_STATUS:
            marked = self._mark(source.name, state.sha256)
            tracked.marked |= marked
            if marked:
                line += f"; in progress ({len(marked)} run{'s' if len(marked) != 1 else ''})"
        return line

    # in progress -------------------------------------------------------------------------
    def _mark(self, name: str, sha256: str) -> set[int]:
        """Mark the runs stored from this file (by its name and hash in Run.sources) in progress, unless their
        harness said a status; returns their ids."""
        marked: set[int] = set()
        with transaction.atomic():
            runs = [
                run
                for run in Run.objects.only("id", "benchmark_id", "sources", "settings")
                if any(s.get("name") == name and s.get("sha256") == sha256 for s in run.sources if isinstance(s, dict))
            ]
            for run in runs:
                settings = run.settings if isinstance(run.settings, dict) else {}
                if settings.get("status") and not settings.get("watched"):
                    continue  # the harness said it: not the watcher's to change
                marked.add(run.id)
                if settings.get("status") != IN_PROGRESS:
                    run.settings = {**settings, "status": IN_PROGRESS, "watched": True}
                    run.save(update_fields=["settings"])
            if runs:
                benchmarks_generation_bump(run.benchmark_id for run in runs)
        return marked

    def _settled(self, now: float) -> list[str]:
        """Take "in progress" off the runs of files unchanged for `settle` seconds."""
        lines = []
        for path, tracked in self.files.items():
            if tracked.marked and now - tracked.changed_at >= self.settle:
                n = unmark(tracked.marked)
                tracked.marked = set()
                if n:
                    lines.append(f"{path.name}: unchanged for {self.settle:g}s, its run is no longer in progress")
        return lines

    # the loop ----------------------------------------------------------------------------
    def run(
        self,
        interval: float,
        say: Callable[[str], None],
        *,
        sleep: Callable[[float], None] | None = None,
        steps: int | None = None,
    ) -> None:
        """Look every `interval` seconds (`steps` looks, or until interrupted), saying each line; on the way out,
        take the watcher's "in progress" marks off and say which files are still not stored."""
        try:
            done = 0
            while steps is None or done < steps:
                for line in self.once():
                    say(line)
                done += 1
                if steps is None or done < steps:
                    (sleep or time.sleep)(interval)
        finally:
            unmark(set().union(*(t.marked for t in self.files.values())) if self.files else set())
            for tracked in self.files.values():
                tracked.marked = set()
            for line in self.pending():
                say(line)

    def pending(self) -> list[str]:
        """The files refused in the state they are in now (none is left behind unsaid)."""
        return [
            f"{path}: not stored ({tracked.reason})"
            for path, tracked in self.files.items()
            if tracked.refused is not None and tracked.stored != tracked.refused
        ]


def unmark(run_ids: set[int]) -> int:
    """Take the watcher's own "in progress" off these runs; how many it was on."""
    if not run_ids:
        return 0
    n = 0
    with transaction.atomic():
        runs = list(Run.objects.select_for_update().filter(id__in=run_ids).only("id", "benchmark_id", "settings"))
        changed = []
        for run in runs:
            settings = run.settings if isinstance(run.settings, dict) else {}
            if settings.get("watched"):
                run.settings = {k: v for k, v in settings.items() if k not in ("status", "watched")}
                run.save(update_fields=["settings"])
                changed.append(run.benchmark_id)
                n += 1
        if changed:
            benchmarks_generation_bump(changed)
    return n
