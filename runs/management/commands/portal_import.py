"""python manage.py portal_import ARCHIVE [--replace SLUG ...] [--no-progress]

Loads an archive of `manage.py portal_export` in one transaction: all of it or nothing (runs/portability.py;
docs/operations.md). An empty portal takes it whole, keeping every id; a portal with data only with --replace."""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.portability import ArchiveError, ProgressBar, portal_import


class Command(BaseCommand):
    help = (
        "Load a portal archive (manage.py portal_export) in one transaction, keeping ids, so links and share "
        "tokens keep working. Refuses a portal that holds data unless --replace names the benchmarks to replace."
    )

    def add_arguments(self, parser):
        parser.add_argument("archive", type=Path, help="the zip file portal_export wrote")
        parser.add_argument(
            "--replace",
            nargs="+",
            default=[],
            metavar="SLUG",
            help="benchmarks of this portal to delete (with their audits and share links) and load from the archive",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, archive: Path, replace: list[str], no_progress: bool, **opts):
        progress = ProgressBar(disable=no_progress)
        started = time.perf_counter()
        try:
            report = portal_import(archive, replace=replace, progress=progress)
        except ArchiveError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            progress.close()
        if opts["verbosity"] >= 2:
            for label, rows in report.rows.items():
                took = report.seconds[label]
                self.stdout.write(f"{label}: {rows:,} rows in {took:.1f} s ({rows / max(took, 1e-9):,.0f} rows/s)")
        self.stdout.write(
            f"{archive}: {sum(report.rows.values()):,} rows of {len(report.rows)} tables and "
            f"{report.media_files} media files loaded in {time.perf_counter() - started:.1f} s"
            + (f"; replaced {', '.join(report.replaced)}" if report.replaced else "")
        )
