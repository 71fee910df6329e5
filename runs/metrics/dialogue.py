"""Multi-turn dialogue metrics (METRICS.md section 3): pure functions over per-turn rows, and the
functions that build those rows from what runs.selectors.dialogue reads (the precomputed turn rollups).

A dialogue is the ordered list of its evaluated turns, each with the number of active
constraints (n_applicable) and how many were satisfied (n_passed). Everything else
(N_d, s_{d,t}, r_{d,t}, the patience cut) is derived here, so every page, the API and
the tests compute the same numbers.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from runs.metrics.agreement import AgreementRow
from runs.metrics.rank_change import score_rank_change


class PatienceRefused(ValueError):
    """A patience the stored logs cannot answer for (higher than recorded, or below 1)."""


@dataclass(frozen=True)
class TurnRow:
    """One evaluated turn: its number, active constraints and satisfied constraints."""

    turn: int
    n_applicable: int
    n_passed: int

    @property
    def success(self) -> bool:
        """s_{d,t}: every active constraint satisfied (a turn with none active counts as satisfied)."""
        return self.n_passed >= self.n_applicable

    @property
    def ratio(self) -> float:
        """r_{d,t} = |C| / |I|; 1 for a turn with no active constraint (nothing was asked)."""
        return self.n_passed / self.n_applicable if self.n_applicable else 1.0


@dataclass(frozen=True)
class Dialogue:
    """One attempt at one dialogue script: its turns in order and the patience it was logged with."""

    key: Any
    turns: tuple[TurnRow, ...]
    patience: int | None = None
    model: str = ""
    run: str = ""
    instance: str = ""
    ended_by: str = ""

    @property
    def length(self) -> int:
        """N_d: the number of turns the dialogue lasted."""
        return len(self.turns)

    @property
    def successes(self) -> list[bool]:
        return [t.success for t in self.turns]


@dataclass(frozen=True)
class EightMetrics:
    """The eight EvolIF metrics over a set of dialogues; rates in percent, ACT and LSS in turns."""

    dialogues: int
    turns: int
    csr: float | None
    isr: float | None
    act_len: float | None
    act_acc: float | None
    act_succ: float | None
    lss: float | None
    rob: float | None
    rec: float | None


@dataclass(frozen=True)
class DialogueMetrics(EightMetrics):
    """The portal's figures (METRICS.md section 3), with the D' REC averages over."""

    rec_dialogues: int
    rec_excluded: int


#: the metrics whose reference value (EvolIF src/score.py) can be compared with the portal's, in table order
REFERENCE_FIELDS = ("csr", "isr", "act_len", "act_acc", "act_succ", "lss", "rob", "rec")


@dataclass(frozen=True)
class ReferenceMetrics(EightMetrics):
    """What EvolIF's `src/score.py` prints for the same dialogues, rates in percent (score.py prints
    fractions: x 100 here). NaN or infinity where score.py prints nan or inf (a 0/0 or x/0 it divides by)."""

    survival: tuple[int, ...]  # "Turn number survival ratio": dialogues with at least t turns, t = 1, 2, ...

    def differs_from(self, metrics: DialogueMetrics) -> dict[str, float | None]:
        """Metric -> this reference value, for each metric where it is not the portal's."""
        out = {}
        for name in REFERENCE_FIELDS:
            mine, theirs = getattr(metrics, name), getattr(self, name)
            same = (mine is None and theirs is None) or (
                mine is not None and theirs is not None and math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-9)
            )
            if not same:
                out[name] = theirs
        return out


@dataclass(frozen=True)
class SurvivalPoint:
    """S(t): how many dialogues (and what percent of them) lasted at least `turn` turns."""

    turn: int
    alive: int
    total: int
    percent: float


@dataclass(frozen=True)
class SurvivalDrop:
    """The largest fall of a survival curve between turn - 1 and turn."""

    turn: int
    before: float
    after: float
    drop: float
    lost: int


