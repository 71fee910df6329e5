"""Checklist pages as data: the leaderboard, judge sensitivity, ISR by interaction length, paired comparison.

The leaderboard goes through the frame like every page; its snapshot also keeps its own layout
(rows, matrix, chart: runs.selectors.checklist.leaderboard_layout) and, with its attempts, the attempts
behind each cell (runs.selectors.checklist.leaderboard_attempt_lists)."""

from __future__ import annotations

from runs.exclusions import exclusion_facts
from runs.exports.compare import paired_table
from runs.exports.reported import reported_table
from runs.ingest.usage import USAGE_FIELDS
from runs.metrics import checklist as metrics
from runs.models import ReportStatus
from runs.pages import Column, PageData, Table, page_builder
from runs.selectors import checklist as selectors
from runs.selectors.reported import reported_figures

#: the leaderboard CSV's columns: the names its header has always had (scripts read them), rates in percent
_SCORES = (
    "isr",
    "isr_std",
    "csr",
    "csr_std",
    "macro_csr",
    "macro_csr_std",
    "isr_ci_low",
    "isr_ci_high",
    "csr_ci_low",
    "csr_ci_high",
)
_COUNTS = ("n_instances", "n_attempts", "n_empty", "n_unscored", "n_unrecognised")
_PER_JUDGE = ("isr", "csr", "macro_csr")
_TIES = ("rank_low", "rank_high", "tie_group")
#: under an exclusion policy, the by-model rows' rank by ISR after it, and their ISR and rank with every item
_EXCLUSION = ("rank_after", "isr_before", "rank_before")


def _ranks_of(row: dict, ranks: dict) -> dict:
    """The exclusion columns of a leaderboard row (empty in a model x group cell, as the tie columns)."""
    line = ranks.get(row["model"]) if not row.get("group") else None
    return {k: (line or {}).get(k) for k in _EXCLUSION}


def _leaderboard_attempt_lists(context: dict) -> dict:
    return selectors.leaderboard_attempt_lists(context["benchmark"], context["state"])


@page_builder(
    ("leaderboard", "Leaderboard"), ("reported", "Reported by the harness"), attempt_lists=_leaderboard_attempt_lists
)
def leaderboard_page(context: dict) -> PageData:
    """ISR/CSR per model (or per model and group, in the page's order), per-judge scores as extra columns."""
    benchmark, state = context["benchmark"], context["state"]
    board = selectors.leaderboard(benchmark, state)
    tables, layout = board.tables, board.layout
    exclusion = layout.get("exclusion")
    return PageData(
        "Leaderboard",
        [
            leaderboard_table(layout["rows"], ranks=exclusion["ranks"] if exclusion else None),
            reported_table(reported_figures(benchmark_id=benchmark.id)),
        ],
        [tables.figure] if tables.figure and tables.overall else [],
        help_anchor="checklist",
        facts=layout["state"] | ({"exclusion": exclusion_facts(exclusion)} if exclusion else {}),
        judges=list(state["filters"].judges) or None,
        layout=layout,
    )


def leaderboard_table(rows: list[dict], *, ranks: dict | None = None) -> Table:
    """Leaderboard rows (runs.selectors.checklist.score_row_dict) as the frame's table, judges in name order; under
    an exclusion policy (`ranks`: model -> its ISR and rank with every item and after, the layout's), each by-model
    row's rank after, ISR and rank with every item as the last columns."""
    judges = sorted({j for r in rows for j in r["per_judge"]})
    columns = (
        Column("model", "model"),
        Column("group", "group"),
        *(Column(k, k, "pct") for k in _SCORES),
        *(Column(k, k, "int") for k in _COUNTS),
        *(Column(k, k, "int" if k.endswith("_n") else "num") for k in metrics.USAGE_CSV_HEADER),  # _n: attempts
        *(Column(f"{j} {m}", f"{j} {m}", "pct") for j in judges for m in _PER_JUDGE),
        Column("runs", "runs"),
        # after the runs: columns added after scripts learnt the others' places (rank interval and tie group: by-model
        # rows only, empty in model x group cells)
        *(Column(k, k, "int") for k in _TIES),
        *(Column(k, k, "pct" if k == "isr_before" else "num") for k in _EXCLUSION if ranks is not None),
    )
    out = []
    for r in rows:
        isr_ci, csr_ci = r["isr_ci"] or [None, None], r["csr_ci"] or [None, None]
        usage = dict(zip(metrics.USAGE_CSV_HEADER, metrics.usage_csv_cells(r.get("usage"))))
        out.append(
            {
                **r,
                **usage,
                "runs": "; ".join(r.get("runs") or ()),
                "isr_ci_low": isr_ci[0],
                "isr_ci_high": isr_ci[1],
                "csr_ci_low": csr_ci[0],
                "csr_ci_high": csr_ci[1],
                **{f"{j} {m}": (r["per_judge"].get(j) or {}).get(m) for j in judges for m in _PER_JUDGE},
                **(_ranks_of(r, ranks) if ranks is not None else {}),
            }
        )
    return Table("leaderboard", "Leaderboard", columns, out)


