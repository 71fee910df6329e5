"""The speed and memory benchmark behind `python manage.py benchmark`.

It writes a synthetic OctoBench-shaped study in the real source formats, ingests it
through the real ingest path, and measures what docs/performance.md targets: ingest throughput
next to raw COPY of the same rows, peak memory while ingesting a large trajectory
file, page and API latency over HTTP (gunicorn, 2 workers, loopback), the same
leaderboard computed the notebook way (pandas over the source files), and requests
per second for the leaderboard under concurrent clients. Every request loop is
bounded in count and time and talks only to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import psycopg
import redis
from django.conf import settings
from django.db import connection
from psycopg import sql

CATEGORIES = ["SP", "System reminder", "User query", "Agents.md", "Skill.md", "Memory", "Tool schema"]
CHECK_TYPES = ["compliance", "implementation", "understanding", "testing", "configuration", "modification"]


@dataclass
class StudySize:
    """How big a generated study is; the default is a full OctoBench-size study."""

    instances: int = 217
    items_per_instance: int = 33
    models: int = 8
    repetitions: int = 3
    judges: int = 3
    #: every instance's checklist items together, where instances differ in length (real instances); else
    #: instances x items_per_instance
    items: int | None = None

    @property
    def verdicts(self) -> int:
        items = self.items if self.items is not None else self.instances * self.items_per_instance
        return items * self.models * self.repetitions * self.judges


@dataclass
class StudyFiles:
    root: Path
    instances: Path
    #: the results folder in mini-vela's layout: <results>/<model>/rep<N>/scores_<judge>.json
    results: Path
    scores: list[tuple[str, str, int, Path]] = field(default_factory=list)  # (model, judge, repetition, path)
    instance_ids: list[str] = field(default_factory=list)


#: the shortest and longest judge reasoning drawn from a real item's text (`study_write` with `real_instances`)
REASONING_CHARS = (60, 200)


def real_study_size(real_instances: Path, size: StudySize) -> StudySize:
    """`size` with the instance and item counts of a real OctoBench instances file."""
    instances = items = 0
    with open(real_instances, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                instances += 1
                items += sum(len(part.get("checks", [])) for part in record["checklist"].values())
    return StudySize(instances, round(items / max(1, instances)), size.models, size.repetitions, size.judges, items)


def _real_checklists(real_instances: Path, out) -> tuple[list[tuple[str, list[tuple[str, str]]]], dict]:
    """Copy a real instances file to `out`; each instance's (category, check id) keys, and per key the text its
    judges' reasoning is drawn from: the item's description, then its category's (their own words and language)."""
    checklists, texts = [], {}
    with open(real_instances, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            keys = []
            for category, part in record["checklist"].items():
                for check in part.get("checks", []):
                    keys.append((category, check["check_id"]))
                    text = " ".join(
                        t for t in (check.get("description"), part.get("description")) if isinstance(t, str)
                    )
                    texts[(record["instance_id"], check["check_id"])] = " ".join(text.split()) or check["check_id"]
            checklists.append((record["instance_id"], keys))
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return checklists, texts


def _drawn_reasoning(rng: random.Random, text: str) -> str:
    """A window of REASONING_CHARS characters of `text` (all of it when shorter), at a random place."""
    length = rng.randint(*REASONING_CHARS)
    if len(text) <= length:
        return text
    start = rng.randrange(len(text) - length + 1)
    return text[start : start + length]


def study_write(size: StudySize, root: Path, *, seed: int = 7, real_instances: Path | None = None) -> StudyFiles:
    """Write instances JSONL and a results folder as the harness leaves it: one scores JSON per
    (model, repetition, judge), at results/model-<m>/rep<r>/scores_judge-<j>.json (the layout
    `manage.py ingest octobench-scores results/` reads model, repetition and judge from).

    With `real_instances` (an OctoBench instances JSONL, e.g. ../shared/data/octobench/instances.jsonl) the
    study is built on those instances and their checklists (size's instance and item counts are ignored), and
    every verdict's reasoning is a window of 60-200 characters of its item's own description and its category's,
    in their language (largely Chinese for OctoBench): text whose trigrams differ verdict to verdict, as a real
    judge's do. Otherwise instances are generated and reasoning is one of two English sentences."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    files = StudyFiles(root=root, instances=root / "instances.jsonl", results=root / "results")
    checklists: list[tuple[str, list[tuple[str, str]]]] = []
    texts: dict[tuple[str, str], str] | None = None
    if real_instances is not None:
        with open(files.instances, "w", encoding="utf-8") as out:
            checklists, texts = _real_checklists(real_instances, out)
    else:
        checklists = _generated_checklists(size, files.instances)
    files.instance_ids = [iid for iid, _ in checklists]
    for m in range(size.models):
        skill = 0.80 + 0.15 * m / max(1, size.models - 1)
        for r in range(1, size.repetitions + 1):
            truth = {(iid, cid): rng.random() < skill for iid, keys in checklists for _, cid in keys}
            folder = files.results / f"model-{m}" / f"rep{r}"
            folder.mkdir(parents=True, exist_ok=True)
            for j in range(size.judges):
                path = folder / f"scores_judge-{j}.json"
                results = []
                for iid, keys in checklists:
                    eval_result: dict[str, dict] = {}
                    for category, cid in keys:
                        passed = truth[(iid, cid)] if rng.random() > 0.07 else not truth[(iid, cid)]
                        eval_result.setdefault(category, {"checks": []})["checks"].append(
                            {
                                "check_id": cid,
                                "result": "success" if passed else "fail",
                                "reasoning": _drawn_reasoning(rng, texts[(iid, cid)])
                                if texts is not None
                                else "The assistant did what the rule asks."
                                if passed
                                else "The rule was broken in turn 3.",
                            }
                        )
                    results.append({"instance_id": iid, "eval_result": eval_result})
                path.write_text(json.dumps({"results": results}, ensure_ascii=False), encoding="utf-8")
                files.scores.append((f"model-{m}", f"judge-{j}", r, path))
    return files


def _generated_checklists(size: StudySize, path: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """Write `size.instances` generated instances of `size.items_per_instance` items to `path`; their keys."""
    checklists: list[tuple[str, list[tuple[str, str]]]] = []
    with open(path, "w", encoding="utf-8") as out:
        for i in range(size.instances):
            instance_id = f"bench-{i:05d}"
            checklist: dict[str, dict] = {}
            keys = []
            for k in range(size.items_per_instance):
                category = CATEGORIES[k % len(CATEGORIES)]
                check_id = f"{category.replace(' ', '')}_{k:03d}"
                checklist.setdefault(category, {"description": f"{category} constraints", "checks": []})[
                    "checks"
                ].append(
                    {
                        "check_id": check_id,
                        "description": f"Check {k} of {instance_id}: the assistant respects rule {k}.",
                        "check_type": CHECK_TYPES[k % len(CHECK_TYPES)],
                    }
                )
                keys.append((category, check_id))
            record = {
                "instance_id": instance_id,
                "user_query": [f"Task {i}: fix the failing test in module {i % 17}."],
                "system_prompt": "You are a coding agent.",
                "category": ["SP", "Skill", "Claude.md", "AGENTS.md"][i % 4],
                "scaffold": {"name": ["claudecode", "kilo-dev", "droid"][i % 3], "version": "1.0"},
                "checklist": checklist,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            checklists.append((instance_id, keys))
    return checklists


def trajectory_write(path: Path, *, instance_ids: list[str], megabytes: int, seed: int = 3) -> int:
    """A merged-trajectory JSONL of about `megabytes`, one session per instance, long tool outputs."""
    rng = random.Random(seed)
    target = megabytes * 1024 * 1024
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        n = 0
        while written < target:
            session = instance_ids[n % len(instance_ids)] if n < len(instance_ids) else None
            if session is None:
                break
            messages = [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "Fix the bug."},
            ]
            per_session = max(1, target // max(1, len(instance_ids)))
            size = 0
            turn = 0
            while size < per_session:
                output = "".join(rng.choice("abcdefghij \n") for _ in range(2000)) * 20
                messages.append(
                    {
                        "role": "assistant",
                        "content": f"Step {turn}",
                        "reasoning_content": "Thinking about the file.",
                        "tool_calls": [{"name": "Read", "arguments": {"file_path": f"/app/f{turn}.py"}}],
                    }
                )
                messages.append({"role": "tool", "tool_name": "Read", "content": output})
                size += len(output) + 200
                turn += 1
            messages.append({"role": "assistant", "content": "Done."})
            line = (
                json.dumps(
                    {
                        "meta": {"session_id": session, "model": "model-0"},
                        "tools": [{"name": "Read"}],
                        "messages": messages,
                    }
                )
                + "\n"
            )
            out.write(line)
            written += len(line)
            n += 1
    return written


# measurements -------------------------------------------------------------------------------
def broker_flush(url: str) -> None:
    """Empty the Redis database behind a Celery broker URL (the tasks no worker took)."""
    redis.Redis.from_url(url).flushdb()


def writes_settled() -> None:
    """Before a timed import or COPY: the database's dirty pages written out (CHECKPOINT, PostgreSQL) and then the
    machine's (`os.sync`), so the timing starts with no write of an earlier step still pending. Right after the
    study's 560 MB of files were written, the scores command took 84.5 s against 77.4-78.9 s once they were on disk
    (the kernel wrote them out while the import waited on its own writes); a user's results folder was written long
    before the import, and each figure is compared with the COPY baselines, which are measured settled too."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    os.sync()


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def copy_throughput(rows: list[tuple]) -> dict[str, float] | None:
    """Rows per second for COPY of verdict-shaped rows (PostgreSQL only), three ways:

    `temp_table`: into a temporary table without indexes (no WAL, nothing to maintain), the
    raw rate of the wire protocol; `verdict_like`: into a logged table made LIKE the verdict
    table (its unique constraint and b-tree indexes, no foreign keys), committed; `verdict_table`: the
    same plus the verdict table's foreign keys to attempt, item and judge (deferred, as Django
    makes them), committed: what storing these rows in the verdict table costs, the fastest any
    ingest of them can be, "COPY-fk". The search's trigram index is left out of both: what it costs is part
    of what the ingest is measured against this baseline for (docs/performance.md, "Ingest").
    """
    from django.db import transaction

    if connection.vendor != "postgresql":
        return None
    from runs.models import Verdict

    table = Verdict._meta.db_table
    columns = "attempt_id, item_id, judge_id, result, reasoning, score, evidence"
    out = {}
    writes_settled()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE bench_copy (attempt_id bigint, item_id bigint, judge_id bigint, result varchar(4), "
            "reasoning text, score double precision, evidence jsonb)"
        )
        out["temp_table"] = _copy_rate(cursor, "bench_copy", columns, rows)
        cursor.execute("DROP TABLE bench_copy")
    for name, keys in (("verdict_like", False), ("verdict_table", True)):
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE bench_copy_like (LIKE {table} INCLUDING ALL)")
            cursor.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'bench_copy_like' AND indexdef NOT LIKE '%%btree%%'"
            )
            for (index,) in cursor.fetchall():
                cursor.execute(f'DROP INDEX "{index}"')
            if keys:
                for f in ("attempt", "item", "judge"):
                    field = Verdict._meta.get_field(f)
                    cursor.execute(
                        f"ALTER TABLE bench_copy_like ADD FOREIGN KEY ({field.column}) REFERENCES "
                        f"{field.related_model._meta.db_table} (id) DEFERRABLE INITIALLY DEFERRED"
                    )
        try:
            writes_settled()
            start = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                _copy_rate(cursor, "bench_copy_like", columns, rows)
            out[name] = len(rows) / (time.perf_counter() - start)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("DROP TABLE bench_copy_like")
    return out