@dataclass(frozen=True)
class GroupRate:
    """Pass rate of one constraint group over the turns where it was active."""

    group: str
    applicable: int
    passed: int
    percent: float | None


# pure functions -------------------------------------------------------------------------
def patience_cut(successes: Sequence[bool], patience: int) -> int:
    """The dialogue length under `patience`: up to and including the turn where `patience`
    consecutive failures have first occurred, or the whole log if that never happens."""
    streak = 0
    for index, ok in enumerate(successes):
        streak = 0 if ok else streak + 1
        if streak >= patience:
            return index + 1
    return len(successes)


def resimulate(dialogues: Iterable[Dialogue], patience: int | None) -> list[Dialogue]:
    """Each dialogue as it would have ended under `patience` (METRICS.md section 3).

    A log recorded with patience P only answers for P' <= P: turns after the recorded end
    were never played. None keeps every dialogue as logged (no cut at all).
    """
    dialogues = list(dialogues)
    if patience is None:
        return dialogues
    if patience < 1:
        raise PatienceRefused(f"Patience must be at least 1 (asked for {patience}).")
    unknown = [d for d in dialogues if d.patience is None]
    if unknown:
        raise PatienceRefused(
            f"{len(unknown)} dialogue(s) were logged without a recorded patience, so no other "
            "patience can be simulated for them."
        )
    too_high = [d for d in dialogues if patience > d.patience]
    if too_high:
        recorded = min(d.patience for d in too_high)
        raise PatienceRefused(
            f"Patience {patience} is higher than the patience {recorded} the log was recorded with: "
            f"those dialogues stopped after {recorded} consecutive failures, so the turns a more patient "
            "user would have played were never generated or judged. Choose a patience up to "
            f"{recorded}."
        )
    out = []
    for d in dialogues:
        n = patience_cut(d.successes, patience)
        cut = n < d.length
        ended_by = "patience" if cut or _ends_with_failures(d.successes[:n], patience) else (d.ended_by or "script_end")
        out.append(replace(d, turns=d.turns[:n], patience=patience, ended_by=ended_by))
    return out


def _ends_with_failures(successes: Sequence[bool], patience: int) -> bool:
    return len(successes) >= patience and not any(successes[-patience:])


def longest_success_run(successes: Sequence[bool]) -> int:
    """The longest run of consecutive successful turns (the per-dialogue term of LSS)."""
    best = streak = 0
    for ok in successes:
        streak = streak + 1 if ok else 0
        best = max(best, streak)
    return best


def recoveries_and_lapses(successes: Sequence[bool]) -> tuple[int, int]:
    """(recoveries, lapses): turns t >= 2 after a failed turn that succeeded, and all turns t >= 2 after a failed turn."""
    recoveries = lapses = 0
    for previous, current in zip(successes, successes[1:]):
        if not previous:
            lapses += 1
            recoveries += int(current)
    return recoveries, lapses


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def dialogue_metrics(dialogues: Iterable[Dialogue]) -> DialogueMetrics:
    """CSR, ISR, ACT_len, ACT_acc, ACT_succ, LSS, ROB and REC with its D' (METRICS.md section 3).

    Dialogues with no evaluated turn count in D (N_d = 0) but contribute nothing else.
    """
    dialogues = list(dialogues)
    ratios = [t.ratio for d in dialogues for t in d.turns]
    total_turns = len(ratios)
    successes_per = [sum(d.successes) for d in dialogues]
    rec_terms = []
    for d in dialogues:
        recoveries, lapses = recoveries_and_lapses(d.successes)
        if lapses:
            rec_terms.append(recoveries / lapses)
    n = len(dialogues)
    pct = lambda v: None if v is None else 100 * v  # noqa: E731
    return DialogueMetrics(
        dialogues=n,
        turns=total_turns,
        csr=pct(_mean(ratios)),
        isr=pct(sum(successes_per) / total_turns) if total_turns else None,
        act_len=total_turns / n if n else None,
        act_acc=sum(ratios) / n if n else None,
        act_succ=sum(successes_per) / n if n else None,
        lss=_mean([longest_success_run(d.successes) for d in dialogues]),
        rob=pct(_mean([s / d.length for s, d in zip(successes_per, dialogues) if d.length])),
        rec=pct(_mean(rec_terms)),
        rec_dialogues=len(rec_terms),
        rec_excluded=n - len(rec_terms),
    )


