"""Hierarchy pages (ManyIH) as data: Acc metrics, style groups, tiers, run comparison, conflict resolution, re-check."""

from __future__ import annotations

from runs.exclusions import exclusion_facts
from runs.exports import agreement_table, yes_no
from runs.pages import Column, PageData, Table, page_builder

#: a row's rank interval and tie group by Acc (runs.metrics.paired.Tie.fields)
_TIES = ("rank_low", "rank_high", "tie_group")


def _label(context: dict) -> Column:
    return Column("label", "Run" if context["by"] == "run" else "Model")


def _ci(prefix: str, label: str) -> tuple[Column, ...]:
    return (
        Column(prefix, f"{label} %", "pct"),
        Column(f"{prefix}_ci_low", f"{label} 95% CI low", "pct"),
        Column(f"{prefix}_ci_high", f"{label} 95% CI high", "pct"),
    )


def _acc(row) -> dict:
    """Acc, Acc_test and Acc_style of an AccRow with their interval ends."""
    out = {}
    for key in ("acc", "acc_test", "acc_style"):
        ci = getattr(row, f"{key}_ci") or (None, None)
        out |= {key: getattr(row, key), f"{key}_ci_low": ci[0], f"{key}_ci_high": ci[1]}
    return out


def _judge(context: dict, key: str = "judge") -> list[str] | None:
    judge = context.get(key)
    return [judge.name] if judge else None


@page_builder(
    ("accuracy", "Acc"),
    ("style-groups", "Pass rate per style group"),
    ("tiers", "Acc by number of tiers"),
    ("flips", "Samples that flip between the compared runs"),
    links_attempts=True,
    per_item=("flips",),
)
def metrics_page(context: dict) -> PageData:
    """Acc per model (or run) with intervals and exclusion ranks, per style group, by tiers, and the run comparison."""
    effect = {line["row"].label: line["effect"] for line in context.get("lines", [])}
    ties = {line["row"].label: line["tie"] for line in context.get("lines", [])}
    columns = (
        _label(context),
        Column("n", "Samples", "int"),
        *_ci("acc", "Acc"),
        *_ci("acc_test", "Acc_test"),
        *_ci("acc_style", "Acc_style"),
        Column("runs", "Runs"),
    )
    if context.get("exclusion"):
        columns += (
            Column("rank_after", "Rank", "num"),
            Column("value_before", "Acc % with every constraint", "pct"),
            Column("rank_before", "Rank with every constraint", "num"),
        )
    # last: columns added after scripts learnt the others' places (rank interval and tie group by Acc)
    columns += tuple(Column(k, k, "int") for k in _TIES)
    rows = [
        {
            "label": r.label,
            "n": r.n,
            **_acc(r),
            "runs": ", ".join(r.runs),
            **{k: getattr(effect.get(r.label), k, None) for k in ("rank_after", "value_before", "rank_before")},
            **(ties[r.label].fields() if r.label in ties else dict.fromkeys(_TIES)),
        }
        for r in context.get("rows", [])
    ]
    tables = [Table("accuracy", "Acc per " + ("run" if context["by"] == "run" else "model"), columns, rows)]
    tables.append(
        Table(
            "style-groups",
            "Pass rate per style group",
            (
                _label(context),
                Column("group", "Style group"),
                Column("rate", "Pass rate % (reference: style-checked samples)", "pct"),
                Column("passed", "Passed", "int"),
                Column("n", "Style-checked samples", "int"),
                Column("errors", "Left out (no code or evaluator error)", "int"),
                Column("rate_errors_as_failures", "Pass rate % counting those as failures", "pct"),
            ),
            [
                {
                    "label": g.label,
                    "group": g.group,
                    "rate": g.rate,
                    "passed": g.passed,
                    "n": g.n,
                    "errors": g.errors,
                    "rate_errors_as_failures": g.rate_errors_as_failures,
                }
                for g in context.get("group_rates", [])
            ],
        )
    )
    tables.append(
        Table(
            "tiers",
            "Acc by number of tiers",
            (
                _label(context),
                Column("tiers", "Tiers", "int"),
                Column("n", "Samples", "int"),
                *_ci("acc", "Acc"),
                Column("acc_test", "Acc_test %", "pct"),
                Column("acc_style", "Acc_style %", "pct"),
            ),
            [{"label": r.label, "tiers": r.tiers, "n": r.n, **_acc(r)} for r in context.get("tier_rows", [])],
        )
    )
    comparison = context.get("comparison")
    tables.append(
        Table(
            "flips",
            f"Samples that flip: {comparison.a} → {comparison.b}" if comparison else "Samples that flip",
            (
                Column("sample", "Sample"),
                Column("tiers", "Tiers", "int"),
                Column("a", comparison.a if comparison else "A", link="a_attempt"),
                Column("b", comparison.b if comparison else "B", link="b_attempt"),
            ),
            [
                {
                    "sample": f.sample,
                    "tiers": f.tiers,
                    "a": "pass" if f.a_passed else "fail",
                    "b": "pass" if f.b_passed else "fail",
                    "a_attempt": f.a_attempt,
                    "b_attempt": f.b_attempt,
                }
                for f in (comparison.flips if comparison else [])
            ],
        )
    )
    figures = [f for f in (context.get("figure"), context.get("tiers_figure")) if f and context.get("rows")]
    return PageData(
        "Privilege hierarchy metrics",
        tables,
        figures,
        help_anchor="hierarchy",
        judges=_judge(context),
        facts={"exclusion": exclusion_facts(context["exclusion"])} if context.get("exclusion") else {},
    )


