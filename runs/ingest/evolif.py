"""EvolIF: dialogue scripts (`dialog_<n>.jsonl`) and evaluation logs (`eval_<n>.jsonl`).

A script has one turn per line: `turn`, `active_topic`, `user_query_verified`,
`instructions[{id, args, description}]` (the constraints active at that turn), `style`.
A log has one evaluated turn per line: `turn`, `response`, `eval{overall_ok,
details{<constraint id>: bool}, sub_details{<constraint id>: [score, rationale]}}`,
`remaining_patience`. EvolIF's `src/eval.py` writes `sub_details` for the LLM-judged
constraints (emotion, reader_age, style: the judge's 1-10 score, passed above 6, and its
one-sentence rationale; `[0.0, ""]` when the judge call failed or its reply was not JSON);
they become the verdict's score and reasoning.

What eval.py can leave behind, and how it counts (src/score.py reads every line of every
`eval_<n>.jsonl` in order and stops a dialogue at the first `remaining_patience` 0):
- a dialogue that stopped early because the model call failed (eval.py prints the error
  and moves on to the next dialogue): the log ends before the script does with patience
  left. It is stored as it is, "stopped", and counts with the turns it has;
- the same log resumed later: eval.py appends the missing turns to it (from the turn after
  the last logged one, with the patience it had left), so a resumed log is one log;
- a log cut off mid-line when eval.py was killed while writing a turn: eval.py's own reader
  skips a line that is not JSON, so on resume it plays that turn again and appends it right
  after the cut-off text, on the same line. The import reads the log the same way: an
  unfinished last line that starts as eval.py starts a record (`{"turn":`) is skipped (the
  log then stopped at the turn before), the complete records glued after a cut-off write
  are read, and a turn logged again after such a break replaces the earlier record from
  that turn on (eval.py continued from the later one). score.py cannot read such a file at
  all (it stops at the broken line);
- an empty file (the model call failed at turn 1): a dialogue of 0 turns, counted in D as
  score.py counts it;
- `remaining_patience` null (run with `--patience 0`, no patience): the dialogue goes on to
  the end of its script; no patience is recorded for it.

Patience (EvolIF paper, section 3.3): the score starts at P, drops by one after a failed
turn, returns to P after a successful one, and the dialogue ends when it reaches 0, i.e.
after P consecutive failures. `remaining_patience` is the score after the turn's update.
So every line tells P: remaining_patience plus the number of consecutive failed turns
ending at that line (0 after a success). The ingest derives P that way, requires every
line of every log of the run to agree, and stores it as Run.settings["patience"]; the
harness's command-line `--patience` is therefore never needed here.

A log is read one record at a time, never listed whole: a file whose first record is not shaped
like a log line is refused at that line without reading further, and any other file stops being
read after MAX_PROBLEMS_PER_FILE problems, so junk costs bounded memory whatever its size.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from runs.checkers.evolif import LLM_JUDGED
from runs.ingest.base import STRICT_DECODER, Context, Source, content_hash, iter_jsonl, require
from runs.ingest.lookups import (
    InstanceIndex,
    attempts_upsert,
    benchmark_existing,
    benchmark_get_or_create,
    file_items,
    judge_of_ingest,
    run_get_or_create,
)
from runs.ingest.options import model_missing, option_name, run_missing
from runs.ingest.verdicts import verdicts_upsert
from runs.models import BenchmarkKind, ChecklistItem, Instance, JudgeKind, Run, VerdictResult
from runs.trajectory_store import trajectories_upsert

DEFAULT_SLUG = "evolif"
DEFAULT_JUDGE = "evolif-log"
_EVAL_STEM = re.compile(r"^eval_(.+)$")
_RECORD_START = re.compile(r'\{"turn":')  # eval.py writes "turn" first; inside a JSON string the quotes are escaped
#: the fields every line of an evaluation log has; a file whose first record lacks one is not read further
LOG_FIELDS = {"turn": int, "eval": dict, "remaining_patience": (int, type(None))}
#: what the verdict says when eval.py logged [0, ""] for an LLM-judged constraint (its judge call raised)
JUDGE_FAILED = (
    "the LLM judge gave no score: its call failed or its reply was not JSON with a score "
    "(eval.py records 0 and counts the constraint as failed)"
)


def item_key(turn: int, constraint_id: str, occurrence: int) -> str:
    """The checklist item key of the n-th (1-based) constraint with this id at this turn."""
    return f"t{turn}:{constraint_id}" + (f"#{occurrence}" if occurrence > 1 else "")


# dialogs ------------------------------------------------------------------------------
def ingest_dialogs(sources: Sequence[Source], ctx: Context) -> None:
    """Dialogue scripts: one instance per file, one item per (turn, constraint)."""
    benchmark = benchmark_get_or_create(ctx, default_slug=DEFAULT_SLUG, kind=BenchmarkKind.DIALOGUE, name="EvolIF")
    seen: dict[str, str] = {}
    for source in sources:
        external_id = Path(source.name).stem
        if external_id in seen:
            ctx.problem(source, None, f"dialog '{external_id}' is given twice (also {seen[external_id]})")
            continue
        seen[external_id] = source.name
        turns: list[tuple[int, dict]] = []
        ok = True
        previous = 0  # the turn number of the line before, valid or not, so one bad line is one problem
        for line, record in iter_jsonl(source, ctx, keep=True):
            if _valid_turn(ctx, source, line, record, previous):
                turns.append((line, record))
            else:
                ok = False
            previous = _next_turn(previous, record)
        if ok and turns:
            _write_dialog(ctx, benchmark, source, external_id, turns)


def _next_turn(previous: int, record: dict) -> int:
    """The turn a line stands for when checking the next one: its own number if it moved on, else one more."""
    turn = record.get("turn")
    return turn if isinstance(turn, int) and turn > previous else previous + 1


def _valid_turn(ctx: Context, source: Source, line: int, record: dict, previous: int) -> bool:
    if "eval" in record or "remaining_patience" in record:
        ctx.problem(source, line, "this looks like an EvolIF evaluation log, not a dialog script (use evolif-eval)")
        return False
    if not require(ctx, source, line, record, {"turn": int, "instructions": list}):
        return False
    turn = record["turn"]
    if turn != previous + 1:
        ctx.problem(
            source, line, f"turn {turn} where turn {previous + 1} was expected (turns are numbered 1, 2, ... in order)"
        )
        return False
    ok = True
    for n, instruction in enumerate(record["instructions"], 1):
        if not isinstance(instruction, dict) or not isinstance(instruction.get("id"), str) or not instruction["id"]:
            ctx.problem(source, line, f"turn {turn}: instruction {n} has no 'id'")
            ok = False
    return ok


def _write_dialog(ctx: Context, benchmark, source: Source, external_id: str, turns: list[tuple[int, dict]]) -> None:
    style = turns[0][1].get("style")
    spec_turns = []
    for _, record in turns:
        # a later turn keeps its own style only where it differs from the dialog's (nothing is dropped)
        spec_turns.append({k: v for k, v in record.items() if k != "style" or v != style})
    spec = {"turns": spec_turns, "style": style}
    ids = ctx.upsert(
        Instance,
        [
            {
                "benchmark_id": benchmark.id,
                "external_id": external_id,
                "primary_category": "",
                "scaffold": "",
                "scaffold_version": "",
                "spec": spec,
                "content_hash": content_hash(spec),
            }
        ],
        key=("benchmark_id", "external_id"),
        compare=("content_hash",),
        kind="instances",
    )
    instance_id = ids.get((benchmark.id, external_id))
    rows = []
    position = 0
    for _, record in turns:
        turn = record["turn"]
        occurrences: dict[str, int] = {}
        for instruction in record["instructions"]:
            constraint = instruction["id"]
            occurrences[constraint] = occurrences.get(constraint, 0) + 1
            position += 1
            row = {
                "instance_id": instance_id,
                "key": item_key(turn, constraint, occurrences[constraint]),
                "position": position,
                "category": "",
                "category_original": "",
                "check_type": "",
                "group": constraint,
                "description": str(instruction.get("description") or ""),
                "conditional": False,
                "turn": turn,
                "privilege": None,
                "details": {"args": instruction.get("args"), "topic": record.get("active_topic")},
            }
            row["content_hash"] = content_hash({k: v for k, v in row.items() if k != "instance_id"})
            rows.append(row)
    if ctx.failed:
        ctx.report.add("checklist items", "created", len(rows))
        return
    ctx.upsert(ChecklistItem, rows, key=("instance_id", "key"), compare=("content_hash",), kind="checklist items")
    dropped = file_items(instance_id=instance_id).exclude(key__in=[r["key"] for r in rows])
    judged = list(dropped.filter(verdicts__isnull=False).values_list("key", flat=True).distinct()[:5])
    if judged:
        ctx.problem(
            source, None, f"constraints {', '.join(judged)} have verdicts and cannot be removed from '{external_id}'"
        )
        return
    ctx.report.add("checklist items", "removed", dropped.delete()[1].get("runs.ChecklistItem", 0))


# evaluation logs ----------------------------------------------------------------------
def ingest_eval(sources: Sequence[Source], ctx: Context) -> None:
    """Evaluation logs of one run (--model, or an existing --run): one attempt per dialog,
    pass/fail verdicts per constraint of each evaluated turn, the recorded patience on the run."""
    benchmark = benchmark_existing(ctx, sources[0], default_slug=DEFAULT_SLUG) if sources else None
    if benchmark is None:
        return
    run, run_is_new = _run_for_logs(ctx, benchmark, sources[0])
    if run is None:
        return
    judge = judge_of_ingest(ctx, ctx.options.judge or DEFAULT_JUDGE, JudgeKind.LOGGED)
    index = InstanceIndex.of(ctx, benchmark)
    recorded = run.settings.get("patience")
    patience_seen: tuple[int, str] | None = (int(recorded), f"run '{run.label}'") if isinstance(recorded, int) else None
    seen: dict[str, str] = {}
    for source in sources:
        log = _read_log(ctx, source, index, seen)
        if log is None:
            continue
        patience = log["patience"]
        if not log["turns"]:  # an empty log says nothing about patience
            _write_log(ctx, run, judge, log)
            continue
        if patience_seen is not None and patience != patience_seen[0]:
            ctx.problem(
                source,
                log["first_line"],
                f"this log was recorded with {_patience_words(patience)}, "
                f"but {patience_seen[1]} has {_patience_words(patience_seen[0])}; use another run label ({option_name(ctx.options, 'run')})",
            )
            continue
        patience_seen = patience_seen or (patience, source.name)
        _write_log(ctx, run, judge, log)
    if patience_seen is not None and patience_seen[0] is not None and run.settings.get("patience") != patience_seen[0]:
        if not run_is_new:
            ctx.report.add("runs", "updated")
        if not ctx.failed:
            run.settings = {**run.settings, "patience": patience_seen[0]}
            run.save(update_fields=["settings"])


def _patience_words(patience: int | None) -> str:
    return "no patience (remaining_patience null)" if patience is None else f"patience {patience}"


def _run_for_logs(ctx: Context, benchmark, source: Source) -> tuple[Run | None, bool]:
    """The run the logs belong to, and whether this ingest creates it."""
    if ctx.options.run and not ctx.options.model:
        run = Run.objects.filter(benchmark=benchmark, label=ctx.options.run).first()
        if run is None:
            ctx.problem(source, None, run_missing(ctx.options), awaits_import=True)
            return None, False
        is_new = False
    elif not ctx.options.model:
        ctx.problem(source, None, model_missing(ctx.options, "evaluation logs"))
        return None, False
    else:
        label = ctx.options.run or ctx.options.model
        is_new = not Run.objects.filter(benchmark=benchmark, label=label).exists()
        run = run_get_or_create(ctx, benchmark=benchmark, model_name=ctx.options.model)
    ctx.touched_runs[run.id] = run
    return run, is_new


def _dialog_of(source: Source, index: InstanceIndex) -> tuple[str, int | None]:
    """eval_<n>.jsonl belongs to dialog_<n>; a file named after the dialog itself also works."""
    stem = Path(source.name).stem
    match = _EVAL_STEM.match(stem)
    if match:
        candidate = f"dialog_{match.group(1)}"
        if index.instance_id(candidate) is not None:
            return candidate, index.instance_id(candidate)
    if index.instance_id(stem) is not None:
        return stem, index.instance_id(stem)
    return (f"dialog_{match.group(1)}" if match else stem), None


def _read_log(ctx: Context, source: Source, index: InstanceIndex, seen: dict[str, str]) -> dict | None:
    """Validate one log against its dialog script; returns what to store, or None."""
    external_id, instance_id = _dialog_of(source, index)
    cut_offs: list[bool] = []  # one entry per cut-off line met so far
    started_at = ctx.done_bytes
    if source.path.exists() and source.path.stat().st_size == 0:
        # eval.py opens the log before the first model call: a call that fails at turn 1 leaves it empty
        ctx.source = source
        ctx.source_hashes[source.name] = hashlib.sha256(b"").hexdigest()
        reader: Iterator[tuple[int, dict]] = iter(())
        records = reader
        first_line = None
    else:
        # records are read one at a time and the first one's shape is checked before anything is kept, so a
        # large file that is not a log fails at its first line instead of being read whole into memory
        reader = _read_records(ctx, source, cut_offs)
        first = next(reader, None)
        if first is None and not cut_offs:
            return None
        first_line = first[0] if first else None  # only a cut-off line: no turn written yet, as an empty log
        reason = _not_a_log(first[1]) if first else None
        if reason:
            ctx.problem(source, first_line, reason)
            _stop_reading(ctx, source, reader, started_at)
            return None
        records = itertools.chain([first] if first else [], reader)
    if instance_id is None:
        ctx.problem(
            source,
            first_line,
            f"dialog '{external_id}' was never ingested (ingest it with evolif-dialogs first)",
            awaits_import=True,
        )
        _stop_reading(ctx, source, reader, started_at)
        return None
    if external_id in seen:
        ctx.problem(
            source, first_line, f"dialog '{external_id}' already has a log in this ingest ({seen[external_id]})"
        )
        _stop_reading(ctx, source, reader, started_at)
        return None
    seen[external_id] = source.name
    instance = Instance.objects.only("spec").get(id=instance_id)
    script = {t.get("turn"): t for t in instance.spec.get("turns", [])}
    last_script_turn = max(script, default=0)
    items = index.items(instance_id)
    turns: list[dict] = []
    ok = True
    previous = 0  # the turn number of the line before, valid or not, so one bad line is one problem
    for line, record in records:
        replayed = record.get("turn") if cut_offs else None
        if isinstance(replayed, int) and not isinstance(replayed, bool) and 1 <= replayed <= previous:
            # eval.py could not read past a cut-off line, so it played this turn again: the later records stand
            ctx.report.add(
                "log turns played again after a cut-off line", "replaced", sum(t["turn"] >= replayed for t in turns)
            )
            turns = [t for t in turns if t["turn"] < replayed]
            previous = replayed - 1
        parsed = _valid_log_line(ctx, source, line, record, script, items, previous, turns, external_id)
        previous = _next_turn(previous, record)
        if parsed is None:
            ok = False
            continue
        turns.append(parsed)
    if not ok or (first_line is not None and not turns):
        return None
    patience = _patience(ctx, source, turns)
    if patience is False:
        return None
    last = turns[-1] if turns else None
    if last is not None and last["remaining_patience"] == 0:
        ended_by = "patience"
    elif last is not None and last["turn"] == last_script_turn:
        ended_by = "script_end"
    else:
        # eval.py stops a dialogue when the model call fails; running it again appends the rest
        ended_by = "stopped"
    return {
        "source": source,
        "first_line": first_line,
        "external_id": external_id,
        "instance_id": instance_id,
        "script": script,
        "items": items,
        "turns": turns,
        "patience": patience,
        "ended_by": ended_by,
    }


def _read_records(ctx: Context, source: Source, cut_offs: list[bool]) -> Iterator[tuple[int, dict]]:
    """The log's records as eval.py reads them back (see the module docstring), one at a time; each cut-off line
    met adds an entry to `cut_offs`. An unfinished last line is skipped only if it starts as eval.py starts a
    record: any other unreadable line is a problem."""

    def salvage(text: str, unterminated_last: bool) -> list[dict] | None:
        glued = _records_after_cut(text)
        if glued:
            cut_offs.append(True)
            ctx.report.add("log lines with a cut-off write", "read", 1)
            return glued
        if unterminated_last and _RECORD_START.match(text.lstrip()):
            cut_offs.append(True)
            ctx.report.add("log lines with a cut-off write", "skipped", 1)
            return []
        return None

    return iter_jsonl(source, ctx, salvage=salvage, keep=True)


def _not_a_log(record: dict) -> str | None:
    """Why a file whose first record is `record` is not an EvolIF evaluation log, or None if it may be one."""
    if "instructions" in record and "eval" not in record:
        return "this looks like an EvolIF dialog script, not an evaluation log (use evolif-dialogs)"
    wrong = [
        name
        for name, kind in LOG_FIELDS.items()
        if name not in record or not isinstance(record[name], kind) or isinstance(record[name], bool)
    ]
    if not wrong:
        return None
    found = ", ".join(f"'{key}'" for key in list(record)[:6]) + (", ..." if len(record) > 6 else "")
    return (
        f"this is not an EvolIF evaluation log: its first record has no valid {', '.join(repr(w) for w in wrong)} "
        f"(each line needs 'turn': int, 'eval': object, 'remaining_patience': int or null; this one has "
        f"{found or 'no fields'}); the rest of the file was not read"
    )


def _stop_reading(ctx: Context, source: Source, reader: Iterator, started_at: int) -> None:
    """Leave a log unread after a problem that rejects it whole, counting its unread bytes as done for progress."""
    close = getattr(reader, "close", None)  # the empty log's reader is a plain iterator
    if close is not None:
        close()
    size = source.path.stat().st_size if source.path.exists() else 0
    ctx.advance(max(0, size - (ctx.done_bytes - started_at)))


def _records_after_cut(text: str) -> list[dict]:
    """The complete records in a line that starts with a cut-off one, when they run to its end; else none."""
    records: list[dict] = []
    end = None
    for match in _RECORD_START.finditer(text):
        if end is not None and match.start() < end:
            continue  # inside the record just read
        try:
            record, end_at = STRICT_DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):  # not JSON, an integer of too many digits, or nested too deeply
            records, end = [], None  # a cut-off record: what came before it does not count
            continue
        if not isinstance(record, dict) or (end is not None and match.start() != end):
            records = []
        records.append(record)
        end = end_at
    return records if records and end is not None and not text[end:].strip() else []


def _valid_log_line(ctx, source, line, record, script, items, previous, turns, external_id) -> dict | None:
    if "instructions" in record and "eval" not in record:
        ctx.problem(source, line, "this looks like an EvolIF dialog script, not an evaluation log (use evolif-dialogs)")
        return None
    if not require(ctx, source, line, record, {"turn": int, "eval": dict}):
        return None
    if "remaining_patience" not in record:
        ctx.problem(source, line, "missing required field 'remaining_patience'")
        return None
    if record["remaining_patience"] is not None and (
        not isinstance(record["remaining_patience"], int) or isinstance(record["remaining_patience"], bool)
    ):
        ctx.problem(source, line, "field 'remaining_patience' should be int (or null: no patience)")
        return None
    turn = record["turn"]
    if turn not in script:
        ctx.problem(
            source,
            line,
            f"turn {turn} is not in the script of '{external_id}' (it has turns 1-{max(script, default=0)})",
        )
        return None
    if turn != previous + 1:
        ctx.problem(
            source, line, f"turn {turn} where turn {previous + 1} was expected (a log holds turns 1, 2, ... in order)"
        )
        return None
    if turns and turns[-1]["remaining_patience"] == 0:  # score.py stops there too
        ctx.problem(source, line, f"turn {turn} comes after patience ran out at turn {turns[-1]['turn']}")
        return None
    evaluation = record["eval"]
    details = evaluation.get("details")
    if not isinstance(details, dict):
        ctx.problem(source, line, f"turn {turn}: eval.details should be an object of constraint id -> true/false")
        return None
    if not isinstance(evaluation.get("overall_ok"), bool):
        ctx.problem(source, line, f"turn {turn}: eval.overall_ok should be true or false")
        return None
    active = [i["id"] for i in script[turn].get("instructions", []) if isinstance(i, dict)]
    verdicts: dict[str, str] = {}
    ok = True
    for constraint, value in details.items():
        n_active = active.count(constraint)
        if n_active == 0:
            ctx.problem(
                source,
                line,
                f"turn {turn}: constraint '{constraint}' is not active at this turn of "
                f"'{external_id}' (active: {', '.join(active) or 'none'})",
            )
            ok = False
            continue
        values = value if isinstance(value, list) else [value] * n_active
        if len(values) != n_active or not all(isinstance(v, bool) for v in values):
            ctx.problem(
                source,
                line,
                f"turn {turn}: details['{constraint}'] should be true or false (or a list of {n_active} of them)",
            )
            ok = False
            continue
        for n, passed in enumerate(values, 1):
            key = item_key(turn, constraint, n)
            if key not in items:
                ctx.problem(source, line, f"turn {turn}: no checklist item '{key}' (re-ingest the dialog script)")
                ok = False
                continue
            verdicts[key] = VerdictResult.PASS if passed else VerdictResult.FAIL
    if not ok:
        return None
    recorded = [v == VerdictResult.PASS for v in verdicts.values()]
    if evaluation["overall_ok"] != all(recorded):
        ctx.problem(
            source,
            line,
            f"turn {turn}: overall_ok is {str(evaluation['overall_ok']).lower()} but the "
            f"constraint results say {str(all(recorded)).lower()}",
        )
        return None
    missing = [
        item_key(turn, c, n)
        for c in dict.fromkeys(active)
        for n in range(1, active.count(c) + 1)
        if item_key(turn, c, n) not in verdicts
    ]
    return {
        "line": line,
        "turn": turn,
        "overall_ok": evaluation["overall_ok"],
        "verdicts": verdicts,
        "missing": missing,
        "judged": _judge_notes(evaluation.get("sub_details"), verdicts),
        "remaining_patience": record["remaining_patience"],
        "sub_details": evaluation.get("sub_details"),
        "response": record.get("response"),
    }


def _judge_notes(sub_details: Any, verdicts: dict[str, str]) -> dict[str, tuple[float | None, str]]:
    """Item key -> (score, reasoning) from eval.py's sub_details: `[score, rationale]` per LLM-judged
    constraint (a repeated constraint id shares its entry, as it shares its details value). A plain
    string (other harnesses' notes) is reasoning without a score; any other value is kept as JSON text."""
    if not isinstance(sub_details, dict) or not sub_details:
        return {}
    notes = {}
    for key in verdicts:
        constraint = key.split(":", 1)[1].split("#", 1)[0]
        if constraint not in sub_details:
            continue
        value = sub_details[constraint]
        if (
            isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], (int, float))
            and not isinstance(value[0], bool)
            and math.isfinite(value[0])
            and isinstance(value[1], (str, type(None)))
        ):
            score, rationale = float(value[0]), value[1] or ""
            if score == 0 and not rationale and constraint in LLM_JUDGED:
                rationale = JUDGE_FAILED
            notes[key] = (score, rationale)
        elif isinstance(value, str):
            notes[key] = (None, value)
        elif value is not None:
            notes[key] = (None, _text(value))
    return notes


