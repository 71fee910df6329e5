"""The long-trajectory measurement of `manage.py benchmark`.

One attempt whose main thread holds 30,000 messages and tool calls (about 100 MB by default),
written as an OctoBench merged trajectory and imported through `manage.py ingest` in a child
process (time and peak RSS, as the study's large trajectory file is measured); then a scores
file whose checks cite messages of it (evidence). Over HTTP (gunicorn, one sync worker, so one
process serves every request and its memory can be read): the attempt page as first opened
(time to first byte, complete, HTML size), jumps to a message by number (the "go to message"
control), by a judge's citation (the links the page renders) and by a search hit (the links
`runs.search.hit_url` gives the search page), "Find in this thread" (one message's path, and text
found nowhere), and the worker's resident memory before and after.
Every figure is printed next to its target.
"""

from __future__ import annotations

import html
import http.client
import json
import os
import random
import re
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.db import connection
from django.urls import reverse

from ifportal.benchmarks import browser
from ifportal.benchmarks import study as sb
from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Benchmark, Trajectory
from runs.search import SearchQuery, SearchTooSlow, hit_url, search

SLUG = "benchmark-long-trajectory"
SESSION = "long-0"
MODEL = "long-model"
#: the long trajectory's targets and the ingest's memory target (docs/performance.md)
TARGETS = {"import_peak_rss_mb": 400, "first_paint_ms": 1000, "jump_p95_ms": 300, "find_p95_ms": 300}
#: messages whose text the search jumps look for (each names its own file)
SEARCHED = 10
#: text no message of the long trajectory holds
NOWHERE = "git push --mirror"