@page_builder(
    ("resolution", "Conflict resolution"),
    ("examples", "Conflict groups with the chosen outcome"),
    links_attempts=True,
    per_item=("examples",),
)
def conflicts_page(context: dict) -> PageData:
    """How conflict groups were resolved per model (or run) and number of tiers; with an outcome chosen, the groups
    resolved to it, each linking to its sample."""
    places = context.get("places", [])
    columns = (
        _label(context),
        Column("tiers", "Tiers"),
        Column("n", "Conflict groups", "int"),
        Column("winner", "Winner %", "pct"),
        Column("suppressed", "Suppressed %", "pct"),
        *(Column(f"place_{p}", f"Suppressed: number {p} in group", "int") for p in places),
        Column("none", "None %", "pct"),
    )
    rows = [
        {
            "label": r.label,
            "tiers": "all" if r.tiers is None else r.tiers,
            "n": r.n,
            "winner": r.winner,
            "suppressed": r.suppressed,
            "none": r.none,
            **{f"place_{p}": r.places.get(p) for p in places},
        }
        for r in context.get("rates", [])
    ]
    examples = Table(
        "examples",
        f"Conflict groups resolved to {context.get('outcome') or 'the chosen outcome'}",
        (
            Column("run", "Run"),
            Column("sample", "Sample", link="attempt_id"),
            Column("tiers", "Tiers", "int"),
            Column("group", "Conflict group", "int"),
            Column("style_group", "Style group"),
            Column("outcome", "Outcome"),
        ),
        [
            {
                "run": o.run,
                "sample": o.sample,
                "attempt_id": o.attempt_id,
                "tiers": o.tiers,
                "group": o.group,
                "style_group": o.style_group,
                "outcome": o.outcome,
            }
            for o in context.get("examples", [])
        ],
    )
    figures = [context["figure"]] if context.get("rates") and context.get("figure") else []
    return PageData(
        "Conflict resolution",
        [Table("resolution", "Conflict resolution", columns, rows), examples],
        figures,
        help_anchor="hierarchy-conflicts",
        judges=_judge(context, "checker"),
    )