def _patience(ctx: Context, source: Source, turns: list[dict]) -> int | None | bool:
    """P as the log implies it: remaining patience plus the failures in a row ending at each turn.
    None when the log has no patience (every remaining_patience null, or no turn); False after a problem."""
    nulls = [t for t in turns if t["remaining_patience"] is None]
    if nulls:
        if len(nulls) == len(turns):
            return None
        ctx.problem(
            source,
            nulls[0]["line"],
            f"turn {nulls[0]['turn']}: remaining_patience is null but other turns "
            "of this log have a number (a log has a patience on every line or on none)",
        )
        return False
    patience = None
    streak = 0
    for t in turns:
        streak = 0 if t["overall_ok"] else streak + 1
        implied = t["remaining_patience"] + streak
        if implied < 1:
            ctx.problem(
                source, t["line"], f"turn {t['turn']}: remaining_patience {t['remaining_patience']} is impossible"
            )
            return False
        if patience is None:
            patience = implied
        elif implied != patience:
            ctx.problem(
                source,
                t["line"],
                f"turn {t['turn']}: remaining_patience {t['remaining_patience']} after "
                f"{streak} failed turn(s) in a row does not fit patience {patience} (earlier turns)",
            )
            return False
    return patience


def _write_log(ctx: Context, run: Run, judge, log: dict) -> None:
    turns = log["turns"]
    responses = [t["response"] for t in turns]
    last_response = responses[-1] if responses else None
    outcome = {
        "turns": [
            {
                "turn": t["turn"],
                "overall_ok": t["overall_ok"],
                "remaining_patience": t["remaining_patience"],
                "sub_details": t["sub_details"],
            }
            for t in turns
        ],
        "ended_turn": turns[-1]["turn"] if turns else 0,
        "patience": log["patience"],
        "ended_by": log["ended_by"],
    }
    ids = attempts_upsert(
        ctx,
        run,
        [
            {
                "instance_id": log["instance_id"],
                "response": _text(last_response),
                "outcome": outcome,
                "assistant_turns": len(turns),
            }
        ],
        compare=("response", "outcome", "assistant_turns"),
    )
    attempt_id = ids.get(log["instance_id"])
    messages = []
    for t in turns:
        script_turn = log["script"][t["turn"]]
        query = script_turn.get("user_query_verified") or script_turn.get("user_query") or ""
        messages.append({"role": "user", "content": _text(query), "turn": t["turn"]})
        messages.append({"role": "assistant", "content": _text(t["response"]), "turn": t["turn"]})
    threads = [
        {
            "meta": {"thread": "main", "dialog": log["external_id"], "model": run.model.name},
            "tools": [],
            "messages": messages,
        }
    ]
    if ctx.failed:
        ctx.report.add("trajectories", "created")
    else:
        trajectories_upsert(ctx, [{"attempt_id": attempt_id, "threads": threads}])
    items = log["items"]
    rows = []
    for t in turns:
        for key, result in t["verdicts"].items():
            score, reasoning = t["judged"].get(key, (None, ""))
            rows.append(
                {
                    "attempt_id": attempt_id,
                    "item_id": items[key],
                    "judge_id": judge.id,
                    "result": result,
                    "score": score,
                    "reasoning": reasoning,
                }
            )
        for key in (k for k in t["missing"] if k in items):
            rows.append(
                {
                    "attempt_id": attempt_id,
                    "item_id": items[key],
                    "judge_id": judge.id,
                    "result": VerdictResult.NOT_APPLICABLE,
                    "reasoning": "the log has no result for this constraint",
                }
            )
    verdicts_upsert(ctx, rows)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _json_bytes(value).decode("utf-8")


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