def reference_metrics(dialogues: Iterable[Dialogue]) -> ReferenceMetrics:
    """The figures EvolIF's `src/score.py` prints for these dialogues, computed its way.

    score.py reads every line of each log in order and stops a dialogue at the first line with
    remaining_patience 0, which is where the ingest stops too, so the turns are the same ones.
    Per dialogue it counts survival N_d, successes, the sum of per-turn ratios, the longest run of
    successes and recoveries (a success right after a failure; the first turn counts as after a
    success); then Endurance = means of N_d, sum r and successes; LSS the mean longest run;
    CSR the mean per-turn ratio; ISR pooled successes / turns; Robustness the mean of
    successes / N_d (nan when a dialogue has 0 turns); Recovery the mean of
    recoveries / (N_d - successes - 1) (numpy's x/0 = inf, 0/0 = nan; -0.0 for a dialogue
    without failures). Where the portal defines a metric otherwise (REC over the dialogues
    with a failed turn followed by another, ROB over dialogues with turns), the page and the
    API show this value beside the portal's.
    """
    dialogues = list(dialogues)
    survival, success, constraints, longest, recovery = [], [], [], [], []
    ratios: list[float] = []
    for d in dialogues:
        flags = d.successes
        survival.append(float(len(flags)))
        success.append(float(sum(flags)))
        constraints.append(sum((t.ratio for t in d.turns), 0.0))
        ratios.extend(t.ratio for t in d.turns)
        longest.append(float(longest_success_run(flags)))
        recovery.append(float(sum(1 for before, now in zip([True, *flags], flags) if now and not before)))
    n_turns = int(sum(survival))

    def mean(values) -> float | None:
        if not len(values):
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.mean(values))

    with np.errstate(divide="ignore", invalid="ignore"):
        failed = np.array(survival) - np.array(success) - 1
        robustness = np.array(success) / np.array(survival)
        recovery_rate = np.array(recovery) / failed
    pct = lambda v: None if v is None else 100 * v  # noqa: E731
    longest_log = max((len(d.turns) for d in dialogues), default=0)
    return ReferenceMetrics(
        dialogues=len(dialogues),
        turns=n_turns,
        csr=pct(mean(ratios)),
        isr=pct(sum(success) / n_turns) if n_turns else None,
        act_len=mean(survival),
        act_acc=mean(constraints),
        act_succ=mean(success),
        lss=mean(longest),
        rob=pct(mean(robustness)),
        rec=pct(mean(recovery_rate)),
        survival=tuple(sum(1 for d in dialogues if len(d.turns) > i) for i in range(longest_log)),
    )


def survival_curve(lengths: Iterable[int]) -> list[SurvivalPoint]:
    """S(t) = % of dialogues with N_d >= t, for t = 1..max N_d."""
    lengths = list(lengths)
    total = len(lengths)
    if not total:
        return []
    points = []
    for t in range(1, max(lengths) + 1):
        alive = sum(1 for n in lengths if n >= t)
        points.append(SurvivalPoint(turn=t, alive=alive, total=total, percent=100 * alive / total))
    return points


def steepest_drop(curve: Sequence[SurvivalPoint]) -> SurvivalDrop | None:
    """Where the curve falls most between consecutive turns (earliest on ties); None if it never falls.

    The fall after the last turn is not counted: there the script or the log ended.
    """
    best = None
    for before, after in zip(curve, curve[1:]):
        drop = before.percent - after.percent
        if drop > 0 and (best is None or drop > best.drop + 1e-12):
            best = SurvivalDrop(
                turn=after.turn, before=before.percent, after=after.percent, drop=drop, lost=before.alive - after.alive
            )
    return best