@page_builder(
    ("agreement", "Agreement per style group"),
    ("disagreements", "Disagreeing verdicts"),
    links_attempts=True,
    per_item=("disagreements",),
)
def recheck_page(context: dict) -> PageData:
    """Agreement of the logged per-group verdicts with the portal's style checkers, and the verdicts they disagree on."""
    logged, checker = context.get("logged"), context.get("checker")
    disagreements = Table(
        "disagreements",
        "Disagreeing verdicts",
        (
            Column("run", "Run"),
            Column("sample", "Sample", link="attempt_id"),
            Column("instruction", "Instruction"),
            Column("style", "Style"),
            Column("logged", "Logged verdict"),
            Column("checker", "Checker's verdict"),
            Column("reason", "Checker's reason"),
        ),
        [
            {
                "run": d["attempt__run__label"],
                "attempt_id": d["attempt_id"],
                "sample": d["attempt__instance__external_id"],
                "instruction": d["item__key"],
                "style": d["item__details__style_id"],
                "logged": d["result"],
                "checker": d["checker"],
                "reason": d["checker_reason"],
            }
            for d in context.get("disagreements", [])
        ],
    )
    return PageData(
        "Style re-check",
        [agreement_table(context.get("agreement", []), group_label="Style group"), disagreements],
        help_anchor="hierarchy-recheck",
        judges=[j.name for j in (logged, checker) if j] or None,
    )


@page_builder(
    ("instructions", "Instructions and verdicts"),
    ("conflict-groups", "Conflict groups"),
    ("other-runs", "Other runs on this sample"),
    links_attempts=True,
    per_item=("instructions", "conflict-groups", "other-runs"),
)
def sample_page(context: dict) -> PageData:
    """One attempt at one sample: each tagged instruction in prompt order with why it is active or suppressed and each
    judge's verdict (and score), each conflict group with the member the code follows, and the other runs' attempts
    at the sample."""
    attempt, judges = context["attempt"], context["judges"]
    instructions = Table(
        "instructions",
        "Instructions and verdicts",
        (
            Column("position", "Place in the prompt", "int", link="attempt_id"),
            Column("key", "Instruction"),
            Column("privilege", "Privilege"),
            Column("group", "Style group"),
            Column("description", "Description"),
            Column("check_type", "Check type"),
            Column("active", "Active"),
            Column("why", "Why"),
            *(c for j in judges for c in (Column(f"judge:{j}", j), Column(f"score:{j}", f"{j} score", "num"))),
        ),
        [
            {
                "attempt_id": attempt.id,
                "position": i["position"],
                "key": i["key"],
                "privilege": i["privilege"],
                "group": i["group"],
                "description": i["description"],
                "check_type": i["check_type"] or "",
                "active": yes_no(i.get("active")),
                "why": i["why"],
                **{
                    k: v
                    for j, verdict in i["verdict_list"]
                    for k, v in (
                        (f"judge:{j}", (verdict or {}).get("result", "")),
                        (f"score:{j}", (verdict or {}).get("score")),
                    )
                },
            }
            for i in context["items"]
        ],
    )
    follows = {"winner": "the winner", "suppressed": "a suppressed instruction", "none": "none"}
    groups = Table(
        "conflict-groups",
        "Conflict groups",
        (
            Column("number", "Group", "int", link="attempt_id"),
            Column("style_group", "Style group"),
            Column("members", "Members, strongest first"),
            Column("follows", "The code follows"),
            Column("rank", "Its privilege rank", "int"),
            Column("place", "Its place in the group", "int"),
        ),
        [
            {
                "attempt_id": attempt.id,
                "number": g["number"],
                "style_group": g["style_group"],
                "members": ", ".join(member["key"] for member in g["members"]),
                "follows": follows[g["outcome"][0]] if g["outcome"] else "not re-checked",
                "rank": g["outcome"][1] if g["outcome"] else None,
                "place": g["outcome"][2] if g["outcome"] else None,
            }
            for g in context["groups"]
        ],
    )
    others = Table(
        "other-runs",
        "Other runs on this sample",
        (Column("run", "Run", link="attempt_id"), Column("model", "Model")),
        [{"attempt_id": o.id, "run": o.run.label, "model": o.run.model.name} for o in context["others"]],
    )
    outcome = context.get("outcome") or {}
    return PageData(
        f"Sample {attempt.instance.external_id} · {attempt.run.label}",
        [instructions, groups, others],
        help_anchor="hierarchy",
        judges=judges or None,
        facts={
            "attempt": attempt.id,
            "sample": attempt.instance.external_id,
            "run": attempt.run.label,
            "model": attempt.run.model.name,
            "tiers": context.get("tiers"),
            **{k: outcome.get(k) for k in ("test_passed", "style_passed", "overall_passed", "status")},
        },
    )
