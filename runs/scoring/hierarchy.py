"""Privilege resolution for many-tier instruction hierarchies (METRICS.md section 4).

Each instruction has a privilege value and the instructions it conflicts with. The
engine visits instructions from highest to lowest privilege (ties: the one later in the
prompt first); an instruction is *active* if none of the instructions it conflicts with
is already active, otherwise *suppressed*. Conflicts are symmetric: a conflict listed on
either side counts for both. On the released ManyIH coding data this reproduces
`metadata.expected_styles` exactly, including the order of the style ids in each group
(the visiting order).

Two prompt interfaces encode the same order (ManyIH paper, section 3; reference
`manyih/coding/prompts.py`): *scalar* `[[z=N]]text[[/z]]` (higher wins) and *ordinal*
`[[Privilege N]]text[[/Privilege]]` (1 = highest scalar value, dense ranks: equal
scalar values share a rank). The legacy "inline" annotation style writes
`Instruction <id> (z=N): text` and `Instruction <id> (Privilege N): text`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Interface = Literal["scalar", "ordinal"]

_BOUNDARY = re.compile(
    r"\[\[\s*(?:Privilege\s+(?P<ordinal>-?\d+)\s*\]\](?P<otext>.*?)\[\[\s*/\s*Privilege\s*\]\]"
    r"|z\s*=\s*(?P<scalar>-?\d+(?:\.\d+)?)\s*\]\](?P<stext>.*?)\[\[\s*/\s*z\s*\]\])",
    re.DOTALL,
)
_INLINE = re.compile(
    r"^[ \t]*-?[ \t]*Instruction[ \t]+(?P<id>\S+)[ \t]+\((?:Privilege[ \t]+(?P<ordinal>-?\d+)"
    r"|z[ \t]*=[ \t]*(?P<scalar>-?\d+(?:\.\d+)?))\):[ \t]*(?P<text>[^\n]*)",
    re.MULTILINE,
)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class PrivilegeTag:
    """One privilege-tagged instruction found in a prompt."""

    interface: Interface
    value: int | float
    text: str
    #: 0-based order of the tag among the tags of the prompt
    position: int
    #: character offset of the tag in the prompt
    offset: int
    #: the instruction id, when the annotation names it (legacy inline style)
    instruction_id: str | None = None


@dataclass(frozen=True)
class InstructionResolution:
    """The fate of one instruction: active or suppressed, its ordinal rank and who beat it."""

    id: Any
    privilege: int | float
    position: int
    rank: int
    active: bool
    suppressed_by: tuple = ()
    conflicts_with: tuple = ()
    #: index into Resolution.groups, or None when the instruction conflicts with nothing
    group: int | None = None


@dataclass(frozen=True)
class ConflictGroup:
    """A connected component of the conflict graph (two or more instructions)."""

    members: tuple
    winners: tuple


@dataclass
class Resolution:
    """The result of `resolve_privileges`: per instruction (in prompt order), visiting order, conflict groups."""

    instructions: dict[Any, InstructionResolution] = field(default_factory=dict)
    visit_order: tuple = ()
    groups: list[ConflictGroup] = field(default_factory=list)

    @property
    def active(self) -> list:
        """Ids of the active instructions in visiting order."""
        return [i for i in self.visit_order if self.instructions[i].active]

    @property
    def suppressed(self) -> list:
        """Ids of the suppressed instructions in visiting order."""
        return [i for i in self.visit_order if not self.instructions[i].active]


def ordinal_ranks(privileges: Iterable[int | float]) -> dict[int | float, int]:
    """Scalar privilege -> ordinal rank: 1 for the highest value, equal values share a rank."""
    return {p: rank for rank, p in enumerate(sorted(set(privileges), reverse=True), start=1)}


def resolve_privileges(instructions: Sequence[Mapping[str, Any]], *, interface: Interface = "scalar") -> Resolution:
    """Resolve conflicts among `instructions` ({"id", "privilege", "conflicts_with", "position"?}).

    `privilege` is a scalar value (higher wins) or, with interface="ordinal", an ordinal
    rank (lower wins). `position` is the order in the prompt (default: the list order);
    ties go to the instruction later in the prompt. Raises ValueError on duplicate ids
    or a conflict with an unknown id.
    """
    by_id: dict[Any, Mapping[str, Any]] = {}
    positions: dict[Any, int] = {}
    for n, instruction in enumerate(instructions):
        key = instruction["id"]
        if key in by_id:
            raise ValueError(f"instruction id {key!r} appears twice")
        by_id[key] = instruction
        position = instruction.get("position")
        positions[key] = n if position is None else position
    conflicts: dict[Any, set] = {key: set() for key in by_id}
    for key, instruction in by_id.items():
        for other in instruction.get("conflicts_with") or ():
            if other not in by_id:
                raise ValueError(f"instruction {key!r} conflicts with unknown instruction {other!r}")
            if other != key:
                conflicts[key].add(other)
                conflicts[other].add(key)

    def strength(key) -> int | float:
        value = by_id[key]["privilege"]
        return -value if interface == "ordinal" else value

    order = sorted(by_id, key=lambda k: (strength(k), positions[k]), reverse=True)
    values = {k: by_id[k]["privilege"] for k in by_id}
    if interface == "ordinal":  # the values are ranks already; re-rank densely so gaps do not matter
        dense = {p: r for r, p in enumerate(sorted(set(values.values())), start=1)}
    else:
        dense = ordinal_ranks(values.values())
    ranks = {k: dense[v] for k, v in values.items()}

    active: set = set()
    beaten_by: dict[Any, tuple] = {}
    for key in order:
        winners = [other for other in order if other in active and other in conflicts[key]]
        if winners:
            beaten_by[key] = tuple(winners)
        else:
            active.add(key)

    groups, group_of = _components(order, conflicts, active, positions)
    in_prompt_order = sorted(by_id, key=lambda k: positions[k])
    resolved = {
        key: InstructionResolution(
            id=key,
            privilege=by_id[key]["privilege"],
            position=positions[key],
            rank=ranks[key],
            active=key in active,
            suppressed_by=beaten_by.get(key, ()),
            conflicts_with=tuple(sorted(conflicts[key], key=lambda k: positions[k])),
            group=group_of.get(key),
        )
        for key in in_prompt_order
    }
    return Resolution(instructions=resolved, visit_order=tuple(order), groups=groups)


def _components(order, conflicts, active, positions) -> tuple[list[ConflictGroup], dict]:
    """Connected components with an edge, ordered by their first member in the prompt."""
    seen: set = set()
    components = []
    for start in sorted(order, key=lambda k: positions[k]):
        if start in seen or not conflicts[start]:
            continue
        stack, members = [start], []
        seen.add(start)
        while stack:
            key = stack.pop()
            members.append(key)
            for other in conflicts[key]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        members.sort(key=lambda k: positions[k])
        components.append(members)
    groups, group_of = [], {}
    for n, members in enumerate(components):
        winners = tuple(k for k in order if k in active and k in members)
        groups.append(ConflictGroup(members=tuple(members), winners=winners))
        for key in members:
            group_of[key] = n
    return groups, group_of


def active_styles(instructions: Sequence[Mapping[str, Any]], resolution: Resolution) -> dict[str, list[str]]:
    """{style_key: [style_id of each active instruction, in visiting order]}: ManyIH's expected_styles."""
    by_id = {i["id"]: i for i in instructions}
    styles: dict[str, list[str]] = {}
    for key in resolution.active:
        instruction = by_id[key]
        styles.setdefault(instruction["style_key"], []).append(instruction["style_id"])
    return styles


