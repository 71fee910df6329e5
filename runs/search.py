"""Search every transcript of a benchmark: trajectory messages, final responses and judge reasoning.

Writes: trajectories and responses are split into `SearchText` rows (one per message, long
messages in overlapping pieces) by the ingest, in its transaction (`Context.upsert` calls
`index_written`), and by `manage.py search_rebuild` for data stored before. Judge reasoning is walked
where it is stored, in the verdict table, and looked up through its copy in ReasoningText, which
`runs.search_index` makes after the writer's commit; while a benchmark has reasoning waiting for its copy,
its reasoning is found by the walks alone, so every writer of verdicts is searchable at once.

Reads: `search(benchmark, query)` is the one selector behind the page and the API. Two modes:

* "text" (the default): the query is found as it is written, case-insensitively, anywhere in the
  text (`git push --force` matches only those characters in that order). PostgreSQL answers it
  with ILIKE through trigram (pg_trgm) indexes; SQLite with LIKE, a scan. Both
  return the same hits for a query of ASCII characters, whatever the text holds: both then fold ASCII
  letters alone (`_ilike`); PostgreSQL folds other queries' letters too, SQLite does not.
* "words": every word appears, case-insensitively, in any order; the same index and the same hits.

Transcript rows are indexed on their text with whitespace turned into a letter (`INDEXED_TEXT`), so the
index holds trigrams across word boundaries ("n i", "n t", "n 3" of `broken in turn 3`): a phrase of common
words is looked up by its rarer joins (4,758 candidates, 190 ms, against none, 12 ms, on 120 MB of
transcripts), and every candidate is still checked against the real text. A plain trigram index splits
text into words and knows none of that.

No full-text (tsvector) index: one on trajectory text cost as much to build as the
trigram index (6.3 s against 5.5 s for 25 MB), and one on judge reasoning took the verdict ingest
from 31,800 to 26,200 verdicts/s (docs/performance.md, "Search every transcript"); the trigram
index answers exact phrases, which stemming cannot, and every-word searches as well.

Hits are listed source by source (messages, responses, reasoning), each in the order it was
stored (reasoning by attempt, then as stored), a page at a time after a cursor; every query is
bounded by a LIMIT and by the search's time limit (`IFPORTAL_SEARCH_TIMEOUT_MS`), the whole search by
as much: on PostgreSQL a statement timeout, on SQLite a progress handler that interrupts the statement
running at the limit (`_bounded`). A search the limit cuts short lists the hits found by then
(`SearchPage.partial`, the page asks to narrow it) or, with none, is refused (SearchTooSlow). On SQLite
at most `IFPORTAL_SEARCH_CONCURRENCY` searches run at once in a process, the rest are answered "busy"
(SearchBusy): a scan holds a core, and the embedded server's other pages need theirs. A page also
says how many hits there are: those on it when they are all (`SearchPage.total`), else counted apart
(`hits_total`, which the page asks for once it is shown) for at most `IFPORTAL_SEARCH_COUNT_MS` (a lower
bound when that is cut short): counting common text reads every row that holds it, and the hits wait for
none of that. Common text is found by walking rows in id order (reasoning by attempt),
rare text through the trigram index's candidates; which one a query is cannot be told before, so the
two take turns, each bounded (`_walked_or_tried`).
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property

from django.conf import settings
from django.db import OperationalError, connection, models, transaction
from django.db.models import Exists, F, OuterRef, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Collate, Greatest, Lower, StrIndex, Substr
from django.urls import NoReverseMatch, reverse

from runs.bulk import bulk_insert_rows
from runs.models import (
    Attempt,
    Benchmark,
    BenchmarkKind,
    ReasoningText,
    Run,
    SearchSource,
    SearchText,
    Trajectory,
    Verdict,
    VerdictResult,
)
from runs.search_index import reasoning_index_asked, reasoning_indexed, reasoning_pending, reasoning_pending_attempts
from runs.trajectory_view import StoredThread, pretty, stored_threads

#: characters of one SearchText piece; longer messages are cut into pieces overlapping by MAX_QUERY. Small
#: enough for a row to stay in the table's own pages (PostgreSQL moves values over about 2 kB to TOAST, whose
#: reads its planner does not count: with long rows it walked every row rather than use the trigram index)
PIECE = 1_800
#: the longest query: every match of a query this long lies whole in one piece
MAX_QUERY = 200
#: the shortest query (trigram indexes need three characters; shorter ones would scan everything)
MIN_QUERY = 3
PAGE_SIZE = 25
#: characters shown either side of a hit
CONTEXT = 120
#: the order sources are listed in
SOURCES = (SearchSource.MESSAGE, SearchSource.RESPONSE, SearchSource.REASONING)
MODES = ("text", "words")
_WRITE_BATCH = 2000
#: how long (ms) each statement of a try of the trigram index's candidates (`_candidates_tried`) may take between
#: the walks (`_walked_or_tried`) before the rows are walked on instead: long enough to read the posting lists of a
#: common word (`error`'s 745,883 candidates at 1 GB: 150-185 ms on a host that walks a row in 8 us) and of a
#: phrase of common words (`broken in turn 3`: 39-59 ms on a host twice as fast), as rarer text takes less (2-25 ms)
CANDIDATE_TRIES_MS = (300, 400)
#: the memory (`work_mem`) a search's statements may hold a bitmap in (a sort, a hash): enough for the trigram
#: index's candidates of 1.5M rows (1 GB of text) to stay exact, one entry a row, so a range of ids rules rows out
#: by the index alone; with PostgreSQL's default 4 MB the bitmap went lossy and every row of its pages was checked
#: against the text (the 126,000 rows before `error`'s first hit at 1 GB: 385 against 165-215 ms at 16-64 MB)
SEARCH_WORK_MEM = "32MB"
#: rows of a source walked in id order in turn with those tries (`_walked_or_tried`): the first walk answers
#: text in more than about 0.5% of the rows, and every source of fewer rows, in 15-45 ms for transcripts (1-5 us
#: a row for the ASCII-folding ILIKE of `_ilike` on pieces of 680-1,500 characters; three times the rows of the
#: walks through the database's collation, at 4-9 us a row, in the same time); the last size repeats to the
#: source's end
WALK_ROWS = (6_000, 24_000, 96_000)
#: attempts whose judge reasoning is walked in turn with those tries (`_reasoning_ids`): an OctoBench attempt has
#: 33 items x its judges' verdicts, so a third as many verdicts as WALK_ROWS rows at three judges (three times
#: the attempts measure the same: the reasoning searches' median and p95 within 15 ms)
REASONING_WALK_ATTEMPTS = (20, 80, 320)
#: attempts whose reasoning the index does not hold yet that a search reads beside the index's candidates (each
#: attempt's verdicts through the attempt index, checked against their text): a few just re-checked or edited keep
#: every reasoning search on the index (five pending attempts made each search of 1M verdicts' reasoning walk them
#: all, 0.9-1.7 s); more, just after an import, and reasoning is walked until the copy catches up
PENDING_READ_ATTEMPTS = 100
#: virtual-machine instructions of a SQLite statement between two checks of the search's time limit (`_bounded`):
#: a scan takes about 6 a row, one of them the check of the row's text, so a check comes every 170 rows or so of
#: 1,500 characters, about 2 ms of the scan (measured on 40,000 rows; 17 ms at 10,000 instructions); a check is one
#: Python call, and the scan was no slower with them
PROGRESS_STEPS = 1_000
#: rows' ids a SQLite search reads in one statement (`_spans`): a scan of 6,000 rows takes 20-60 ms, what a search
#: cut at its time limit may lose
SPAN = 6_000
#: attempts whose judge reasoning a SQLite search reads in one statement: about SPAN verdicts at OctoBench's 33
#: items and three judges
REASONING_SPAN = SPAN // 100
#: ids read at a time by the count of hits (`_counted`)
COUNT_CHUNK = 500
#: a run or model filter naming more runs than this walks the benchmark's rows (checking the run) instead of
#: one index probe per run
WALK_MAX_RUNS = 16

# lookups ------------------------------------------------------------------------------
#: the whitespace the transcript index turns into JOINER, and the letter it becomes. pg_trgm splits text into
#: words at anything but letters and digits; joined, the index also holds the trigrams across each word
#: boundary. A letter, so the joins are trigrams; any letter would do: a text that holds the letter itself
#: where the query has a space only adds a candidate, which the check against the real text drops.
JOINED = " \t\n\r"
JOINER = "q"
#: the expression the transcript rows' trigram index is built on (migration 0013) and searched through: the
#: planner uses the index only for this exact expression
INDEXED_TEXT = "translate({column}, E' \\t\\n\\r', 'qqqq')"
_JOIN = str.maketrans(dict.fromkeys(JOINED, JOINER))


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like(text: str) -> str:
    return f"%{_like_escape(text)}%"


class _TextLookup(models.Lookup):
    """A search lookup; on PostgreSQL each needle is an ILIKE of the text (`_ilike`), and where the column's
    trigram index is built on INDEXED_TEXT (`joined`) also an ILIKE of the joined needle on that expression, and
    where it is built on the column itself (`indexed`) also a plain ILIKE, which the index answers."""

    #: the column's trigram index is on INDEXED_TEXT (SearchText.text)
    joined = False
    #: the column's trigram index is on the column itself (ReasoningText.text)
    indexed = True

    def needles(self) -> list[str]:
        raise NotImplementedError

    def as_sql(self, compiler, connection):  # SQLite: a scan
        # SQLite's LIKE folds ASCII letters alone, as its lower() does, and compares 4-5 times faster than
        # instr(lower()), which copies every row's text (103 MB of one thread: 180-220 ms against 870-990 ms)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        needles = self.needles()
        return " AND ".join(f"{lhs} LIKE %s ESCAPE '\\'" for _ in needles), [
            p for needle in needles for p in (*lhs_params, _like(needle))
        ]

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        clauses, params = [], []
        for needle in self.needles():
            if self.joined:
                clauses.append(f"{INDEXED_TEXT.format(column=lhs)} ILIKE %s")
                params += [*lhs_params, _like(needle.translate(_JOIN))]
            clauses.append(_ilike(lhs, needle))  # before the plain ILIKE: evaluated in order, it spares it most rows
            params += [*lhs_params, _like(needle)]
            if self.indexed and _folds_ascii_alone(needle):  # the index answers only the plain ILIKE
                clauses.append(f"{lhs} ILIKE %s")
                params += [*lhs_params, _like(needle)]
        return " AND ".join(clauses), params


def _folds_ascii_alone(needle: str) -> bool:
    """Whether the search folds ASCII letters alone for `needle`: every needle on SQLite (its lower()), a needle
    of ASCII characters on PostgreSQL (`_ilike`). The check, the snippet and the highlight all ask this."""
    return needle.isascii() or connection.vendor != "postgresql"


def _ilike(column: str, needle: str) -> str:
    """The check of a needle against the real text (PostgreSQL). A needle of ASCII characters is compared under
    the "C" collation, which folds only ASCII letters, as SQLite's lower() does: so both databases return the
    same hits for it, whatever the text holds, and PostgreSQL compares a row 2-3 times faster than through the
    database's collation (9 against 3.3-4 us a row of 1,100 characters; folding every letter Unicode knows was
    the cost of the walks, docs/performance.md "Search every transcript"). Other needles fold through the
    database's collation ("ÉCHEC" finds "échec" on PostgreSQL; SQLite folds neither).

    The trigram indexes' clauses fold through the database's collation, which must fold ASCII letters as ASCII
    (any but a Turkish, Azeri or Lithuanian one): under those, "ID" lowers to "ıd", and a row the walks find for
    "id" would not be a candidate."""
    return f'{column} COLLATE "C" ILIKE %s' if _folds_ascii_alone(needle) else f"{column} ILIKE %s"


class ContainsText(_TextLookup):
    """`field__contains_text=q`: q occurs in the field, ignoring case (ILIKE on PostgreSQL, LIKE on SQLite)."""

    lookup_name = "contains_text"

    def needles(self) -> list[str]:
        return [self.rhs]


class AllWords(_TextLookup):
    """`field__all_words=q`: every word of q occurs in the field, ignoring case (each an ILIKE through the
    trigram index on PostgreSQL, LIKE on SQLite)."""

    lookup_name = "all_words"

    def needles(self) -> list[str]:
        return query_words(self.rhs) or [""]


class ContainsJoinedText(ContainsText):
    joined, indexed = True, False


class AllJoinedWords(AllWords):
    joined, indexed = True, False


class ContainsTextWalked(ContainsText):
    """`contains_text` without the joined needle: for rows walked in id order, where only the check against the
    real text counts (the joined expression is there for the index, and costs 4 times the plain ILIKE a row)."""

    lookup_name = "contains_text_walked"
    indexed = False


class AllWordsWalked(AllWords):
    lookup_name = "all_words_walked"
    indexed = False


SearchText._meta.get_field("text").register_lookup(ContainsJoinedText)
SearchText._meta.get_field("text").register_lookup(AllJoinedWords)
SearchText._meta.get_field("text").register_lookup(ContainsTextWalked)
SearchText._meta.get_field("text").register_lookup(AllWordsWalked)
Verdict._meta.get_field("reasoning").register_lookup(ContainsTextWalked)
Verdict._meta.get_field("reasoning").register_lookup(AllWordsWalked)
ReasoningText._meta.get_field("text").register_lookup(ContainsText)
ReasoningText._meta.get_field("text").register_lookup(AllWords)


def query_words(text: str) -> list[str]:
    """The words of a "words" query: what whitespace separates."""
    return text.split()


# writes -------------------------------------------------------------------------------
def message_text(message: dict) -> str:
    """The searchable text of one normalised message: content, reasoning, then each tool call's name
    and arguments (as the attempt page shows them), one per line."""
    parts = [str(message.get("content") or ""), str(message.get("reasoning") or "")]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            parts.append(f"{call.get('name', '')} {pretty(call.get('arguments'))}".strip())
    return "\n".join(p for p in parts if p)


def pieces(text: str) -> list[str]:
    """`text` in pieces of at most PIECE characters, each starting PIECE - MAX_QUERY after the last, so
    that every stretch of up to MAX_QUERY characters lies whole in (at least) one piece."""
    if len(text) <= PIECE:
        return [text]
    step = PIECE - MAX_QUERY
    return [text[start : start + PIECE] for start in range(0, len(text) - MAX_QUERY, step)]


def _facets(attempt_ids: Iterable[int]) -> dict[int, tuple[int, int, int]]:
    """{attempt id: (benchmark id, run id, model id)}."""
    return {
        a: (b, r, m)
        for a, b, r, m in Attempt.objects.filter(id__in=list(attempt_ids)).values_list(
            "id", "run__benchmark_id", "run_id", "run__model_id"
        )
    }


def _rows(attempt_id: int, facets: tuple[int, int, int], source: str, text: str, **where) -> list[dict]:
    benchmark_id, run_id, model_id = facets
    return [
        {
            "attempt_id": attempt_id,
            "benchmark_id": benchmark_id,
            "run_id": run_id,
            "model_id": model_id,
            "source": source,
            "thread": where.get("thread"),
            "message": where.get("message"),
            "turn": where.get("turn"),
            "piece": k,
            "text": part,
        }
        for k, part in enumerate(pieces(text))
    ]


def trajectory_rows(attempt_id: int, facets: tuple[int, int, int], threads: list) -> Iterator[dict]:
    """The SearchText rows of one attempt's trajectory: one per message with text (or per piece of it)."""
    for t, thread in enumerate(threads if isinstance(threads, list) else []):
        messages = thread.get("messages") if isinstance(thread, dict) else None
        for n, message in enumerate(messages if isinstance(messages, list) else []):
            if not isinstance(message, dict):
                continue
            text = message_text(message)
            if text.strip():
                turn = message.get("turn")
                yield from _rows(
                    attempt_id,
                    facets,
                    SearchSource.MESSAGE,
                    text,
                    thread=t,
                    message=n,
                    turn=turn if isinstance(turn, int) and not isinstance(turn, bool) and turn >= 0 else None,
                )


