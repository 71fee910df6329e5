"""Item health of a benchmark: the state its page, exports and API share, and the report (runs.metrics.item_health)
computed once per data generation and cached (warmed after each write by runs.cache_warming, so the 2PL fit runs in
the background, not in a reader's request). Its rows are checklist items on every kind but choice, whose tasks are
scored right or wrong as a whole and are its rows."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain

from django import forms
from django.db.models import Count, Q

from runs.cache import cached
from runs.metrics import item_health as metrics
from runs.metrics.choice import health_rows as task_health_rows
from runs.metrics.conflict import ITEM_KEY, REWRITE_PREFIX, conflict_pairs, is_resolution_key
from runs.metrics.conflict import health_rows as resolution_health_rows
from runs.models import Benchmark, BenchmarkKind, ChecklistItem, Instance, Run, Verdict, VerdictResult
from runs.selectors.choice import choice_rows

#: the kinds whose benchmarks have checklist items with verdicts: their item health rows are the items (which item
#: audits label and exclusion policies leave out)
ITEM_KINDS = (BenchmarkKind.CHECKLIST, BenchmarkKind.DIALOGUE, BenchmarkKind.HIERARCHY, BenchmarkKind.CONFLICT)

#: the shown items table stops here; the exports carry every row
ITEMS_SHOWN = 500


def health_report(benchmark: Benchmark) -> metrics.HealthReport:
    """Every item's and instance's health for the benchmark's current data generation (cached)."""
    return cached(
        benchmark.id,
        "item-health",
        lambda: compute_report(benchmark.id, benchmark.kind),
        kind=metrics.HealthReport,
        charged=False,
    )


def compute_report(benchmark_id: int, kind: str = BenchmarkKind.CHECKLIST) -> metrics.HealthReport:
    """Read the rows per (item, attempt) as a stream (millions of rows at ten million verdicts: held, they took
    1.2 GB), the items, the models and the settled audit labels, and hand them to the metrics."""
    if kind == BenchmarkKind.CHOICE:
        return _task_report(benchmark_id)
    models = sorted(
        set(Run.objects.filter(benchmark_id=benchmark_id).values_list("model__name", flat=True).distinct().order_by())
    )
    items = _items(benchmark_id)
    if kind != BenchmarkKind.CONFLICT:
        return metrics.item_health(
            rows_of_verdicts(benchmark_id), items, audit=audit_labels(benchmark_id), models=models
        )
    # a conflict's resolution items from the side followed (its kind of check is the conflict's type, "UQ vs SP");
    # any other item of its instances is scored pass or fail like a checklist item
    pairs = conflict_pairs(Instance.objects.filter(benchmark_id=benchmark_id).values_list("id", "spec__conflict"))
    items = [
        replace(i, check_type=pairs[i.instance_id].type) if is_resolution_key(i.key) and pairs.get(i.instance_id) else i
        for i in items
    ]
    resolutions = Q(item__key=ITEM_KEY) | Q(item__key__startswith=REWRITE_PREFIX)
    rows = chain(
        resolution_health_rows(
            pairs,
            Verdict.objects.filter(resolutions, item__instance__benchmark_id=benchmark_id)
            .values_list("item_id", "attempt_id", "attempt__run__model__name", "item__instance_id", "evidence")
            .order_by("item_id", "attempt_id")
            .iterator(chunk_size=20_000),
        ),
        rows_of_verdicts(benchmark_id, ~resolutions),
    )
    return metrics.item_health(rows, items, audit=audit_labels(benchmark_id), models=models)


def rows_of_verdicts(benchmark_id: int, where: Q | None = None):
    """Per (item, attempt) of the benchmark's items (those `where` keeps, else all), the passing and the judged
    (pass or fail) verdicts, as a stream."""
    where = Q() if where is None else where
    return (
        metrics.AttemptItem(item_id=item_id, model=model, passes=passes, judged=judged)
        for item_id, _, model, passes, judged in Verdict.objects.filter(
            where, item__instance__benchmark_id=benchmark_id, result__in=(VerdictResult.PASS, VerdictResult.FAIL)
        )
        .values("item_id", "attempt_id", "attempt__run__model__name")
        .annotate(passes=Count("id", filter=Q(result=VerdictResult.PASS)), judged=Count("id"))
        .values_list("item_id", "attempt_id", "attempt__run__model__name", "passes", "judged")
        .order_by()
        .iterator(chunk_size=20_000)
    )


def _task_report(benchmark_id: int) -> metrics.HealthReport:
    """A choice benchmark's tasks as its rows: every run's scored attempts (as the reference scorer scores them)."""
    model_of = dict(Run.objects.filter(benchmark_id=benchmark_id).values_list("label", "model__name"))
    models = sorted(set(model_of.values()))
    rows = task_health_rows(choice_rows(benchmark_id, list(model_of)), model_of)
    tasks = [
        metrics.ItemInfo(
            item_id=pk,
            key=external_id,
            instance_id=pk,
            instance=external_id,
            category=category,
            check_type="",
            description=str(context or instruction or "")[:300],
        )
        for pk, external_id, category, context, instruction in Instance.objects.filter(benchmark_id=benchmark_id)
        .order_by("external_id", "id")
        .values_list("id", "external_id", "primary_category", "spec__Context", "spec__Instruction")
    ]
    return metrics.item_health(rows, tasks, models=models, unit=metrics.TASK)


def _items(benchmark_id: int) -> list[metrics.ItemInfo]:
    """The benchmark's checklist items, by instance and position."""
    return [
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
        self.fields["flag"].choices = [*((f, metrics.FLAG_LABELS[f]) for f in report.flags), ("none", "no flag")]
        self.fields["category"].choices = [(c, c or "(none)") for c in sorted({i.category for i in report.items})]
        self.fields["check_type"].choices = [(c, c or "(none)") for c in sorted({i.check_type for i in report.items})]
        if report.unit == metrics.TASK:
            self.fields["sort"].choices = [(k, "task" if k == "item" else v) for k, v in metrics.ITEM_SORTS.items()]


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
    flag_counts = {flag: sum(flag in i.flags for i in report.items) for flag in report.flags}
    return ItemHealthPage(report, form, errors, state, metrics.sort_items(kept, state["sort"]), flag_counts)


def health_excluded_items(benchmark: Benchmark, policy: str, campaigns=None) -> set[int]:
    """The items of the benchmark a health policy (HEALTH_POLICIES) leaves out: those carrying its flag, or any
    flag. `campaigns` (the audit policies' argument) does not apply and is ignored."""
    flag = policy.removeprefix("health:")
    report = health_report(benchmark)
    if report.unit == metrics.TASK:  # a task is no item: nothing an item exclusion reads
        return set()
    return {i.item_id for i in report.items if (i.flags if flag == metrics.ANY_FLAG else flag in i.flags)}


def health_policy_flags(benchmark: Benchmark, policy: str) -> list[str]:
    """The flags a health policy names, as the benchmark's item health page's ?flag= values (those it offers)."""
    flag = policy.removeprefix("health:")
    return list(health_report(benchmark).flags) if flag == metrics.ANY_FLAG else [flag]
