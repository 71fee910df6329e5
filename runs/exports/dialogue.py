"""Dialogue pages (EvolIF) as data: metrics, survival curves, constraint groups, dialogues, re-check."""

from __future__ import annotations

from runs.exclusions import exclusion_facts
from runs.exports import agreement_table, yes_no
from runs.metrics.dialogue import REFERENCE_FIELDS
from runs.pages import Column, PageData, Table, page_builder, rows_of

#: a row's rank interval and tie group by the rank metric (runs.metrics.paired.Tie.fields)
_TIES = ("rank_low", "rank_high", "tie_group")


def _label(context: dict) -> str:
    return "Run" if context["by"] == "run" else "Model"


def _judges(context: dict) -> list[str] | None:
    """The judge whose verdicts the page reads (None before any judge exists)."""
    judge = context.get("judge")
    return [judge.name] if judge else None


@page_builder(("metrics", "Metrics"))
def metrics_page(context: dict) -> PageData:
    """The eight EvolIF metrics per model (or run), with ranks before and after an exclusion policy, and each row's
    rank interval and tie group by the rank metric."""
    effect = {line["row"].label: line["effect"] for line in context.get("lines", [])}
    ties = {line["row"].label: line["tie"] for line in context.get("lines", [])}
    columns = [
        Column("label", _label(context)),
        Column("runs", "Runs"),
        Column("dialogues", "Dialogues", "int"),
        Column("turns", "Turns", "int"),
    ]
    if context.get("exclusion"):
        columns += [
            Column("rank_after", "Rank", "num"),
            Column("value_before", "With every item", "pct"),
            Column("rank_before", "Rank with every item", "num"),
        ]
    columns += [Column(key, label, "pct" if label.endswith("%") else "num") for key, label in context["columns"]]
    columns += [
        Column("rec_dialogues", "REC over (dialogues)", "int"),
        Column("ended_by_patience", "Ended by patience", "int"),
        Column("ended_by_script", "Ended by script", "int"),
        Column("ended_stopped", "Stopped early", "int"),
    ]
    labels = dict(context["columns"])
    columns += [
        Column(f"score_py_{key}", f"{labels[key]} (score.py)", "pct" if labels[key].endswith("%") else "num")
        for key in REFERENCE_FIELDS
    ]
    # last: columns added after scripts learnt the others' places (rank interval and tie group by the rank metric)
    columns += [Column(k, k, "int") for k in _TIES]
    rows = []
    for row in context.get("rows", []):
        m = row.metrics
        e = effect.get(row.label)
        rows.append(
            {
                "label": row.label,
                "runs": ", ".join(row.runs),
                "dialogues": m.dialogues,
                "turns": m.turns,
                **{k: getattr(e, k, None) for k in ("rank_after", "value_before", "rank_before")},
                **{key: getattr(m, key) for key, _ in context["columns"]},
                "rec_dialogues": m.rec_dialogues,
                "ended_by_patience": row.ended_by_patience,
                "ended_by_script": row.ended_by_script,
                "ended_stopped": row.ended_stopped,
                **{
                    f"score_py_{key}": getattr(row.reference, key) if row.reference else None
                    for key in REFERENCE_FIELDS
                },
                **(ties[row.label].fields() if row.label in ties else dict.fromkeys(_TIES)),
            }
        )
    judge = context.get("judge")
    facts = {
        "judge": judge.name if judge else None,
        "patience": context.get("patience"),
        "by": context["by"],
        "runs": [r.label for r in context.get("runs", [])],
        "exclude": context.get("exclude") if context.get("excluded") is not None else "none",
        "ranked_by": context["rank_metric"][0] if context.get("rank_metric") else None,
    }
    if context.get("exclusion"):
        facts["exclusion"] = exclusion_facts(context["exclusion"])
    return PageData(
        "Dialogue metrics",
        [Table("metrics", "Metrics", tuple(columns), rows)],
        help_anchor="dialogue",
        facts=facts,
        judges=_judges(context),
    )


