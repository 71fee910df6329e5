"""Conflict benchmarks (OctoBench-Conflict, METRICS.md section 2): the instance's conflict pair, pure
metric functions over per-attempt rows, and the selector that builds the rows from verdicts.

An instance's spec carries `{"conflict": {"type", "scenario", "a": {"source", "instruction"},
"b": {...}}}`; the judged side is a verdict on the item "resolution" with `evidence.followed`
"A", "B" or "neither". Sources are System Prompt (SP), User Query (UQ) and project
documentation (MD: Agents.md/Claude.md), spelled any way runs.categories knows. A type names
its two sources in a fixed order ("UQ vs SP", "SP vs MD", "UQ vs MD"), whatever order the
instance gives them as a and b, so tables read "% followed UQ, % followed SP, % neither".
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from runs.categories import AGENTS_MD, SYSTEM_PROMPT, USER_QUERY, normalise_category
from runs.metrics import paired
from runs.metrics.item_health import AttemptItem
from runs.metrics.rank_change import score_rank_change

ITEM_KEY = "resolution"
#: an audit's rewrite of the resolution item is a new item "resolution@v<n>" (docs/formats.md, "Rewritten items")
REWRITE_PREFIX = f"{ITEM_KEY}@v"
SIDES = ("A", "B", "neither")
NEITHER = "neither"
SP = "SP"
#: canonical source -> short name used in tables
SHORT = {SYSTEM_PROMPT: "SP", USER_QUERY: "UQ", AGENTS_MD: "MD"}
#: the three conflict types, each with its sources in table order
TYPES = {"UQ vs SP": ("UQ", "SP"), "SP vs MD": ("SP", "MD"), "UQ vs MD": ("UQ", "MD")}
_TYPE_OF = {frozenset(sources): name for name, sources in TYPES.items()}


# the conflict pair --------------------------------------------------------------------
@dataclass(frozen=True)
class ConflictPair:
    """An instance's conflict: its canonical type, scenario, and the short source of sides A and B."""

    type: str
    scenario: str
    a: str
    b: str
    a_instruction: str = ""
    b_instruction: str = ""
    expected: str | None = None

    def source_of(self, side: str) -> str:
        """The short source ("SP", "UQ", "MD") a side stands for, or "neither"."""
        return {"A": self.a, "B": self.b}.get(side, NEITHER)


def short_source(name: Any) -> str | None:
    """ "SP", "UQ" or "MD" for any known spelling of the three conflict sources, else None."""
    return SHORT.get(normalise_category(name)) if isinstance(name, str) and name.strip() else None


def type_of(name: Any) -> str | None:
    """The canonical conflict type for a spelling like "UQ vs SP", "System prompt vs AGENTS.md" (either order)."""
    if not isinstance(name, str) or " vs " not in name.lower():
        return None
    left, _, right = name.lower().partition(" vs ")
    sources = frozenset(filter(None, (short_source(left), short_source(right))))
    return _TYPE_OF.get(sources) if len(sources) == 2 else None


def conflict_problems(spec: Any) -> list[str]:
    """Why an instance spec does not carry a valid conflict pair (empty when it does)."""
    conflict = spec.get("conflict") if isinstance(spec, dict) else None
    if not isinstance(conflict, dict):
        return [
            'a conflict instance needs spec.conflict = {"type", "scenario", "a": {"source", "instruction"}, "b": {...}}'
        ]
    reasons = []
    for name in ("type", "scenario"):
        if not isinstance(conflict.get(name), str) or not conflict[name].strip():
            reasons.append(f"spec.conflict.{name} should be a non-empty string")
    sources = {}
    for side in ("a", "b"):
        value = conflict.get(side)
        if not isinstance(value, dict):
            reasons.append(f"spec.conflict.{side} should be an object with source and instruction")
            continue
        source = short_source(value.get("source"))
        if source is None:
            reasons.append(
                f"spec.conflict.{side}.source should be SP, UQ or MD (or a spelling of them), "
                f"found {value.get('source')!r}"
            )
        sources[side] = source
        if not isinstance(value.get("instruction"), str) or not value["instruction"].strip():
            reasons.append(f"spec.conflict.{side}.instruction should be a non-empty string")
    if conflict.get("expected") is not None and conflict["expected"] not in ("A", "B"):
        reasons.append(f'spec.conflict.expected should be "A" or "B" when given, found {conflict["expected"]!r}')
    if reasons:
        return reasons
    if sources["a"] == sources["b"]:
        return [f"spec.conflict.a and b have the same source ({sources['a']}): a conflict pits two sources"]
    kind = type_of(conflict["type"])
    if kind is None:
        return [f"spec.conflict.type should be one of {', '.join(TYPES)}, found {conflict['type']!r}"]
    if set(TYPES[kind]) != {sources["a"], sources["b"]}:
        return [
            (
                f"spec.conflict.type {conflict['type']!r} does not match the sources of a and b "
                f"({sources['a']}, {sources['b']})"
            )
        ]
    return []