def group_pass_rates(rows: Iterable[tuple[str, int, int]]) -> list[GroupRate]:
    """Pooled pass rate per constraint group from (group, n_applicable, n_passed) rows, sorted by group."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for group, applicable, passed in rows:
        sums[group][0] += applicable
        sums[group][1] += passed
    return [
        GroupRate(group=g, applicable=a, passed=p, percent=100 * p / a if a else None)
        for g, (a, p) in sorted(sums.items())
    ]


@dataclass
class ModelDialogueRow:
    """The metrics of one model (or one run) with its survival curve and steepest drop."""

    label: str
    model: str
    runs: list[str]
    metrics: DialogueMetrics
    survival: list[SurvivalPoint]
    drop: SurvivalDrop | None
    ended_by_patience: int = 0
    ended_by_script: int = 0
    ended_stopped: int = 0
    groups: list[GroupRate] = field(default_factory=list)
    # derived from the same dialogues as `metrics`; left out of ==, since score.py's nan is never equal to itself
    reference: ReferenceMetrics | None = field(default=None, compare=False)

    @property
    def reference_differs(self) -> dict[str, float | None]:
        """Metric -> score.py's value where it is not the portal's (what the page shows beside it)."""
        return self.reference.differs_from(self.metrics) if self.reference else {}


#: how a dialogue ends: patience exhausted, the script's last turn, or the harness stopped before either
ENDINGS = ("patience", "script_end", "stopped")


def ending_counts(dialogues: Iterable[Dialogue]) -> dict[str, int]:
    """Dialogues per ending (a dialogue logged before endings were recorded counts as script_end)."""
    counts = dict.fromkeys(ENDINGS, 0)
    for d in dialogues:
        counts[d.ended_by if d.ended_by in counts else "script_end"] += 1
    return counts


def rows_by(dialogues: Iterable[Dialogue], *, by: str = "model") -> list[ModelDialogueRow]:
    """Metrics, survival and steepest drop per model (pooling its runs) or per run."""
    buckets: dict[str, list[Dialogue]] = defaultdict(list)
    for d in dialogues:
        buckets[d.model if by == "model" else d.run].append(d)
    rows = []
    for label, ds in sorted(buckets.items()):
        curve = survival_curve(d.length for d in ds)
        endings = ending_counts(ds)
        rows.append(
            ModelDialogueRow(
                label=label,
                model=ds[0].model,
                runs=sorted({d.run for d in ds}),
                metrics=dialogue_metrics(ds),
                survival=curve,
                drop=steepest_drop(curve),
                ended_by_patience=endings["patience"],
                ended_by_script=endings["script_end"],
                ended_stopped=endings["stopped"],
                reference=reference_metrics(ds),
            )
        )
    return rows


# per-dialogue figures for runs.metrics.paired --------------------------------------------
#: the eight metrics a dialogue has a share of (dialogue_share), higher being better for each
METRIC_FIELDS = ("csr", "isr", "act_len", "act_acc", "act_succ", "lss", "rob", "rec")


def dialogue_share(d: Dialogue, metric: str) -> tuple[float, float]:
    """(num, den) of one dialogue on one of the eight metrics (METRIC_FIELDS), such that over any set of dialogues
    100 x sum(num) / sum(den) is dialogue_metrics' figure: CSR and ISR pool turns (satisfaction ratios or successes
    over turns); ACT_len, ACT_acc, ACT_succ and LSS average over dialogues (the dialogue's value / 100 over 1, as they
    are in turns, not percent); ROB averages over dialogues with a turn and REC over those with a lapse (den 0 for the
    others)."""
    successes = sum(d.successes)
    ratios = sum((t.ratio for t in d.turns), 0.0)
    if metric == "csr":
        return ratios, float(d.length)
    if metric == "isr":
        return float(successes), float(d.length)
    if metric == "act_len":
        return d.length / 100, 1.0
    if metric == "act_acc":
        return ratios / 100, 1.0
    if metric == "act_succ":
        return successes / 100, 1.0
    if metric == "lss":
        return longest_success_run(d.successes) / 100, 1.0
    if metric == "rob":
        return (successes / d.length, 1.0) if d.length else (0.0, 0.0)
    if metric == "rec":
        recoveries, lapses = recoveries_and_lapses(d.successes)
        return (recoveries / lapses, 1.0) if lapses else (0.0, 0.0)
    raise ValueError(f"no per-dialogue share of {metric!r}: one of {', '.join(METRIC_FIELDS)}")


def metric_sides(
    dialogues: Iterable[Dialogue], metric: str, *, by: str = "model"
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per model (or run), its runs.metrics.paired Side on one metric: one judge (the dialogues'), an instance per
    dialogue script (the model's runs' dialogues of one script summed), num and den their dialogue_share; instances
    in external id order, den 0 where a row has no dialogue; rows by label. paired.figure(side) is the row's figure
    in rows_by (None where it is None)."""
    if by not in ("model", "run"):
        raise ValueError(f"rows are per model or per run, not {by!r}")
    dialogues = list(dialogues)
    axis = {instance: n for n, instance in enumerate(sorted({d.instance for d in dialogues}))}
    sides: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for d in dialogues:
        label = d.model if by == "model" else d.run
        if label not in sides:
            sides[label] = (np.zeros((len(axis), 1)), np.zeros((len(axis), 1)))
        num, den = dialogue_share(d, metric)
        sides[label][0][axis[d.instance], 0] += num
        sides[label][1][axis[d.instance], 0] += den
    return dict(sorted(sides.items()))


