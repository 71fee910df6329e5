"""What each kind's pages show, as data (`runs.pages.PageData`): one module per kind.

The page frame (`runs.pages.render_page`) turns it into CSV/JSON exports and frozen share
snapshots, so every page of every kind has both without code of its own. Each builder takes
the context its view renders and only reshapes it: numbers come from `runs.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runs.metrics.agreement import AgreementRow
from runs.pages import Column, Table, rows_of


def agreement_table(rows: Sequence[AgreementRow], *, group_label: str) -> Table:
    """Agreement of logged verdicts with the portal's checkers per group (the dialogue and hierarchy re-check pages)."""
    return Table(
        "agreement",
        f"Agreement per {group_label.lower()}",
        (
            Column("group", group_label),
            Column("pairs", "Verdict pairs", "int"),
            Column("agree", "Agree", "int"),
            Column("percent", "Agreement %", "pct"),
            Column("logged_pass_checker_fail", "Log pass, checker fail", "int"),
            Column("logged_fail_checker_pass", "Log fail, checker pass", "int"),
        ),
        rows_of(
            rows,
            group=lambda a: a.group,
            pairs=lambda a: a.pairs,
            agree=lambda a: a.agree,
            percent=lambda a: a.percent,
            logged_pass_checker_fail=lambda a: a.logged_pass_checker_fail,
            logged_fail_checker_pass=lambda a: a.logged_fail_checker_pass,
        ),
    )


def yes_no(value: Any) -> str:
    """A flag as the pages say it: "yes", "no", "" when unknown; anything else an import stored, as written."""
    if value is None:
        return ""
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)