@page_builder(
    ("survival", "Survival curves"),
    ("survival-band", "Kaplan-Meier survival with 95% band"),
    ("log-rank", "Log-rank tests"),
    ("steepest-drop", "Steepest drop"),
)
def survival_page(context: dict) -> PageData:
    """S(t) per model (or run) at every turn, its Kaplan-Meier estimate with a 95% band, the log-rank tests between
    the curves, and each curve's steepest drop."""
    rows = context.get("rows", [])
    curve = Table(
        "survival",
        "Survival curves",
        (
            Column("label", _label(context)),
            Column("turn", "Turn", "int"),
            Column("alive", "Dialogues alive", "int"),
            Column("total", "Dialogues", "int"),
            Column("percent", "S(t) %", "pct"),
        ),
        [
            {"label": r.label, "turn": p.turn, "alive": p.alive, "total": p.total, "percent": p.percent}
            for r in rows
            for p in r.survival
        ],
    )
    drops = Table(
        "steepest-drop",
        "Steepest drop",
        (
            Column("label", _label(context)),
            Column("dialogues", "Dialogues", "int"),
            Column("longest", "Longest", "int"),
            Column("turn", "Steepest drop at turn", "int"),
            Column("before", "Alive before %", "pct"),
            Column("after", "Alive after %", "pct"),
            Column("drop", "Drop (points)", "pct"),
            Column("lost", "Dialogues lost", "int"),
        ),
        rows_of(
            rows,
            label=lambda r: r.label,
            dialogues=lambda r: r.metrics.dialogues,
            longest=lambda r: len(r.survival),
            turn=lambda r: r.drop and r.drop.turn,
            before=lambda r: r.drop and r.drop.before,
            after=lambda r: r.drop and r.drop.after,
            drop=lambda r: r.drop and r.drop.drop,
            lost=lambda r: r.drop and r.drop.lost,
        ),
    )
    figures = [context["figure"]] if rows and context.get("figure") else []
    return PageData(
        "Dialogue survival curves",
        [curve, _band_table(context), _log_rank_table(context), drops],
        figures,
        help_anchor="dialogue-survival",
        judges=_judges(context),
    )


def _band_table(context: dict) -> Table:
    bands = context.get("bands", {})
    return Table(
        "survival-band",
        "Kaplan-Meier survival with 95% band",
        (
            Column("label", _label(context)),
            Column("turn", "Turn", "int"),
            Column("at_risk", "Dialogues reaching the turn", "int"),
            Column("percent", "S(t) %", "pct"),
            Column("se", "Greenwood SE (points)", "num"),
            Column("lower", "95% lower %", "pct"),
            Column("upper", "95% upper %", "pct"),
        ),
        [
            {
                "label": r.label,
                "turn": p.turn,
                "at_risk": p.at_risk,
                "percent": p.percent,
                "se": p.se,
                "lower": p.lower,
                "upper": p.upper,
            }
            for r in context.get("rows", [])
            for p in bands.get(r.label, [])
        ],
    )


def _log_rank_table(context: dict) -> Table:
    return Table(
        "log-rank",
        "Log-rank tests",
        (
            Column("first", f"{_label(context)} A"),
            Column("second", f"{_label(context)} B"),
            Column("n_first", "Dialogues A", "int"),
            Column("events_first", "Failed A", "int"),
            Column("n_second", "Dialogues B", "int"),
            Column("events_second", "Failed B", "int"),
            Column("chi2", "Chi-square (1 df)", "num"),
            Column("p", "p", "num", places=4),
        ),
        rows_of(
            context.get("log_rank", []),
            first=lambda t: t.first,
            second=lambda t: t.second,
            n_first=lambda t: t.n_first,
            events_first=lambda t: t.events_first,
            n_second=lambda t: t.n_second,
            events_second=lambda t: t.events_second,
            chi2=lambda t: t.chi2,
            p=lambda t: t.p,
        ),
    )


@page_builder(
    ("groups", "Constraint groups"),
    ("failing-turns", "Turns where the group failed"),
    links_attempts=True,
    per_item=("failing-turns",),
)
def groups_page(context: dict) -> PageData:
    """Pass rate of each constraint group per model (or run): percent, passed and active turns; with a group
    chosen, the turns where it failed, each linking to its dialogue."""
    rows = [
        {
            "label": line["label"],
            "group": group,
            "percent": cell and cell.percent,
            "passed": cell and cell.passed,
            "applicable": cell and cell.applicable,
        }
        for line in context.get("table", [])
        for group, cell in zip(context.get("groups", []), line["cells"])
    ]
    table = Table(
        "groups",
        "Constraint groups",
        (
            Column("label", _label(context)),
            Column("group", "Constraint group"),
            Column("percent", "Pass rate %", "pct"),
            Column("passed", "Passed turns", "int"),
            Column("applicable", "Active turns", "int"),
        ),
        rows,
    )
    failing = Table(
        "failing-turns",
        f"Turns where {context.get('group') or 'the group'} failed",
        (
            Column("model", "Model"),
            Column("run", "Run"),
            Column("dialogue", "Dialogue", link="attempt_id"),
            Column("turn", "Turn", "int"),
            Column("constraint", "Constraint"),
            Column("reason", "Reason"),
        ),
        [
            {
                "model": f["attempt__run__model__name"],
                "run": f["attempt__run__label"],
                "attempt_id": f["attempt_id"],
                "dialogue": f["attempt__instance__external_id"],
                "turn": f["item__turn"],
                "constraint": f["item__key"],
                "reason": f["reasoning"],
            }
            for f in context.get("failures", [])
        ],
    )
    figures = [context["figure"]] if context.get("table") and context.get("figure") else []
    return PageData(
        "Constraint-group profile", [table, failing], figures, help_anchor="dialogue-groups", judges=_judges(context)
    )


