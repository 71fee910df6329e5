"""A study's transcript-search corpus grown to a given size, fast (`manage.py benchmark --search-corpus-mb N`).

The search target is p95 < 300 ms over about 1 GB of trajectory text; importing that much through the
real ingest takes half an hour here (its trigram index dominates). This writes the same `SearchText` rows
the ingest would, in minutes:

* the text is generated agent transcripts (shell commands and their output, file reads and edits, test
  runs and tracebacks, git, the assistant's plans and reasoning), from word lists and made-up identifiers,
  paths, hashes and numbers, so the trigram index's posting lists look like those of real transcripts
  rather than of one repeated line;
* each attempt of the benchmark without a trajectory gets one (10% also a sub-agent's thread), of about
  the same size, in run order as one import per run would write them; its messages go through
  `runs.search.trajectory_rows`, the writer the ingest uses, so thread, message, piece and the facets
  (benchmark, run, model) are what the ingest would store;
* rows go in by COPY (`runs.bulk.bulk_insert_rows`); on PostgreSQL the trigram index is dropped first and
  built again after, in the same transaction (a built index is compact, one grown row by row as the ingest
  does a little larger), then the table is analysed;
* known needles are planted at known frequencies (NEEDLES) and every needle is counted in the rows
  written, so the figures say how many rows each measured query can find (`corpus_queries`).

The corpus lives in the search table only: no `Trajectory` rows (the trajectory store is measured by
`ifportal.benchmarks.long_trajectory`), so `manage.py search_rebuild` would remove it; the benchmark deletes the study.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db import connection, transaction

from runs import search
from runs.bulk import bulk_insert_rows
from runs.models import Attempt, Benchmark, Run, SearchSource, SearchText, Verdict, VerdictResult

#: planted in one short message of this share of the trajectories (the search box's example for checklist benchmarks)
FORCE_PUSH = "git push --force"
FORCE_PUSH_SHARE = 0.001
#: a token in exactly RARE_ROWS rows (short tool outputs of as many attempts)
RARE = "quokka_ledger_overflow"
RARE_ROWS = 5
#: a phrase in about this share of the messages (short outputs of their own)
MEDIUM = "connection reset by peer"
MEDIUM_SHARE = 0.01
#: a word the generated text holds in many rows (counted, not planted)
COMMON = "error"
#: two words, each common, in any order (counted: rows holding both)
WORDS = ("pytest", "assertionerror")
#: a phrase no generated row holds (every trigram of it looked up)
NOWHERE = "git push --mirror"
#: a phrase planted in the reasoning of RARE_ROWS verdicts, one of them failed
RARE_REASONING = "wombat_checksum_drift"
NEEDLES = (FORCE_PUSH, RARE, MEDIUM, COMMON, NOWHERE)
_BATCH = 5000

_NOUNS = (
    "parser config handler cache session request response token buffer queue worker scheduler index table row "
    "column schema migration fixture test module package function method class object instance record field "
    "value key path file directory branch commit diff patch build image container volume socket stream "
    "logger metric counter timeout retry limit offset cursor page batch chunk payload header cookie user "
    "account role permission policy rule check item report result summary score judge model run attempt "
    "trajectory message thread turn prompt template context window snippet query filter order group"
).split()
_VERBS = (
    "read open parse load save write update delete create rename move copy check validate compare merge "
    "split join sort filter map reduce fetch send handle raise catch retry skip cache flush reset restore "
    "refactor simplify extract inline document test run build install configure deploy revert rebase"
).split()
_ADJ = (
    "missing stale empty invalid duplicate nested optional default current previous next first last new old "
    "broken failing flaky slow fast large small partial full cached unused private public local remote"
).split()
_PARTS = (
    "get set is has load save parse build make run check find read write user item data config path name "
    "size count index cache key value list dict map node tree graph edge root child parent base meta info "
    "temp tmp old new raw clean safe fast slow max min total sum avg row col cell page view form field "
    "token auth session client server host port url uri json yaml csv sql orm db log err warn debug trace "
    "span event hook task job queue lock pool conn stream buf chunk line text word char byte bit flag mode "
    "state status result score judge model run step turn thread msg tool call args kwargs opts env"
).split()
_DIRS = (
    "src lib app core utils tests api web cli models views services workers scripts docs config migrations "
    "internal pkg cmd handlers adapters storage"
).split()
_EXTS = (".py", ".py", ".py", ".ts", ".js", ".go", ".rs", ".md", ".toml", ".yaml", ".json", ".sql", ".sh")
_ERRORS = (
    "ValueError KeyError TypeError AttributeError IndexError RuntimeError AssertionError ImportError "
    "FileNotFoundError PermissionError TimeoutError NotImplementedError ZeroDivisionError"
).split()
_PACKAGES = "requests numpy pandas django flask pydantic httpx click rich attrs pytest sqlalchemy redis celery".split()
_TOOLS = ("bash", "bash", "bash", "Read", "Edit", "Grep", "Write")


class _Text:
    """Generated transcript text, deterministic for a seed."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.steps = 0

    def pick(self, words):
        return words[int(self.rng.random() * len(words))]

    def ident(self) -> str:
        a, b, c = self.pick(_PARTS), self.pick(_PARTS), self.pick(_PARTS)
        r = self.rng.random()
        if r < 0.5:
            return f"{a}_{b}" if r < 0.35 else f"{a}_{b}_{c}"
        if r < 0.8:
            return f"{a}{b.capitalize()}{c.capitalize() if r < 0.6 else ''}"
        return f"{a.capitalize()}{b.capitalize()}"

    def path(self) -> str:
        depth = 1 + int(self.rng.random() * 3)
        return "/".join([self.pick(_DIRS) for _ in range(depth)] + [self.ident().lower() + self.pick(_EXTS)])

    def hexid(self, n: int = 7) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def num(self, top: int = 500) -> int:
        return int(self.rng.random() * top)

    def sentence(self) -> str:
        r = self.rng.random()
        n, v, a = self.pick(_NOUNS), self.pick(_VERBS), self.pick(_ADJ)
        if r < 0.2:
            return f"I need to {v} the {a} {n} in {self.path()} before the tests pass."
        if r < 0.4:
            return f"The {n} returned by `{self.ident()}()` is {a}, so {self.ident()} fails on line {self.num()}."
        if r < 0.55:
            return f"Let me {v} `{self.ident()}` and check whether the {n} is still {a}."
        if r < 0.7:
            return f"This looks like a {a} {n}: {self.pick(_ERRORS)} is raised when {self.ident()} is {self.num(64)}."
        if r < 0.85:
            return f"Next I will {v} the {n} of {self.ident()} and run the {a} tests again."
        return f"The user asked to {v} every {n}; {self.num(40)} of them are {a} after commit {self.hexid()}."

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def code(self, lines: int) -> str:
        out = []
        for _ in range(lines):
            r = self.rng.random()
            i = "    " * (1 + int(self.rng.random() * 2))
            if r < 0.2:
                out.append(f"{i}{self.ident()} = {self.ident()}({self.ident()}, {self.num()})")
            elif r < 0.35:
                out.append(f"def {self.ident().lower()}(self, {self.ident().lower()}, {self.ident().lower()}=None):")
            elif r < 0.5:
                out.append(f"{i}return {self.ident()}.{self.ident()}({self.ident()})")
            elif r < 0.6:
                out.append(f"{i}if {self.ident()} is None or len({self.ident()}) > {self.num(100)}:")
            elif r < 0.7:
                out.append(
                    f'{i}raise {self.pick(_ERRORS)}(f"{self.pick(_ADJ)} {self.pick(_NOUNS)}: {{{self.ident()}!r}}")'
                )
            elif r < 0.8:
                out.append(f"from {self.pick(_DIRS)}.{self.ident().lower()} import {self.ident()}")
            elif r < 0.9:
                out.append(f"{i}# {self.sentence()}")
            else:
                out.append(f"{i}for {self.pick(_PARTS)} in {self.ident()}[{self.num(10)}:]:")
        return "\n".join(out)

    def command(self) -> str:
        r = self.rng.random()
        if r < 0.15:
            return f"python -m pytest {self.pick(_DIRS)}/test_{self.ident().lower()}.py -x -q"
        if r < 0.3:
            return f"grep -rn '{self.ident()}' {self.pick(_DIRS)}/"
        if r < 0.4:
            return f"sed -n '{self.num()},{self.num() + 40}p' {self.path()}"
        if r < 0.5:
            return f"ls -la {self.pick(_DIRS)}/{self.pick(_DIRS)}"
        if r < 0.6:
            return f"git diff {self.path()}"
        if r < 0.67:
            return f'git commit -am "{self.pick(_VERBS).capitalize()} {self.pick(_ADJ)} {self.pick(_NOUNS)} in {self.ident()}"'
        if r < 0.72:
            return f"git checkout -b fix/{self.ident().lower().replace('_', '-')}"
        if r < 0.76:
            return f"git push origin fix/{self.ident().lower().replace('_', '-')}"
        if r < 0.82:
            return "git log --oneline -n 10"
        if r < 0.88:
            return f"pip install {self.pick(_PACKAGES)}=={self.num(5)}.{self.num(30)}.{self.num(10)}"
        if r < 0.94:
            return f"cat {self.path()}"
        return f"find . -name '*{self.pick(_EXTS)}' | xargs wc -l | sort -n | tail -{self.num(20) + 1}"

    def output(self, command: str) -> str:
        """What a tool answered: a test run, a listing, a log, a file, search results."""
        r = self.rng.random()
        if command.startswith("python -m pytest") or r < 0.15:
            lines = [
                f"{self.pick(_DIRS)}/test_{self.ident().lower()}.py::test_{self.ident().lower()} "
                f"{'PASSED' if self.rng.random() < 0.8 else 'FAILED'}"
                for _ in range(3 + self.num(25))
            ]
            if self.rng.random() < 0.5:
                lines += ["", "Traceback (most recent call last):"]
                for _ in range(2 + self.num(5)):
                    lines.append(f'  File "{self.path()}", line {self.num(900)}, in {self.ident().lower()}')
                    lines.append(f"    {self.code(1).strip()}")
                lines.append(f"AssertionError: assert {self.num(100)} == {self.num(100)}")
                lines.append(f"{self.num(40)} passed, {1 + self.num(5)} failed in {self.num(90)}.{self.num(99)}s")
            return "\n".join(lines)
        if command.startswith("git log") or r < 0.25:
            return "\n".join(
                f"{self.hexid()} {self.pick(_VERBS).capitalize()} {self.pick(_ADJ)} {self.pick(_NOUNS)} "
                f"({self.ident()})"
                for _ in range(5 + self.num(10))
            )
        if command.startswith("ls") or r < 0.35:
            return "\n".join(
                f"-rw-r--r-- 1 agent agent {self.num(90000):>6} Nov {1 + self.num(28):>2} "
                f"{self.num(24):02d}:{self.num(60):02d} {self.ident().lower()}{self.pick(_EXTS)}"
                for _ in range(4 + self.num(30))
            )
        if command.startswith("grep") or r < 0.5:
            return "\n".join(f"{self.path()}:{self.num(900)}:{self.code(1)}" for _ in range(2 + self.num(20)))
        if command.startswith("pip") or r < 0.55:
            package = (
                command.split()[-1]
                if command.startswith("pip")
                else f"{self.pick(_PACKAGES)}=={self.num(9)}.{self.num(30)}"
            )
            return (
                f"Collecting {package}\n  Downloading {package.replace('==', '-')}-py3-none-any.whl "
                f"({self.num(900)} kB)\nSuccessfully installed {package.replace('==', '-')}"
            )
        if r < 0.6:
            return f"{self.pick(_ERRORS)}: {self.sentence()}\nerror: command exited with status {1 + self.num(2)}"
        return "\n".join(f"{n + 1:>5}\t{line}" for n, line in enumerate(self.code(10 + self.num(80)).split("\n")))

    def turn(self) -> list[dict]:
        """One step of an agent: a message with a tool call, and the tool's answer."""
        tool = self.pick(_TOOLS)
        if tool == "bash":
            command = self.command()
            arguments: dict = {"command": command, "description": self.sentence()[:60]}
        elif tool == "Edit":
            command = ""
            arguments = {
                "file_path": self.path(),
                "old_string": self.code(2 + self.num(6)),
                "new_string": self.code(2 + self.num(8)),
            }
        elif tool == "Write":
            command = ""
            arguments = {"file_path": self.path(), "content": self.code(10 + self.num(40))}
        elif tool == "Grep":
            command = "grep"
            arguments = {"pattern": self.ident(), "path": self.pick(_DIRS)}
        else:
            command = ""
            arguments = {"file_path": self.path(), "offset": self.num(500), "limit": 200}
        assistant = {
            "role": "assistant",
            "content": self.paragraph(1 + self.num(2)),
            "reasoning": self.paragraph(self.num(4)),
            "tool_calls": [{"name": tool, "arguments": arguments}],
        }
        if tool == "Edit":
            answer = f"The file {arguments['file_path']} has been updated."
        elif tool == "Write":
            answer = f"File created successfully at: {arguments['file_path']}"
        else:
            answer = self.output(command)
        return [assistant, {"role": "tool", "tool_name": tool, "content": answer}]


