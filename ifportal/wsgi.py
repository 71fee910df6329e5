"""WSGI entry point: the application, warmed (ifportal.warmup) before the server hands it a request."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ifportal.settings")
application = get_wsgi_application()

from ifportal.warmup import warm_process  # noqa: E402 (needs the apps that get_wsgi_application sets up)

warm_process()
