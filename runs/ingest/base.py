"""What every ingest format shares: streaming readers that know line numbers, the list of
problems, batched upserts with created/updated/unchanged counts, and all-or-nothing.

A format module reads its files through `iter_jsonl` or `iter_json_document`, reports
bad records with `ctx.problem(...)`, and writes through `ctx.upsert(...)`. The whole
command runs in one transaction; if any problem was reported, `IngestFailed` is raised
at the end and nothing is stored.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import models

from runs import search
from runs.bulk import CopyBehind, bulk_insert_rows
from runs.ingest.decode import (
    BATCH_HELD_BYTES,
    MAX_HELD_BYTES,
    MAX_RECORD_BYTES,
    MAX_VALUES,
    VALUE_BYTES,
    Refused,
    check,
    constant_at,
    digits_reason,
    may_be_deep,
    raw_size,
    size_reason,
    structure,
    too_deep,
    too_deep_reason,
    value_end,
)
from runs.models import Attempt, ChecklistItem, Instance

MAX_LISTED_PROBLEMS = 50
#: problems after which the rest of a file is not read: the import has failed by then, and a file of
#: junk lines costs no more time or memory than its first problems (the message says it stopped)
MAX_PROBLEMS_PER_FILE = 1000
#: bad records remembered to count each once in `rejected` (beyond, a record is told apart from the last one only)
MAX_REMEMBERED_BAD_RECORDS = 10_000
CHUNK_BYTES = 1 << 20
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
#: the only ways decoded JSON can hold what `clean` replaces: strict JSON refuses raw control
#: characters and UTF-8 cannot encode surrogates, so NUL and surrogates come from \u escapes
#: (a literal backslash before "u0000" matches too; then `clean` just finds nothing to do)
_BAD_ESCAPES = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _no_constant(name: str):
    """NaN and Infinity are Python's extension, not JSON; no database JSON column takes them."""
    raise json.JSONDecodeError(f"{name} is not a JSON value", name, 0)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise json.JSONDecodeError(f"the number {text[:20]} is out of range", text, 0)
    return value


_STRICT_JSON = {"parse_constant": _no_constant, "parse_float": _finite_float}
#: a decoder with the same rules, for readers that take records out of a line themselves (`iter_jsonl`'s salvage)
STRICT_DECODER = json.JSONDecoder(**_STRICT_JSON)


INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # what every database stores in an integer column


def overflows_float(value) -> bool:
    """Whether a decoded JSON number cannot become a float (an integer of more than 308 digits:
    JSON floats out of range are refused while parsing, integers stay exact until converted)."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max


@dataclass(frozen=True)
class Source:
    """A file to read: where it is on disk and the name to use in messages."""

    path: Path
    name: str

    @classmethod
    def of(cls, path: str | Path, name: str | None = None) -> Source:
        path = Path(path)
        return cls(path=path, name=name or path.name)


@dataclass(frozen=True)
class Problem:
    """One reason a record cannot be stored, with where it is."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.reason}"


@dataclass
class Options:
    """The options of one ingest command (CLI flags or API form fields)."""

    benchmark: str | None = None
    #: display name of a benchmark the ingest creates (default: the format's name, with the slug if not its own)
    name: str | None = None
    model: str | None = None
    run: str | None = None
    judge: str | None = None
    scaffold: str | None = None
    repetition: int | None = None
    #: the least score that passes, for formats whose scores are numbers (Inspect AI logs, lm-eval samples)
    pass_threshold: float | None = None
    #: a field of each sample's metadata (lm-eval: of its doc) whose value is the instance's primary category
    category_field: str | None = None
    #: where the options were given ("cli", "form", "api"): problems name an option as that place does
    #: (runs.ingest.options)
    surface: str = "cli"