def parse_privilege_tags(prompt: str) -> list[PrivilegeTag]:
    """The privilege-tagged instructions of a prompt, in prompt order.

    Reads the boundary markers `[[Privilege N]]...[[/Privilege]]` and `[[z=N]]...[[/z]]`;
    if the prompt has none, the legacy inline labels `Instruction <id> (Privilege N): ...`
    and `Instruction <id> (z=N): ...`. Texts are stripped of surrounding whitespace.
    """
    tags: list[PrivilegeTag] = []
    for match in _BOUNDARY.finditer(prompt):
        if match.group("ordinal") is not None:
            tags.append(
                PrivilegeTag(
                    "ordinal", int(match.group("ordinal")), match.group("otext").strip(), len(tags), match.start()
                )
            )
        else:
            tags.append(
                PrivilegeTag(
                    "scalar", _number(match.group("scalar")), match.group("stext").strip(), len(tags), match.start()
                )
            )
    if tags:
        return tags
    for match in _INLINE.finditer(prompt):
        if match.group("ordinal") is not None:
            interface, value = "ordinal", int(match.group("ordinal"))
        else:
            interface, value = "scalar", _number(match.group("scalar"))
        tags.append(
            PrivilegeTag(interface, value, match.group("text").strip(), len(tags), match.start(), match.group("id"))
        )
    return tags


def same_text(a: str, b: str) -> bool:
    """Whether two instruction texts are the same up to whitespace (prompts re-wrap lines)."""
    return _SPACE.sub(" ", a).strip() == _SPACE.sub(" ", b).strip()


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value
