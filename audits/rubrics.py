"""What annotators answer for each audit subject, and which answers make a unit valid.

OctoBench's item audit (decidable, grounded, duplicate/conflict, overall), ManyIH's
faithful / unclear / incorrect label of generated constraints, EvolIF's check that a
synthesized user query expresses its active constraints, and a judge verdict's check (did the
attempt satisfy the item?). A label is valid when every
criterion holds one of its valid values (METRICS.md section 6: "all criteria met").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Criterion:
    """One question of a rubric: its choices (value, label) in keyboard order and the values that count as valid."""

    name: str
    question: str
    choices: tuple[tuple[str, str], ...]
    valid: frozenset[str]

    @property
    def values(self) -> list[str]:
        return [v for v, _ in self.choices]


@dataclass(frozen=True)
class Rubric:
    """The criteria of one subject and the issue taxonomy leads pick an adjudication reason from."""

    subject: str
    criteria: tuple[Criterion, ...]
    issues: tuple[tuple[str, str], ...]
    #: answers that decide nothing (a verdict's "cannot tell"): a unit whose labels agree on one closes unresolved
    undecided: frozenset[str] = frozenset()
    #: how the unit's final statuses (valid, invalid, unresolved) read for this subject
    status_labels: tuple[tuple[str, str], ...] = (
        ("valid", "valid"),
        ("invalid", "invalid"),
        ("unresolved", "unresolved"),
    )

    def criterion(self, name: str) -> Criterion:
        return next(c for c in self.criteria if c.name == name)

    def clean(self, values: dict) -> dict[str, str]:
        """The label's values, one per criterion; ValueError naming the first missing or unknown answer."""
        out = {}
        for c in self.criteria:
            value = values.get(c.name)
            if value not in c.values:
                raise ValueError(f"{c.name}: choose one of {', '.join(c.values)}")
            out[c.name] = value
        return out

    def is_valid(self, values: dict) -> bool:
        """True when every criterion holds a valid value."""
        return all(values.get(c.name) in c.valid for c in self.criteria)

    def is_undecided(self, values: dict) -> bool:
        """True when an answer decides nothing (see `undecided`)."""
        return any(values.get(c.name) in self.undecided for c in self.criteria)

    def status_label(self, status: str) -> str:
        """A final status as this subject names it (a verdict's "valid" is "satisfied")."""
        return dict(self.status_labels).get(status, status)


YES_NO = (("yes", "yes"), ("no", "no"))
COMMON_ISSUES = (("annotator-error", "an annotator misread the item"), ("other", "other (see note)"))

CHECKLIST = Rubric(
    subject="checklist_items",
    criteria=(
        Criterion("decidable", "Is the item unambiguous and decidable yes/no?", YES_NO, frozenset({"yes"})),
        Criterion(
            "grounded",
            "Is it grounded in explicit evidence (system prompt, user query, repo files)?",
            YES_NO,
            frozenset({"yes"}),
        ),
        Criterion(
            "duplicate",
            "Does it duplicate or conflict with another item of the instance?",
            (("none", "neither"), ("duplicate", "duplicate"), ("conflict", "conflict")),
            frozenset({"none"}),
        ),
        Criterion(
            "overall",
            "Overall",
            (("ok", "ok"), ("ambiguous", "ambiguous"), ("unfaithful", "unfaithful")),
            frozenset({"ok"}),
        ),
    ),
    issues=(
        ("ambiguous", "ambiguous wording"),
        ("not-decidable", "not binary-decidable"),
        ("not-grounded", "not grounded in the instance"),
        ("duplicate", "duplicates another item"),
        ("conflict", "conflicts with another item"),
        ("unfaithful", "unfaithful to the instruction"),
    )
    + COMMON_ISSUES,
)
HIERARCHY = Rubric(
    subject="hierarchy_constraints",
    criteria=(
        Criterion(
            "faithful",
            "Is the generated (constraint, context, check) faithful?",
            (("faithful", "faithful"), ("unclear", "unclear"), ("incorrect", "incorrect")),
            frozenset({"faithful"}),
        ),
    ),
    issues=(
        ("wrong-constraint", "constraint does not say what the style requires"),
        ("wrong-privilege", "privilege or conflict resolution is wrong"),
        ("unclear", "constraint is unclear"),
    )
    + COMMON_ISSUES,
)
DIALOGUE = Rubric(
    subject="dialogue_queries",
    criteria=(
        Criterion(
            "expresses", "Does the user query express the intended (active) constraints?", YES_NO, frozenset({"yes"})
        ),
    ),
    issues=(
        ("missing-constraint", "a constraint is missing from the query"),
        ("contradicts", "the query contradicts a constraint"),
        ("unnatural", "the query is unnatural or unclear"),
    )
    + COMMON_ISSUES,
)
#: a judge's verdict: did the attempt's trajectory satisfy the item? "satisfied" is valid, "cannot tell" decides nothing
SATISFIED, NOT_SATISFIED, CANNOT_TELL = "satisfied", "not_satisfied", "cannot_tell"
VERDICT = Rubric(
    subject="verdicts",
    criteria=(
        Criterion(
            "satisfied",
            "Did the trajectory satisfy the item?",
            ((SATISFIED, "satisfied"), (NOT_SATISFIED, "not satisfied"), (CANNOT_TELL, "cannot tell")),
            frozenset({SATISFIED}),
        ),
    ),
    issues=(
        ("missed-evidence", "an annotator missed evidence in the trajectory"),
        ("item-unclear", "the item does not say what satisfies it"),
        ("not-applicable", "the item does not apply to this attempt"),
    )
    + COMMON_ISSUES,
    undecided=frozenset({CANNOT_TELL}),
    status_labels=(("valid", "satisfied"), ("invalid", "not satisfied"), ("unresolved", "cannot tell")),
)
RUBRICS = {r.subject: r for r in (CHECKLIST, HIERARCHY, DIALOGUE, VERDICT)}


def rubric_for(subject: str) -> Rubric:
    """The rubric of a campaign subject."""
    return RUBRICS[subject]
