"""The Celery application; tasks live in the apps' tasks.py modules."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ifportal.settings")

app = Celery("ifportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