# rows from what the selector read ---------------------------------------------------------
def turn_rows(counts: Iterable[tuple[int, Any, int, int]]) -> dict[int, list[TurnRow]]:
    """attempt -> its TurnRows, from (attempt id, turn, n_applicable, n_passed): the GroupRollup rows of dimension
    "turn", or the same counted from the verdicts."""
    turns: dict[int, list[TurnRow]] = defaultdict(list)
    for attempt_id, turn, applicable, passed in counts:
        turns[attempt_id].append(TurnRow(turn=int(turn), n_applicable=applicable, n_passed=passed))
    return turns


def build_dialogues(attempts: dict[int, dict], turns: dict[int, list[TurnRow]]) -> list[Dialogue]:
    """One Dialogue per attempt with turns, and per attempt whose log ended at turn 0 (the model call failed at turn
    1: score.py counts it all the same), by model, run and instance. `attempts` maps an attempt id to its "run__label",
    "run__model__name", "instance__external_id", "run__settings__patience", "outcome__patience",
    "outcome__ended_by" and "outcome__ended_turn"; the run's patience wins over the logged one."""
    turns = {**turns, **{a: [] for a, row in attempts.items() if row["outcome__ended_turn"] == 0 and a not in turns}}
    out = []
    for attempt_id, rows in turns.items():
        a = attempts[attempt_id]
        patience = a["run__settings__patience"] or a["outcome__patience"]
        out.append(
            Dialogue(
                key=attempt_id,
                turns=tuple(sorted(rows, key=lambda r: r.turn)),
                patience=int(patience) if patience else None,
                model=a["run__model__name"],
                run=a["run__label"],
                instance=a["instance__external_id"],
                ended_by=a["outcome__ended_by"] or "",
            )
        )
    return sorted(out, key=lambda d: (d.model, d.run, d.instance))


def verdicts_behind(
    counts: Iterable[tuple[int, Any, int, str, int]], dialogues: Sequence[Dialogue], *, by: str = "model"
) -> dict[str, dict[int, dict[str, int]]]:
    """Model (or run) -> item id -> {"pass": n, "fail": n} from (attempt id, turn, item id, result, n) counts of
    applicable verdicts, over the turns these dialogues kept (what rank_change.items_behind reads)."""
    if by not in ("model", "run"):
        raise ValueError(f"rows are per model or per run, not {by!r}")
    kept = kept_turns(dialogues)
    labels = {d.key: d.model if by == "model" else d.run for d in dialogues}
    out: dict[str, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: {"pass": 0, "fail": 0}))
    for attempt_id, turn, item_id, result, n in counts:
        if turn in kept[attempt_id]:
            out[labels[attempt_id]][item_id][result] += n
    return out