@dataclass(frozen=True)
class _Plan:
    """Which attempts get the planted needles."""

    force_push: set[int]
    rare: set[int]


def _threads(text: _Text, chars: int, *, force_push: bool, rare: bool, sub_agent: bool) -> list[dict]:
    """One trajectory of about `chars` characters of text (its main thread, sometimes a sub-agent's)."""
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent working in a git repository."},
        {"role": "user", "content": f"Task: {text.sentence()} {text.sentence()}"},
    ]
    size = sum(len(m["content"]) for m in messages)
    plants = []
    if force_push:
        plants.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"name": "bash", "arguments": {"command": f"{FORCE_PUSH} origin fix/{text.ident().lower()}"}}
                ],
            }
        )
    if rare:
        plants.append(
            {
                "role": "tool",
                "tool_name": "bash",
                "content": f"RuntimeError: {RARE} in {text.ident()} (code {text.num(99)})",
            }
        )
    while size < chars:
        text.steps += 1
        if text.steps % round(1 / (2 * MEDIUM_SHARE)) == 0:  # a step is two messages
            step = [
                {
                    "role": "tool",
                    "tool_name": "bash",
                    "content": f"fatal: unable to access 'https://git.example.org/{text.ident().lower()}.git/': "
                    f"{MEDIUM}",
                }
            ]
        else:
            step = text.turn()
        if plants and text.rng.random() < 0.1:
            step = [plants.pop()] + step
        messages += step
        size += sum(len(search.message_text(m)) for m in step)
    messages += plants + [{"role": "assistant", "content": f"Done. {text.sentence()}"}]
    threads = [{"messages": messages}]
    if sub_agent:
        sub = [{"role": "user", "content": f"Sub-task: {text.sentence()}"}]
        for _ in range(1 + text.num(3)):
            sub += text.turn()
        threads.append({"meta": {"thread": "sub-agent 1"}, "messages": sub})
    return threads