@page_builder(("attempts", "Attempts behind the cell"), links_attempts=True, per_item=("attempts",))
def attempts_page(context: dict) -> PageData:
    """The attempts behind one leaderboard cell, failing first, as the drill-down lists them: every attempt, not one
    page of them, with each judge's passed / applicable counts and the failing items with the judges that failed them."""
    rows, state = context["rows"], context["state"]
    selectors.attach_failing_items(rows, by=state["by"], group=context["group"], judges=state["filters"].judges)
    judges = sorted({j for r in rows for j in r.judges})
    table = Table(
        "attempts",
        "Attempts behind the cell",
        (
            Column("instance", "Instance", link="attempt_id"),
            Column("run", "Run"),
            Column("turns", "Assistant turns", "int"),
            Column("total_tokens", "Total tokens", "int"),
            Column("wall_seconds", "Wall time, s", "num"),
            Column("tool_calls", "Tool calls", "int"),
            *(Column(f"{j} {n}", f"{j} {n}", "int") for j in judges for n in ("passed", "applicable")),
            Column("n_failing", "Failing items", "int"),
            Column("failing_items", "Failing items (judges that failed them)"),
            Column("not_scored", "Not scored by"),
        ),
        [
            {
                "attempt_id": r.attempt_id,
                "instance": r.external_id,
                "run": r.run,
                "turns": r.assistant_turns,
                "total_tokens": r.total_tokens,
                "wall_seconds": r.wall_seconds,
                "tool_calls": r.tool_calls,
                **{
                    f"{j} {n}": counts[i]
                    for j, counts in r.judges.items()
                    for i, n in ((1, "passed"), (0, "applicable"))
                },
                "n_failing": len(r.failing_items),
                "failing_items": "; ".join(f"{i['key']} ({', '.join(i['judges'])})" for i in r.failing_items),
                "not_scored": "; ".join(f"{j}: {why}" for j, why in r.unscored.items()),
            }
            for r in rows
        ],
    )
    facts = {"model": context["model"], **({"group": context["group"], "by": state["by"]} if context["group"] else {})}
    return PageData(
        f"Attempts of {context['model']}",
        [table],
        help_anchor="checklist",
        facts=facts,
        judges=list(state["filters"].judges) or None,
    )


def cited(evidence) -> str:
    """A verdict's evidence as the attempt pages say it: "#12", "#3 (thread 1)"; "" when it cites no message."""
    if not evidence:
        return ""
    thread, message = evidence
    return f"#{message}" + (f" (thread {thread})" if thread else "")


