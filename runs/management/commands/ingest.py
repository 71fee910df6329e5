"""python manage.py ingest FORMAT PATH... [--benchmark SLUG] [--name NAME] [--model NAME] [--run LABEL]
[--judge NAME] [--scaffold NAME] [--repetition N] [--manifest FILE] [--per-file] [--no-progress]
[--watch [--interval SECONDS]]

PATH is a file or a results folder (walked for the format's files). Which model, run, judge and
repetition each file is comes from the options, a manifest, the files and the harness's layout
(runs/ingest/layout.py; docs/formats.md, "A results folder in one command").

With --watch it keeps running: each new file is imported, and a file that grew or changed is imported again,
each on its own, one line per import, until stopped with Ctrl-C (runs/ingest/watch.py; docs/formats.md,
"Watching a folder").
"""

import signal
import sys
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from runs import background
from runs.ingest import FORMATS, IngestFailed, Options, Report, ingest_each, ingest_units
from runs.ingest.layout import LayoutError, entries_of, manifest_read, plan_import
from runs.ingest.watch import SETTLE_SECONDS, Watcher
from runs.search_index import reasoning_pending
from runs.services import leaderboards_warmed_at_end

#: how many groups of files the plan lists before "and N more"
PLAN_LINES = 12


class Command(BaseCommand):
    help = (
        "Ingest benchmark files or whole results folders in one process; all or nothing unless --per-file. "
        "Formats: " + ", ".join(FORMATS)
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=list(FORMATS))
        parser.add_argument("paths", nargs="+", help="files and results folders to read (folders are walked)")
        parser.add_argument("--benchmark", help="benchmark slug (default: the format's own)")
        parser.add_argument("--name", help="display name of a benchmark this import creates (default: from the slug)")
        parser.add_argument("--model", help="model name of every file (default: the files and the folder layout say)")
        parser.add_argument("--run", help="run label (default: the model name, or <model>-r<N> for repetition folders)")
        parser.add_argument("--judge", help="judge name for verdicts (default: scores_<judge>.json names it)")
        parser.add_argument("--scaffold", help="scaffold the run used")
        parser.add_argument(
            "--repetition", type=int, help="repetition number of the run (default 1, or a rep<N> folder)"
        )
        parser.add_argument(
            "--manifest",
            help="a manifest saying each file's model, run, judge, repetition "
            "(default: ifportal-import.json in a folder given)",
        )
        parser.add_argument(
            "--per-file",
            action="store_true",
            help="store each file on its own: a bad file stores nothing of itself, the others are "
            "stored (default: all or nothing, one transaction for every file)",
        )
        parser.add_argument(
            "--pass-threshold", type=float, help="least score that passes, where scores are numbers (inspect, lm-eval)"
        )
        parser.add_argument("--category-field", help="sample metadata field to group instances by (inspect, lm-eval)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
        parser.add_argument(
            "--watch",
            action="store_true",
            help="keep running: import each new file and again each file that changed, each on its own, "
            "until Ctrl-C (a file caught half-written is tried again later)",
        )
        parser.add_argument(
            "--interval", type=float, default=10.0, help="seconds between two looks at the folders (--watch; 10)"
        )

    def handle(self, *args, **opts):
        options = Options(
            benchmark=opts["benchmark"],
            name=opts["name"],
            model=opts["model"],
            run=opts["run"],
            judge=opts["judge"],
            scaffold=opts["scaffold"],
            repetition=opts["repetition"],
            pass_threshold=opts["pass_threshold"],
            category_field=opts["category_field"],
        )
        if opts["watch"]:
            self._watch(opts, options)
            return
        try:
            entries, found = entries_of(opts["paths"], opts["format"])
            manifests = (
                [manifest_read(Path(opts["manifest"]))] if opts["manifest"] else [manifest_read(m) for m in found]
            )
            units = plan_import(opts["format"], entries, options, manifests)
        except (LayoutError, OSError) as exc:
            raise CommandError(str(exc)) from None
        if len(units) > 1:
            self.stderr.write(f"{sum(len(u.sources) for u in units)} files in {len(units)} groups:")
            for unit in units[:PLAN_LINES]:
                self.stderr.write(f"  {unit.describe()}")
            if len(units) > PLAN_LINES:
                self.stderr.write(f"  and {len(units) - PLAN_LINES} more")
        bar = None
        if not opts["no_progress"]:
            bar = tqdm(total=0, unit="B", unit_scale=True, desc=opts["format"], file=sys.stderr, leave=False)

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.n = done
                bar.refresh()

        try:
            if opts["per_file"]:
                with leaderboards_warmed_at_end():  # one leaderboard precompute for the folder, not one per file
                    outcomes = ingest_each(opts["format"], units, progress=progress)
            else:
                report = ingest_units(opts["format"], units, progress=progress)
        except IngestFailed as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar is not None:
                bar.close()
        if not opts["per_file"]:
            self.stdout.write(report.summary())
        else:
            self._per_file_summary(outcomes)
        self._background_finished()

    def _background_finished(self) -> None:
        """Wait for what the import started in threads of this process (IFPORTAL_JOBS=thread): its judge reasoning
        copied into the search's index, its item health fitted (runs.background). The threads would end with
        this process; a Celery worker does that work on its own, and inline the import has done it."""
        if settings.IFPORTAL_JOBS != "thread":
            return
        pending = reasoning_pending()
        start = time.perf_counter()
        if pending:
            self.stderr.write("making the judge reasoning searchable (the import is stored and shown already)...")
        if background.wait() and pending:
            self.stderr.write(f"judge reasoning searchable after {time.perf_counter() - start:.1f} s")

    def _watch(self, opts, options: Options) -> None:
        """Import as files appear and change until Ctrl-C, which ends it cleanly (exit 0)."""
        if opts["interval"] <= 0:
            raise CommandError("--interval: give a number of seconds above 0")
        try:
            watcher = Watcher(
                opts["format"],
                opts["paths"],
                options,
                manifest=opts["manifest"],
                settle=max(SETTLE_SECONDS, 3 * opts["interval"]),
            )
        except LayoutError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"watching {', '.join(opts['paths'])} every {opts['interval']:g}s; Ctrl-C stops")

        def say(line: str) -> None:
            self.stdout.write(f"{time.strftime('%H:%M:%S')} {line}")
            self.stdout.flush()

        if threading.current_thread() is threading.main_thread():
            # a service manager's stop (SIGTERM) ends the watch as Ctrl-C does: its in-progress marks taken off
            signal.signal(signal.SIGTERM, _interrupt)
        try:
            watcher.run(opts["interval"], say)
        except KeyboardInterrupt:
            self.stderr.write("stopped")

    def _per_file_summary(self, outcomes) -> None:
        stored = Report()
        failed = [(source, outcome) for source, outcome in outcomes if isinstance(outcome, IngestFailed)]
        for _, outcome in outcomes:
            if isinstance(outcome, Report):
                stored.merge(outcome)
        for source, failure in failed:
            self.stderr.write(f"{source.name}: {failure}")
        self.stdout.write(f"{len(outcomes) - len(failed)} of {len(outcomes)} files stored: {stored.summary()}")
        if failed:
            raise CommandError(
                f"{len(failed)} file(s) failed, nothing of them was stored: "
                + ", ".join(source.name for source, _ in failed[:10])
                + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
            )


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