def conflict_pair(spec: Mapping[str, Any] | None) -> ConflictPair | None:
    """The conflict pair of a valid spec (see conflict_problems), else None."""
    if not spec or conflict_problems(spec):
        return None
    c = spec["conflict"]
    return ConflictPair(
        type=type_of(c["type"]),
        scenario=c["scenario"].strip().lower(),
        a=short_source(c["a"]["source"]),
        b=short_source(c["b"]["source"]),
        a_instruction=c["a"]["instruction"],
        b_instruction=c["b"]["instruction"],
        expected=c.get("expected"),
    )


def conflict_pairs(conflicts: Iterable[tuple[int, Any]]) -> dict[int, ConflictPair | None]:
    """Instance id -> its conflict pair (None without a valid one), from (instance id, spec.conflict) pairs."""
    return {pk: conflict_pair({"conflict": c}) if c is not None else None for pk, c in conflicts}


def followed_problems(evidence: Any) -> list[str]:
    """Why a resolution verdict's evidence does not say which side was followed (empty when it does)."""
    followed = evidence.get("followed") if isinstance(evidence, dict) else None
    if followed not in SIDES:
        return [
            (
                f'a verdict on item \'{ITEM_KEY}\' needs evidence {{"followed": "A" | "B" | "neither"}}, '
                f"found {json_text(evidence)}"
            )
        ]
    return []


def json_text(value: Any) -> str:
    """A short JSON rendering of a value for problem messages."""
    return json.dumps(value, ensure_ascii=False)[:80]


# rows ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConflictRow:
    """One judge's reading of one attempt at one conflict instance."""

    attempt_id: int
    run: str
    model: str
    instance: str
    type: str
    scenario: str
    #: short sources of sides A and B
    a: str
    b: str
    followed: str
    #: the resolution item the verdict was on (what an audit exclusion policy can leave out)
    item_id: int = 0

    @property
    def followed_source(self) -> str:
        """ "SP", "UQ", "MD" or "neither"."""
        return {"A": self.a, "B": self.b}.get(self.followed, NEITHER)

    @property
    def has_sp(self) -> bool:
        return SP in (self.a, self.b)


@dataclass(frozen=True)
class ResolutionRate:
    """For one model (or run) and conflict type: attempts, and how many followed each source or neither."""

    label: str
    type: str
    n: int
    counts: dict[str, int]

    @property
    def sources(self) -> tuple[str, str]:
        return TYPES[self.type]

    def percent(self, source: str) -> float | None:
        return 100.0 * self.counts.get(source, 0) / self.n if self.n else None

    @property
    def first(self) -> float | None:
        """% followed the type's first-named source (side A of the table), e.g. UQ in "UQ vs SP"."""
        return self.percent(self.sources[0])

    @property
    def second(self) -> float | None:
        """% followed the type's second-named source (side B of the table)."""
        return self.percent(self.sources[1])

    @property
    def neither(self) -> float | None:
        return self.percent(NEITHER)


@dataclass(frozen=True)
class ScenarioRate:
    """For one model (or run) and scenario, over attempts whose conflict has a system-prompt side:
    how many followed SP, the other side, or neither."""

    label: str
    scenario: str
    n: int
    sp: int
    other: int
    neither: int

    def _pct(self, count: int) -> float | None:
        return 100.0 * count / self.n if self.n else None

    @property
    def sp_rate(self) -> float | None:
        return self._pct(self.sp)

    @property
    def other_rate(self) -> float | None:
        return self._pct(self.other)

    @property
    def neither_rate(self) -> float | None:
        return self._pct(self.neither)