def _replace(source: str, attempt_ids: Sequence[int], rows: Iterable[dict]) -> int:
    """Replace these attempts' rows of a source by `rows`, inserted a batch at a time (a 100 MB trajectory's
    pieces are never all in memory); the rows written."""
    for start in range(0, len(attempt_ids), _WRITE_BATCH):
        SearchText.objects.filter(attempt_id__in=attempt_ids[start : start + _WRITE_BATCH], source=source).delete()
    written, batch, benchmark_ids = 0, [], set()
    for row in rows:
        batch.append(row)
        benchmark_ids.add(row["benchmark_id"])
        if len(batch) >= _WRITE_BATCH:
            bulk_insert_rows(SearchText, batch)
            written, batch = written + len(batch), []
    bulk_insert_rows(SearchText, batch)
    benchmarks_mark_searchable(benchmark_ids)
    return written + len(batch)


def benchmarks_mark_searchable(benchmark_ids: Iterable[int]) -> None:
    """Record that these benchmarks have text to search (Benchmark.searchable), in the writer's transaction.

    Text is only ever added to a benchmark or removed with its attempts, so the flag is set and never cleared;
    every writer of search rows (`_replace`) and of judge reasoning (`runs.ingest.verdicts`) calls this. A
    re-check's reasoning needs no call: it re-checks responses, which made the benchmark searchable already."""
    ids = sorted(set(benchmark_ids))
    if ids:
        Benchmark.objects.filter(id__in=ids, searchable=False).update(searchable=True)