def _copy_rate(cursor, table: str, columns: str, rows: list[tuple]) -> float:
    start = time.perf_counter()
    with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    return len(rows) / (time.perf_counter() - start)


def manage_py(*args: str) -> list[str]:
    """The argv of `python manage.py ARGS...` in this project, as a user runs it."""
    return [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *args]


def peak_rss_of_command(args: list[str], env: dict[str, str]) -> tuple[float, int, int, str]:
    """(seconds, peak RSS in bytes, exit status, output) of one child process.

    The peak is the child's own VmHWM from /proc, sampled until it exits: rusage's maxrss
    of a child also counts the parent's pages it had between fork and exec, so a parent
    holding a large study would be charged to the ingest.
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as output:
        proc = subprocess.Popen(args, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
        status_file = Path(f"/proc/{proc.pid}/status")
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _vm_hwm(status_file))
            time.sleep(0.02)
        output.seek(0)
        out = output.read()
    return time.perf_counter() - start, peak, proc.returncode, out


def _vm_hwm(status_file: Path) -> int:
    """Peak resident set size (bytes) of a live process since its exec; 0 if unreadable."""
    try:
        for line in status_file.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def notebook_leaderboard(files: StudyFiles) -> dict[str, tuple[float, float]]:
    """ISR and CSR per model (mean over judges) the way a notebook would: pandas over the raw files."""
    import pandas as pd

    frames = []
    for model, judge, repetition, path in files.scores:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = [
            (model, judge, repetition, r["instance_id"], c["result"] == "success")
            for r in data["results"]
            for group in r["eval_result"].values()
            for c in group["checks"]
        ]
        frames.append(pd.DataFrame(rows, columns=["model", "judge", "rep", "instance", "passed"]))
    df = pd.concat(frames)
    per_attempt = df.groupby(["model", "judge", "rep", "instance"])["passed"].agg(["sum", "count"]).reset_index()
    per_attempt["success"] = per_attempt["sum"] == per_attempt["count"]
    per_judge = per_attempt.groupby(["model", "judge"]).agg(
        isr=("success", "mean"), passed=("sum", "sum"), n=("count", "sum")
    )
    per_judge["csr"] = per_judge["passed"] / per_judge["n"]
    out = per_judge.groupby("model")[["isr", "csr"]].mean()
    return {m: (100 * r.isr, 100 * r.csr) for m, r in out.iterrows()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebServer:
    """gunicorn with N workers (and the threads of gunicorn.conf.py) on loopback, for as long as the `with` block lasts."""

    def __init__(self, workers: int = 2, port: int | None = None):
        self.port = port or free_port()
        self.workers = workers
        self.proc: subprocess.Popen | None = None
        #: the workers' pids and how long each took to boot (`workers_ready_ms`), once the `with` block is entered
        self.worker_pids: list[int] = []
        self.boot_ms: list[float] = []

    def __enter__(self) -> WebServer:
        env = {**os.environ, "DEBUG": "0"}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "ifportal.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--config",
                str(Path(settings.BASE_DIR) / "gunicorn.conf.py"),  # threads per worker: see that file
                "--workers",
                str(self.workers),
                "--log-level",
                "warning",
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("gunicorn did not start within 30 s")
        # the master listens before its workers have booted; a request timed meanwhile shares the machine with a
        # booting worker (a warm leaderboard's p95 read 21-23 ms so, 4-13 ms once the workers were ready)
        while len(self.worker_pids) < self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn forked {len(self.worker_pids)} of {self.workers} workers within 30 s")
            time.sleep(0.1)
            self.worker_pids = child_pids(self.proc.pid)
        self.boot_ms = workers_ready_ms(self.worker_pids)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by gunicorn's master and its workers."""
        if not self.proc:
            return 0.0
        return sum(process_cpu_seconds(pid) or 0.0 for pid in [self.proc.pid, *child_pids(self.proc.pid)])