class IngestFailed(Exception):
    """Raised when any record was bad: the transaction is rolled back, nothing is stored."""

    def __init__(self, problems: list[Problem], total: int, report: Report, *, retry_may_fix: bool = False):
        self.problems = problems
        self.total = total
        self.report = report
        #: whether every problem waits for data another import stores (its benchmark, run, instances), so
        #: the same files may import once that is done; a problem of the files themselves stays as it is
        self.retry_may_fix = retry_may_fix
        more = f" (and {total - len(problems)} more)" if total > len(problems) else ""
        super().__init__(f"{total} problem(s), nothing was stored{more}:\n" + "\n".join(map(str, problems)))


@dataclass
class Report:
    """Counts of what an ingest did, per kind of row."""

    counts: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    rejected: int = 0
    #: what a format says about the import beside the counts (lm-eval: the figures kept as the harness reported them)
    notes: list[str] = field(default_factory=list)

    def add(self, kind: str, outcome: str, n: int = 1) -> None:
        if n:
            self.counts[kind][outcome] += n

    def merge(self, other: Report) -> None:
        """Add another report's counts to this one (the files of a per-file import)."""
        for kind, counts in other.counts.items():
            for outcome, n in counts.items():
                self.add(kind, outcome, n)
        self.rejected += other.rejected
        self.notes.extend(other.notes)

    def total(self, outcome: str) -> int:
        return sum(c.get(outcome, 0) for c in self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.total("created"),
            "updated": self.total("updated"),
            "unchanged": self.total("unchanged"),
            "rejected": self.rejected,
            "by_kind": {kind: dict(c) for kind, c in self.counts.items()},
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        head = (
            f"created {self.total('created')}, updated {self.total('updated')}, "
            f"unchanged {self.total('unchanged')}, rejected {self.rejected}"
        )
        parts = []
        for kind, c in self.counts.items():
            parts.append(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in c.items() if v))
        if self.total("created") == 0 and self.total("updated") == 0 and not self.rejected:
            head += " (nothing changed: this data is already stored)"
        return head + "".join(f"\n  {line}" for line in [*parts, *self.notes])


def clean(value: Any) -> Any:
    """Make text storable everywhere: lone surrogates and NUL become U+FFFD; the rest is kept as is.

    PostgreSQL rejects both in text and jsonb; model output contains both.
    """
    if isinstance(value, str):
        if _BAD_CHARS.search(value):
            value = value.replace("\x00", "\ufffd")
            value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def content_hash(value: Any) -> str:
    """A stable SHA-256 of a JSON-able value (key order does not matter)."""
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


#: rows a file may not change, by the field that marks them (not null) and why: an audit lead's
#: rewrite of a checklist item is the lead's text, kept whatever a later import says
_OWNED_ELSEWHERE: dict[type[models.Model], tuple[str, str]] = {
    ChecklistItem: (
        "supersedes_id",
        "is an audit's rewrite of another item: a file may not redefine it (give the file's item another key)",
    ),
}


def text_limit(model: type[models.Model], field: str) -> int:
    """The most characters a text column of a model holds (formats check their fields against it)."""
    return model._meta.get_field(field).max_length


#: models whose text `runs.search` indexes when an ingest writes them (trajectories: `runs.trajectory_store`)
_SEARCHED = (Attempt,)


@functools.cache
def _text_limits(model: type[models.Model]) -> tuple[tuple[str, int], ...]:
    """(attname, max_length) of a model's bounded text columns."""
    return tuple(
        (f.attname, f.max_length)
        for f in model._meta.concrete_fields
        if isinstance(f, models.CharField) and f.max_length
    )