def trajectories_index(threads_by_attempt: dict[int, list]) -> int:
    """Replace the message rows of these attempts by those of their trajectories; the rows written."""
    facets = _facets(threads_by_attempt)
    rows = (
        row
        for attempt_id, threads in threads_by_attempt.items()
        if attempt_id in facets
        for row in trajectory_rows(attempt_id, facets[attempt_id], threads)
    )
    return _replace(SearchSource.MESSAGE, sorted(threads_by_attempt), rows)


def responses_index(response_by_attempt: dict[int, str]) -> int:
    """Replace the response rows of these attempts; the rows written."""
    facets = _facets(response_by_attempt)
    rows = [
        row
        for attempt_id, response in response_by_attempt.items()
        if attempt_id in facets and response.strip()
        for row in _rows(attempt_id, facets[attempt_id], SearchSource.RESPONSE, response)
    ]
    _replace(SearchSource.RESPONSE, sorted(response_by_attempt), rows)
    return len(rows)


def index_written(model: type[models.Model], objs: Sequence[models.Model], fields: Iterable[str]) -> None:
    """What the ingest calls after writing attempts (`fields`: those the write set): their search rows
    are replaced in the same transaction. Trajectories are indexed by `runs.trajectory_store` as it
    writes their messages."""
    if model is Attempt and objs and "response" in fields:
        responses_index({obj.pk: obj.response or "" for obj in objs})


def search_rebuild(benchmark_ids: Iterable[int] | None = None, *, batch: int = 200) -> dict[str, int]:
    """Rebuild the SearchText rows of these benchmarks (all when None) from the stored attempts and
    trajectories, a transaction per batch of attempts, one trajectory in memory at a time."""
    attempts = Attempt.objects.order_by("id")
    if benchmark_ids is not None:
        attempts = attempts.filter(run__benchmark_id__in=list(benchmark_ids))
    written = {"attempts": 0, "rows": 0}
    last = 0
    while ids := list(attempts.filter(id__gt=last).values_list("id", flat=True)[:batch]):
        last = ids[-1]
        with transaction.atomic():
            written["rows"] += responses_index(dict(Attempt.objects.filter(id__in=ids).values_list("id", "response")))
            with_trajectory = set(Trajectory.objects.filter(attempt_id__in=ids).values_list("attempt_id", flat=True))
            _replace(SearchSource.MESSAGE, [i for i in ids if i not in with_trajectory], [])
            for attempt_id in sorted(with_trajectory):
                written["rows"] += trajectories_index({attempt_id: stored_threads(attempt_id)})
        written["attempts"] += len(ids)
    return written


# reads --------------------------------------------------------------------------------
class SearchRefused(ValueError):
    """The query cannot be run as given (too short, too long, an unknown filter); the message says why."""


class SearchTooSlow(Exception):
    """The search reached its time limit: the query should be narrowed. `found`: the ids of the source being
    searched found by then (the caller lists them as a partial page)."""

    def __init__(self, message: str = "", found: Sequence[int] = ()):
        super().__init__(message or _TOO_SLOW.format(seconds=settings.IFPORTAL_SEARCH_TIMEOUT_MS / 1000))
        self.found = list(found)