def corpus_rows(
    benchmark: Benchmark, megabytes: float, *, seed: int = 17, counts: dict[str, int] | None = None
) -> Iterator[dict]:
    """SearchText rows (as the writer makes them) of generated trajectories for the benchmark's attempts that
    have none, about `megabytes` MB of text (2**20 characters) in all; `counts` is filled with the rows holding
    each needle (case-insensitive), the rows each planted needle went in (one each: the plants are short
    messages), the attempts and the characters written. Word lists and templates cannot make a needle by
    chance; the counts, taken on the rows themselves, would show it."""
    counts = {} if counts is None else counts
    counts.update(
        dict.fromkeys(NEEDLES, 0)
        | {" ".join(WORDS): 0, "attempts": 0, "rows": 0, "chars": 0, "planted " + FORCE_PUSH: 0, "planted " + RARE: 0}
    )
    with_text = SearchText.objects.filter(benchmark=benchmark, source=SearchSource.MESSAGE).values("attempt_id")
    attempts = list(
        Attempt.objects.filter(run__benchmark=benchmark)
        .exclude(id__in=with_text)
        .order_by("run_id", "id")
        .values_list("id", "run__benchmark_id", "run_id", "run__model_id")
    )
    if not attempts:
        return
    rng = random.Random(seed)
    ids = [a[0] for a in attempts]
    force_share = max(1, round(FORCE_PUSH_SHARE * len(ids)))
    plan = _Plan(
        force_push=set(rng.sample(ids, min(len(ids), force_share))), rare=set(rng.sample(ids, min(len(ids), RARE_ROWS)))
    )
    text = _Text(seed)
    remaining = int(megabytes * 2**20)
    for n, (attempt_id, benchmark_id, run_id, model_id) in enumerate(attempts):
        budget = remaining // (len(attempts) - n)
        if budget <= 0:
            break
        threads = _threads(
            text,
            int(budget * 0.93),
            force_push=attempt_id in plan.force_push,
            rare=attempt_id in plan.rare,
            sub_agent=n % 10 == 5,
        )
        counts["attempts"] += 1
        counts["planted " + FORCE_PUSH] += attempt_id in plan.force_push
        counts["planted " + RARE] += attempt_id in plan.rare
        for row in search.trajectory_rows(attempt_id, (benchmark_id, run_id, model_id), threads):
            low = row["text"].lower()
            for needle in NEEDLES:
                if needle in low:
                    counts[needle] += 1
            if all(w in low for w in WORDS):
                counts[" ".join(WORDS)] += 1
            counts["rows"] += 1
            counts["chars"] += len(row["text"])
            remaining -= len(row["text"])
            yield row