def kept_turns(dialogues: Iterable[Dialogue]) -> dict[Any, set[int]]:
    """Attempt -> the turns its dialogue counts."""
    return {d.key: {t.turn for t in d.turns} for d in dialogues}


def metric_rank_change(
    before: Sequence[ModelDialogueRow],
    after: Sequence[ModelDialogueRow],
    metric: str,
    verdicts: dict | None = None,
    *,
    limit: int = 10,
):
    """Ranks by one metric (higher is better) before and after, Kendall's tau-b and the swapped pairs with the
    excluded items behind each (runs.metrics.rank_change.score_rank_change: the checklist leaderboard's rules)."""
    return score_rank_change(
        {r.label: getattr(r.metrics, metric) for r in before},
        {r.label: getattr(r.metrics, metric) for r in after},
        verdicts,
        limit=limit,
    )


def any_cut(dialogues: Sequence[Dialogue], full: Sequence[Dialogue]) -> bool:
    """Whether a dialogue is shorter than logged (a patience cut): then the rollups pool turns that no longer count."""
    lengths = {d.key: d.length for d in dialogues}
    return any(lengths[d.key] < d.length for d in full if d.key in lengths)


def group_rows(rollups: Iterable[tuple[int, str, int, int]]) -> dict[Any, list[tuple[str, int, int]]]:
    """(group, n_applicable, n_passed) rows per attempt from its "group" rollups (attempt id, group, n_applicable,
    n_passed)."""
    out: dict[Any, list[tuple[str, int, int]]] = defaultdict(list)
    for attempt_id, group, a, p in rollups:
        out[attempt_id].append((group, a, p))
    return out


def group_rows_by_turn(
    counts: Iterable[tuple[int, str, Any, int, int]], dialogues: Sequence[Dialogue]
) -> dict[Any, list[tuple[str, int, int]]]:
    """(group, n_applicable, n_passed) rows per attempt, over the turns each dialogue kept, from verdicts counted by
    (attempt id, group, turn, n_applicable, n_passed)."""
    kept = kept_turns(dialogues)
    out: dict[Any, list[tuple[str, int, int]]] = defaultdict(list)
    for attempt_id, group, turn, a, p in counts:
        if turn in kept[attempt_id]:
            out[attempt_id].append((group, a, p))
    return out


