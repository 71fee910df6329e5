"""What a re-check would change, read before it starts: the confirmation page of `runs.views.recheck.start` says it
to the person about to press the button, since the checker judge's verdicts then show on every user's pages."""

from __future__ import annotations

from dataclasses import dataclass

from runs.models import Attempt, Benchmark, ChecklistItem, Run, Verdict
from runs.recheck import CHECKERS


@dataclass(frozen=True)
class RecheckPreview:
    """The judge a re-check of these runs writes under, and how many of its verdicts it may write and already has."""

    judge: str
    runs: list[str]
    attempts: int
    #: every (attempt, checklist item) the checkers may judge: the verdicts written at most
    verdicts: int
    #: the judge's verdicts on these runs now (a re-check rewrites those that differ)
    existing: int
    #: whether the judge has verdicts on any run of the benchmark already (its pages list it)
    judge_shown: bool

    @property
    def new_judge(self) -> bool:
        """The benchmark's pages list the judge for the first time after this re-check."""
        return not self.judge_shown


def recheck_preview(*, benchmark: Benchmark, runs: list[Run]) -> RecheckPreview:
    """What re-checking `runs` of `benchmark` with its kind's checkers (runs.recheck.CHECKERS) would write: four
    counting queries, no verdict is read."""
    checker = CHECKERS[benchmark.kind]
    run_ids = [r.id for r in runs]
    return RecheckPreview(
        judge=checker.judge,
        runs=[r.label for r in runs],
        attempts=Attempt.objects.filter(run_id__in=run_ids).count(),
        verdicts=ChecklistItem.objects.filter(checker.items, instance__attempts__run_id__in=run_ids).count(),
        existing=Verdict.objects.filter(judge__name=checker.judge, attempt__run_id__in=run_ids).count(),
        judge_shown=Verdict.objects.filter(judge__name=checker.judge, attempt__run__benchmark=benchmark).exists(),
    )