def _plant_reasoning(benchmark: Benchmark, seed: int) -> int:
    """Add RARE_REASONING to the reasoning of RARE_ROWS verdicts of the benchmark (one failed, when it has
    one): a rare phrase in a million verdicts' reasoning. The verdicts planted."""
    verdicts = Verdict.objects.filter(attempt__run__benchmark=benchmark).exclude(reasoning="")
    rng = random.Random(seed)
    last = verdicts.order_by("-id").values_list("id", flat=True).first()
    if last is None:
        return 0
    chosen = set()
    failed = verdicts.filter(result=VerdictResult.FAIL).order_by("-id").values_list("id", flat=True).first()
    if failed:
        chosen.add(failed)
    first = verdicts.order_by("id").values_list("id", flat=True).first()
    tries = 0
    while len(chosen) < RARE_ROWS and tries < 50 * RARE_ROWS:
        tries += 1
        pk = verdicts.filter(id__gte=rng.randint(first, last)).order_by("id").values_list("id", flat=True).first()
        if pk:
            chosen.add(pk)
    for pk in chosen:
        Verdict.objects.filter(id=pk).update(reasoning=f"The agent logged {RARE_REASONING} and went on.")
    return len(chosen)


def corpus_grow(slug: str, *, megabytes: float, seed: int = 17, say: Callable[[str], None] = lambda _: None) -> dict:
    """Grow the benchmark's search corpus by about `megabytes` MB of generated trajectories (see the module);
    the figures: text written, rows, needle counts, seconds (generation and COPY, index build, ANALYZE), and
    on PostgreSQL the table's and its indexes' sizes."""
    benchmark = Benchmark.objects.get(slug=slug)
    counts: dict[str, int] = {}
    out: dict = {"megabytes_asked": megabytes}
    postgres = connection.vendor == "postgresql"
    start = time.perf_counter()
    with transaction.atomic():
        indexes = []
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
                    [SearchText._meta.db_table, "%gin_trgm_ops%"],
                )
                indexes = cursor.fetchall()
                for name, _ in indexes:
                    cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")
        batch: list[dict] = []
        for row in corpus_rows(benchmark, megabytes, seed=seed, counts=counts):
            batch.append(row)
            if len(batch) >= _BATCH:
                bulk_insert_rows(SearchText, batch)
                batch = []
                if counts["rows"] % (40 * _BATCH) == 0:
                    say(
                        f"  search corpus: {counts['chars'] / 2**20:,.0f} MB in {counts['rows']:,} rows "
                        f"({time.perf_counter() - start:.0f} s)"
                    )
        bulk_insert_rows(SearchText, batch)
        search.benchmarks_mark_searchable([benchmark.id])
        out["reasoning_planted"] = _plant_reasoning(benchmark, seed)
        out["generate_and_copy_seconds"] = round(time.perf_counter() - start, 1)
        if postgres:
            index_start = time.perf_counter()
            with connection.cursor() as cursor:
                # the rows' deferred foreign key checks first: an index cannot be built with them pending
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
                for _, definition in indexes:
                    cursor.execute(definition)
            out["index_build_seconds"] = round(time.perf_counter() - index_start, 1)
            out["index_rebuilt"] = [name for name, _ in indexes]
    if postgres:
        analyze_start = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {SearchText._meta.db_table}")
            cursor.execute(f"ANALYZE {Verdict._meta.db_table}")
        out["analyze_seconds"] = round(time.perf_counter() - analyze_start, 1)
        out["sizes_mb"] = table_sizes()
    out["seconds"] = round(time.perf_counter() - start, 1)
    out |= {
        "text_mb": round(counts.get("chars", 0) / 2**20, 1),
        "rows": counts.get("rows", 0),
        "attempts": counts.get("attempts", 0),
        "needle_rows": {k: v for k, v in counts.items() if k not in ("rows", "chars", "attempts")},
    }
    return out