@page_builder(
    ("verdicts", "Verdicts on the checklist"),
    ("judges", "What each judge's file said of the attempt"),
    links_attempts=True,
    per_item=("verdicts", "judges"),
)
def attempt_page(context: dict) -> PageData:
    """One attempt's checklist as the page lists it (items any judge failed first), one row per item and judge, the
    reasoning cut as the page cuts it with its full length beside it; and each judge's report on the attempt as a
    whole (its reward, or why it scored nothing)."""
    attempt, cut = context["attempt"], context["cut"]
    verdicts = Table(
        "verdicts",
        "Verdicts on the checklist",
        (
            Column("item", "Item", link="attempt_id"),
            Column("category", "Source category"),
            Column("check_type", "Check type"),
            Column("description", "Description"),
            Column("judge", "Judge"),
            Column("result", "Verdict"),
            Column("written", "Written by the judge as"),
            Column("reasoning", f"Reasoning (first {cut:,} characters)"),
            Column("reasoning_chars", "Reasoning characters", "int"),
            Column("cites", "Cites message"),
        ),
        [
            {
                "attempt_id": attempt.id,
                "item": i["key"],
                "category": i["category"],
                "check_type": i["check_type"] or "",
                "description": i["description"],
                "judge": v.get("judge", ""),
                "result": v.get("result", "no verdict"),
                "written": v.get("written") or "",
                "reasoning": v.get("reasoning") or "",
                "reasoning_chars": v.get("reasoning_size"),
                "cites": cited(v.get("evidence")),
            }
            for i in context["items"]
            for v in i["verdicts"] or [{}]
        ],
    )
    judges = Table(
        "judges",
        "What each judge's file said of the attempt",
        (
            Column("judge", "Judge"),
            Column("status", "Status"),
            Column("reward", "Reward", "num", places=4),
            Column("binary_reward", "Binary reward", "num", places=0),
            Column("reason", "Why it scored nothing"),
            Column("error", "Error"),
        ),
        [
            {
                "judge": r["judge"],
                "status": ReportStatus(r["status"]).label,
                "reward": r["reward"],
                "binary_reward": r["binary_reward"],
                "reason": r["reason"],
                "error": r["error"] or "",
            }
            for r in context["reports"]
        ],
    )
    return PageData(
        f"Attempt at {attempt.instance.external_id} by {attempt.run.label}",
        [verdicts, judges],
        help_anchor="checklist",
        facts={
            "attempt": attempt.id,
            "instance": attempt.instance.external_id,
            "run": attempt.run.label,
            "model": attempt.run.model.name,
            "assistant_turns": attempt.assistant_turns,
            **{key: getattr(attempt, key) for key in USAGE_FIELDS},
        },
    )


@page_builder(
    ("items", "Checklist × model pass rates"),
    ("attempts", "Attempts at this instance"),
    links_attempts=True,
    per_item=("items", "attempts"),
)  # one instance: a model's rate on an item is its verdicts on it
def instance_page(context: dict) -> PageData:
    """One instance's checklist items (source category order) with each model's pass rate, passed, applicable and
    not-applicable verdicts, pooled over judges and repetitions; and the attempts at it."""
    matrix = context["matrix"]
    models = matrix["models"]
    counts = (
        ("rate", "pass rate %", "pct"),
        ("passed", "passed", "int"),
        ("n", "applicable", "int"),
        ("na", "n/a", "int"),
    )
    items = Table(
        "items",
        "Checklist × model pass rates",
        (
            Column("category", "Source category"),
            Column("key", "Item"),
            Column("check_type", "Check type"),
            Column("description", "Description"),
            Column("version", "Version"),
            *(Column(f"{m} {key}", f"{m} {label}", kind) for m in models for key, label, kind in counts),
        ),
        [
            {
                "category": g["category"],
                "key": i["key"],
                "check_type": i["check_type"],
                "description": i["description"],
                "version": _version_note(i.get("versions")),
                **{f"{m} {key}": (cell or {}).get(key) for m, cell in zip(models, i["cells"]) for key, _, _ in counts},
            }
            for g in matrix["groups"]
            for i in g["items"]
        ],
    )
    attempts = Table(
        "attempts",
        "Attempts at this instance",
        (Column("run", "Run", link="attempt_id"), Column("model", "Model"), Column("turns", "Assistant turns", "int")),
        [
            {"attempt_id": a.id, "run": a.run.label, "model": a.run.model.name, "turns": a.assistant_turns}
            for a in context["attempts"]
        ],
    )
    instance = context["instance"]
    return PageData(
        f"Instance {instance.external_id}",
        [items, attempts],
        help_anchor="checklist-groups",
        facts={
            "instance": instance.external_id,
            "scaffold": instance.scaffold,
            "primary_category": instance.primary_category,
        },
    )