class SearchBusy(Exception):
    """As many searches as the process allows are running (SQLite): the user should try again shortly."""

    @property
    def retry_after(self) -> int:
        """Seconds after which a running search has ended: its time limit and its count's, rounded up."""
        return -(-(settings.IFPORTAL_SEARCH_TIMEOUT_MS + settings.IFPORTAL_SEARCH_COUNT_MS) // 1000)


@dataclass(frozen=True)
class SearchQuery:
    """What to find and where: the text, its mode, and filters by run, model, judge, verdict and item."""

    text: str
    mode: str = "text"
    sources: tuple[str, ...] = SOURCES
    runs: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    judge: str = ""
    verdict: str = ""
    item: str = ""
    #: where the previous page stopped: (source, id of its last hit)
    after: tuple[str, int] | None = None
    #: the attempt of that hit, for reasoning (listed by attempt): "reasoning:<attempt>.<id>"
    after_attempt: int | None = None

    @property
    def needles(self) -> list[str]:
        return [self.text] if self.mode == "text" else query_words(self.text)


def search_query_of(params) -> SearchQuery:
    """A SearchQuery from request parameters (a QueryDict or a dict of lists); SearchRefused when bad."""

    def one(name: str) -> str:
        values = params.getlist(name) if hasattr(params, "getlist") else params.get(name, [])
        values = [values] if isinstance(values, str) else values
        return str(values[-1]).strip() if values else ""

    def many(name: str) -> tuple[str, ...]:
        values = params.getlist(name) if hasattr(params, "getlist") else params.get(name, [])
        values = [values] if isinstance(values, str) else values
        return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))

    text = one("q")
    if len(text) < MIN_QUERY:
        raise SearchRefused(f"Type at least {MIN_QUERY} characters to search.")
    if len(text) > MAX_QUERY:
        raise SearchRefused(f"A search is at most {MAX_QUERY} characters long (this one has {len(text)}).")
    mode = one("mode") or "text"
    if mode not in MODES:
        raise SearchRefused(f"mode is one of {', '.join(MODES)}.")
    if mode == "words" and not any(len(w) >= MIN_QUERY for w in query_words(text)):
        raise SearchRefused(f"A words search needs at least one word of {MIN_QUERY} characters or more.")
    sources = many("source") or SOURCES
    if unknown := [s for s in sources if s not in SOURCES]:
        raise SearchRefused(f"unknown source {unknown[0]!r}: one of {', '.join(SOURCES)}.")
    verdict = one("verdict")
    if verdict and verdict not in VerdictResult.values:
        raise SearchRefused(f"verdict is one of {', '.join(VerdictResult.values)}.")
    after = after_attempt = None
    if cursor := one("after"):
        source, _, last = cursor.partition(":")
        attempt, dot, last = last.rpartition(".") if source == SearchSource.REASONING else ("", "", last)
        if source not in SOURCES or not last.isdigit() or (dot and not attempt.isdigit()):
            raise SearchRefused("after is a cursor given by the previous page (source:id).")
        after, after_attempt = (source, int(last)), int(attempt) if dot else None
    return SearchQuery(
        text=text,
        mode=mode,
        sources=tuple(s for s in SOURCES if s in sources),
        runs=many("run"),
        models=many("model"),
        judge=one("judge"),
        verdict=verdict,
        item=one("item"),
        after=after,
        after_attempt=after_attempt,
    )


@dataclass
class SearchHit:
    """One place the query was found, with the text around it cut into (text, is_match) segments."""

    source: str
    id: int
    attempt_id: int
    run: str
    model: str
    instance: str
    segments: list[tuple[str, bool]]
    url: str
    thread: int | None = None
    message: int | None = None
    turn: int | None = None
    item: str = ""
    judge: str = ""
    result: str = ""
    starts_cut: bool = False
    ends_cut: bool = False

    @property
    def where(self) -> str:
        """Where in the attempt, in words ("message 12 of thread 1", "response", "reasoning on item x")."""
        if self.source == SearchSource.MESSAGE:
            thread = f" of thread {self.thread}" if self.thread else ""
            return f"message #{self.message}{thread}" + (f" (turn {self.turn})" if self.turn is not None else "")
        if self.source == SearchSource.RESPONSE:
            return "final response"
        return f"{self.judge}'s reasoning on item {self.item}"


@dataclass
class SearchPage:
    query: SearchQuery
    hits: list[SearchHit] = field(default_factory=list)
    #: the cursor of the next page ("source:id"), None on the last page
    next_after: str | None = None
    #: the time limit cut the search short: the hits are those found by then
    partial: bool = False
    #: how many hits the search has in all (every page), or at least that many when `total_exact` is False; None
    #: when that takes a count (`hits_total`)
    total: int | None = None
    total_exact: bool = True
    #: attempts whose judge reasoning is not in the search's index yet (runs.search_index; at most
    #: runs.search_index.COUNT_CAP + 1): found by reading the verdicts meanwhile, more slowly
    reasoning_pending: int = 0

    @property
    def known(self) -> int:
        """The hits this page knows of: its own, and one more when a next page has been seen."""
        return len(self.hits) + (1 if self.next_after and not self.partial else 0)


def _of_verdicts(rows: models.QuerySet, query: SearchQuery) -> models.QuerySet:
    """Verdicts narrowed to the query's judge, result and item."""
    for lookup, value in (("judge__name", query.judge), ("result", query.verdict), ("item__key", query.item)):
        if value:
            rows = rows.filter(**{lookup: value})
    return rows


def _of_runs(rows: models.QuerySet, query: SearchQuery, *, run: str) -> models.QuerySet:
    """Rows narrowed to the query's runs and models (`run`: the path to the row's run, "" for runs themselves)."""
    path = f"{run}__" if run else ""
    if query.runs:
        rows = rows.filter(**{f"{path}label__in": query.runs})
    if query.models:
        rows = rows.filter(**{f"{path}model__name__in": query.models})
    return rows


def _text_rows(benchmark: Benchmark, query: SearchQuery, source: str, *, walked: bool = False) -> models.QuerySet:
    """The rows of a transcript source the query finds; `walked`: checked against the text alone, for rows
    walked in id order rather than looked up through the trigram index."""
    lookup = "text__contains_text" if query.mode == "text" else "text__all_words"
    lookup += "_walked" if walked else ""
    rows = _of_runs(
        SearchText.objects.filter(benchmark=benchmark, source=source, **{lookup: query.text}), query, run="run"
    )
    if query.judge or query.verdict or query.item:
        rows = rows.filter(Exists(_of_verdicts(Verdict.objects.filter(attempt_id=OuterRef("attempt_id")), query)))
    return rows


def _reasoning_rows(benchmark: Benchmark, query: SearchQuery) -> models.QuerySet:
    """The benchmark's verdicts whose reasoning the query finds, checked against the verdicts' own text."""
    lookup = "reasoning__contains_text_walked" if query.mode == "text" else "reasoning__all_words_walked"
    rows = Verdict.objects.filter(attempt__run__benchmark=benchmark, **{lookup: query.text}).exclude(reasoning="")
    return _of_verdicts(_of_runs(rows, query, run="attempt__run"), query)


def _reasoning_candidates(benchmark: Benchmark, query: SearchQuery) -> models.QuerySet | None:
    """`_reasoning_rows` among the candidates of ReasoningText's trigram index (PostgreSQL) and the verdicts of the
    benchmark's attempts whose reasoning is not in it yet (runs.search_index), while those are at most
    PENDING_READ_ATTEMPTS; None when they are more: then only walks find every hit. A copy older than its
    verdict's reasoning is never a hit on its own: each candidate is checked against the verdict's text."""
    if not reasoning_indexed():
        return None
    pending = reasoning_pending_attempts(benchmark.id, limit=PENDING_READ_ATTEMPTS + 1)
    if len(pending) > PENDING_READ_ATTEMPTS:
        return None
    lookup = "text__contains_text" if query.mode == "text" else "text__all_words"
    candidates = ReasoningText.objects.filter(**{lookup: query.text}).values("verdict_id")
    if pending:
        candidates = candidates.union(Verdict.objects.filter(attempt_id__in=pending).values("id"), all=True)
    return _reasoning_rows(benchmark, query).filter(id__in=candidates)


def _snippet(qs: models.QuerySet, column: str, needle: str, size: int) -> models.QuerySet:
    """Annotate `snippet` (the text around the first occurrence of `needle`) and `snippet_start`."""
    # SQLite's lower() folds ASCII letters alone already
    folded = Collate(F(column), "C") if connection.vendor == "postgresql" and _folds_ascii_alone(needle) else F(column)
    qs = qs.annotate(found=StrIndex(Lower(folded), Lower(Value(needle))))  # the first hit as `_ilike` finds it
    qs = qs.annotate(snippet_start=Greatest(F("found") - CONTEXT, 1))
    return qs.annotate(
        snippet=Substr(column, F("snippet_start"), 2 * CONTEXT + size), full_length=models.functions.Length(column)
    )


