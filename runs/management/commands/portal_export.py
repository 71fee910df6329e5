"""python manage.py portal_export ARCHIVE [--benchmark SLUG ...] [--with-password-hashes] [--no-progress]

Writes the portal (or the benchmarks named, with their audits and share links) to one zip archive that
`manage.py portal_import` loads into another portal (runs/portability.py; docs/operations.md)."""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.portability import ArchiveError, ProgressBar, portal_export


class Command(BaseCommand):
    help = (
        "Write the whole portal (or some benchmarks) to one archive: every table as JSON lines, the files under "
        "MEDIA_ROOT, and a manifest with counts and checksums. Users go without their password hashes and API "
        "tokens unless --with-password-hashes."
    )

    def add_arguments(self, parser):
        parser.add_argument("archive", type=Path, help="the zip file to write (replaced when it exists)")
        parser.add_argument(
            "--benchmark",
            nargs="+",
            default=None,
            metavar="SLUG",
            help="only these benchmarks, their audit campaigns and share links (users, models and judges whole; "
            "no media files)",
        )
        parser.add_argument(
            "--with-password-hashes",
            action="store_true",
            help="carry password hashes and API tokens, so people sign in on the new portal as before",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, archive: Path, benchmark, with_password_hashes: bool, no_progress: bool, **opts):
        progress = ProgressBar(disable=no_progress)
        started = time.perf_counter()
        try:
            report = portal_export(
                archive, benchmark_slugs=benchmark, with_password_hashes=with_password_hashes, progress=progress
            )
        except ArchiveError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            progress.close()
        rows = sum(m["rows"] for m in report.members)
        self.stdout.write(
            f"{archive}: {rows:,} rows of {len(report.members)} tables and {report.media_files} media files "
            f"in {time.perf_counter() - started:.1f} s"
        )