def _version_note(versions: dict | None) -> str:
    """An audit's rewrite of an item, as the instance page's badges say it: "v2, rewrites v1", "v1, superseded by v2"."""
    if not versions:
        return ""
    older, newer = versions.get("supersedes"), versions.get("superseded_by")
    return ", ".join(
        [
            f"v{versions['version']}",
            *([f"rewrites v{older['version']}"] if older else []),
            *([f"superseded by v{newer['version']}"] if newer else []),
        ]
    )


@page_builder(
    ("ranks", "Ranks under each judge"),
    ("kendall-tau", "Kendall's tau between judges"),
    ("disagreements", "Items judges disagree on"),
    per_item=("disagreements",),
)
def judges_page(context: dict) -> PageData:
    """Per-judge ranks with each model's largest shift, Kendall's tau per pair of judges, items judges split on."""
    stability = context["stability"]
    ranks = Table(
        "ranks",
        "Ranks under each judge",
        (
            Column("model", "Model"),
            Column("isr", "ISR % (mean)", "pct"),
            Column("isr_std", "ISR std", "pct"),
            *(Column(f"rank:{j}", f"Rank under {j}", "num") for j in stability.judges),
            Column("shift", "Shift", "num"),
        ),
        [
            {
                "model": line["model"],
                "isr": line["row"].isr,
                "isr_std": line["row"].isr_std,
                "shift": line["shift"],
                **{f"rank:{j}": r for j, r in zip(stability.judges, line["ranks"])},
            }
            for line in context.get("table", [])
        ],
    )
    taus = Table(
        "kendall-tau",
        "Kendall's tau between judges",
        (
            Column("judge_a", "Judge A"),
            Column("judge_b", "Judge B"),
            Column("tau", "tau", "num", places=3),
            Column("models", "Models", "int"),
        ),
        [{"judge_a": a, "judge_b": b, "tau": tau, "models": n} for a, b, tau, n in stability.taus],
    )
    split = Table(
        "disagreements",
        "Items judges disagree on",
        (
            Column("key", "Item"),
            Column("category", "Category"),
            Column("description", "Description"),
            Column("instance", "Instance"),
            Column("split", "Split attempts", "int"),
            Column("rate", "Split rate %", "pct"),
        ),
        [
            {
                "key": d["key"],
                "category": d.get("category"),
                "description": d.get("description"),
                "instance": d.get("instance__external_id"),
                "split": d.get("split"),
                "rate": d.get("rate"),
            }
            for d in context.get("disagreements", [])
        ],
    )
    return PageData("Judge sensitivity", [ranks, taus, split], help_anchor="checklist-stability")


@page_builder(("length", "ISR by interaction length"))
def length_page(context: dict) -> PageData:
    """ISR (mean and std across judges) per model and assistant-turn bucket, with the attempts behind each cell."""
    table = Table(
        "length",
        "ISR by interaction length",
        (
            Column("model", "Model"),
            Column("bucket", "Assistant turns"),
            Column("isr", "ISR %", "pct"),
            Column("isr_std", "ISR std", "pct"),
            Column("csr", "CSR %", "pct"),
            Column("n_attempts", "Attempts", "int"),
        ),
        [
            {
                "model": line["model"],
                "bucket": bucket,
                "isr": c.isr,
                "isr_std": c.isr_std,
                "csr": c.csr,
                "n_attempts": c.n_attempts,
            }
            for line in context.get("table", [])
            for bucket, c in zip(context.get("buckets", []), line["cells"])
            if c
        ],
    )
    figures = [context["figure"]] if context.get("table") and context.get("figure") else []
    return PageData("ISR by interaction length", [table], figures, help_anchor="checklist-length")