def _label(row: ConflictRow, by: str) -> str:
    if by not in ("model", "run"):
        raise ValueError(f"rows are grouped by 'model' or 'run', not {by!r}")
    return row.model if by == "model" else row.run


def type_order(name: str) -> tuple[int, str]:
    """Sort key: the paper's order of the three types."""
    names = list(TYPES)
    return (names.index(name) if name in names else len(names), name)


def resolution_rates(rows: Iterable[ConflictRow], *, by: str = "model") -> list[ResolutionRate]:
    """Per model (or run) and conflict type: % of attempts that followed each source, and neither (never folded)."""
    grouped: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in rows:
        grouped[(_label(r, by), r.type)][r.followed_source] += 1
    return [
        ResolutionRate(label, kind, sum(c.values()), dict(c))
        for (label, kind), c in sorted(grouped.items(), key=lambda x: (x[0][0], type_order(x[0][1])))
    ]


ALL_SCENARIOS = "all scenarios"


def sp_rates(rows: Iterable[ConflictRow], *, by: str = "model") -> list[ScenarioRate]:
    """Per model (or run): over all scenarios, then per scenario: % of attempts (of conflicts with an SP side)
    whose final behaviour followed the system prompt; the other side and neither are counted apart."""
    grouped: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in rows:
        if not r.has_sp:
            continue
        slot = 0 if r.followed_source == SP else 2 if r.followed == NEITHER else 1
        for scenario in (r.scenario, ALL_SCENARIOS):
            grouped[(_label(r, by), scenario)][slot] += 1
    return [
        ScenarioRate(label, scenario, sum(c), *c)
        for (label, scenario), c in sorted(grouped.items(), key=lambda x: (x[0][0], x[0][1] != ALL_SCENARIOS, x[0][1]))
    ]


def matrix(rates: Sequence[Any], column: str) -> tuple[list[str], list[tuple[str, list[Any]]]]:
    """(columns, [(label, [rate of each column or None])]) for a label x type (or scenario) table."""
    columns = list(
        dict.fromkeys(
            getattr(r, column)
            for r in sorted(
                rates,
                key=lambda r: type_order(r.type) if column == "type" else (r.scenario != ALL_SCENARIOS, r.scenario),
            )
        )
    )
    cells: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in rates:
        cells[r.label][getattr(r, column)] = r
    return columns, [(label, [cells[label].get(c) for c in columns]) for label in sorted(cells)]


def drill(
    rows: Iterable[ConflictRow],
    *,
    by: str = "model",
    label: str = "",
    type: str = "",
    scenario: str = "",
    followed: str = "",
    sp_only: bool = False,
) -> list[ConflictRow]:
    """The attempts behind one table cell. followed: a source ("SP", "UQ", "MD"), "neither", or "other"
    (the non-SP side of a conflict with an SP side)."""
    out = []
    for r in rows:
        if (label and _label(r, by) != label) or (type and r.type != type) or (sp_only and not r.has_sp):
            continue
        if scenario and scenario != ALL_SCENARIOS and r.scenario != scenario:
            continue
        if followed == "other":
            if not r.has_sp or r.followed == NEITHER or r.followed_source == SP:
                continue
        elif followed and r.followed_source != followed:
            continue
        out.append(r)
    return out


# the ranking an audit exclusion policy can change -----------------------------------------
#: what the page ranks models by: the SP rate over all scenarios (higher first)
HEADLINE = "SP rate, all scenarios"


def headline(rows: Iterable[ConflictRow], *, by: str = "model") -> dict[str, float | None]:
    """Per model (or run): the SP rate over all scenarios, the page's one number per row (None without a conflict
    that has a system-prompt side)."""
    rows = list(rows)
    rates = {r.label: r.sp_rate for r in sp_rates(rows, by=by) if r.scenario == ALL_SCENARIOS}
    return {label: rates.get(label) for label in dict.fromkeys(_label(r, by) for r in rows)}


def sp_sides(rows: Iterable[ConflictRow], *, by: str = "model") -> dict[str, paired.Side]:
    """Per model (or run), its runs.metrics.paired Side on the headline (SP rate over all scenarios): one judge (the
    rows'), per conflict instance with a system-prompt side num = attempts that followed SP and den = attempts. A row
    without such a conflict has no side. paired.figure(side) is headline()'s figure."""
    return paired.one_judge_sides((_label(r, by), r.instance, int(r.followed_source == SP)) for r in rows if r.has_sp)