def workers_ready_ms(pids: list[int], *, settle: float = 0.25, timeout: float = 60) -> list[float]:
    """Milliseconds until each freshly forked worker is idle (its CPU time unchanged over two `settle` periods):
    it has imported and warmed the application and waits for requests. No request is sent, so the first one
    each worker serves afterwards is still its first."""
    start = time.monotonic()
    last = dict.fromkeys(pids, -1.0)
    still = dict.fromkeys(pids, 0)
    ready: dict[int, float] = {}
    while time.monotonic() - start < timeout:
        for pid in pids:
            if pid in ready:
                continue
            cpu = process_cpu_seconds(pid)
            still[pid] = still[pid] + 1 if cpu == last[pid] else 0
            last[pid] = cpu
            if still[pid] == 2:
                ready[pid] = 1000 * (time.monotonic() - start - 2 * settle)
        if len(ready) == len(pids):
            return [ready[pid] for pid in pids]
        time.sleep(settle)
    raise RuntimeError(f"gunicorn workers {sorted(set(pids) - set(ready))} did not settle within {timeout:.0f} s")


def child_pids(parent: int) -> list[int]:
    """The processes of this machine whose parent is `parent` (gunicorn's workers of its master)."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == parent]


def _ppid(proc_dir: Path) -> int | None:
    try:
        return int(_stat_fields(proc_dir / "stat")[1])
    except (OSError, ValueError, IndexError):
        return None


def _stat_fields(path: Path) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces): state, ppid, ..."""
    text = path.read_text()
    return text[text.rindex(")") + 2 :].split()


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process of this machine has used so far; None when it cannot be read
    (gone, or in another process namespace)."""
    try:
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, ValueError, IndexError):
        return None


def session_cookie_for(username: str) -> str:
    """A session cookie for `username`, made directly (no login round trip)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model, load_backend
    from django.contrib.sessions.backends.db import SessionStore

    user = get_user_model().objects.get(username=username)
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    # the first backend that loads session users, as Django's test client picks it (axes' only checks sign-ins)
    store[BACKEND_SESSION_KEY] = next(
        path for path in settings.AUTHENTICATION_BACKENDS if hasattr(load_backend(path), "get_user")
    )
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}"