@page_builder(
    ("sides", "Paired comparison"),
    ("paired-differences", "Is the difference real?"),
    ("flipped-items", "Items fixed or broken in B"),
    per_item=("flipped-items",),
)
def compare_page(context: dict) -> PageData:
    """Both sides' ISR and CSR on the common instances, the gain, B - A per metric, judge and primary category with
    its paired interval and test (runs.selectors.checklist.compare_paired), and the items fixed and broken in B."""
    paired = context.get("paired")
    sides = Table(
        "sides",
        "Paired comparison",
        (
            Column("side", "Side"),
            Column("isr", "ISR %", "pct"),
            Column("isr_std", "ISR std", "pct"),
            Column("csr", "CSR %", "pct"),
            Column("csr_std", "CSR std", "pct"),
            Column("n_instances", "Instances", "int"),
            Column("n_attempts", "Attempts", "int"),
        ),
        []
        if paired is None
        else [
            {
                "side": f"A: {paired.label_a}",
                "isr": paired.a.isr,
                "isr_std": paired.a.isr_std,
                "csr": paired.a.csr,
                "csr_std": paired.a.csr_std,
                "n_instances": paired.a.n_instances,
                "n_attempts": paired.a.n_attempts,
            },
            {
                "side": f"B: {paired.label_b}",
                "isr": paired.b.isr,
                "isr_std": paired.b.isr_std,
                "csr": paired.b.csr,
                "csr_std": paired.b.csr_std,
                "n_instances": paired.b.n_instances,
                "n_attempts": paired.b.n_attempts,
            },
            {"side": "gain (B - A)", "isr": paired.isr_gain, "csr": paired.csr_gain, "n_instances": paired.n_common},
        ],
    )
    flips = Table(
        "flipped-items",
        "Items fixed or broken in B",
        (
            Column("direction", "In B"),
            Column("instance", "Instance"),
            Column("key", "Item"),
            Column("category", "Category"),
            Column("description", "Description"),
            Column("judges", "Judges"),
        ),
        [
            {
                "direction": e["direction"],
                "instance": e["external_id"],
                "key": e.get("key"),
                "category": e.get("category"),
                "description": e.get("description"),
                "judges": ", ".join(e["judges"]),
            }
            for e in [*context.get("fixed", []), *context.get("broken", [])]
        ],
    )
    return PageData(
        "Compare two runs", [sides, paired_table(context.get("comparison")), flips], help_anchor="checklist-compare"
    )


@page_builder(
    ("judges", "Passed / applicable per judge"),
    ("items", "Verdicts side by side"),
    links_attempts=True,
    per_item=("judges", "items"),
)  # two attempts: each total is a count of one attempt's verdicts
def attempt_compare_page(context: dict) -> PageData:
    """Two attempts of one instance side by side: each judge's passed / applicable items of both and the items it
    judged differently; then one row per item and judge with both verdicts (items judged differently first)."""
    sides = context.get("sides") or []
    a, b = (side["attempt"] for side in sides) if sides else (None, None)
    totals = Table(
        "judges",
        "Passed / applicable per judge",
        (
            Column("judge", "Judge"),
            Column("a_passed", "A passed", "int"),
            Column("a_applicable", "A applicable", "int"),
            Column("b_passed", "B passed", "int"),
            Column("b_applicable", "B applicable", "int"),
            Column("n_differ", "Items judged differently", "int"),
        ),
        [
            {
                "judge": t.judge,
                "a_passed": t.a[1],
                "a_applicable": t.a[0],
                "b_passed": t.b[1],
                "b_applicable": t.b[0],
                "n_differ": t.n_differ,
            }
            for t in context.get("totals", [])
        ]
        if sides
        else [],
    )
    items = Table(
        "items",
        "Verdicts side by side",
        (
            Column("key", "Item"),
            Column("category", "Source category"),
            Column("description", "Description"),
            Column("judge", "Judge"),
            Column("a", "A", link="a_attempt"),
            Column("b", "B", link="b_attempt"),
            Column("differs", "Differs"),
        ),
        [
            {
                "key": d.item["key"],
                "category": d.item["category"],
                "description": d.item["description"],
                "judge": p.judge,
                "a": p.a.result if p.a else "no verdict",
                "b": p.b.result if p.b else "no verdict",
                "a_attempt": a.id,
                "b_attempt": b.id,
                "differs": "yes" if p.differs else "no",
            }
            for d in [*context.get("differing", []), *context.get("alike", [])]
            for p in d.pairs
        ]
        if sides
        else [],
    )
    instance = context["instance"]
    facts = {
        "instance": instance.external_id,
        **({"A": f"{a.run.model} · run {a.run.label}", "B": f"{b.run.model} · run {b.run.label}"} if sides else {}),
    }
    return PageData(
        f"{instance.external_id}: two attempts side by side", [totals, items], help_anchor="checklist", facts=facts
    )