def segments(text: str, needles: Sequence[str]) -> list[tuple[str, bool]]:
    """`text` cut into (part, is_match) around every case-insensitive occurrence of a needle, folding letters as
    the search does (`_folds_ascii_alone`)."""
    needles = sorted({n for n in needles if n}, key=len, reverse=True)
    if not needles:
        return [(text, False)] if text else []
    out, at = [], 0
    pattern = "|".join(f"(?a:{re.escape(n)})" if _folds_ascii_alone(n) else re.escape(n) for n in needles)
    for found in re.finditer(pattern, text, re.IGNORECASE):
        if found.start() > at:
            out.append((text[at : found.start()], False))
        out.append((found.group(), True))
        at = found.end()
    if at < len(text):
        out.append((text[at:], False))
    return out


def search(benchmark: Benchmark, query: SearchQuery, *, page_size: int | None = None) -> SearchPage:
    """A page of hits of `query` in `benchmark` (see the module's docstring); a partial page when the time limit cuts
    the search short, SearchTooSlow when it does so before any hit, SearchBusy when the process runs as many
    searches as it may (SQLite). Its `total` is set when the page knows it: every hit is on it (exact), or the
    search was cut short ("at least" the hits found: its time is up, there is none left to count with).

    At most one query per source for the hits, one per source for their snippets and one for their attempts,
    whatever the number of hits.
    """
    with _search_slot(), _bounded_transaction():
        page = _search(benchmark, query, page_size or PAGE_SIZE)
    if SearchSource.REASONING in query.sources and (pending := reasoning_pending(benchmark.id)):
        page.reasoning_pending = pending
        reasoning_index_asked()
    if not (page.next_after or query.after):
        page.total, page.total_exact = len(page.hits), True
    elif page.partial:
        page.total, page.total_exact = page.known, False
    return page


def hits_total(benchmark: Benchmark, query: SearchQuery, *, known: int = 0) -> tuple[int, bool]:
    """(how many hits `query` has in `benchmark` on every page, True), or (at least that many, False) when counting
    them takes longer than IFPORTAL_SEARCH_COUNT_MS: the rows counted by then, or `known` (the hits a page has
    shown) if more. SearchBusy as `search`."""
    with _search_slot(), _bounded_transaction():
        counted, exact = _counted(benchmark, query, time.monotonic() + settings.IFPORTAL_SEARCH_COUNT_MS / 1000)
    return (counted, True) if exact else (max(counted, known), False)


@contextmanager
def _bounded_transaction() -> Iterator[None]:
    """The transaction of a search (PostgreSQL: with its statement timeout); a statement stopped at the time limit
    that nothing inside caught is SearchTooSlow."""
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    _plan(cursor, timeout_ms=settings.IFPORTAL_SEARCH_TIMEOUT_MS)
            yield
    except OperationalError as exc:
        if _canceled(exc):
            raise SearchTooSlow() from None
        raise


def _counted(benchmark: Benchmark, query: SearchQuery, deadline: float) -> tuple[int, bool]:
    """(how many rows of the query's sources the query finds, True), or (the rows counted by `deadline`, False):
    their ids are read as a stream, so a count cut short still says how many it had read."""
    counted = 0
    for source in query.sources:
        if source == SearchSource.REASONING:
            candidates = _reasoning_candidates(benchmark, query)
            rows = _reasoning_rows(benchmark, query) if candidates is None else candidates
        else:
            rows = _text_rows(benchmark, query, source)
        try:
            with _savepoint(), _bounded(deadline), connection.cursor() as cursor:
                if connection.vendor == "postgresql":
                    _plan(cursor, timeout_ms=_ms_left(deadline))
                for _ in rows.values_list("id", flat=True).iterator(chunk_size=COUNT_CHUNK):
                    counted += 1
                    if time.monotonic() > deadline:
                        return counted, False
                if connection.vendor == "postgresql":
                    _plan(cursor, timeout_ms=settings.IFPORTAL_SEARCH_TIMEOUT_MS)
        except SearchTooSlow:
            return counted, False
        except OperationalError as exc:
            if not _canceled(exc):
                raise
            return counted, False
    return counted, True


_TOO_SLOW = "The search took longer than {seconds:g} s; narrow it (a longer phrase, a run, a model or a verdict)."
_BUSY = "Other searches are running; search again in a few seconds."


def _canceled(exc: OperationalError) -> bool:
    """Whether the statement was stopped at the search's time limit: PostgreSQL's statement timeout
    (query_canceled) or SQLite's interrupt by the progress handler (`_bounded`)."""
    cause = exc.__cause__
    if isinstance(cause, sqlite3.OperationalError):
        return str(cause) == "interrupted"
    return getattr(cause, "sqlstate", None) == "57014"


def _plan(cursor, *, timeout_ms: int, walk: bool | None = None) -> None:
    """Settings of the search transaction (PostgreSQL): the statement timeout, SEARCH_WORK_MEM, never a sequential
    scan (the planner does not count reading long values out of TOAST, so a table of few long rows could look
    cheaper to read whole), and with `walk` True only the walk in id order, False only the indexes' candidates."""
    cursor.execute(
        "SELECT set_config('statement_timeout', %s, true), set_config('enable_seqscan', 'off', true), "
        "set_config('enable_bitmapscan', %s, true), set_config('enable_indexscan', %s, true), "
        "set_config('work_mem', %s, true)",
        [
            str(int(timeout_ms)),
            "off" if walk else "on",
            "off" if walk is False else "on",
            SEARCH_WORK_MEM,
        ],
    )


def _reasoning_ids(
    benchmark: Benchmark, query: SearchQuery, want: int, *, run_ids: list[int] | None, deadline: float
) -> list[int]:
    """The ids of the first `want` verdicts whose judge reasoning the query finds, in attempt order (and in id order
    within an attempt): verdicts have no benchmark column, so the benchmark's rows are walked by its attempts.

    On PostgreSQL, as for transcripts (`_walked_or_tried`): walks of the verdicts of the benchmark's next
    REASONING_WALK_ATTEMPTS attempts (of the filtered runs, `run_ids`, when a run or model filter names few) in
    turn with tries of the trigram index's candidates. A walk is bounded by attempts read, not by milliseconds,
    and starts at the benchmark's attempts; the walk along the primary key it replaces read every verdict stored
    before the benchmark's and, bounded by 40 ms, put `broken in turn 3` in failed verdicts' reasoning on a cliff
    between 85 and 300 ms (docs/performance.md, "Search every transcript"). A verdict stored while someone
    pages, of an attempt their pages have passed, is not listed to them (in id order it came last).

    The cursor names the last hit's attempt ("reasoning:<attempt>.<id>"), so a page goes on after it even when a
    re-check has deleted that verdict meanwhile."""
    rows = _reasoning_rows(benchmark, query)
    after_attempt = after_id = 0
    if query.after and query.after[0] == SearchSource.REASONING:
        after_id = query.after[1]
        after_attempt = (
            query.after_attempt or Verdict.objects.filter(id=after_id).values_list("attempt_id", flat=True).first()
        )  # a cursor of old names no attempt
        if after_attempt is None:
            raise SearchRefused("The hit this page went on from is gone (its verdicts were deleted): search again.")
    ordered = rows.order_by("attempt_id", "id").values_list("id", flat=True)
    rest_of_attempt = list(ordered.filter(attempt_id=after_attempt, id__gt=after_id)[:want]) if after_id else []
    if connection.vendor != "postgresql":
        last = Attempt.objects.filter(run__benchmark=benchmark).aggregate(last=models.Max("id"))["last"]
        try:
            return rest_of_attempt + _spans(
                rows,
                key="attempt_id",
                span=REASONING_SPAN,
                start=after_attempt,
                last=last,
                want=want - len(rest_of_attempt),
                deadline=deadline,
            )
        except SearchTooSlow as cut:
            raise SearchTooSlow(found=rest_of_attempt + cut.found) from None
    if len(rest_of_attempt) >= want or run_ids == []:
        return rest_of_attempt
    table, runs = Attempt._meta.db_table, Run._meta.db_table

    def chunk(after: int, size: int) -> _Chunk:
        if run_ids is None:
            return _Chunk(
                f"SELECT a.id FROM {table} a JOIN {runs} r ON r.id = a.run_id WHERE r.benchmark_id = %s "
                "AND a.id > %s ORDER BY a.id LIMIT %s",
                [benchmark.id, after, size],
            )
        return _Chunk(
            f"SELECT id FROM {table} WHERE run_id = ANY(%s) AND id > %s ORDER BY id LIMIT %s", [run_ids, after, size]
        )

    try:
        return rest_of_attempt + _walked_or_tried(
            rows,
            _reasoning_candidates(benchmark, query),
            chunk,
            start=after_attempt,
            want=want - len(rest_of_attempt),
            deadline=deadline,
            key="attempt_id",
            sizes=REASONING_WALK_ATTEMPTS,
        )
    except SearchTooSlow as cut:
        raise SearchTooSlow(found=rest_of_attempt + cut.found) from None