# agreement between the logged verdicts and the portal's checker ---------------------------
def agreement_rows(counts: Iterable[tuple[str, str, str, int]]) -> list[AgreementRow]:
    """Agreement of the logged verdicts with the checker's per constraint group, from (group, logged result, checker
    result, n) counts."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for group, result, checker, n in counts:
        s = sums[group]
        s[0] += n
        if result == checker:
            s[1] += n
        elif result == "pass":
            s[2] += n
        else:
            s[3] += n
    return [AgreementRow(g, *v) for g, v in sorted(sums.items())]


# dialogue viewer ---------------------------------------------------------------------------
@dataclass
class ViewerConstraint:
    """One constraint at one turn: what changed since the topic's previous turn and each judge's verdict."""

    key: str
    group: str
    description: str
    args: Any
    change: str  # "added" | "changed" | "kept"
    previous_args: Any = None
    verdicts: dict[str, dict] = field(default_factory=dict)

    @property
    def args_text(self) -> str:
        return json.dumps(self.args, ensure_ascii=False)

    @property
    def previous_args_text(self) -> str:
        return json.dumps(self.previous_args, ensure_ascii=False)


@dataclass
class ViewerTurn:
    """One turn of a dialogue as the viewer shows it."""

    turn: int
    topic: Any
    topic_event: str  # "start" | "new" | "return" | "same"
    user: str
    response: str | None
    evaluated: bool
    overall_ok: bool | None
    remaining_patience: int | None
    constraints: list[ViewerConstraint]
    removed: list[dict]
    is_end: bool = False


def viewer_turns(
    *, spec: dict, outcome: dict, messages: Sequence[dict], items: Sequence[dict], verdicts: Sequence[dict]
) -> list[ViewerTurn]:
    """Turn-by-turn rows of one attempt: script turn, topic event, constraint changes against the
    previous turn of the same topic, response, verdicts per judge, remaining patience.

    `items` are {"id", "key", "turn", "group", "description", "details"}; `verdicts` are
    {"item_id", "judge", "result", "reasoning"}. Turns after the log ended are left out.
    """
    logged = {t.get("turn"): t for t in outcome.get("turns", []) if isinstance(t, dict)}
    responses = {m.get("turn"): m.get("content") for m in messages if m.get("role") == "assistant"}
    users = {m.get("turn"): m.get("content") for m in messages if m.get("role") == "user"}
    by_item: dict[Any, dict[str, dict]] = defaultdict(dict)
    for v in verdicts:
        by_item[v["item_id"]][v["judge"]] = v
    items_by_turn: dict[int, list[dict]] = defaultdict(list)
    for item in items:
        items_by_turn[item["turn"]].append(item)
    ended = outcome.get("ended_turn")  # 0: the log is empty, no turn was played
    if ended is None:
        ended = max(logged, default=0) or None
    last_args_of_topic: dict[Any, dict[str, Any]] = {}
    seen_topics: set = set()
    previous_topic = object()
    rows = []
    for script in spec.get("turns", []):
        turn = script.get("turn")
        if not isinstance(turn, int) or (ended is not None and turn > ended):
            continue
        topic = script.get("active_topic")
        event = (
            "start" if not rows else "same" if topic == previous_topic else "return" if topic in seen_topics else "new"
        )
        previous = last_args_of_topic.get(topic, {})
        constraints, current = [], {}
        for item in items_by_turn.get(turn, []):
            args = (item.get("details") or {}).get("args")
            current[item["key"].split(":", 1)[1]] = (item["group"], args)
            before = previous.get(item["key"].split(":", 1)[1])
            change = "added" if before is None else "changed" if before[1] != args else "kept"
            constraints.append(
                ViewerConstraint(
                    key=item["key"],
                    group=item["group"],
                    description=item.get("description", ""),
                    args=args,
                    change=change,
                    previous_args=before[1] if before and change == "changed" else None,
                    verdicts=by_item.get(item["id"], {}),
                )
            )
        removed = [
            {"group": g, "args": json.dumps(a, ensure_ascii=False)}
            for k, (g, a) in previous.items()
            if k not in current
        ]
        log = logged.get(turn, {})
        rows.append(
            ViewerTurn(
                turn=turn,
                topic=topic,
                topic_event=event,
                user=users.get(turn) or script.get("user_query_verified") or script.get("user_query") or "",
                response=responses.get(turn),
                evaluated=turn in logged,
                overall_ok=log.get("overall_ok"),
                remaining_patience=log.get("remaining_patience"),
                constraints=constraints,
                removed=removed,
                is_end=turn == ended,
            )
        )
        last_args_of_topic[topic] = current
        seen_topics.add(topic)
        previous_topic = topic
    return rows


def group_profile(
    dialogues: Sequence[Dialogue], per_attempt: dict[Any, list[tuple[str, int, int]]], *, by: str = "model"
) -> dict:
    """Constraint-group pass rates per model (or run): {"groups", "series": [(label, rates)], "table": rows with one cell per group}."""
    buckets: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for d in dialogues:
        buckets[d.model if by == "model" else d.run].extend(per_attempt.get(d.key, []))
    series = [(label, group_pass_rates(rows)) for label, rows in sorted(buckets.items())]
    groups = sorted({r.group for _, rates in series for r in rates})
    table = []
    for label, rates in series:
        by_group = {r.group: r for r in rates}
        table.append({"label": label, "cells": [by_group.get(g) for g in groups]})
    return {"groups": groups, "series": series, "table": table}
