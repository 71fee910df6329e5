"""Stratified, seeded sampling of audit units and near-duplicate detection (pure functions).

The sample is a function of (candidates, strata, allocation, size, seed) only:
candidates are sorted by their stable key and each stratum draws with its own
`random.Random(f"{seed}:{stratum}")`, so the same seed re-creates the same sample.
"""

from __future__ import annotations

import difflib
import math
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

#: stratum dimensions: URL / form value -> label
STRATA = {
    "category": "source category",
    "check_type": "check type",
    "conditional": "conditional vs unconditional",
    "primary_category": "primary category",
    "benchmark": "benchmark",
    "judges": "judges' verdicts: all pass / all fail / split (verdict audits)",
    "model": "model (verdict audits)",
    "health": "item health flag: the item's first flag, or unflagged as the control",
}
ALL = "all"
#: near-duplicate thresholds: normalised token Jaccard, or difflib's ratio on the normalised text
JACCARD_THRESHOLD = 0.8
RATIO_THRESHOLD = 0.9


@dataclass(frozen=True)
class Candidate:
    """A unit that could be sampled: its stable key, what it points at, its facets and its text."""

    key: str
    instance_id: int
    item_id: int | None
    turn: int | None
    facets: dict = field(default_factory=dict, hash=False, compare=False)
    text: str = field(default="", compare=False)
    #: the attempt whose verdict on the item is audited (verdict audits), else None
    attempt_id: int | None = field(default=None, compare=False)


def stratum_of(candidate: Candidate, strata: Sequence[str]) -> str:
    """The stratum label of a candidate: its facet values joined by " / ", or "all" without strata."""
    if not strata:
        return ALL
    return " / ".join(str(candidate.facets.get(s) or "(none)") for s in strata)


def population(candidates: Iterable[Candidate], strata: Sequence[str]) -> dict[str, int]:
    """Number of candidates per stratum, strata sorted by name."""
    counts: dict[str, int] = defaultdict(int)
    for c in candidates:
        counts[stratum_of(c, strata)] += 1
    return dict(sorted(counts.items()))


#: standard deviation assumed for a stratum the pilot says nothing about: the largest a valid / invalid rate can have
NEYMAN_DEFAULT_SD = 0.5


def quotas(
    counts: dict[str, int], size: int, *, mode: str, minimum: int = 0, sd: dict[str, float] | None = None
) -> dict[str, float]:
    """The exact (unrounded) number of units each stratum is due: what `allocate` rounds.

    proportional: size * N_s / N; equal: size / strata; minimum: min(minimum, N_s) each, the rest
    proportional to N_s; neyman: proportional to N_s * S_s (S_s from a pilot, `NEYMAN_DEFAULT_SD`
    where missing). A stratum is never due more than it has: what it cannot take goes to the
    others in the same proportions. The quotas sum to min(size, population).
    """
    size = min(size, sum(counts.values()))
    base = dict.fromkeys(counts, 0.0)
    if mode == "minimum":
        base = {s: float(min(minimum, n)) for s, n in counts.items()}
        if sum(base.values()) > size:  # the minimum alone is over the size: equal shares of the size
            return quotas(counts, size, mode="equal")
        mode = "proportional"
    if mode == "equal":
        weights = dict.fromkeys(counts, 1.0)
    elif mode == "neyman":
        sd = sd or {}
        weights = {s: n * max(0.0, float(sd.get(s, NEYMAN_DEFAULT_SD))) for s, n in counts.items()}
        if not sum(weights.values()):  # every stratum without spread: fall back to proportional
            weights = {s: float(n) for s, n in counts.items()}
    elif mode == "proportional":
        weights = {s: float(n) for s, n in counts.items()}
    else:
        raise ValueError(f"unknown allocation {mode!r}")
    room = {s: counts[s] - base[s] for s in counts}
    due = dict(base)
    left = size - sum(base.values())
    open_strata = {s for s in counts if room[s] > 0 and weights[s] > 0}
    while left > 1e-9 and open_strata:
        total = sum(weights[s] for s in open_strata)
        share = {s: left * weights[s] / total for s in open_strata}
        full = {s for s in open_strata if share[s] >= room[s]}
        if not full:
            for s in open_strata:
                due[s] += share[s]
            break
        for s in full:  # these take all they have; the rest is shared again among the others
            due[s] += room[s]
            left -= room[s]
        open_strata -= full
    return due