def _tried(ordered: models.QuerySet, budget_ms: float, *, walk: bool) -> list[int] | None:
    """`ordered` read by a walk in id order (`walk`) or through the trigram index's candidates alone, or None
    when that takes more than `budget_ms` (PostgreSQL)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:  # a savepoint: a cancel undoes only this try
            _plan(cursor, timeout_ms=max(1, min(budget_ms, settings.IFPORTAL_SEARCH_TIMEOUT_MS)), walk=walk)
            ids = list(ordered)
            _plan(cursor, timeout_ms=settings.IFPORTAL_SEARCH_TIMEOUT_MS)
            return ids
    except OperationalError as exc:
        if not _canceled(exc):
            raise
    return None


def _transcript_ids(
    benchmark: Benchmark, query: SearchQuery, source: str, want: int, *, run_ids: list[int] | None, deadline: float
) -> list[int]:
    """The ids of the first `want` rows of a transcript source that the query finds, in id order.

    On PostgreSQL (`_walked_or_tried`) the walks read the next WALK_ROWS rows of the source that the
    benchmark, run and model filters leave, found through the walk indexes without reading their text
    (`_walk_chunk`); so common text waits neither for the candidates first nor, behind a run filter, for a
    bound found through the attempts (docs/performance.md, "Search every transcript"). Elsewhere one query:
    SQLite scans anyway.

    `run_ids`: the filtered runs to walk (`_walk_runs`)."""
    start = query.after[1] if query.after and query.after[0] == source else 0
    candidates = _text_rows(benchmark, query, source)
    if connection.vendor != "postgresql":
        last = SearchText.objects.filter(benchmark=benchmark, source=source).aggregate(last=models.Max("id"))["last"]
        return _spans(candidates, key="id", span=SPAN, start=start, last=last, want=want, deadline=deadline)
    if run_ids == []:
        return []
    walked = _text_rows(benchmark, query, source, walked=True)
    if run_ids:
        walked = walked.filter(run_id__in=run_ids)  # the run walk index's condition, so the planner can use it

    def chunk(after: int, size: int) -> _Chunk:
        return _walk_chunk(benchmark, source, run_ids, start=after, size=size)

    return _walked_or_tried(walked, candidates, chunk, start=start, want=want, deadline=deadline)


def _walked_or_tried(
    walked: models.QuerySet,
    candidates: models.QuerySet | None,
    chunk_of: Callable[[int, int], _Chunk],
    *,
    start: int,
    want: int,
    deadline: float,
    key: str = "id",
    sizes: Sequence[int] | None = None,
) -> list[int]:
    """The ids of the first `want` rows after `start` that the query finds, in `key` order, then id order (PostgreSQL).

    Two ways to find them take turns, each bounded: a walk of the rows of the next `sizes` values of `key` (their
    ids or their attempts: `chunk_of(after, size)`, those values; `walked`, the query checked against each row)
    and a try of the trigram index's candidates after the rows walked (`candidates`; None: walks alone), each of its
    statements for at most CANDIDATE_TRIES_MS (`_candidates_tried`). A walk answers text common enough to fill a
    page within its rows, and a source with fewer rows; candidates answer rare text whatever its place, and text
    that a long stretch of rows lacks (PostgreSQL estimates how many rows match a pattern poorly, so which one a
    query is cannot be told before); each walk starts where the last stopped, or after the hits a try bounded.

    A try cannot be bounded by the candidates it reads rather than by time: the index hands over every candidate
    at once (a bitmap), and each it returns must be checked against the text, which is the try's cost. `deadline`
    (time.monotonic()): past it the search is too slow (SearchTooSlow), as one statement past the statement
    timeout is, with the ids found by then (`found`); so is a walk the statement timeout cancels."""
    found: list[int] = []
    with _cut_with(found):
        return _walks_and_tries(
            walked, candidates, chunk_of, found, start=start, want=want, deadline=deadline, key=key, sizes=sizes
        )


def _walks_and_tries(
    walked: models.QuerySet,
    candidates: models.QuerySet | None,
    chunk_of: Callable[[int, int], _Chunk],
    found: list[int],
    *,
    start: int,
    want: int,
    deadline: float,
    key: str,
    sizes: Sequence[int] | None,
) -> list[int]:
    """`_walked_or_tried`'s turns, adding the ids they find to `found` as they go."""
    tries = iter(CANDIDATE_TRIES_MS if candidates is not None else ())
    order = list(dict.fromkeys((key, "id")))
    sizes = sizes or WALK_ROWS
    for size in itertools.chain(sizes, itertools.repeat(sizes[-1])):
        chunk = chunk_of(start, size)
        with connection.cursor() as cursor:
            _plan(cursor, timeout_ms=_ms_left(deadline))
            cursor.execute(f"SELECT min(id), max(id), count(*) FROM ({chunk.sql}) AS chunk", chunk.params)
            first, last, rows = cursor.fetchone()
            if rows:
                _plan(cursor, timeout_ms=_ms_left(deadline), walk=True)
                # the chunk's rows by their id range where they lie together (the table is in import order), else
                # by their ids: a range with gaps (runs imported apart) would walk every row between them
                in_chunk = (
                    {f"{key}__gte": first, f"{key}__lte": last}
                    if last - first < 2 * rows
                    else {f"{key}__in": RawSQL(chunk.sql, chunk.params)}
                )
                found += walked.filter(**in_chunk).order_by(*order).values_list("id", flat=True)[: want - len(found)]
            _plan(cursor, timeout_ms=settings.IFPORTAL_SEARCH_TIMEOUT_MS)
        if len(found) >= want or rows < size:  # a page, or the source's last row walked
            return found
        start = last
        budget = next(tries, None)
        if budget is not None:
            tried = _candidates_tried(candidates, start, want - len(found), budget, key=key, deadline=deadline)
            if tried is not None:
                ids, start = tried
                found += ids
                if start is None or len(found) >= want:
                    return found
    return found