class Context:
    """The state of one ingest command: problems, counts, progress, hashes of the sources."""

    def __init__(self, options: Options, progress: Callable[[int, int], None] | None = None):
        self.options = options
        self.report = Report()
        self._problems: list[Problem] = []
        self.problem_count = 0
        #: problems that wait for data another import stores (`problem(..., awaits_import=True)`)
        self.awaiting_import = 0
        self._progress = progress
        self.total_bytes = 0
        self.done_bytes = 0
        #: weight (runs.ingest.decode) of the records read since the format last wrote what it holds
        self.held = 0
        self.source_hashes: dict[str, str] = {}
        self._bad_records: set[tuple[str, int | None]] = set()
        self._last_bad: tuple[str, int | None] | None = None
        #: attempts whose verdicts changed and the judges of those verdicts (their rollups are rebuilt),
        #: and runs written to
        self.touched_attempts: set[int] = set()
        self.touched_judges: set[int] = set()
        self.touched_runs: dict[int, Any] = {}
        #: the file being read (rows written without a line number are reported against it)
        self.source: Source | None = None
        #: benchmarks this ingest locked for writing (their data generation is bumped if anything changed)
        self.benchmarks: set[int] = set()
        #: what this ingest looked up once for all its files (runs.ingest.lookups): benchmarks by slug, and each
        #: benchmark's instance and item index (an ingest reads one format; no format that reads the index writes
        #: or deletes instances or items, and an upsert of either clears it)
        self.benchmarks_by_slug: dict[str, Any] = {}
        self.instance_indexes: dict[int, Any] = {}
        #: models and judges by name, and runs by (benchmark id, label), as this ingest found or created them
        #: (runs.ingest.lookups: a results folder names the same ones file after file; none is deleted meanwhile)
        self.catalog: dict[tuple, Any] = {}
        #: attempts given judge reasoning: listed for the search's index and their benchmarks marked searchable
        #: once, before the ingest commits (runs.ingest.verdicts.reasoning_searchable)
        self.reasoned_attempts: set[int] = set()
        #: attempts this ingest created: every verdict on them is its own, so their rollups are rebuilt for every
        #: judge (no judge filter to apply)
        self.created_attempts: set[int] = set()
        #: runs this ingest created: every attempt of theirs is one it created (`attempts_known` lists them)
        self.created_runs: set[int] = set()
        #: (attempt, judge) pairs this ingest gave verdicts or a judge report (`known_unjudged`)
        self.judged_pairs: set[tuple[int, int]] = set()
        #: run id -> {instance id: attempt id} of the attempts this ingest created or found (lookups.attempt_ids_for)
        self.attempts_known: dict[int, dict[int, int]] = {}
        #: where the verdicts' COPY runs while the next file is read (runs.bulk.copies_behind; None: in line)
        self.copy_behind: CopyBehind | None = None

    def known_unjudged(self, attempts: set[int | None], judges: set[int]) -> bool:
        """Whether no verdict or judge report of these attempts by these judges can be stored, without asking the
        database: this ingest created every attempt and wrote none of the pairs yet (a first import's files)."""
        return (
            bool(attempts)
            and None not in attempts
            and attempts <= self.created_attempts
            and not any((a, j) in self.judged_pairs for a in attempts for j in judges)
        )

    # problems -------------------------------------------------------------------------
    def problem(self, source: Source | str, line: int | None, reason: str, *, awaits_import: bool = False) -> None:
        """Report one problem; the ingest will store nothing. `awaits_import`: the record refers to what another
        import stores (a benchmark, run, instance), so the same files may import after it."""
        name = source.name if isinstance(source, Source) else source
        self.problem_count += 1
        self.awaiting_import += awaits_import
        key = (name, line)
        if key != self._last_bad and key not in self._bad_records:
            self.report.rejected += 1
            if len(self._bad_records) < MAX_REMEMBERED_BAD_RECORDS:
                self._bad_records.add(key)
        self._last_bad = key
        if len(self._problems) < MAX_LISTED_PROBLEMS:
            self._problems.append(Problem(name, line, reason))

    def too_many_problems(self, source: Source, since: int, line: int | None) -> bool:
        """Whether a file has reported MAX_PROBLEMS_PER_FILE problems since `since` (the count when it was
        opened); if so, says that the rest of it is not read."""
        if self.problem_count - since < MAX_PROBLEMS_PER_FILE:
            return False
        self.problem(
            source,
            line,
            f"stopped reading this file after {MAX_PROBLEMS_PER_FILE:,} problems; the rest of it was not checked",
        )
        return True

    @property
    def failed(self) -> bool:
        return self.problem_count > 0

    @property
    def last_problem_at(self) -> tuple[str, int | None] | None:
        """(file name, line) of the latest problem reported, if any."""
        return self._last_bad

    def raise_if_failed(self) -> None:
        if self.failed:
            raise IngestFailed(
                self._problems,
                self.problem_count,
                self.report,
                retry_may_fix=self.awaiting_import == self.problem_count,
            )

    def check_lengths(self, model: type[models.Model], by_key: dict[tuple, dict[str, Any]], kind: str) -> None:
        """Report text longer than its column holds (formats check their own fields with line numbers first;
        this is the net under all of them, so PostgreSQL never refuses a row half-way through an import)."""
        limits = _text_limits(model)
        for k, row in by_key.items():
            for name, limit in limits:
                value = row.get(name)
                if isinstance(value, str) and len(value) > limit:
                    # the last key part is the file's own name for the row
                    self.problem(
                        self.source or kind,
                        None,
                        f"{kind} '{str(k[-1])[:100]}': {name} is {len(value):,} "
                        f"characters long; at most {limit} fit: {value[:60]!r}...",
                    )

    # memory -------------------------------------------------------------------------
    def hold(self, weight: int) -> None:
        """Count a record about to be decoded as held until the format writes (`release`), or until the
        reader hands out the next one when the format keeps none (`let_go`); refuses it (Refused) when
        that would pass MAX_HELD_BYTES, unless it is the only one held."""
        if self.held and self.held + weight > MAX_HELD_BYTES:
            raise Refused(
                f"the records read and not yet stored would take more than {MAX_HELD_BYTES >> 20} MiB "
                "with this one (a format keeps a dialog, a log's header or a batch together until it "
                "writes it): split the file"
            )
        self.held += weight

    def release(self) -> None:
        """The format wrote (or dropped) the records it held."""
        self.held = 0

    def let_go(self, weight: int) -> None:
        """A record handed to a format that keeps none is done with (nothing below 0: the format may
        have released it already)."""
        self.held = max(0, self.held - weight)

    @property
    def batch_full(self) -> bool:
        """Whether a format that writes in batches should write the one it holds now."""
        return self.held >= BATCH_HELD_BYTES

    # progress -------------------------------------------------------------------------
    def plan(self, sources: Iterable[Source]) -> None:
        self.total_bytes = sum(s.path.stat().st_size for s in sources if s.path.exists())
        self._tick()

    def advance(self, nbytes: int) -> None:
        self.done_bytes += nbytes
        self._tick()

    def _tick(self) -> None:
        if self._progress:
            self._progress(self.done_bytes, self.total_bytes)

    # writes ---------------------------------------------------------------------------
    def upsert(
        self,
        model: type[models.Model],
        rows: list[dict[str, Any]],
        *,
        key: tuple[str, ...],
        compare: tuple[str, ...],
        kind: str,
        count: bool = True,
        changed: set[tuple] | None = None,
        returning_ids: bool = True,
        new: bool = False,
    ) -> dict[tuple, int]:
        """Insert new rows, update changed ones, count unchanged ones; returns {key: pk}.

        Rows with the same key within one call keep the last. Nothing is written once a
        problem has been reported (validation goes on so every problem is listed). With
        `returning_ids=False` new rows are bulk-inserted (COPY) and only existing ids come back.
        `new`: the caller knows no row with these keys is stored (`known_unjudged`), so none is read.
        """
        by_key: dict[tuple, dict[str, Any]] = {}
        for row in rows:
            by_key[tuple(row[k] for k in key)] = row
        if not by_key:
            return {}
        if model in (Instance, ChecklistItem):  # an index read before would miss what this writes
            self.instance_indexes.clear()
        self.check_lengths(model, by_key, kind)
        existing: dict[tuple, dict[str, Any]] = {}
        first = key[0]
        first_values = {k[0] for k in by_key}
        qs = model.objects.filter(**{f"{first}__in": first_values})
        if len(key) > 1:
            for extra in key[1:]:
                values = {k[key.index(extra)] for k in by_key}
                if len(values) <= 500:
                    qs = qs.filter(**{f"{extra}__in": values})
        owner = _OWNED_ELSEWHERE.get(model)
        for found in () if new else qs.values("pk", *key, *compare, *([owner[0]] if owner else [])):
            k = tuple(found[f] for f in key)
            if k in by_key:
                existing[k] = found
        ids: dict[tuple, int] = {k: e["pk"] for k, e in existing.items()}
        to_create, to_update = [], []
        for k, row in by_key.items():
            old = existing.get(k)
            if old is None:
                # rows that are only copied in (no ids back) never become model instances
                to_create.append((k, row if not returning_ids else model(**row)))
            elif any(old[f] != row[f] for f in compare):
                if owner and old[owner[0]] is not None:
                    self.problem(f"{kind} '{k[-1]}'"[:200], None, owner[1])
                    continue
                obj = model(pk=old["pk"], **row)
                to_update.append(obj)
        if changed is not None:
            changed.update(k for k, _ in to_create)
            changed.update(tuple(getattr(obj, f) for f in key) for obj in to_update)
        if count:
            self.report.add(kind, "created", len(to_create))
            self.report.add(kind, "updated", len(to_update))
            self.report.add(kind, "unchanged", len(by_key) - len(to_create) - len(to_update))
        if self.failed:
            return ids
        if to_create and not returning_ids:
            bulk_insert_rows(model, [row for _, row in to_create])
        elif to_create:
            created = model.objects.bulk_create([obj for _, obj in to_create], batch_size=1000)
            for (k, _), obj in zip(to_create, created):
                ids[k] = obj.pk
        if to_update:
            update_fields = [f for f in rows[0] if f not in key]
            model.objects.bulk_update(to_update, update_fields, batch_size=500)
        if model in _SEARCHED and returning_ids:
            # their search rows, in the same transaction (runs.search)
            search.index_written(model, [obj for _, obj in to_create] + to_update, rows[0].keys())
        return ids