def long_trajectory_write(path: Path, *, messages: int, megabytes: int, seed: int = 5) -> dict:
    """An OctoBench merged trajectory of one session: a system and a user message, then assistant
    turns each calling Read on its own file and the tool's result, `messages` in all, about
    `megabytes`. Returns {"bytes", "messages"}."""
    rng = random.Random(seed)
    pool = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz     \n") for _ in range(1 << 20))
    pairs = max(1, (messages - 2) // 2)
    per_result = max(1, min(len(pool) // 2, (megabytes * 2**20) // pairs - 260))
    out = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."}]
    for k in range(pairs):
        start = rng.randrange(0, len(pool) - per_result)
        out.append(
            {
                "role": "assistant",
                "content": f"Step {k}: reading /app/mod{k}/file.py",
                "tool_calls": [{"id": f"c{k}", "name": "Read", "arguments": {"file_path": f"/app/mod{k}/file.py"}}],
            }
        )
        out.append(
            {"role": "tool", "tool_call_id": f"c{k}", "tool_name": "Read", "content": pool[start : start + per_result]}
        )
    line = (
        json.dumps({"meta": {"session_id": SESSION, "model": MODEL}, "tools": [{"name": "Read"}], "messages": out})
        + "\n"
    )
    path.write_text(line, encoding="utf-8")
    return {"bytes": len(line), "messages": len(out)}


def find_texts(messages: int, count: int, *, seed: int = 17) -> list[str]:
    """What "Find in this thread" looks for: the path one assistant message reads (`long_trajectory_write`), and
    every fifth time text found nowhere (the whole thread read for nothing)."""
    rng = random.Random(seed)
    return [
        NOWHERE if n % 5 == 4 else f"/app/mod{rng.randrange(max(1, (messages - 2) // 2))}/file.py" for n in range(count)
    ]


def _instance_write(path: Path) -> None:
    checks = [{"check_id": f"C-{n}", "description": f"rule {n}", "check_type": "compliance"} for n in range(20)]
    path.write_text(
        json.dumps(
            {
                "instance_id": SESSION,
                "user_query": ["Fix the bug."],
                "system_prompt": "",
                "category": "Skill.md",
                "scaffold": "claudecode",
                "checklist": {"SP": {"description": "", "checks": checks}},
            }
        )
        + "\n",
        encoding="utf-8",
    )


def _scores_write(path: Path, cited: list[int]) -> None:
    """One judge's verdicts on the attempt, each failed check citing one message."""
    checks = [
        {"check_id": f"C-{n}", "result": "fail", "reasoning": f"see message {m}", "evidence": m}
        for n, m in enumerate(cited)
    ]
    path.write_text(
        json.dumps({"results": [{"instance_id": SESSION, "eval_result": {"SP": {"checks": checks}}}]}), encoding="utf-8"
    )


def _timed_get(url: str, cookie: str) -> dict:
    """One GET: milliseconds to the first byte of the response and to its end, status and body size."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    start = time.perf_counter()
    conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers={"Cookie": cookie})
    response = conn.getresponse()
    response.fp.peek(1)
    first = time.perf_counter()
    body = response.read()
    end = time.perf_counter()
    conn.close()
    return {
        "ttfb_ms": 1000 * (first - start),
        "ms": 1000 * (end - start),
        "status": response.status,
        "bytes": len(body),
        "body": body,
    }


def _series(urls: list[str], cookie: str) -> dict:
    """Median and p95 (ms, to the end of the response) over GETs of `urls`, after one untimed warm-up."""
    _timed_get(urls[0], cookie)
    got = [_timed_get(url, cookie) for url in urls]
    samples = sorted(g["ms"] for g in got)
    return {
        "requests": len(samples),
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))], 1),
        "statuses": sorted({g["status"] for g in got}),
        "largest_bytes": max(g["bytes"] for g in got),
    }


def _rss_kb(pid: int) -> dict:
    """VmRSS and VmHWM (kB) of a live process."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1])
    return out


def long_trajectory_figures(
    *,
    messages: int = 30_000,
    megabytes: int = 100,
    requests: int = 20,
    port: int | None = None,
    http: bool = True,
    keep: bool = False,
    say: Callable[[str], None] = print,
    chromium_samples: int = 0,
) -> dict:
    """Import one attempt of `messages` messages (about `megabytes`) and, with `http`, read it over
    HTTP as a reviewer does, and open its page `chromium_samples` times in Chromium (0: not); every
    figure with its target. Removes what it stored unless `keep`."""
    if Benchmark.objects.filter(slug=SLUG).exists():
        raise RuntimeError(f"benchmark '{SLUG}' exists from an earlier run: delete it (or use another database)")
    root = sb.tmpdir()
    figures: dict = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    try:
        path = root / "long-trajectory.jsonl"
        written = long_trajectory_write(path, messages=messages, megabytes=megabytes)
        _instance_write(root / "instance.jsonl")
        ingest("octobench-instances", [Source.of(root / "instance.jsonl")], Options(benchmark=SLUG))
        seconds, rss, status, out = sb.peak_rss_of_command(
            sb.manage_py(
                "ingest", "octobench-trajectories", str(path), "--benchmark", SLUG, "--model", MODEL, "--no-progress"
            ),
            {**os.environ},
        )
        if status != 0:
            raise RuntimeError(f"ingest of the long trajectory failed:\n{out[-2000:]}")
        figures["import"] = {
            "file_mb": round(written["bytes"] / 2**20, 1),
            "messages": written["messages"],
            "seconds": round(seconds, 1),
            "peak_rss_mb": round(rss / 2**20, 1),
            "target_peak_rss_mb": TARGETS["import_peak_rss_mb"],
        }
        say(
            f"long trajectory: {written['messages']:,} messages, {written['bytes'] / 2**20:.0f} MB imported in {seconds:.1f} s, "
            f"peak RSS {rss / 2**20:.0f} MB (target < {TARGETS['import_peak_rss_mb']} MB)"
        )
        rng = random.Random(11)
        cited = sorted(rng.sample(range(written["messages"]), 20))
        _scores_write(root / "scores.json", cited)
        ingest(
            "octobench-scores",
            [Source.of(root / "scores.json")],
            Options(benchmark=SLUG, model=MODEL, judge="long-judge"),
        )
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # what this attempt's rows take as stored (TOAST-compressed values included; indexes not)
                cursor.execute(
                    "SELECT sum(pg_column_size(m.*)) FROM runs_trajectorymessage m JOIN runs_attempt a "
                    "ON a.id = m.attempt_id JOIN runs_run r ON r.id = a.run_id JOIN runs_benchmark b "
                    "ON b.id = r.benchmark_id WHERE b.slug = %s",
                    [SLUG],
                )
                figures["message_rows_mb"] = round((cursor.fetchone()[0] or 0) / 2**20, 1)
        if http:
            figures["http"] = _http_figures(
                messages=written["messages"], requests=requests, port=port, say=say, chromium_samples=chromium_samples
            )
    finally:
        if not keep:
            Benchmark.objects.filter(slug=SLUG).delete()
        shutil.rmtree(root, ignore_errors=True)
    figures["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return figures


def _http_figures(
    *, messages: int, requests: int, port: int | None, say: Callable[[str], None], chromium_samples: int
) -> dict:
    from django.contrib.auth import get_user_model

    attempt = Attempt.objects.get(run__benchmark__slug=SLUG)
    trajectory = Trajectory.objects.get(attempt=attempt)
    user, _ = get_user_model().objects.get_or_create(username="benchmark-reader")
    cookie = sb.session_cookie_for(user.username)
    page = reverse("runs:attempt", args=[attempt.id])
    rng = random.Random(13)
    out: dict = {"attempt_messages": trajectory.message_count, "trajectory_mb": round(trajectory.size_bytes / 2**20, 1)}
    with sb.WebServer(workers=1, port=port) as server:
        worker, boot_ms = server.worker_pids[0], server.boot_ms[0]
        first = [_timed_get(server.url(page), cookie)]
        before = _rss_kb(worker)  # after the first request: the application, its templates and connection loaded
        first += [_timed_get(server.url(page), cookie) for _ in range(requests)]
        body = first[0]["body"].decode()
        # the first request a booted worker serves is the first paint a visitor gets after a deploy (a graceful
        # reload sends nobody to a worker still booting); then warm ones
        warm = sorted(g["ms"] for g in first[1:])
        out["first_paint"] = {
            "worker_boot_ms": round(boot_ms),
            "cold_ttfb_ms": round(first[0]["ttfb_ms"], 1),
            "cold_ms": round(first[0]["ms"], 1),
            "median_ttfb_ms": round(statistics.median(sorted(g["ttfb_ms"] for g in first[1:])), 1),
            "median_ms": round(statistics.median(warm), 1),
            "p95_ms": round(warm[min(len(warm) - 1, int(round(0.95 * (len(warm) - 1))))], 1),
            "html_bytes": first[0]["bytes"],
            "target_ms": TARGETS["first_paint_ms"],
        }
        say(
            f"long trajectory, attempt page first paint: the worker booted in {boot_ms:.0f} ms (imports, ifportal.warmup); "
            f"its first request {first[0]['ms']:.0f} ms (first byte "
            f"{first[0]['ttfb_ms']:.0f} ms), then median {out['first_paint']['median_ms']:.0f} / p95 "
            f"{out['first_paint']['p95_ms']:.0f} ms, {first[0]['bytes'] / 1024:.0f} kB of HTML (target < {TARGETS['first_paint_ms']} ms)"
        )
        by_number = [server.url(f"{page}?thread=0&at={rng.randrange(messages)}") for _ in range(requests)]
        citations = [
            server.url(page + html.unescape(href))
            for href in re.findall(r'href="(\?thread=\d+&amp;at=\d+)#m-[^"]*">long-judge cites', body)
        ]
        benchmark = Benchmark.objects.get(slug=SLUG)
        searched, too_slow = [], 0
        for k in rng.sample(range((messages - 2) // 2), SEARCHED):
            try:
                searched += search(benchmark, SearchQuery(text=f"/app/mod{k}/file.py")).hits[:1]
            except SearchTooSlow:  # what a user is told; the other figures still count
                too_slow += 1
        if too_slow:
            out["searches_too_slow"] = too_slow
            say(
                f"long trajectory: {too_slow} of {SEARCHED} searches for one message's path took longer than "
                f"{settings.IFPORTAL_SEARCH_TIMEOUT_MS} ms and were refused (SearchTooSlow)"
            )
        hits = [server.url(hit_url(benchmark, hit)) for hit in searched]
        found = [server.url(f"{page}?{urlencode({'thread': 0, 'q': text})}") for text in find_texts(messages, requests)]
        for label, urls, target in (
            ("jump by number", by_number, "jump_p95_ms"),
            ("jump by citation", citations, "jump_p95_ms"),
            ("jump by search hit", hits, "jump_p95_ms"),
            ("find in thread", found, "find_p95_ms"),
        ):
            if not urls:
                out[label] = "not measured: no such links"
                say(f"long trajectory, {label}: {out[label]}")
                continue
            out[label] = _series(urls, cookie) | {
                "target_p95_ms": TARGETS[target],
                "example": urlsplit(urls[0]).path + "?" + urlsplit(urls[0]).query,
            }
            say(
                f"long trajectory, {label}: median {out[label]['median_ms']:.0f} / p95 {out[label]['p95_ms']:.0f} ms over "
                f"{len(urls)} requests (target p95 < {TARGETS[target]} ms)"
            )
        after = _rss_kb(worker)
        if chromium_samples:  # after the worker's memory is read: its figures stay those of the HTTP requests
            out["chromium"] = browser.chromium_figures(
                server.url(""), cookie, {"long trajectory, attempt page": page}, samples=chromium_samples
            )
            for line in browser.chromium_lines(out["chromium"]):
                say(line)
    out["web_worker_memory"] = {
        "rss_after_first_request_mb": round(before["VmRSS"] / 1024, 1),
        "rss_after_mb": round(after["VmRSS"] / 1024, 1),
        "growth_mb": round((after["VmRSS"] - before["VmRSS"]) / 1024, 1),
        "peak_mb": round(after["VmHWM"] / 1024, 1),
    }
    say(
        f"long trajectory, web worker memory: {out['web_worker_memory']['rss_after_first_request_mb']:.0f} MB after the first request, "
        f"{out['web_worker_memory']['rss_after_mb']:.0f} MB after (peak {out['web_worker_memory']['peak_mb']:.0f} MB) for a "
        f"{out['trajectory_mb']:.0f} MB trajectory (target: bounded, not growing with the trajectory)"
    )
    return out