def allocate(
    counts: dict[str, int], size: int, *, mode: str, minimum: int = 0, sd: dict[str, float] | None = None
) -> dict[str, int]:
    """How many units each stratum gets: its quota (see `quotas`) rounded by largest remainder.

    Every stratum gets the whole part of its quota; the units left go one each to the strata
    with the largest fractional parts (ties: larger population, then stratum name), so no
    stratum is ever more than one unit away from its quota and the total is min(size, population).
    """
    due = quotas(counts, size, mode=mode, minimum=minimum, sd=sd)
    alloc = {s: min(counts[s], int(math.floor(q + 1e-9))) for s, q in due.items()}
    left = min(size, sum(counts.values())) - sum(alloc.values())
    order = sorted((s for s in counts if alloc[s] < counts[s]), key=lambda s: (-(due[s] - alloc[s]), -counts[s], s))
    for s in order[: max(0, left)]:
        alloc[s] += 1
    return alloc


def empty_strata(counts: dict[str, int], alloc: dict[str, int]) -> list[str]:
    """Strata with candidates that the allocation gives no unit (the draft warns about them)."""
    return [s for s, n in counts.items() if n and not alloc.get(s)]


def draw(
    candidates: Sequence[Candidate], strata: Sequence[str], allocation: dict[str, int], seed: int
) -> list[tuple[str, Candidate]]:
    """The sample: (stratum, candidate) pairs, strata by name, each stratum's draw in key order."""
    by_stratum: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(candidates, key=lambda c: c.key):
        by_stratum[stratum_of(c, strata)].append(c)
    out = []
    for stratum in sorted(by_stratum):
        rng = random.Random(f"{seed}:{stratum}")
        chosen = rng.sample(by_stratum[stratum], allocation.get(stratum, 0))
        out.extend((stratum, c) for c in sorted(chosen, key=lambda c: c.key))
    return out


def sample(
    candidates: Sequence[Candidate],
    *,
    strata: Sequence[str],
    mode: str,
    size: int,
    seed: int,
    minimum: int = 0,
    sd: dict[str, float] | None = None,
) -> list[tuple[str, Candidate]]:
    """Population, allocation and draw in one call: the frozen sample of a campaign."""
    alloc = allocate(population(candidates, strata), size, mode=mode, minimum=minimum, sd=sd)
    return draw(candidates, strata, alloc, seed)


# near-duplicates ------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower-cased word tokens joined by single spaces (punctuation and spacing do not count)."""
    return " ".join(_TOKEN.findall(text.lower()))


def _jaccard(ta: set[str], tb: set[str]) -> float:
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0


def similarity(a: str, b: str) -> tuple[float, float]:
    """(token Jaccard, difflib ratio) of two normalised texts."""
    na, nb = normalise(a), normalise(b)
    return _jaccard(set(na.split()), set(nb.split())), difflib.SequenceMatcher(None, na, nb, autojunk=False).ratio()


@dataclass(frozen=True)
class NearDuplicate:
    """Two candidates of one instance whose texts are nearly the same."""

    instance_id: int
    a: str
    b: str
    text_a: str
    text_b: str
    jaccard: float
    ratio: float


def near_duplicates(candidates: Iterable[Candidate]) -> list[NearDuplicate]:
    """Pairs within an instance with token Jaccard >= 0.8 or difflib ratio >= 0.9, most similar first."""
    by_instance: dict[int, list[Candidate]] = defaultdict(list)
    for c in candidates:
        if c.text:
            by_instance[c.instance_id].append(c)
    out = []
    for instance_id, group in by_instance.items():
        texts = []  # each text normalised once, not once per pair
        for c in sorted(group, key=lambda c: c.key):
            norm = normalise(c.text)
            texts.append((c, norm, set(norm.split())))
        for (a, na, ta), (b, nb, tb) in combinations(texts, 2):
            jaccard = _jaccard(ta, tb)
            matcher = difflib.SequenceMatcher(None, na, nb, autojunk=False)
            # quick_ratio() is an upper bound of ratio() and costs a pass over the characters where ratio() costs a
            # search per matching block: on an instance's items it rules out all but a few pairs of thousands
            if jaccard < JACCARD_THRESHOLD and matcher.quick_ratio() < RATIO_THRESHOLD:
                continue
            ratio = matcher.ratio()
            if jaccard >= JACCARD_THRESHOLD or ratio >= RATIO_THRESHOLD:
                out.append(NearDuplicate(instance_id, a.key, b.key, a.text, b.text, jaccard, ratio))
    return sorted(out, key=lambda d: (-max(d.jaccard, d.ratio), d.a, d.b))