def fetch(url: str, cookie: str, timeout: float = 30) -> tuple[int, int]:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, len(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, 0


def latency(
    url: str, cookie: str, *, requests: int = 20, before: Callable[[], object] | None = None
) -> dict[str, float]:
    """Median and p95 in milliseconds over `requests` sequential GETs (after one warm-up);
    `before` runs ahead of each request, untimed (e.g. a data change that empties the cache)."""
    status, size = fetch(url, cookie)
    samples = []
    for _ in range(requests):
        if before:
            before()
        start = time.perf_counter()
        status, size = fetch(url, cookie)
        samples.append(1000 * (time.perf_counter() - start))
    samples.sort()
    return {
        "status": status,
        "bytes": size,
        "median_ms": statistics.median(samples),
        "p95_ms": samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))],
    }


def throughput(url: str, cookie: str, *, clients: int = 32, seconds: float = 10.0) -> dict[str, float]:
    """Requests per second with `clients` threads hammering `url` for `seconds` (bounded)."""
    stop = time.monotonic() + seconds
    counts = [0] * clients
    errors = [0] * clients
    took: list[list[float]] = [[] for _ in range(clients)]

    def worker(k: int) -> None:
        while time.monotonic() < stop:
            start = time.perf_counter()
            status, _ = fetch(url, cookie, timeout=seconds + 5)
            took[k].append(1000 * (time.perf_counter() - start))
            if status == 200:
                counts[k] += 1
            else:
                errors[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    start, cpu = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    samples = sorted(ms for per_client in took for ms in per_client)
    return {
        "client": "python threads",
        "clients": clients,
        "seconds": elapsed,
        "requests": sum(counts),
        "errors": sum(errors),
        "rps": sum(counts) / elapsed,
        "latency_p50": round(statistics.median(samples), 1) if samples else None,
        "latency_p95": round(samples[int(round(0.95 * (len(samples) - 1)))], 1) if samples else None,
        "client_cpu_cores": round((time.process_time() - cpu) / elapsed, 2),
    }


def wrk_throughput(url: str, cookie: str, *, clients: int = 32, seconds: float = 10.0, threads: int = 2) -> dict | None:
    """Requests per second measured by wrk (a C load generator, far lighter than Python threads), with
    its own CPU use in cores; None when wrk is not installed (Debian: apt-get install wrk)."""
    exe = shutil.which("wrk")
    if exe is None:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [
            exe,
            "-t",
            str(threads),
            "-c",
            str(clients),
            "-d",
            f"{max(1, round(seconds))}s",
            "--latency",
            "-H",
            f"Cookie: {cookie}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = done.stdout

    def number(pattern: str) -> float:
        found = re.search(pattern, out)
        return float(found.group(1)) if found else 0.0

    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out)) + int(
        number(r"Non-2xx or 3xx responses: (\d+)")
    )
    return {
        "client": f"wrk -t{threads} -c{clients}",
        "clients": clients,
        "seconds": number(r"requests in ([\d.]+)s"),
        "requests": int(number(r"(\d+) requests in")),
        "errors": errors,
        "rps": number(r"Requests/sec:\s+([\d.]+)"),
        "latency_p50": _wrk_ms(out, "50%"),
        "latency_p90": _wrk_ms(out, "90%"),
        "latency_p99": _wrk_ms(out, "99%"),
        "client_cpu_cores": round((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / elapsed, 2),
    }


def _wrk_ms(out: str, label: str) -> float | None:
    found = re.search(rf"^\s*{re.escape(label)}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    if not found:
        return None
    return round(float(found.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)], 2)


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="ifportal-bench-"))


