"""How a leaderboard's order changes between two sets of rows (METRICS.md section 6, effect on results).

Ranks are by ISR (1 = best, tied scores share the mean of their ranks, models without a
score are unranked); Kendall's tau-b compares the two rankings over the models ranked in
both; a swap is a pair of models whose relative order changed (flipped, tied or untied).
The items behind a swap are the excluded items the gaining model failed more often than the
other (`items_behind`). Used by the leaderboard page under an exclusion policy, the audit
effect page and the hierarchy metrics page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from runs.metrics.stats import kendall_tau


@dataclass
class EffectRow:
    """One model before and after a change of the items scored."""

    model: str
    isr_before: float | None
    isr_after: float | None
    csr_before: float | None
    csr_after: float | None
    rank_before: float | None
    rank_after: float | None

    @property
    def rank_change(self) -> float | None:
        if self.rank_before is None or self.rank_after is None:
            return None
        return self.rank_before - self.rank_after  # positive: moved up


def ranks(scores: dict[str, float | None]) -> dict[str, float]:
    """Rank 1 for the highest score; tied scores share the mean of their ranks; models without a score are unranked."""
    ordered = sorted(((m, s) for m, s in scores.items() if s is not None), key=lambda ms: (-ms[1], ms[0]))
    out, i = {}, 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1][1] == ordered[i][1]:
            j += 1
        for k in range(i, j + 1):
            out[ordered[k][0]] = (i + j) / 2 + 1
        i = j + 1
    return out


def compare(before: Sequence, after: Sequence) -> tuple[list[EffectRow], float | None, list[tuple[str, str]]]:
    """Rows (in the after order), tau and the pairs whose relative order changed, as (gainer, other), from two lists of ScoreRows."""
    b = {r.model: r for r in before}
    a = {r.model: r for r in after}
    rb = ranks({m: r.isr for m, r in b.items()})
    ra = ranks({m: r.isr for m, r in a.items()})
    models = sorted(set(b) | set(a), key=lambda m: (ra.get(m, 1e9), m))
    rows = [
        EffectRow(
            m,
            getattr(b.get(m), "isr", None),
            getattr(a.get(m), "isr", None),
            getattr(b.get(m), "csr", None),
            getattr(a.get(m), "csr", None),
            rb.get(m),
            ra.get(m),
        )
        for m in models
    ]
    common = [m for m in models if m in rb and m in ra]
    tau = kendall_tau([-rb[m] for m in common], [-ra[m] for m in common])
    swaps = []
    for x, y in combinations(common, 2):
        before_sign, after_sign = _sign(rb[x] - rb[y]), _sign(ra[x] - ra[y])
        if before_sign == after_sign:
            continue
        # the model that gained relative to the other comes first (a tie broken or an order flipped)
        swaps.append((x, y) if after_sign < before_sign else (y, x))
    return rows, tau, swaps


def items_behind(up: str, down: str, verdicts: dict, limit: int) -> list[dict]:
    """Excluded items the `down` model passed more often than the `up` model (excluding them hurt `down` most);
    `verdicts` is model -> item id -> {"pass": n, "fail": n}. Largest difference first, at most `limit`."""
    out = []
    for item_id in set(verdicts.get(up, {})) | set(verdicts.get(down, {})):
        rate_up = _rate(verdicts.get(up, {}).get(item_id))
        rate_down = _rate(verdicts.get(down, {}).get(item_id))
        if rate_up is None or rate_down is None or rate_down <= rate_up:
            continue  # an item `up` passed as often or more: leaving it out did not help `up` past `down`
        out.append(
            {
                "item_id": item_id,
                "pass_rate_up": rate_up,
                "pass_rate_down": rate_down,
                "difference": rate_down - rate_up,
            }
        )
    return sorted(out, key=lambda d: (-d["difference"], d["item_id"]))[:limit]


def _rate(counts: dict | None) -> float | None:
    if not counts:
        return None
    n = counts.get("pass", 0) + counts.get("fail", 0)
    return counts.get("pass", 0) / n if n else None


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


# rankings by one score (dialogue, hierarchy and conflict pages) ----------------------------
@dataclass(frozen=True)
class RankLine:
    """One model (or run) ranked by one score with every item and under an exclusion policy (1 = best)."""

    label: str
    value_before: float | None
    value_after: float | None
    rank_before: float | None
    rank_after: float | None

    @property
    def rank_change(self) -> float | None:
        """Positive: moved up."""
        return None if self.rank_before is None or self.rank_after is None else self.rank_before - self.rank_after


@dataclass(frozen=True)
class RankSwap:
    """Two rows whose order changed (flipped, tied or untied): `up` gained on `down`, and the excluded items behind
    it ({"item_id", "pass_rate_up", "pass_rate_down", "difference"}, largest difference first)."""

    up: str
    down: str
    items: tuple[dict, ...] = ()


@dataclass(frozen=True)
class _Scored:
    """A label and its score as `compare` reads a leaderboard row (where the score is called isr)."""

    model: str
    isr: float | None
    csr: None = None


def score_rank_change(
    before: dict[str, float | None], after: dict[str, float | None], verdicts: dict | None = None, *, limit: int = 10
) -> tuple[list[RankLine], float | None, list[RankSwap]]:
    """Ranks by a score (higher is better, label -> score) with every item and under a policy, Kendall's tau-b between
    the two rankings, and the swapped pairs with the excluded items behind each (`items_behind` over `verdicts`)."""
    rows, tau, pairs = compare([_Scored(k, v) for k, v in before.items()], [_Scored(k, v) for k, v in after.items()])
    lines = [RankLine(r.model, r.isr_before, r.isr_after, r.rank_before, r.rank_after) for r in rows]
    swaps = [RankSwap(up, down, tuple(items_behind(up, down, verdicts or {}, limit))) for up, down in pairs]
    return lines, tau, swaps
