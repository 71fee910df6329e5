"""What every benchmark's demo planner shares: the study sizes, the Plan of ingest Steps it returns, its seeded
random source and the writers of its source files."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runs.ingest import Options


@dataclass(frozen=True)
class Scale:
    """How big the demo study is."""

    octo_instances: int
    octo_repetitions: int
    evolif_dialogs: int
    evolif_turns: tuple[int, int]
    manyih_samples: int
    guidebench_per_category: int


SCALES = {
    "small": Scale(
        octo_instances=8,
        octo_repetitions=2,
        evolif_dialogs=4,
        evolif_turns=(10, 18),
        manyih_samples=9,
        guidebench_per_category=5,
    ),
    "default": Scale(
        octo_instances=40,
        octo_repetitions=3,
        evolif_dialogs=12,
        evolif_turns=(10, 40),
        manyih_samples=40,
        guidebench_per_category=20,
    ),
}


@dataclass
class Step:
    """One ingest command of the demo: a format, its files and the CLI options it would get."""

    format: str
    paths: list[Path]
    options: Options
    #: run label -> settings to record on the run after the ingest (harness settings the format cannot carry)
    run_settings: dict[str, dict] = field(default_factory=dict)


@dataclass
class Plan:
    """The steps of one benchmark of the demo."""

    benchmark: str
    slug: str
    formats: tuple[str, ...]
    steps: list[Step] = field(default_factory=list)
    #: re-check every run with the portal's checkers after the ingest, as a team does before reading the pages
    #: built on the portal's verdicts (ManyIH's conflict resolution needs the suppressed instructions checked)
    recheck: bool = False


def seeded_rng(seed: int, name: str) -> random.Random:
    """The random source of one part of the study: the same (seed, name) always draws the same numbers."""
    return random.Random(f"ifportal-demo:{seed}:{name}")


def sigmoid(x: float) -> float:
    """The logistic function: a logit as a probability."""
    return 1.0 / (1.0 + math.exp(-x))


def write_json(path: Path, value: Any) -> Path:
    """Write `value` as indented UTF-8 JSON (parents made as needed); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write one JSON record a line (parents made as needed); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path