def _candidates_tried(
    candidates: models.QuerySet, start: int, want: int, budget_ms: float, *, key: str, deadline: float
) -> tuple[list[int], int | None] | None:
    """A try of the trigram index's candidates after `start` (in `key` order) in two statements, each within
    `budget_ms`: (the ids of the first hits, in order; the `key` up to which they are every hit, or None when they
    are every hit after `start`), or None when a statement outlasts its budget.

    First any `want` hits after `start`, in the order of the table's pages (the bitmap is read in that order, so the
    statement ends at the `want`-th hit, checking no more candidates against the text): with fewer, they are every
    hit, and the answer. Otherwise their `key`s bound the first hits: all of them when the pages held them in `key`
    order, else the smallest; the hits up to that bound are read in order, from the candidates in that range alone.
    So text that a long stretch of rows lacks and the rows after it hold in plenty (`error` after the benchmark
    study's 206 MB of long trajectories) costs two reads of the index's posting lists and no walk through the
    stretch; sorting every candidate after `start`, as one statement, meant checking each against the text (745,883
    for `error` at 1 GB)."""
    order = list(dict.fromkeys((key, "id")))
    # `key + 0`: the bound from below is checked on the hits; as an index condition it would read every later key
    anywhere = (
        candidates.alias(after=F(key) + 0).filter(after__gt=start).values_list(key, "id")[:want]  # no ORDER BY
    )
    hits = _tried(anywhere, min(budget_ms, _ms_left(deadline)), walk=False)
    if hits is None:
        return None
    if len(hits) < want:
        return [pk for _, pk in sorted(hits)], None
    keys = [k for k, _ in hits]
    # pages in `key` order (rows appended as imported): the hits' range is about the candidates the statement read,
    # and holds a page; else (rows of later keys in pages freed before) only the first hit is bounded
    bound = keys[-1] if keys == sorted(keys) else min(keys)
    within = (
        candidates.filter(**{f"{key}__gt": start, f"{key}__lte": bound}).order_by(*order).values_list("id", flat=True)
    )
    ids = _tried(within[:want], min(budget_ms, _ms_left(deadline)), walk=False)
    return None if ids is None else (ids, bound)


def _walk_runs(benchmark: Benchmark, query: SearchQuery) -> list[int] | None:
    """The ids of the runs a run or model filter leaves, for the run walk index; None without such a filter, or
    when it leaves more than WALK_MAX_RUNS runs (the benchmark's rows are walked, their runs checked)."""
    if not (query.runs or query.models):
        return None
    runs = _of_runs(Run.objects.filter(benchmark=benchmark), query, run="")
    run_ids = list(runs.order_by("id").values_list("id", flat=True)[: WALK_MAX_RUNS + 1])
    return None if len(run_ids) > WALK_MAX_RUNS else run_ids


@dataclass(frozen=True)
class _Chunk:
    """SQL of the ids of the next rows of a source to walk (`_walk_chunk`)."""

    sql: str
    params: list


def _walk_chunk(benchmark: Benchmark, source: str, run_ids: list[int] | None, *, start: int, size: int) -> _Chunk:
    """The ids of the next `size` rows of a source after id `start`, in id order, of the benchmark or of these
    runs, whatever their text: read from the walk indexes alone (migration 0014), one probe a run, merged (a
    single scan with the runs as a list walked the primary key through every run: 480 ms against 2 ms at 1 GB)."""
    table = SearchText._meta.db_table
    if run_ids is None:
        return _Chunk(
            f"SELECT id FROM {table} WHERE benchmark_id = %s AND source = %s AND id > %s ORDER BY id LIMIT %s",
            [benchmark.id, source, start, size],
        )
    per_run = " UNION ALL ".join(
        [f"(SELECT id FROM {table} WHERE run_id = %s AND source = %s AND id > %s ORDER BY id LIMIT %s)"] * len(run_ids)
    )
    return _Chunk(
        f"SELECT id FROM ({per_run}) AS runs ORDER BY id LIMIT %s",
        [*[p for run_id in run_ids for p in (run_id, source, start, size)], size],
    )


def _ms_left(deadline: float) -> int:
    """Milliseconds until `deadline`; SearchTooSlow when none are left."""
    left = int(1000 * (deadline - time.monotonic()))
    if left <= 0:
        raise SearchTooSlow()
    return left


@contextmanager
def _bounded(deadline: float) -> Iterator[None]:
    """On SQLite, the statements run inside are interrupted once `deadline` (time.monotonic()) has passed, as
    PostgreSQL's statement timeout cancels them (`_canceled` tells both apart from other errors). SQLite calls the
    handler every PROGRESS_STEPS virtual-machine instructions of a statement, every few milliseconds of a scan."""
    if connection.vendor != "sqlite":
        yield
        return
    connection.ensure_connection()
    raw = connection.connection
    raw.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)
    try:
        yield
    finally:
        raw.set_progress_handler(None, PROGRESS_STEPS)


def _spans(
    rows: models.QuerySet, *, key: str, span: int, start: int, last: int | None, want: int, deadline: float
) -> list[int]:
    """The ids of the first `want` of `rows` after `start` in `key` order, then id order (SQLite): read `span` values of
    `key` at a time, one statement each, up to `last` (the source's last), until `deadline` (`_bounded`). Past it,
    SearchTooSlow with the ids the spans before found: Python's sqlite3 reads a row ahead of the one it returns, so
    an interrupted statement loses the rows it had found, and a span bounds what is lost."""
    found: list[int] = []
    order = list(dict.fromkeys((key, "id")))
    with _cut_with(found), _bounded(deadline):
        while last is not None and start < last and len(found) < want:
            _ms_left(deadline)
            within = {f"{key}__gt": start, f"{key}__lte": start + span}
            found += rows.filter(**within).order_by(*order).values_list("id", flat=True)[: want - len(found)]
            start += span
    return found


@contextmanager
def _cut_with(found: list[int]) -> Iterator[None]:
    """SearchTooSlow carrying `found` (the ids found so far) when the block reaches the time limit: its deadline
    passed (SearchTooSlow) or a statement was stopped at it (PostgreSQL's cancel, SQLite's interrupt)."""
    try:
        yield
    except SearchTooSlow:
        raise SearchTooSlow(found=found) from None
    except OperationalError as exc:
        if not _canceled(exc):
            raise
        raise SearchTooSlow(found=found) from None


def _savepoint():
    """A savepoint on PostgreSQL, where a statement cancelled at the time limit aborts the transaction back to it
    (left by SearchTooSlow); SQLite's interrupt stops the statement alone, and needs none."""
    return transaction.atomic() if connection.vendor == "postgresql" else nullcontext()


@contextmanager
def _search_slot() -> Iterator[None]:
    """One of the `IFPORTAL_SEARCH_CONCURRENCY` searches a process runs at once on SQLite (SearchBusy when none is
    free); PostgreSQL bounds each search by its statement timeout on its own cores, and takes no slot."""
    if connection.vendor == "postgresql":
        yield
        return
    with _SLOTS_LOCK:
        if _SLOTS_TAKEN[0] >= settings.IFPORTAL_SEARCH_CONCURRENCY:
            raise SearchBusy(_BUSY)
        _SLOTS_TAKEN[0] += 1
    try:
        yield
    finally:
        with _SLOTS_LOCK:
            _SLOTS_TAKEN[0] -= 1


_SLOTS_LOCK = threading.Lock()
#: searches running in this process (`_search_slot`)
_SLOTS_TAKEN = [0]


