"""Agreement between logged verdicts and the portal's own checkers, per constraint or style group."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgreementRow:
    """Per group: (logged, checker) verdict pairs, how many agree, and the two kinds of disagreement."""

    group: str
    pairs: int
    agree: int
    logged_pass_checker_fail: int
    logged_fail_checker_pass: int

    @property
    def percent(self) -> float | None:
        return 100 * self.agree / self.pairs if self.pairs else None
