"""python manage.py uploads_clean [--days N]: delete uploaded files kept past the retention period."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from runs.jobs import uploads_clean


class Command(BaseCommand):
    help = (
        "Delete the uploads of jobs that finished more than IFPORTAL_UPLOAD_RETENTION_DAYS days ago "
        "(and orphaned upload folders as old, and a day old at least). Run it daily from cron; Celery beat runs "
        "it itself. A job whose uploads are deleted can no longer be retried."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="keep this many days instead: 0 deletes the uploads of every finished job (queued "
            f"and running jobs keep theirs). Default {settings.IFPORTAL_UPLOAD_RETENTION_DAYS} "
            "(IFPORTAL_UPLOAD_RETENTION_DAYS; its 0 keeps uploads)",
        )

    def handle(self, *args, days: int | None, **opts):
        if days is None and settings.IFPORTAL_UPLOAD_RETENTION_DAYS <= 0:
            self.stdout.write("IFPORTAL_UPLOAD_RETENTION_DAYS is 0: uploads are kept (pass --days to delete some)")
            return
        try:
            removed = uploads_clean(days=days)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"removed the uploads of {len(removed)} job(s)")