def _search(benchmark: Benchmark, query: SearchQuery, page_size: int) -> SearchPage:
    page = SearchPage(query=query)
    found: list[tuple[str, int]] = []
    deadline = time.monotonic() + settings.IFPORTAL_SEARCH_TIMEOUT_MS / 1000
    # the filtered runs every source walks: looked up once per search, not once per source
    run_ids = _walk_runs(benchmark, query) if connection.vendor == "postgresql" else None
    start = SOURCES.index(query.after[0]) if query.after else 0
    try:
        with _savepoint():
            for source in SOURCES[start:]:
                if source not in query.sources:
                    continue
                want = page_size + 1 - len(found)
                try:
                    if source == SearchSource.REASONING:
                        ids = _reasoning_ids(benchmark, query, want, run_ids=run_ids, deadline=deadline)
                    else:
                        ids = _transcript_ids(benchmark, query, source, want, run_ids=run_ids, deadline=deadline)
                except SearchTooSlow as cut:
                    found += [(source, pk) for pk in cut.found]
                    raise
                found += [(source, pk) for pk in ids]
                if len(found) > page_size:
                    break
    except SearchTooSlow:  # the hits found by then are a partial page
        page.partial = True
    if page.partial and not found:
        raise SearchTooSlow()
    if len(found) > page_size or page.partial:  # hits after this page, or rows the limit left unsearched
        found = found[:page_size]
        page.next_after = f"{found[-1][0]}:{found[-1][1]}"
    needle = query.needles[0] if query.needles else query.text
    details: dict[tuple[str, int], dict] = {}
    text_ids = [pk for source, pk in found if source != SearchSource.REASONING]
    if text_ids:
        for row in _snippet(SearchText.objects.filter(id__in=text_ids), "text", needle, len(needle)).values(
            "id",
            "source",
            "attempt_id",
            "thread",
            "message",
            "turn",
            "piece",
            "snippet",
            "snippet_start",
            "full_length",
        ):
            details[(row["source"], row["id"])] = row
    reasoning_ids = [pk for source, pk in found if source == SearchSource.REASONING]
    if reasoning_ids:
        for row in _snippet(Verdict.objects.filter(id__in=reasoning_ids), "reasoning", needle, len(needle)).values(
            "id",
            "attempt_id",
            "item_id",
            "item__key",
            "item__turn",
            "judge__name",
            "result",
            "snippet",
            "snippet_start",
            "full_length",
        ):
            details[(SearchSource.REASONING, row["id"])] = row
    attempts = {
        a["id"]: a
        for a in Attempt.objects.filter(id__in={d["attempt_id"] for d in details.values()}).values(
            "id", "run__label", "run__model__name", "instance__external_id"
        )
    }
    last = details.get(found[-1]) if page.next_after else None
    if last is not None and found[-1][0] == SearchSource.REASONING:  # reasoning goes on by attempt: the cursor names it
        page.next_after = f"{SearchSource.REASONING}:{last['attempt_id']}.{found[-1][1]}"
    for source, pk in found:
        row = details.get((source, pk))
        if row is None:  # deleted between the two queries
            continue
        attempt = attempts[row["attempt_id"]]
        snippet = row["snippet"] or ""
        hit = SearchHit(
            source=source,
            id=pk,
            attempt_id=row["attempt_id"],
            run=attempt["run__label"],
            model=attempt["run__model__name"],
            instance=attempt["instance__external_id"],
            segments=segments(snippet, query.needles),
            url="",
            thread=row.get("thread"),
            message=row.get("message"),
            turn=row.get("turn") if source != SearchSource.REASONING else row.get("item__turn"),
            item=row.get("item__key") or "",
            judge=row.get("judge__name") or "",
            result=row.get("result") or "",
            starts_cut=row["snippet_start"] > 1 or bool(row.get("piece")),
            ends_cut=row["snippet_start"] - 1 + len(snippet) < row["full_length"],
        )
        hit.url = hit_url(benchmark, hit, item_id=row.get("item_id"))
        page.hits.append(hit)
    return page


@dataclass(frozen=True)
class ThreadFind:
    """ "Find in this thread" on an attempt's page, answered by the search index: the thread's messages whose
    searchable text (`message_text`: content, reasoning, tool calls) holds `q`, ignoring case as the search does, and
    the text around the first match of each. The thread's index rows are compared once (on PostgreSQL through the
    trigram index, on SQLite a scan of them, as the find through the message rows was); the rows found are kept,
    and the text around a match is read by their ids."""

    thread: StoredThread
    q: str

    @cached_property
    def _found(self) -> dict[int, list[int]]:
        """{message index: the ids of its index rows (pieces) that hold q}, in message order."""
        found: dict[int, list[int]] = {}
        rows = SearchText.objects.filter(
            attempt_id=self.thread.attempt_id,
            source=SearchSource.MESSAGE,
            thread=self.thread.number,
            text__contains_text=self.q,
        )
        for message, pk in rows.order_by("message", "piece").values_list("message", "id"):
            found.setdefault(message, []).append(pk)
        return found

    def messages(self) -> list[int]:
        """The indexes of the messages found, ascending."""
        return list(self._found)

    def snippets(self, messages: Iterable[int]) -> dict[int, list[tuple[str, bool]]]:
        """{message index: the text around its first match, cut into (part, is_match) segments} for those of
        `messages` the find found (one query, by id)."""
        firsts = {self._found[m][0]: m for m in messages if m in self._found}
        out: dict[int, list[tuple[str, bool]]] = {}
        for row in _snippet(SearchText.objects.filter(id__in=list(firsts)), "text", self.q, len(self.q)).values(
            "id", "piece", "snippet", "snippet_start", "full_length"
        ):
            snippet = row["snippet"] or ""
            cut_before = row["snippet_start"] > 1 or bool(row["piece"])
            cut_after = row["snippet_start"] - 1 + len(snippet) < row["full_length"]
            out[firsts[row["id"]]] = (
                ([("…", False)] if cut_before else [])
                + segments(snippet, [self.q])
                + ([("…", False)] if cut_after else [])
            )
        return out


def hit_url(benchmark: Benchmark, hit: SearchHit, *, item_id: int | None = None) -> str:
    """The page of the hit's attempt, at the hit where that page has anchors."""
    if benchmark.kind == BenchmarkKind.DIALOGUE:
        url = reverse("runs:dialogue-viewer", kwargs={"slug": benchmark.slug, "pk": hit.attempt_id})
        return url + (f"#turn-{hit.turn}" if hit.turn is not None else "")
    if benchmark.kind == BenchmarkKind.HIERARCHY:
        return reverse("runs:hierarchy-attempt", kwargs={"slug": benchmark.slug, "pk": hit.attempt_id})
    if benchmark.kind == BenchmarkKind.CHOICE:
        try:
            return reverse("runs:choice-task", kwargs={"slug": benchmark.slug, "external_id": hit.instance})
        except NoReverseMatch:  # an id the task page's URL cannot hold (a slash): the list of tasks
            return reverse("runs:choice-tasks", kwargs={"slug": benchmark.slug})
    url = reverse("runs:attempt", kwargs={"pk": hit.attempt_id})
    if hit.source == SearchSource.MESSAGE:
        return url + f"?thread={hit.thread}&at={hit.message}#m-{hit.thread}-{hit.message}"
    if hit.source == SearchSource.REASONING and item_id:
        return url + f"#item-{item_id}"
    return url
