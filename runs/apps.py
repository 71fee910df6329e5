from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs and results"

    def ready(self) -> None:
        from runs.cache_warming import after_write  # reads models: only once the registry is ready
        from runs.search_index import reasoning_index_soon
        from runs.signals import benchmarks_written

        benchmarks_written.connect(after_write, dispatch_uid="runs.cache_warming.after_write")
        benchmarks_written.connect(reasoning_index_soon, dispatch_uid="runs.search_index.reasoning_index_soon")
        _register_health_policies()


def _register_health_policies() -> None:
    """Every leaderboard may leave out the items item health flags (runs.metrics.item_health.HEALTH_POLICIES),
    as it leaves out those the audits' policies name; the explanation is the benchmark's item health page."""
    from urllib.parse import urlencode

    from django.urls import reverse

    from runs.exclusions import exclusion_policy_register
    from runs.metrics.item_health import HEALTH_POLICIES
    from runs.selectors.item_health import health_excluded_items, health_policy_flags

    def explain(benchmark, policy):
        query = urlencode({"flag": health_policy_flags(benchmark, policy)}, doseq=True)
        return f"{reverse(f'runs:{benchmark.kind}-item-health', args=[benchmark.slug])}?{query}"

    def sources(benchmark, policy):
        return "the item health flags of the benchmark's current data (docs/metrics.md, Item health)"

    exclusion_policy_register(HEALTH_POLICIES, health_excluded_items, explain=explain, sources=sources)