#: transcript searches measured (runs.search), as (label, request parameters): a rare phrase, one in every
#: assistant message, reasoning of failed verdicts, "failed items whose trajectory contains" (the search box's
#: example), a phrase found nowhere (every trigram looked up), a words search and one model's reasoning
SEARCH_QUERIES = [
    ("rare phrase in trajectories", {"q": "/app/f7.py"}),
    ("phrase in every assistant message", {"q": "Thinking about the file"}),
    ("reasoning of failed verdicts", {"q": "broken in turn 3", "verdict": "fail"}),
    ("failed attempts whose trajectory contains", {"q": "/app/f3.py", "verdict": "fail", "source": "message"}),
    ("phrase found nowhere", {"q": "git push --mirror"}),
    ("every word, any order", {"q": "rule broken", "mode": "words"}),
    ("one model's reasoning", {"q": "what the rule asks", "model": "model-1"}),
]


def real_search_queries(real_instances: Path) -> list[tuple[str, dict]]:
    """Searches of the judge reasoning of a study built on real instances (`study_write` with `real_instances`),
    in the instances' own words: a rare phrase (eight characters of one item's description, so found in the
    reasoning of a few verdicts), a common word, both narrowed, a phrase found nowhere and a words search."""
    descriptions = []
    with open(real_instances, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                for part in json.loads(line)["checklist"].values():
                    descriptions += [
                        c["description"] for c in part.get("checks", []) if isinstance(c.get("description"), str)
                    ]
    runs = [m.group(0) for d in descriptions for m in re.finditer(r"[^\x00-\x7f]{8,}", d)]
    rare = runs[len(runs) // 2][:8] if runs else "the rule"
    words = re.findall(r"[^\x00-\x7f\s，。、：；（）]{3}", " ".join(descriptions))
    common = max(set(words), key=words.count) if words else "check"
    return [
        ("rare phrase in judge reasoning", {"q": rare, "source": "reasoning"}),
        ("common word in judge reasoning", {"q": common, "source": "reasoning"}),
        ("common word in failed verdicts' reasoning", {"q": common, "verdict": "fail", "source": "reasoning"}),
        ("rare phrase in one model's reasoning", {"q": rare, "model": "model-1", "source": "reasoning"}),
        ("phrase found nowhere in reasoning", {"q": "从未出现过的一句话", "source": "reasoning"}),
        ("every word, any order, in reasoning", {"q": f"assistant {common}", "mode": "words", "source": "reasoning"}),
    ]


def search_latency(slug: str, *, repeats: int = 20, queries: list[tuple[str, dict]] | None = None) -> dict:
    """Median and p95 of the search selector (the page's and the API's database work) per query of
    `queries` (default SEARCH_QUERIES), after one warm-up each, with the size of what was searched."""
    from django.db.models import Sum
    from django.db.models.functions import Length

    from runs.models import Benchmark, SearchText
    from runs.search import SearchTooSlow, search, search_query_of

    benchmark = Benchmark.objects.get(slug=slug)
    texts = SearchText.objects.filter(benchmark=benchmark)
    out: dict = {
        "search_rows": texts.count(),
        "search_text_mb": round((texts.aggregate(n=Sum(Length("text")))["n"] or 0) / 2**20, 1),
    }
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN "
                "('runs_searchtext', 'search_text_trgm', 'runs_reasoningtext', 'reasoning_text_trgm')"
            )
            out["sizes_mb"] = {name: round(size / 2**20, 1) for name, size in cursor.fetchall()}
    everything = []
    for label, params in SEARCH_QUERIES if queries is None else queries:
        query = search_query_of({k: [v] for k, v in params.items()})
        samples, hits = [], None
        for n in range(repeats + 1):
            start = time.perf_counter()
            try:
                hits = len(search(benchmark, query).hits)
            except SearchTooSlow:
                hits = "timed out"
            if n:
                samples.append(1000 * (time.perf_counter() - start))
        samples.sort()
        everything += samples
        out[label] = {
            "params": params,
            "hits_on_first_page": hits,
            "median_ms": round(statistics.median(samples), 1),
            "p95_ms": round(samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))], 1),
        }
    everything.sort()
    out["all_queries"] = {
        "p95_ms": round(everything[int(round(0.95 * (len(everything) - 1)))], 1),
        "target_p95_ms_at_1M_verdicts_1GB_text": 300,
    }
    return out


