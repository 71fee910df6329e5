"""Item health: which checklist items carry signal (docs/metrics.md, "Item health").

Per item, from one row per (item, attempt) with the passing and the judged (pass or fail) verdicts on it: the pass
rate over every verdict with its Wilson interval, the models and verdicts it rests on, the judge split rate (the
share of attempts judged by two or more judges on which they disagree), the rest correlation (Pearson's r across
models of the model's pass rate on the item with its pass rate on every other item: the point-biserial
correlation when each model has one verdict on the item), the 2PL difficulty and discrimination
(runs.metrics.irt) when enough models answered, the audit's final label and agreement, and the flags. Per
instance, the same pass rate and split rate over its items and how many of its items are flagged. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from runs.metrics import irt
from runs.metrics.stats import wilson_interval

#: below this many models the 2PL is not fitted: with the demo's 4 to 6 models the discriminations' standard
#: errors exceed the discriminations themselves, and the page shows the plain statistics instead
FIT_MIN_MODELS = 20
#: flags and their thresholds (docs/metrics.md, "Item health")
FLOOR = "floor"
CEILING = "ceiling"
LOW_DISCRIMINATION = "low-discrimination"
NEGATIVE_DISCRIMINATION = "negative-discrimination"
JUDGE_SPLIT = "judge-split"
ANNOTATORS = "annotators"
FLAGS = (FLOOR, CEILING, LOW_DISCRIMINATION, NEGATIVE_DISCRIMINATION, JUDGE_SPLIT, ANNOTATORS)
#: the flags a task of a choice benchmark can carry: a reference scorer, not judges, decides it, and audits label
#: checklist items, not tasks
TASK_FLAGS = (FLOOR, CEILING, LOW_DISCRIMINATION, NEGATIVE_DISCRIMINATION)
#: what the report's rows are: checklist items (of instances), or a choice benchmark's tasks (its instances, each
#: scored right or wrong as a whole)
ITEM, TASK = "item", "task"
FLAG_LABELS = {
    FLOOR: "floor (almost no model passes)",
    CEILING: "ceiling (almost every model passes)",
    LOW_DISCRIMINATION: "low discrimination",
    NEGATIVE_DISCRIMINATION: "negative discrimination",
    JUDGE_SPLIT: "high judge split",
    ANNOTATORS: "flagged by annotators",
}
#: the exclusion policies item health offers every leaderboard (runs.exclusions; registered by runs.apps with
#: runs.selectors.item_health's functions): leave out the items carrying one flag, or any flag
ANY_FLAG = "any"
HEALTH_POLICIES = {
    **{f"health:{flag}": f"item health: {label}" for flag, label in FLAG_LABELS.items()},
    f"health:{ANY_FLAG}": "item health: any flag",
}
#: floor: pass rate at most 5%; ceiling: at least 95%
FLOOR_RATE = 0.05
CEILING_RATE = 0.95
#: low discrimination: fitted discrimination below 0.3 (and above its negative threshold)
LOW_DISCRIMINATION_BELOW = 0.3
#: negative discrimination: the fitted discrimination's 95% interval lies below 0
NEGATIVE_Z = 1.959963984540054
#: high judge split: judges disagree on at least 20% of the attempts two or more of them judged, over 5 or more
JUDGE_SPLIT_RATE = 0.2
JUDGE_SPLIT_MIN_ATTEMPTS = 5
#: the audit's final status that flags an item
ANNOTATOR_INVALID = "invalid"


@dataclass(frozen=True)
class AttemptItem:
    """One attempt's verdicts on one item: passing and judged (pass or fail) verdicts.

    Where a judge answers more than pass or fail (a conflict's side followed), `answers` counts the judges that
    answered and `split` says whether they named different answers; otherwise both are read off `passes` and
    `judged` (a split: some but not all passed)."""

    item_id: int
    model: str
    passes: int
    judged: int
    answers: int | None = None
    split: bool | None = None


@dataclass(frozen=True)
class ItemInfo:
    """What identifies an item on the page."""

    item_id: int
    key: str
    instance_id: int
    instance: str
    category: str
    check_type: str
    description: str = ""


@dataclass(frozen=True)
class AuditLabel:
    """The audit's settled label of an item: final status and annotator agreement."""

    status: str
    agreement: float | None


@dataclass
class ItemHealth:
    """One item's health figures and flags."""

    item_id: int
    key: str
    instance_id: int
    instance: str
    category: str
    check_type: str
    description: str
    models: int
    verdicts: int
    passes: int
    pass_rate: float | None
    pass_low: float | None
    pass_high: float | None
    split_attempts: int
    judged_twice: int
    split_rate: float | None
    rest_correlation: float | None
    difficulty: float | None = None
    difficulty_se: float | None = None
    discrimination: float | None = None
    discrimination_se: float | None = None
    audit_status: str = ""
    audit_agreement: float | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class InstanceHealth:
    """One instance's pass rate and split rate over its items, and how many of its items carry each flag."""

    instance_id: int
    instance: str
    category: str
    items: int
    verdicts: int
    passes: int
    pass_rate: float | None
    pass_low: float | None
    pass_high: float | None
    split_attempts: int
    judged_twice: int
    split_rate: float | None
    flagged: int
    flag_counts: dict[str, int]


@dataclass
class HealthReport:
    """Every item's and instance's health, the models they rest on and whether the 2PL was fitted."""

    items: list[ItemHealth]
    instances: list[InstanceHealth]
    models: list[str]
    fitted: bool
    fit_converged: bool | None
    fit_iterations: int | None
    #: ITEM (checklist items) or TASK (a choice benchmark's tasks)
    unit: str = ITEM

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags its rows can carry."""
        return TASK_FLAGS if self.unit == TASK else FLAGS

    @property
    def judged_twice(self) -> bool:
        """Whether any attempt had two or more judges' answers (else there is no judge split to show)."""
        return any(i.judged_twice for i in self.items)


def count_matrix(
    rows: Iterable[AttemptItem], item_ids: list[int], models: list[str] | None = None
) -> tuple[list[str], np.ndarray, np.ndarray, dict[int, int], dict[int, int]]:
    """Models (sorted) and (models x items) matrices of passing and judged verdicts summed over attempts, and per
    item the attempts judged twice or more and those on which the judges split, in one pass over `rows`. Given
    the `models` (a superset), the rows are read as a stream, never held: a benchmark of ten million verdicts has
    millions; models without a judged verdict are then dropped."""
    if models is None:
        rows = list(rows)
        models = sorted({r.model for r in rows})
    m_index = {m: i for i, m in enumerate(models)}
    i_index = {item: j for j, item in enumerate(item_ids)}
    passes = np.zeros((len(models), len(item_ids)))
    judged = np.zeros((len(models), len(item_ids)))
    split: dict[int, int] = defaultdict(int)
    twice: dict[int, int] = defaultdict(int)
    for r in rows:
        if (r.judged if r.answers is None else r.answers) >= 2:
            twice[r.item_id] += 1
            if (0 < r.passes < r.judged) if r.split is None else r.split:
                split[r.item_id] += 1
        j = i_index.get(r.item_id)
        if j is None:
            continue
        passes[m_index[r.model], j] += r.passes
        judged[m_index[r.model], j] += r.judged
    kept = judged.sum(axis=1) > 0
    if not kept.all():
        models = [m for m, keep in zip(models, kept) if keep]
        passes, judged = passes[kept], judged[kept]
    return models, passes, judged, split, twice


def rest_correlations(passes: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Per item, Pearson's r across the models that have verdicts on it between the model's pass rate on the item
    and its pass rate on every other item (NaN with fewer than 3 such models or no variation)."""
    total_passes = passes.sum(axis=1)
    total_judged = judged.sum(axis=1)
    out = np.full(passes.shape[1], np.nan)
    for j in range(passes.shape[1]):
        seen = judged[:, j] > 0
        rest_judged = total_judged[seen] - judged[seen, j]
        ok = rest_judged > 0
        if ok.sum() < 3:
            continue
        x = passes[seen, j][ok] / judged[seen, j][ok]
        y = (total_passes[seen] - passes[seen, j])[ok] / rest_judged[ok]
        if x.std() == 0 or y.std() == 0:
            continue
        out[j] = float(np.corrcoef(x, y)[0, 1])
    return out


def item_flags(item: ItemHealth) -> list[str]:
    """The flags an item's figures raise (thresholds above)."""
    flags = []
    if item.pass_rate is not None and item.pass_rate <= FLOOR_RATE:
        flags.append(FLOOR)
    if item.pass_rate is not None and item.pass_rate >= CEILING_RATE:
        flags.append(CEILING)
    if item.discrimination is not None and not ({FLOOR, CEILING} & set(flags)):
        if item.discrimination + NEGATIVE_Z * (item.discrimination_se or 0.0) < 0:
            flags.append(NEGATIVE_DISCRIMINATION)
        elif item.discrimination < LOW_DISCRIMINATION_BELOW:
            flags.append(LOW_DISCRIMINATION)
    if (
        item.split_rate is not None
        and item.judged_twice >= JUDGE_SPLIT_MIN_ATTEMPTS
        and item.split_rate >= JUDGE_SPLIT_RATE
    ):
        flags.append(JUDGE_SPLIT)
    if item.audit_status == ANNOTATOR_INVALID:
        flags.append(ANNOTATORS)
    return flags


def _rate(passes: int, n: int) -> tuple[float | None, float | None, float | None]:
    interval = wilson_interval(passes, n)
    if interval is None:
        return None, None, None
    return passes / n, interval[0], interval[1]


def _finite(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def item_health(
    rows: Iterable[AttemptItem],
    items: list[ItemInfo],
    *,
    audit: Mapping[int, AuditLabel] | None = None,
    fit_min_models: int = FIT_MIN_MODELS,
    models: list[str] | None = None,
    unit: str = ITEM,
) -> HealthReport:
    """Every item's health (in the order of `items`) and every instance's, from per-attempt verdict counts (read
    once, as a stream, when the `models` they may name are given: `count_matrix`). Tasks (`unit` TASK) are their
    own instances: the report lists no instances beside them."""
    audit = audit or {}
    item_ids = [i.item_id for i in items]
    models, passes, judged, split, twice = count_matrix(rows, item_ids, models)
    rest = rest_correlations(passes, judged)
    seen = judged > 0
    answered = seen.any(axis=0)
    fit = None
    if len(models) >= fit_min_models and answered.any():
        fit = irt.fit_2pl(passes[:, answered], judged[:, answered])
    fit_column = np.cumsum(answered) - 1
    out = []
    for j, info in enumerate(items):
        n = int(judged[:, j].sum())
        k = int(passes[:, j].sum())
        rate, low, high = _rate(k, n)
        health = ItemHealth(
            item_id=info.item_id,
            key=info.key,
            instance_id=info.instance_id,
            instance=info.instance,
            category=info.category,
            check_type=info.check_type,
            description=info.description,
            models=int(seen[:, j].sum()),
            verdicts=n,
            passes=k,
            pass_rate=rate,
            pass_low=low,
            pass_high=high,
            split_attempts=split[info.item_id],
            judged_twice=twice[info.item_id],
            split_rate=split[info.item_id] / twice[info.item_id] if twice[info.item_id] else None,
            rest_correlation=_finite(rest[j]),
        )
        if fit is not None and answered[j]:
            c = fit_column[j]
            health.difficulty = _finite(fit.difficulty[c])
            health.difficulty_se = _finite(fit.difficulty_se[c])
            health.discrimination = _finite(fit.discrimination[c])
            health.discrimination_se = _finite(fit.discrimination_se[c])
        label = audit.get(info.item_id)
        if label is not None:
            health.audit_status, health.audit_agreement = label.status, label.agreement
        health.flags = item_flags(health)
        out.append(health)
    return HealthReport(
        items=out,
        instances=instance_health(out) if unit == ITEM else [],
        models=models,
        fitted=fit is not None,
        fit_converged=fit.converged if fit is not None else None,
        fit_iterations=fit.iterations if fit is not None else None,
        unit=unit,
    )


def instance_health(items: Iterable[ItemHealth]) -> list[InstanceHealth]:
    """Per instance (in order of first appearance): its items' verdicts pooled, their split attempts pooled, and
    how many of its items carry any flag and each flag."""
    by_instance: dict[int, list[ItemHealth]] = {}
    for item in items:
        by_instance.setdefault(item.instance_id, []).append(item)
    out = []
    for instance_id, group in by_instance.items():
        n = sum(i.verdicts for i in group)
        k = sum(i.passes for i in group)
        rate, low, high = _rate(k, n)
        split = sum(i.split_attempts for i in group)
        twice = sum(i.judged_twice for i in group)
        counts = {flag: sum(flag in i.flags for i in group) for flag in FLAGS}
        out.append(
            InstanceHealth(
                instance_id=instance_id,
                instance=group[0].instance,
                category=group[0].category,
                items=len(group),
                verdicts=n,
                passes=k,
                pass_rate=rate,
                pass_low=low,
                pass_high=high,
                split_attempts=split,
                judged_twice=twice,
                split_rate=split / twice if twice else None,
                flagged=sum(bool(i.flags) for i in group),
                flag_counts=counts,
            )
        )
    return out


def filter_items(
    items: Iterable[ItemHealth], *, flags: Iterable[str] = (), categories: Iterable[str] = (), check_types=()
) -> list[ItemHealth]:
    """The items carrying any of `flags` ("none": no flag), in any of `categories` and `check_types` (each
    filter applies when given)."""
    flags, categories, check_types = set(flags), set(categories), set(check_types)
    out = []
    for item in items:
        if flags and not (flags & set(item.flags) or ("none" in flags and not item.flags)):
            continue
        if categories and item.category not in categories:
            continue
        if check_types and item.check_type not in check_types:
            continue
        out.append(item)
    return out


#: the sort orders of the items table: key -> (label, sort key); None values sort last
ITEM_SORTS = {
    "item": "instance and item",
    "pass_rate": "pass rate, lowest first",
    "-pass_rate": "pass rate, highest first",
    "split_rate": "judge split, highest first",
    "rest_correlation": "rest correlation, lowest first",
    "discrimination": "discrimination, lowest first",
    "difficulty": "difficulty, highest first",
    "flags": "most flags first",
}


def sort_items(items: list[ItemHealth], sort: str) -> list[ItemHealth]:
    """The items in the order `sort` names (ITEM_SORTS); missing figures last."""
    if sort == "flags":
        return sorted(items, key=lambda i: (-len(i.flags), i.instance, i.key))
    if sort == "item" or sort not in ITEM_SORTS:
        return list(items)
    name = sort.lstrip("-")
    descending = sort.startswith("-") or name in ("split_rate", "difficulty")
    present = [i for i in items if getattr(i, name) is not None]
    missing = [i for i in items if getattr(i, name) is None]
    return sorted(present, key=lambda i: getattr(i, name), reverse=descending) + missing