@page_builder(("dialogues", "Dialogues"), links_attempts=True, per_item=("dialogues",))
def dialogues_page(context: dict) -> PageData:
    """Every selected dialogue with its length at the patience shown and how it ended, each linking to its attempt."""
    table = Table(
        "dialogues",
        "Dialogues",
        (
            Column("model", "Model"),
            Column("run", "Run"),
            Column("dialogue", "Dialogue", link="attempt_id"),
            Column("turns", "Turns (N_d)", "int"),
            Column("successes", "Successful turns", "int"),
            Column("ended_by", "Ended by"),
        ),
        [
            {
                "model": d.model,
                "run": d.run,
                "dialogue": d.instance,
                "attempt_id": d.key,
                "turns": d.length,
                "successes": successes,
                "ended_by": "patience" if d.ended_by == "patience" else "end of script",
            }
            for d, successes in context.get("items", [])
        ],
    )
    return PageData("Dialogues", [table], help_anchor="dialogue", judges=_judges(context))


@page_builder(
    ("agreement", "Agreement per constraint group"),
    ("disagreements", "Disagreeing turns"),
    links_attempts=True,
    per_item=("disagreements",),
)
def recheck_page(context: dict) -> PageData:
    """Agreement of the logged verdicts with the portal's checkers, per constraint group, and the turns they disagree on."""
    logged, checker = context.get("logged"), context.get("checker")
    disagreements = Table(
        "disagreements",
        "Disagreeing turns",
        (
            Column("run", "Run"),
            Column("dialogue", "Dialogue", link="attempt_id"),
            Column("turn", "Turn", "int"),
            Column("constraint", "Constraint"),
            Column("logged", "Logged verdict"),
            Column("checker", "Checker's verdict"),
        ),
        [
            {
                "run": d["attempt__run__label"],
                "attempt_id": d["attempt_id"],
                "dialogue": d["attempt__instance__external_id"],
                "turn": d["item__turn"],
                "constraint": d["item__key"],
                "logged": d["result"],
                "checker": d["checker"],
            }
            for d in context.get("disagreements", [])
        ],
    )
    return PageData(
        "Re-check against the portal's checkers",
        [agreement_table(context.get("agreement", []), group_label="Constraint group"), disagreements],
        help_anchor="dialogue-recheck",
        judges=[j.name for j in (logged, checker) if j] or None,
    )


@page_builder(
    ("turns", "Turns"),
    ("constraints", "Constraints and verdicts"),
    links_attempts=True,
    per_item=("turns", "constraints"),
)
def viewer_page(context: dict) -> PageData:
    """One dialogue turn by turn (user message, response, whether every constraint held, patience left), and every
    constraint of every turn with its change against the topic's previous turn and each judge's verdict."""
    attempt, judges = context["attempt"], context["judges"]
    turns = Table(
        "turns",
        "Turns",
        (
            Column("turn", "Turn", "int", link="attempt_id"),
            Column("topic", "Topic"),
            Column("topic_event", "Topic event"),
            Column("user", "User"),
            Column("response", "Response"),
            Column("evaluated", "Evaluated"),
            Column("overall_ok", "All satisfied"),
            Column("remaining_patience", "Patience left", "int"),
            Column("is_end", "Dialogue ended here"),
        ),
        [
            {
                "attempt_id": attempt.id,
                "turn": t.turn,
                "topic": t.topic,
                "topic_event": t.topic_event,
                "user": t.user,
                "response": t.response or "",
                "evaluated": yes_no(t.evaluated),
                "overall_ok": yes_no(t.overall_ok),
                "remaining_patience": t.remaining_patience,
                "is_end": yes_no(t.is_end),
            }
            for t in context["turns"]
        ],
    )
    constraints = Table(
        "constraints",
        "Constraints and verdicts",
        (
            Column("turn", "Turn", "int", link="attempt_id"),
            Column("key", "Constraint"),
            Column("group", "Group"),
            Column("description", "Description"),
            Column("change", "Change"),
            Column("args", "Arguments"),
            Column("previous_args", "Arguments before"),
            *(Column(f"judge:{j}", j) for j in judges),
        ),
        [
            {
                "attempt_id": attempt.id,
                "turn": t.turn,
                "key": c.key,
                "group": c.group,
                "description": c.description,
                "change": c.change,
                "args": c.args_text,
                "previous_args": c.previous_args_text if c.change == "changed" else "",
                **{f"judge:{j}": (c.verdicts.get(j) or {}).get("result", "") for j in judges},
            }
            for t in context["turns"]
            for c in t.constraints
        ]
        + [
            {"attempt_id": attempt.id, "turn": t.turn, "group": r["group"], "change": "removed", "args": r["args"]}
            for t in context["turns"]
            for r in t.removed
        ],
    )
    outcome = attempt.outcome or {}
    return PageData(
        f"Dialogue {attempt.instance.external_id} · {attempt.run.label}",
        [turns, constraints],
        help_anchor="dialogue",
        judges=judges or None,
        facts={
            "attempt": attempt.id,
            "dialogue": attempt.instance.external_id,
            "run": attempt.run.label,
            "model": attempt.run.model.name,
            "patience": context.get("patience"),
            "ended_turn": outcome.get("ended_turn"),
            "ended_by": outcome.get("ended_by"),
        },
    )