# the 10M study: ingest in batches, database size --------------------------------------------
def ingest_in_batches(
    results: Path,
    slug: str,
    *,
    per_model: int,
    per_batch: int,
    say: Callable[[str], None] = lambda _: None,
    after_first: Callable[[], object] | None = None,
) -> dict:
    """The results folder ingested in batches of about `per_batch` verdicts (whole model folders of
    `per_model` verdicts each, planned as `manage.py ingest octobench-scores results/` plans them), one
    transaction each, in model order.

    Each batch's verdicts/s is measured with the database as full as the batches before left it: the
    first batch is the rate into an empty benchmark, the last the rate at the study's full size, which
    is what "ingest not slower at 10M than at 1M" compares."""
    from runs.ingest import Options, ingest_units
    from runs.ingest.layout import entries_of, plan_import
    from runs.models import Verdict

    entries, _ = entries_of([results], "octobench-scores")
    by_model: dict[str, list] = {}
    for entry in entries:
        by_model.setdefault(entry.relative.parts[0], []).append(entry)
    models = sorted(by_model, key=lambda m: (len(m), m))  # model-2 before model-10
    step = max(1, -(-per_batch // per_model))
    batches, total = [], 0
    for first in range(0, len(models), step):
        chosen = models[first : first + step]
        batch = [entry for model in chosen for entry in by_model[model]]
        before, start = _ingest_costs(), time.perf_counter()
        ingest_units("octobench-scores", plan_import("octobench-scores", batch, Options(benchmark=slug)))
        seconds = time.perf_counter() - start
        costs = {
            name: round(value - before[name], 3) if value is not None and before[name] is not None else None
            for name, value in _ingest_costs().items()
        }
        verdicts = per_model * len(chosen)
        batches.append(
            {
                "models": len(chosen),
                "files": len(batch),
                "verdicts": verdicts,
                "seconds": seconds,
                "verdicts_in_benchmark_before": total,
                "load_average": round(os.getloadavg()[0], 2),
                **costs,
            }
        )
        total += verdicts
        spent = ", ".join(f"{label} {costs[name]:,}" for name, label in _COST_LABELS.items() if costs[name] is not None)
        say(
            f"  batch {len(batches)}: {verdicts:,} verdicts in {seconds:.1f} s = {verdicts / seconds:,.0f} verdicts/s "
            f"(benchmark now {total:,}; load {os.getloadavg()[0]:.1f}; {spent})"
        )
        if after_first and len(batches) == 1:
            after_first()
    stored = Verdict.objects.filter(attempt__run__benchmark__slug=slug).count()
    seconds = sum(b["seconds"] for b in batches)
    return {
        "verdicts": stored,
        "files": len(entries),
        "seconds": round(seconds, 1),
        "verdicts_per_second": round(stored / seconds),
        "first_batch": _batch_figures(batches[0]),
        "last_batch": _batch_figures(batches[-1]),
        "batches": [_batch_figures(b) for b in batches],
        "includes": "parse, validate, upsert, rollups; in this process, one transaction per batch",
    }


# the same batch into the study at two sizes, back to back ------------------------------------------
def batch_write(size: StudySize, root: Path, *, first_model: int, models: int = 10, seed: int = 11) -> Path:
    """The score files of `models` new models for the study of `size` (its instances and checklists), as
    results/model-<first_model>... : the batch `ingest_pairs` ingests. Returns the results folder."""
    files = study_write(
        StudySize(size.instances, size.items_per_instance, models, size.repetitions, size.judges),
        root / "generated",
        seed=seed,
    )
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    for m in range(models):
        shutil.move(str(files.results / f"model-{m}"), str(results / f"model-{first_model + m}"))
    shutil.rmtree(root / "generated")
    return results


def _maintenance(statement: sql.Composable) -> None:
    """One statement on the server's `postgres` database, outside a transaction (CREATE and DROP DATABASE)."""
    db = connection.settings_dict
    with psycopg.connect(
        dbname="postgres",
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        autocommit=True,
    ) as conn:
        conn.execute(statement)


def database_copy(source: str, target: str) -> float:
    """`target` made anew as a copy of `source` (CREATE DATABASE ... TEMPLATE, which needs nobody connected to
    `source`: this process's own connection is closed first); the seconds it took."""
    start = time.perf_counter()
    database_drop(target)  # closes this process's connection too
    _maintenance(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(target), sql.Identifier(source)))
    return time.perf_counter() - start


def database_url(name: str) -> str:
    """The DATABASE_URL by which a child process reaches database `name` on this process's server, as this
    process's user."""
    db = connection.settings_dict
    user = quote(db["USER"] or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{user}{password}{'@' if user else ''}{host}{port}/{quote(name, safe='')}"


def database_drop(name: str) -> None:
    connection.close()
    _maintenance(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@contextmanager
def database_used(name: str) -> Iterator[None]:
    """This process's default connection pointed at database `name` for the block, then back."""
    connection.close()
    before = connection.settings_dict["NAME"]
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = before


def ingest_pairs(
    batch: Path,
    slug: str,
    *,
    small: str,
    big: str,
    pairs: int,
    per_model: int,
    say: Callable[[str], None] = lambda _: None,
) -> dict:
    """The same batch ingested into fresh copies of database `small` (the study after its first batch) and `big`
    (the whole study), each copy after a CHECKPOINT, pair after pair in the order small, big, big, small, ...:
    a machine that speeds up or slows down during the series favours neither size. "not slower at 10M than
    at 1M" read on identical work, each pair's big rate against its small one."""
    copy_name = f"{big}_pair"
    measured: list[dict] = []
    try:
        for k in range(pairs):
            pair = {}
            for which in ("small", "big") if k % 2 == 0 else ("big", "small"):
                copy_seconds = database_copy(small if which == "small" else big, copy_name)
                with database_used(copy_name):
                    with connection.cursor() as cursor:
                        cursor.execute("CHECKPOINT")
                    out = ingest_in_batches(batch, slug, per_model=per_model, per_batch=sys.maxsize)  # one transaction
                [measured_batch] = out["batches"]
                pair[which] = {
                    **measured_batch,
                    "verdicts_in_benchmark_before": out["verdicts"] - measured_batch["verdicts"],
                    "copy_seconds": round(copy_seconds, 1),
                }
                database_drop(copy_name)
            pair["big_against_small"] = round(
                pair["big"]["verdicts_per_second"] / pair["small"]["verdicts_per_second"] - 1, 4
            )
            measured.append(pair)
            say(
                f"  pair {k + 1}: the same {pair['small']['verdicts']:,} verdicts into the study at "
                f"{pair['small']['verdicts_in_benchmark_before']:,} verdicts {pair['small']['verdicts_per_second']:,} "
                f"verdicts/s (load {pair['small']['load_average']:.1f}), at {pair['big']['verdicts_in_benchmark_before']:,} "
                f"{pair['big']['verdicts_per_second']:,} verdicts/s (load {pair['big']['load_average']:.1f}): "
                f"{100 * pair['big_against_small']:+.1f}%"
            )
    finally:
        database_drop(copy_name)
    return {
        "pairs": measured,
        "order": "small, big, then big, small, ...",
        "big_against_small": [p["big_against_small"] for p in measured],
    }


#: where a batch's time went, as `_ingest_costs` names it: the reason a batch is slower than another
_COST_LABELS = {
    "python_cpu_seconds": "Python CPU s",
    "database_cpu_seconds": "database CPU s",
    "checkpoints": "checkpoints",
    "wal_mb": "WAL MB",
}


def _ingest_costs() -> dict[str, float | None]:
    """Running totals: this process's CPU seconds; on PostgreSQL, its backend's CPU seconds (when the server
    runs on this machine, read from /proc), the server's checkpoints and the WAL written (MB, by any session). None where
    not known."""
    costs: dict[str, float | None] = {
        "python_cpu_seconds": time.process_time(),
        "database_cpu_seconds": None,
        "checkpoints": None,
        "wal_mb": None,
    }
    if connection.vendor != "postgresql":
        return costs
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_backend_pid(), (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter), "
            "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
        )
        pid, checkpoints, wal_bytes = cursor.fetchone()
    # None for another machine's server, or one in another process namespace
    return costs | {
        "checkpoints": checkpoints,
        "wal_mb": float(wal_bytes) / 2**20,
        "database_cpu_seconds": process_cpu_seconds(pid),
    }


def _batch_figures(batch: dict) -> dict:
    return {
        **batch,
        "seconds": round(batch["seconds"], 1),
        "verdicts_per_second": round(batch["verdicts"] / batch["seconds"]),
    }


def database_size(verdicts: int) -> dict:
    """The database's size on disk, and that of the verdict and rollup tables (with their indexes and TOAST),
    per million verdicts of the study (PostgreSQL only; other benchmarks in the database count in the total)."""
    from runs.models import AttemptRollup, GroupRollup, Verdict

    if connection.vendor != "postgresql" or not verdicts:
        return {}
    tables = {
        "verdicts": Verdict._meta.db_table,
        "attempt_rollups": AttemptRollup._meta.db_table,
        "group_rollups": GroupRollup._meta.db_table,
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        total = cursor.fetchone()[0]
        sizes = {}
        for name, table in tables.items():
            cursor.execute("SELECT pg_total_relation_size(%s::regclass)", [table])
            sizes[name] = cursor.fetchone()[0]
    per_million = 1e6 / verdicts
    return {
        "database_mb": round(total / 2**20),
        "database_mb_per_million_verdicts": round(total / 2**20 * per_million, 1),
        **{f"{name}_mb_per_million_verdicts": round(size / 2**20 * per_million, 1) for name, size in sizes.items()},
    }