def table_sizes() -> dict:
    """MB on disk (PostgreSQL): the search table (with its TOAST), each of its indexes, the reasoning index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_table_size(%s::regclass)", [SearchText._meta.db_table])
        sizes = {"search_table": cursor.fetchone()[0]}
        cursor.execute(
            "SELECT indexname, pg_relation_size(indexname::regclass) FROM pg_indexes "
            "WHERE tablename IN (%s, %s) AND (tablename = %s OR indexname LIKE %s)",
            [SearchText._meta.db_table, Verdict._meta.db_table, SearchText._meta.db_table, "%reasoning%"],
        )
        sizes |= dict(cursor.fetchall())
    return {name: round(size / 2**20, 1) for name, size in sizes.items()}


def corpus_queries(slug: str) -> list[tuple[str, dict]]:
    """The searches measured on a grown corpus, as `ifportal.benchmarks.study.SEARCH_QUERIES`: rare, medium and
    common text, alone and behind filters ("failed items whose trajectory contains"), with the
    last run, model and judge (the rows the walk in id order reaches last)."""
    benchmark = Benchmark.objects.get(slug=slug)
    run = Run.objects.filter(benchmark=benchmark).order_by("-id").values_list("label", "model__name").first()
    judge = (
        Verdict.objects.filter(attempt__run__benchmark=benchmark)
        .order_by("-id")
        .values_list("judge__name", flat=True)
        .first()
    )
    label, model = run if run else ("", "")
    return [
        (f"corpus: rare token in {RARE_ROWS} rows", {"q": RARE}),
        (f"corpus: {FORCE_PUSH} ({FORCE_PUSH_SHARE:.1%} of trajectories)", {"q": FORCE_PUSH, "source": "message"}),
        (
            f"corpus: failed items whose trajectory contains {FORCE_PUSH}",
            {"q": FORCE_PUSH, "verdict": "fail", "source": "message"},
        ),
        (
            f"corpus: {FORCE_PUSH}, failed, one model and judge",
            {"q": FORCE_PUSH, "verdict": "fail", "model": model, "judge": judge or "", "source": "message"},
        ),
        (f"corpus: medium phrase ({MEDIUM_SHARE:.0%} of messages)", {"q": MEDIUM}),
        (f"corpus: common word ({COMMON})", {"q": COMMON}),
        ("corpus: common word in the last run", {"q": COMMON, "run": label, "source": "message"}),
        (
            "corpus: common word, failed items, the last model and judge",
            {"q": COMMON, "verdict": "fail", "model": model, "judge": judge or "", "source": "message"},
        ),
        ("corpus: every word, any order", {"q": " ".join(WORDS), "mode": "words"}),
        ("corpus: phrase found nowhere", {"q": NOWHERE}),
        (f"corpus: rare phrase in {RARE_ROWS} verdicts' reasoning", {"q": RARE_REASONING, "source": "reasoning"}),
        ("corpus: rare phrase in failed verdicts' reasoning", {"q": RARE_REASONING, "verdict": "fail"}),
    ]


def http_pages(slug: str) -> dict[str, tuple[str, dict, str]]:
    """The search page and API over HTTP on the grown corpus (`benchmark`'s `_http` pages)."""
    from urllib.parse import urlencode

    queries = dict(corpus_queries(slug))
    example = queries[f"corpus: failed items whose trajectory contains {FORCE_PUSH}"]
    common = queries["corpus: common word, failed items, the last model and judge"]
    return {
        f"search page (corpus: failed items whose trajectory contains {FORCE_PUSH})": (
            "runs:search",
            {"slug": slug},
            "?" + urlencode(example),
        ),
        "search API (corpus: common word, failed items, the last model and judge)": (
            "api:search",
            {},
            "?" + urlencode({"benchmark": slug, **common}),
        ),
        f"search API (corpus: rare token in {RARE_ROWS} rows)": (
            "api:search",
            {},
            "?" + urlencode({"benchmark": slug, "q": RARE}),
        ),
    }
