"""Two attempts on the same instance, item by item and judge by judge: where do their verdicts differ?

Pure functions of rows: `attempt_verdict_diff` takes the instance's checklist items and the two attempts'
verdicts as `runs.selectors.attempts.attempt_verdict_diff` reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from runs.metrics.checklist import evidence_ref


@dataclass(frozen=True)
class SideVerdict:
    """One judge's verdict on one item of one attempt."""

    result: str  # "pass", "fail" or "na"
    reasoning: str = ""
    evidence: tuple[int, int] | None = None  # (thread, message index)


@dataclass
class JudgePair:
    """One judge's verdicts on one item for attempts A and B (None where that judge gave none)."""

    judge: str
    a: SideVerdict | None
    b: SideVerdict | None

    @property
    def differs(self) -> bool:
        """Both attempts were judged and the results differ (pass vs fail, or either vs n/a)."""
        return self.a is not None and self.b is not None and self.a.result != self.b.result


@dataclass
class ItemDiff:
    """A checklist item with one JudgePair per judge (in judge order)."""

    item: dict
    pairs: list[JudgePair] = field(default_factory=list)

    @property
    def n_differ(self) -> int:
        return sum(p.differs for p in self.pairs)


@dataclass
class JudgeTotals:
    """Per judge, passed / applicable items of each attempt and the items whose verdicts differ."""

    judge: str
    a: tuple[int, int]  # (applicable, passed)
    b: tuple[int, int]
    n_differ: int


def verdict_diff(
    items: Sequence[dict],
    verdicts_a: Mapping[tuple[int, str], SideVerdict],
    verdicts_b: Mapping[tuple[int, str], SideVerdict],
    judges: Sequence[str],
) -> list[ItemDiff]:
    """Per item (dicts with "id" and "position") the judges' verdicts on A and B; items with differences first.

    Items are ordered by how many judges differ on them (most first), then by checklist position.
    """
    out = [
        ItemDiff(item, [JudgePair(j, verdicts_a.get((item["id"], j)), verdicts_b.get((item["id"], j))) for j in judges])
        for item in items
    ]
    return sorted(out, key=lambda d: (-d.n_differ, d.item.get("position", 0), d.item["id"]))


def judge_totals(diffs: Iterable[ItemDiff], judges: Sequence[str]) -> list[JudgeTotals]:
    """Per judge: (applicable, passed) of A and of B, and on how many items the two differ."""
    counts = {j: [0, 0, 0, 0, 0] for j in judges}
    for d in diffs:
        for p in d.pairs:
            c = counts[p.judge]
            for offset, v in ((0, p.a), (2, p.b)):
                if v is not None and v.result != "na":
                    c[offset] += 1
                    c[offset + 1] += v.result == "pass"
            c[4] += p.differs
    return [JudgeTotals(j, (c[0], c[1]), (c[2], c[3]), c[4]) for j, c in counts.items()]


def attempt_verdict_diff(
    items: Sequence[dict], verdicts: Iterable[tuple], attempt_a_id: int, attempt_b_id: int
) -> dict:
    """{"judges", "items": [ItemDiff], "totals": [JudgeTotals], "n_differ_items"} for two attempts of an instance:
    `items` are its checklist items (dicts with "id" and "position"), `verdicts` (attempt id, item id, judge name,
    result, reasoning, evidence) the verdicts on either attempt."""
    sides: dict[int, dict[tuple[int, str], SideVerdict]] = {attempt_a_id: {}, attempt_b_id: {}}
    judges: set[str] = set()
    for attempt_id, item_id, judge, result, reasoning, evidence in verdicts:
        sides[attempt_id][(item_id, judge)] = SideVerdict(result, reasoning or "", evidence_ref(evidence))
        judges.add(judge)
    ordered = sorted(judges)
    diffs = verdict_diff(items, sides[attempt_a_id], sides[attempt_b_id], ordered)
    return {
        "judges": ordered,
        "items": diffs,
        "totals": judge_totals(diffs, ordered),
        "n_differ_items": sum(1 for d in diffs if d.n_differ),
    }