def followed_sp_on(rows: Iterable[ConflictRow], *, by: str = "model") -> dict[str, dict[int, dict[str, int]]]:
    """Label -> resolution item id -> {"pass": attempts that followed SP, "fail": attempts that did not}, over
    conflicts with an SP side (what rank_change.items_behind reads: "pass" is what raises the SP rate)."""
    out: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: {"pass": 0, "fail": 0}))
    for r in rows:
        if r.has_sp:
            out[_label(r, by)][r.item_id]["pass" if r.followed_source == SP else "fail"] += 1
    return out


def sp_rank_change(before: Sequence[ConflictRow], after: Sequence[ConflictRow], *, by: str = "model", limit: int = 10):
    """Ranks by the SP rate over all scenarios with every item (`before`) and under a policy (`after`), Kendall's
    tau-b between them and the swapped pairs (runs.metrics.rank_change.score_rank_change: the checklist leaderboard's
    rules).

    The items behind a swap are the left-out resolution items whose system prompt `down` followed more often than
    `up` (leaving them out lowered `down`'s SP rate most), from the attempts in `before` that `after` lacks.
    """
    kept = {r.attempt_id for r in after}
    verdicts = followed_sp_on([r for r in before if r.attempt_id not in kept], by=by)
    return score_rank_change(headline(before, by=by), headline(after, by=by), verdicts, limit=limit)


# rows from what the selector read ------------------------------------------------------
def conflict_rows(conflicts: Iterable[tuple[int, Any]], verdicts: Iterable[tuple]) -> list[ConflictRow]:
    """One row per attempt from its first readable verdict: `conflicts` is (instance id, spec.conflict) per instance,
    `verdicts` (attempt id, run label, model name, instance id, instance external id, evidence, item id) ordered by
    run, instance and item version (so the first verdict of an attempt is the one read). Attempts on instances
    without a valid pair, and verdicts without a side, give no row."""
    pairs = conflict_pairs(conflicts)
    rows, seen = [], set()
    for attempt_id, run, model, instance_id, external_id, evidence, item_id in verdicts:
        if attempt_id in seen:
            continue  # a later version of an item already read for this attempt
        pair = pairs.get(instance_id)
        followed = evidence.get("followed") if isinstance(evidence, dict) else None
        if pair is None or followed not in SIDES:
            continue
        seen.add(attempt_id)
        rows.append(
            ConflictRow(
                attempt_id, run, model, external_id, pair.type, pair.scenario, pair.a, pair.b, followed, item_id
            )
        )
    return rows


def health_rows(pairs: Mapping[int, ConflictPair | None], verdicts: Iterable[tuple]) -> Iterator[AttemptItem]:
    """Item health's rows (runs.metrics.item_health) of resolution items: one per (item, attempt) from `verdicts`
    (item id, attempt id, model name, instance id, evidence) ordered by item and attempt, every judge's. A judge's
    answer is the side it says was followed; unreadable evidence is no answer. What passes is what raises the
    headline, the SP rate: following the system prompt, so a conflict without an SP side (UQ vs MD) has answers and
    judge splits (judges naming different sides) but no pass rate. Instances without a valid pair give no row."""
    for (item_id, _), group in groupby(verdicts, key=lambda v: (v[0], v[1])):
        group = list(group)
        _, _, model, instance_id, _ = group[0]
        pair = pairs.get(instance_id)
        if pair is None:
            continue
        sides = [e.get("followed") for *_, e in group if isinstance(e, dict) and e.get("followed") in SIDES]
        if not sides:
            continue
        has_sp = SP in (pair.a, pair.b)
        yield AttemptItem(
            item_id=item_id,
            model=model,
            passes=sum(pair.source_of(side) == SP for side in sides) if has_sp else 0,
            judged=len(sides) if has_sp else 0,
            answers=len(sides),
            split=len(set(sides)) > 1,
        )


def is_resolution_key(key: str) -> bool:
    """Whether a checklist item key is a conflict's resolution item (`resolution`, or an audit's rewrite of it)."""
    return key == ITEM_KEY or key.startswith(REWRITE_PREFIX)
