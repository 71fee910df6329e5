from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs and results"

    def ready(self) -> None:
        from runs.cache_warming import after_write  # reads models: only once the registry is ready
        from runs.signals import benchmarks_written

        benchmarks_written.connect(after_write, dispatch_uid="runs.cache_warming.after_write")
