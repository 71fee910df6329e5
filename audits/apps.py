from django.apps import AppConfig


class AuditsConfig(AppConfig):
    name = "audits"
    verbose_name = "Audits"

    def ready(self):
        # Leaderboards in runs honour audit outcomes through this hook (runs never imports audits).
        from django.urls import reverse

        from audits.selectors import POLICIES, excluded_item_ids, policy_sources
        from runs.exclusions import exclusion_policy_register

        def explain(benchmark, policy):
            return f"{reverse('audits:effect', args=[benchmark.slug])}?exclude={policy}"

        exclusion_policy_register(POLICIES, excluded_item_ids, explain=explain, sources=policy_sources)
