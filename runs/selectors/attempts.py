"""Reads about attempts shared by the kinds whose attempts have checklists (checklist and conflict): what the
attempt-compare page shows. Numbers come from runs.metrics.attempt_diff."""

from __future__ import annotations

from runs.metrics import attempt_diff as metrics
from runs.models import ChecklistItem, Verdict


def attempt_verdict_diff(*, instance_id: int, attempt_a_id: int, attempt_b_id: int) -> dict:
    """Two attempts of an instance compared item by item and judge by judge (runs.metrics.attempt_diff), from its
    checklist items and both attempts' verdicts: two queries whatever the checklist's size."""
    items = list(
        ChecklistItem.objects.filter(instance_id=instance_id).values(
            "id", "key", "description", "category", "check_type", "position"
        )
    )
    verdicts = (
        Verdict.objects.filter(attempt_id__in=[attempt_a_id, attempt_b_id])
        .values_list("attempt_id", "item_id", "judge__name", "result", "reasoning", "evidence")
        .order_by()
    )
    return metrics.attempt_verdict_diff(items, verdicts, attempt_a_id, attempt_b_id)
