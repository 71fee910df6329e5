"""The benchmark's own app, so `manage.py benchmark` is found while its modules stay out of the runs app."""

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "ifportal.benchmarks"
    label = "benchmarks"
    verbose_name = "Speed and memory benchmark"