# readers ------------------------------------------------------------------------------
def _hashing_chunks(source: Source, ctx: Context) -> Iterator[bytes]:
    digest = hashlib.sha256()
    with open(source.path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
            yield chunk
    ctx.source_hashes[source.name] = digest.hexdigest()


def iter_jsonl(
    source: Source,
    ctx: Context,
    *,
    salvage: Callable[[str, bool], list[dict[str, Any]] | None] | None = None,
    limit: int = MAX_RECORD_BYTES,
    keep: bool = False,
    allow_constants: bool = False,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; bad lines become problems.

    Each line is checked against the bounds of runs.ingest.decode (`limit`: its text as held) before it is
    decoded; a line past one is a problem, and a line longer than `limit` is never read whole.
    A record counts as held by the ingest (Context.hold) while it is handed out; with `keep` (a format that
    keeps records until it writes them, then calls Context.release) until the format releases it.
    `salvage(text, is_last_unterminated_line)` may read a line that is not JSON the way its harness does:
    the records it returns are yielded in order (none: the line is skipped); None leaves it a problem.
    `allow_constants`: NaN and infinities are read, where the format's writer puts them (its reader maps them)."""
    ctx.source = source
    ctx.release()
    if not source.path.exists() or source.path.stat().st_size == 0:
        ctx.problem(source, None, "the file is empty")
        list(_hashing_chunks(source, ctx)) if source.path.exists() else None
        return
    digest = hashlib.sha256()
    seen_record = False
    since = ctx.problem_count
    handed = 0  # the weight of the line read before, held until this one when the format keeps none
    size = source.path.stat().st_size
    with open(source.path, "rb") as handle:
        lineno = 0
        while raw := handle.readline(limit + 1):
            lineno += 1
            digest.update(raw)
            ctx.advance(len(raw))
            if raw.isspace():  # not raw.strip(), which copies the line
                continue
            if ctx.too_many_problems(source, since, lineno):
                ctx.advance(size - handle.tell())
                return
            if len(raw) > limit and not raw.endswith(b"\n"):
                del raw
                while (rest := handle.readline(CHUNK_BYTES)) and rest[-1:] != b"\n":  # the rest of the line, unread
                    digest.update(rest)
                    ctx.advance(len(rest))
                digest.update(rest)
                ctx.advance(len(rest))
                ctx.problem(
                    source,
                    lineno,
                    f"the line is longer than {limit >> 20} MiB; at most {limit >> 20} MiB are read per record",
                )
                continue
            last = not raw.endswith(b"\n")
            try:
                held = raw_size(raw, limit)
                if held > limit:
                    ctx.problem(source, lineno, size_reason(held, limit))
                    continue
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                ctx.problem(source, lineno, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
                continue
            del raw  # a line can be 100 MB: from here on only its text, then its record, is held
            try:
                weight = check(text, limit=limit)
                if not keep:
                    ctx.let_go(handed)
                ctx.hold(weight)
                handed = weight
                obj = json.loads(text) if allow_constants else json.loads(text, **_STRICT_JSON)
            except Refused as exc:
                ctx.problem(source, lineno, exc.reason)
                continue
            except RecursionError:
                ctx.problem(source, lineno, too_deep_reason())
                continue
            except json.JSONDecodeError as exc:
                if not seen_record and not last and text.rstrip()[-1:] in ("{", "[") and exc.pos >= len(text.rstrip()):
                    # a record that goes on past its line: a pretty-printed JSON document
                    ctx.problem(
                        source,
                        lineno,
                        "this is one JSON document spread over many lines, not JSON Lines "
                        "(one record per line): is the format right?",
                    )
                    for rest in handle:
                        digest.update(rest)
                        ctx.advance(len(rest))
                    break
                salvaged = salvage(text, last) if salvage else None
                if salvaged is not None:
                    seen_record = True  # read as its harness reads it, even if that leaves nothing
                    for obj in salvaged:
                        yield lineno, obj
                    continue
                hint = " (the last line looks truncated)" if last else ""
                column = _error_column(exc, text)
                ctx.problem(source, lineno, f"not valid JSON: {exc.msg.removesuffix(' at')} at column {column}{hint}")
                continue
            except ValueError:  # an integer of more digits than Python converts
                ctx.problem(source, lineno, digits_reason())
                continue
            if not isinstance(obj, dict):
                ctx.problem(source, lineno, f"expected a JSON object, found {_json_type(obj)}")
                continue
            if may_be_deep(text, 0, len(text)) and too_deep(obj):
                ctx.problem(source, lineno, too_deep_reason())
                continue
            seen_record = True
            record = clean(obj) if _BAD_ESCAPES.search(text) else obj
            del text, obj
            yield lineno, record
    ctx.source_hashes[source.name] = digest.hexdigest()
    if not seen_record and not ctx.failed:
        ctx.problem(source, None, "the file holds no records")


def _error_column(exc: json.JSONDecodeError, text: str, start: int = 0) -> int:
    """The column of a decoding error in `text` (from `start`): the strict decoder's hooks refuse NaN, an
    infinity or an out-of-range number without knowing where it is, so it is looked for."""
    if exc.doc is text:
        return exc.colno
    at = constant_at(text, start)
    return exc.colno if at is None else at - text.rfind("\n", 0, at)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


_WS = " \t\r\n"


class _DocReader:
    """Incremental reader of one JSON document that keeps line numbers, checking each value against the
    bounds of runs.ingest.decode (`limit`: a value's text as held) before decoding it."""

    def __init__(
        self,
        source: Source,
        ctx: Context,
        *,
        allow_constants: bool = False,
        limit: int = MAX_RECORD_BYTES,
        keep: bool = False,
    ):
        self.source = source
        self.ctx = ctx
        self.limit = limit
        #: whether the format keeps the values it is handed until it writes them (Context.release)
        self.keep = keep
        #: the weight of the value handed out last (held until the next one when the format keeps none)
        self.handed = 0
        self.chunks = _hashing_chunks(source, ctx)
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.line = 1  # line number at self.pos
        #: commas, colons and opening brackets in the buffer after self.pos (decode.structure)
        self.structure = 0
        self.eof = False
        # NaN and Infinity only where a format's writer puts them (the reader of the format maps them)
        self.json = json.JSONDecoder() if allow_constants else json.JSONDecoder(**_STRICT_JSON)
        #: whether the last value's text has an escape that `clean` must look at
        self.escaped = False
        #: the last value's weight (decode.check)
        self.weight = 0
        #: the ingest's problem count when the file was opened
        self.since = ctx.problem_count

    def _more(self) -> bool:
        if self.eof:
            return False
        # drop what has been consumed, then read at least as much as is buffered (amortised linear)
        self.buf = self.buf[self.pos :]
        self.pos = 0
        want = max(CHUNK_BYTES, len(self.buf))
        got = 0
        while got < want:
            chunk = next(self.chunks, None)
            if chunk is None:
                part = self.decoder.decode(b"", final=True)
                self.eof = True
            else:
                self.ctx.advance(len(chunk))
                got += len(chunk)
                part = self.decoder.decode(chunk)
            self.structure += structure(part)
            self.buf += part
            if chunk is None:
                break
        return True

    def _move(self, new_pos: int) -> None:
        self.line += self.buf.count("\n", self.pos, new_pos)
        if new_pos == self.pos + 1:
            self.structure -= self.buf[self.pos] in ",:[{"
        else:
            self.structure -= structure(self.buf, self.pos, new_pos)
        self.pos = new_pos

    def peek(self) -> str:
        """The next non-blank character ('' at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self._move(self.pos + 1)
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, chars: str) -> str:
        ch = self.peek()
        if ch == "" or ch not in chars:
            found = "the end of the file" if ch == "" else repr(ch)
            raise _DocError(self.line, f"expected {' or '.join(repr(c) for c in chars)}, found {found}")
        self._move(self.pos + 1)
        return ch

    def _check(self, line: int) -> None:
        """Refuse the value at self.pos, as far as it is buffered, if it passes a bound (decode.check). Only
        where the buffer after it could: the value's own extent is found then, so the cost stays its own."""
        if self.structure < MAX_VALUES and (len(self.buf) - self.pos) * 4 <= self.limit:
            return
        try:
            check(self.buf, self.pos, value_end(self.buf, self.pos), limit=self.limit)
        except Refused as exc:
            raise _DocError(line, exc.reason) from None

    def value(self) -> tuple[int, Any]:
        """Decode the next JSON value; returns (line where it starts, value)."""
        self.peek()
        start_line = self.line
        while True:
            self._check(start_line)
            try:
                obj, end = self.json.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise _DocError(start_line, too_deep_reason()) from None
            except json.JSONDecodeError as exc:
                if exc.doc is not self.buf:  # a strict hook refused NaN or an infinity: find where
                    at = constant_at(self.buf, self.pos)
                    line = start_line + self.buf.count("\n", self.pos, at if at is not None else self.pos)
                    column = _error_column(exc, self.buf, self.pos)
                    raise _DocError(line, f"not valid JSON: {exc.msg} at column {column}") from None
                near_end = exc.pos >= len(self.buf) - 64 or exc.msg.startswith("Unterminated string")
                if near_end and self._more():
                    continue
                line = start_line + self.buf.count("\n", self.pos, exc.pos)
                truncated = (
                    " (the file looks truncated)"
                    if self.eof and (exc.pos >= len(self.buf) - 64 or exc.msg.startswith("Unterminated string"))
                    else ""
                )
                where = truncated or f" at column {exc.pos - self.buf.rfind(chr(10), 0, exc.pos)}"
                raise _DocError(line, f"not valid JSON: {exc.msg.removesuffix(' at')}{where}") from None
            except ValueError:  # an integer of more digits than Python converts
                raise _DocError(start_line, digits_reason()) from None
            self.escaped = _BAD_ESCAPES.search(self.buf, self.pos, end) is not None
            deep = may_be_deep(self.buf, self.pos, end) and too_deep(obj)
            before, length = self.structure, end - self.pos
            self._move(end)
            self.weight = length + VALUE_BYTES * (before - self.structure + 1)
            if deep:
                raise _DocError(start_line, too_deep_reason())
            return start_line, obj

    def held_value(self) -> tuple[int, Any]:
        """The next value, counted as held by the ingest (Context.hold) until its format writes it, or
        until the next one is asked for when the format keeps none."""
        line, obj = self.value()
        if not self.keep:
            self.ctx.let_go(self.handed)
        try:
            self.ctx.hold(self.weight)
        except Refused as exc:
            raise _DocError(line, exc.reason) from None
        self.handed = self.weight
        return line, obj


class _Stopped(Exception):
    """The file had too many problems; the rest of it is not read (the problem says so)."""


class _DocError(Exception):
    def __init__(self, line: int, reason: str):
        self.line = line
        self.reason = reason


def iter_json_document(
    source: Source,
    ctx: Context,
    *,
    list_keys: tuple[str, ...] = (),
    extra_hint: str = "is this a JSONL file?",
    allow_constants: bool = False,
    limit: int = MAX_RECORD_BYTES,
    keep: bool = False,
) -> Iterator[tuple[str | None, int, Any]]:
    """Stream a JSON document, yielding (key, line, value) without loading it whole; each value is
    checked against the bounds of runs.ingest.decode (`limit`: its text as held) before it is decoded.
    A value counts as held by the ingest (Context.hold) while it is handed out; with `keep` (a format that
    keeps values until it writes them, then calls Context.release) until the format releases it.

    A top-level list yields (None, line, element) per element. A top-level object yields
    (key, line, element) for each element of the lists under `list_keys`, and
    (key, line, value) once for every other key. `extra_hint` ends the problem reported
    when more data follows the document (what the format's writer is known to do).
    """
    ctx.source = source
    ctx.release()
    if not source.path.exists() or source.path.stat().st_size == 0:
        ctx.problem(source, None, "the file is empty")
        return
    reader = _DocReader(source, ctx, allow_constants=allow_constants, limit=limit, keep=keep)
    try:
        first = reader.peek()
        if first == "[":
            yield from _iter_list(reader, None)
        elif first == "{":
            reader.expect("{")
            if reader.peek() == "}":
                reader.expect("}")
            else:
                while True:
                    _, key = reader.value()
                    if not isinstance(key, str):
                        raise _DocError(reader.line, "expected a key")
                    reader.expect(":")
                    if key in list_keys and reader.peek() == "[":
                        yield from _iter_list(reader, key)
                    else:
                        line, value = reader.held_value()
                        yield key, line, clean(value) if reader.escaped else value
                    if reader.expect(",}") == "}":
                        break
        elif first == "":
            ctx.problem(source, None, "the file is empty")
            return
        else:
            raise _DocError(reader.line, f"expected a JSON object or list, found {first!r}")
        if reader.peek() != "":
            raise _DocError(reader.line, f"extra data after the JSON document ({extra_hint})")
    except _DocError as exc:
        ctx.problem(source, exc.line, exc.reason)
    except _Stopped:
        pass
    except UnicodeDecodeError:
        ctx.problem(source, reader.line, "not valid UTF-8")
    finally:
        for chunk in reader.chunks:  # finish the hash (and the progress) even when stopping early
            ctx.advance(len(chunk))


def _iter_list(reader: _DocReader, key: str | None) -> Iterator[tuple[str | None, int, Any]]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.expect("]")
        return
    while True:
        if reader.ctx.too_many_problems(reader.source, reader.since, reader.line):
            raise _Stopped
        line, value = reader.held_value()
        yield key, line, clean(value) if reader.escaped else value
        if reader.expect(",]") == "]":
            return


def require(
    ctx: Context, source: Source, line: int, record: dict[str, Any], fields: dict[str, type | tuple[type, ...]]
) -> bool:
    """Check that `record` has each field with the given type; report each miss. True if all present."""
    ok = True
    for name, kind in fields.items():
        if name not in record or record[name] is None:
            ctx.problem(source, line, f"missing required field '{name}'")
            ok = False
        elif not isinstance(record[name], kind):
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            ctx.problem(source, line, f"field '{name}' should be {expected}, found {_json_type(record[name])}")
            ok = False
    return ok
