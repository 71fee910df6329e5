"""python manage.py uploads_clean [--days N]: delete uploaded files kept past the retention period."""
from django.conf import settings
from django.core.management.base import BaseCommand

from runs.jobs import uploads_clean


class Command(BaseCommand):
    help = ("Delete the uploads of jobs that finished more than IFPORTAL_UPLOAD_RETENTION_DAYS days ago "
            "(and orphaned upload folders as old). Run it daily from cron; Celery beat runs it itself.")

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None,
                            help=f"keep this many days instead (default {settings.IFPORTAL_UPLOAD_RETENTION_DAYS})")

    def handle(self, *args, days: int | None, **opts):
        removed = uploads_clean(days=days)
        self.stdout.write(f"removed the uploads of {len(removed)} job(s)")
