"""Item health of a benchmark with checklist items: the state its page, exports and API share, and the report
(runs.metrics.item_health) computed once per data generation and cached (warmed after each write by
runs.cache_warming, so the 2PL fit runs in the background, not in a reader's request)."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.db.models import Count, Q

from runs.cache import cached
from runs.metrics import item_health as metrics
from runs.models import Benchmark, BenchmarkKind, ChecklistItem, Run, Verdict, VerdictResult

#: the kinds whose benchmarks have checklist items with verdicts, each with an item health page
ITEM_KINDS = (BenchmarkKind.CHECKLIST, BenchmarkKind.DIALOGUE, BenchmarkKind.HIERARCHY)

#: the shown items table stops here; the exports carry every row
ITEMS_SHOWN = 500
#: the exclusion policies item health offers every leaderboard (runs.exclusions; registered by runs.apps): leave
#: out the items carrying one flag, or any flag
ANY_FLAG = "any"
HEALTH_POLICIES = {
    **{f"health:{flag}": f"item health: {label}" for flag, label in metrics.FLAG_LABELS.items()},
    f"health:{ANY_FLAG}": "item health: any flag",
}


def health_report(benchmark: Benchmark) -> metrics.HealthReport:
    """Every item's and instance's health for the benchmark's current data generation (cached)."""
    return cached(
        benchmark.id, "item-health", lambda: compute_report(benchmark.id), kind=metrics.HealthReport, charged=False
    )


def compute_report(benchmark_id: int) -> metrics.HealthReport:
    """Read the verdicts per (item, attempt) as a stream (millions of rows at ten million verdicts: held, they
    took 1.2 GB), the items, the models and the settled audit labels, and hand them to the metrics."""
    rows = (
        metrics.AttemptItem(item_id=item_id, model=model, passes=passes, judged=judged)
        for item_id, _, model, passes, judged in Verdict.objects.filter(
            item__instance__benchmark_id=benchmark_id, result__in=(VerdictResult.PASS, VerdictResult.FAIL)
        )
        .values("item_id", "attempt_id", "attempt__run__model__name")
        .annotate(passes=Count("id", filter=Q(result=VerdictResult.PASS)), judged=Count("id"))
        .values_list("item_id", "attempt_id", "attempt__run__model__name", "passes", "judged")
        .order_by()
        .iterator(chunk_size=20_000)
    )
    models = sorted(
        set(Run.objects.filter(benchmark_id=benchmark_id).values_list("model__name", flat=True).distinct().order_by())
    )
    items = [
        metrics.ItemInfo(
            item_id=i["id"],
            key=i["key"],
            instance_id=i["instance_id"],
            instance=i["instance__external_id"],
            category=i["category"],
            check_type=i["check_type"],
            description=i["description"][:300],
        )
        for i in ChecklistItem.objects.filter(instance__benchmark_id=benchmark_id)
        .order_by("instance__external_id", "position", "id")
        .values("id", "key", "instance_id", "instance__external_id", "category", "check_type", "description")
    ]
    return metrics.item_health(rows, items, audit=audit_labels(benchmark_id), models=models)


def audit_labels(benchmark_id: int) -> dict[int, metrics.AuditLabel]:
    """Each audited item's latest settled label (item campaigns, not verdict campaigns) and its agreement, read
    through the items' reverse relation (runs does not import audits)."""
    labels = {}
    for item_id, status, agreement in (
        ChecklistItem.objects.filter(
            instance__benchmark_id=benchmark_id, audit_units__attempt__isnull=True, audit_units__final_status__gt=""
        )
        .order_by("id", "audit_units__closed_at", "audit_units__id")
        .values_list("id", "audit_units__final_status", "audit_units__agreement")
    ):
        labels[item_id] = metrics.AuditLabel(status=status, agreement=agreement)
    return labels


class ItemHealthForm(forms.Form):
    """The page's query: flags, categories and check types to keep, and the items' order."""

    flag = forms.MultipleChoiceField(required=False, choices=())
    category = forms.MultipleChoiceField(required=False, choices=())
    check_type = forms.MultipleChoiceField(required=False, choices=(), label="Kind of check")
    sort = forms.ChoiceField(required=False, choices=list(metrics.ITEM_SORTS.items()))

    def __init__(self, data, *, report: metrics.HealthReport, **kwargs):
        super().__init__(data, **kwargs)
        self.fields["flag"].choices = [*metrics.FLAG_LABELS.items(), ("none", "no flag")]
        self.fields["category"].choices = [(c, c or "(none)") for c in sorted({i.category for i in report.items})]
        self.fields["check_type"].choices = [(c, c or "(none)") for c in sorted({i.check_type for i in report.items})]


@dataclass
class ItemHealthPage:
    """What the page, its exports and the API show for one query."""

    report: metrics.HealthReport
    form: ItemHealthForm
    errors: dict[str, list[str]]
    state: dict
    items: list[metrics.ItemHealth]
    flag_counts: dict[str, int]


def item_health_page(benchmark: Benchmark, query) -> ItemHealthPage:
    """The report filtered and sorted by the query; a malformed value is an error (answered 400 by the API) and
    the page falls back to no filter for it."""
    report = health_report(benchmark)
    form = ItemHealthForm(query, report=report)
    errors = {} if form.is_valid() else {k: [str(e) for e in v] for k, v in form.errors.items()}
    clean = form.cleaned_data if not errors else {}
    state = {
        "flag": sorted(clean.get("flag") or []),
        "category": sorted(clean.get("category") or []),
        "check_type": sorted(clean.get("check_type") or []),
        "sort": clean.get("sort") or "item",
    }
    kept = metrics.filter_items(
        report.items, flags=state["flag"], categories=state["category"], check_types=state["check_type"]
    )
    flag_counts = {flag: sum(flag in i.flags for i in report.items) for flag in metrics.FLAGS}
    return ItemHealthPage(report, form, errors, state, metrics.sort_items(kept, state["sort"]), flag_counts)


def health_excluded_items(benchmark: Benchmark, policy: str, campaigns=None) -> set[int]:
    """The items of the benchmark a health policy (HEALTH_POLICIES) leaves out: those carrying its flag, or any
    flag. `campaigns` (the audit policies' argument) does not apply and is ignored."""
    flag = policy.removeprefix("health:")
    return {i.item_id for i in health_report(benchmark).items if (i.flags if flag == ANY_FLAG else flag in i.flags)}


def health_policy_flags(policy: str) -> list[str]:
    """The flags a health policy names, as the item health page's ?flag= values."""
    flag = policy.removeprefix("health:")
    return list(metrics.FLAGS) if flag == ANY_FLAG else [flag]
