"""python manage.py benchmark: measure ingest, memory, page latency and throughput on a generated study."""

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from django.core.cache import cache
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.db.models import F
from django.urls import NoReverseMatch, reverse

from ifportal.benchmarks import browser, long_trajectory, search_corpus
from ifportal.benchmarks import study as sb
from runs import background
from runs.cache_warming import after_write
from runs.ingest import Options, Source, ingest, ingest_units
from runs.ingest.layout import entries_of, plan_import
from runs.models import Benchmark, Run, Trajectory, Verdict
from runs.search_index import reasoning_index_catch_up, reasoning_pending
from runs.services import benchmarks_generation_bump

SLUG = "benchmark-study"
#: the Celery broker the CLI's imports hand their search step to (no worker listens; emptied afterwards)
CLI_BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/6")


class Command(BaseCommand):
    help = (
        "Generate a study of a given size and print ingest throughput (vs raw COPY), peak memory, page latency and RPS."
    )

    def add_arguments(self, parser):
        parser.add_argument("--instances", type=int, default=217)
        parser.add_argument("--items", type=int, default=33, help="checklist items per instance")
        parser.add_argument("--models", type=int, default=8)
        parser.add_argument("--repetitions", type=int, default=3)
        parser.add_argument("--judges", type=int, default=3)
        parser.add_argument("--trajectory-mb", type=int, default=200, help="size of the large trajectory file")
        parser.add_argument("--requests", type=int, default=20, help="requests per latency measurement")
        parser.add_argument("--clients", type=int, default=32)
        parser.add_argument("--load-seconds", type=float, default=10.0)
        parser.add_argument("--port", type=int, help="loopback port of the measured web server (default: any free one)")
        parser.add_argument("--skip-http", action="store_true")
        parser.add_argument(
            "--skip-chromium",
            action="store_true",
            help="do not open the pages in headless Chromium (ifportal.benchmarks.browser) after timing them over HTTP",
        )
        parser.add_argument(
            "--chromium-samples",
            type=int,
            default=5,
            help="times each page is opened in Chromium, each in a new context (a cold browser cache)",
        )
        parser.add_argument(
            "--real-instances",
            metavar="JSONL",
            help="build the study on these OctoBench instances (e.g. ../shared/data/octobench/instances.jsonl): "
            "their checklists, and judge reasoning drawn from their own text and language; --instances and --items "
            "are ignored",
        )
        parser.add_argument("--json", help="also write the figures to this file")
        parser.add_argument("--keep", action="store_true", help="keep the generated benchmark in the database")
        parser.add_argument(
            "--http-only",
            action="store_true",
            help="only measure the pages and APIs, on a study kept by an earlier --keep run",
        )
        parser.add_argument(
            "--long-trajectory-messages",
            type=int,
            default=30_000,
            help="messages of the one-attempt long trajectory (ifportal.benchmarks.long_trajectory)",
        )
        parser.add_argument("--long-trajectory-mb", type=int, default=100, help="its size")
        parser.add_argument("--skip-long-trajectory", action="store_true")
        parser.add_argument("--long-trajectory-only", action="store_true", help="measure only the long trajectory")
        self._add_scale_arguments(parser)

    @staticmethod
    def _add_scale_arguments(parser) -> None:
        """Options of the 10M study: batched ingest, a COPY sample, no second ingest through the CLI."""
        parser.add_argument(
            "--ingest-batch-verdicts",
            type=int,
            default=0,
            help="ingest the results folder in batches of about this many verdicts (whole model "
            "folders, one transaction each) and print the first and last batch's rate side by "
            "side; 0: one transaction, as `manage.py ingest` does",
        )
        parser.add_argument(
            "--ingest-pairs",
            type=int,
            default=0,
            help="with --ingest-batch-verdicts, on PostgreSQL: at the end, ingest one batch of ten new "
            "models into copies of the study after its first batch and of the whole study, this many "
            "pairs, alternating the order (ifportal.benchmarks.study.ingest_pairs); the database is "
            "copied (CREATE DATABASE ... TEMPLATE), and the cache cleared afterwards",
        )
        parser.add_argument(
            "--copy-rows",
            type=int,
            default=0,
            help="measure the COPY baselines on the first this many verdicts (0: all of them)",
        )
        parser.add_argument(
            "--skip-cli", action="store_true", help="do not load the study a second time through `manage.py ingest`"
        )
        parser.add_argument(
            "--search-corpus-mb",
            type=float,
            default=0,
            help="grow the study's search corpus by about this many MB of generated trajectories "
            "(ifportal.benchmarks.search_corpus: COPY, then the trigram index built) and measure its searches too",
        )

    def handle(self, *args, **o):
        if connection.vendor != "postgresql":
            self.stderr.write(
                "note: not on PostgreSQL (set DATABASE_URL); COPY throughput and the import through the CLI are skipped and "
                "figures are not the target ones"
            )
        if o["long_trajectory_only"]:
            figures = {"database": connection.vendor, "long_trajectory": self._long_trajectory(o)}
            if o["json"]:
                Path(o["json"]).write_text(json.dumps(figures, indent=2))
            self.stdout.write(json.dumps(figures, indent=2))
            return
        if o["http_only"]:
            if not Benchmark.objects.filter(slug=SLUG).exists():
                raise CommandError(f"--http-only needs the benchmark '{SLUG}' of an earlier run with --keep")
            figures = {
                "database": connection.vendor,
                "verdicts": Verdict.objects.filter(attempt__run__benchmark__slug=SLUG).count(),
                "http": self._http(o),
            }
            if o["json"]:
                Path(o["json"]).write_text(json.dumps(figures, indent=2))
            self.stdout.write(json.dumps(figures, indent=2))
            return
        if o["ingest_pairs"] and (connection.vendor != "postgresql" or not o["ingest_batch_verdicts"]):
            raise CommandError("--ingest-pairs needs PostgreSQL and --ingest-batch-verdicts")
        if Benchmark.objects.filter(slug=SLUG).exists():
            raise CommandError(f"benchmark '{SLUG}' exists from an earlier run: delete it (or use another database)")
        size = sb.StudySize(o["instances"], o["items"], o["models"], o["repetitions"], o["judges"])
        real = Path(o["real_instances"]) if o["real_instances"] else None
        if real is not None:
            size = sb.real_study_size(real, size)
        root = sb.tmpdir()
        figures: dict = {
            "size": size.__dict__ | {"verdicts": size.verdicts},
            "database": connection.vendor,
            "text": f"judge reasoning drawn from the items of {real.name}" if real else "generated English sentences",
        }
        self._say(f"generating a study of {size.verdicts:,} verdicts in {root} ({figures['text']})")
        seconds, files = sb.timed(lambda: sb.study_write(size, root, real_instances=real))
        figures["generate_seconds"] = round(seconds, 2)
        cli_wanted = not o["skip_cli"] and connection.vendor == "postgresql"
        figures["ingest_cli"] = self._cli_ingest(files) if cli_wanted else None

        sb.writes_settled()
        seconds, _ = sb.timed(
            lambda: ingest("octobench-instances", [Source.of(files.instances)], Options(benchmark=SLUG))
        )
        figures["ingest_instances_seconds"] = round(seconds, 2)
        if o["ingest_batch_verdicts"]:
            figures["ingest"] = self._ingest_batched(
                files, size, o["ingest_batch_verdicts"], snapshot=bool(o["ingest_pairs"])
            )
            stored, ingest_seconds = figures["ingest"]["verdicts"], figures["ingest"]["seconds"]
        else:
            # in process: the results folder planned as the command plans it, ingested in one transaction
            sb.writes_settled()
            start = time.perf_counter()
            entries, _ = entries_of([files.results], "octobench-scores")
            with background.apart():
                ingest_units("octobench-scores", plan_import("octobench-scores", entries, Options(benchmark=SLUG)))
            ingest_seconds = time.perf_counter() - start
            stored = Verdict.objects.filter(attempt__run__benchmark__slug=SLUG).count()
            figures["ingest"] = {
                "verdicts": stored,
                "files": len(entries),
                "seconds": round(ingest_seconds, 2),
                "verdicts_per_second": round(stored / ingest_seconds),
                "includes": "parse, validate, upsert, rollups; in this process, one transaction",
            }
            self._say(
                f"ingest in process: {stored:,} verdicts from {len(entries)} files in {ingest_seconds:.1f} s "
                f"= {stored / ingest_seconds:,.0f} verdicts/s"
            )

        figures["reasoning_index"] = self._reasoning_index(stored, ingest_seconds)
        if connection.vendor == "postgresql":
            # what autovacuum does some time after a bulk load; done now so page figures do not
            # depend on its timing (stale statistics after a million-row load mislead the planner)
            seconds, _ = sb.timed(lambda: connection.cursor().execute("VACUUM ANALYZE"))
            figures["vacuum_analyze_seconds"] = round(seconds, 1)
            figures["database_size"] = size_figures = sb.database_size(stored)
            self._say(
                f"database size: {size_figures['database_mb']:,} MB, {size_figures['database_mb_per_million_verdicts']} MB "
                f"per million verdicts (verdicts {size_figures['verdicts_mb_per_million_verdicts']} MB, attempt rollups "
                f"{size_figures['attempt_rollups_mb_per_million_verdicts']} MB, group rollups "
                f"{size_figures['group_rollups_mb_per_million_verdicts']} MB per million)"
            )
        rows = [
            (a, i, j, r, t, s, json.dumps(e) if e is not None else None)
            for a, i, j, r, t, s, e in Verdict.objects.filter(attempt__run__benchmark__slug=SLUG)
            .values_list("attempt_id", "item_id", "judge_id", "result", "reasoning", "score", "evidence")
            .order_by()[: o["copy_rows"] or None]
            .iterator(chunk_size=20000)
        ]
        copy = sb.copy_throughput(rows)
        del rows
        if copy:
            rate = stored / ingest_seconds
            figures["copy_rows_per_second"] = round(copy["temp_table"])
            figures["copy_into_verdict_like_table_rows_per_second"] = round(copy["verdict_like"])
            figures["copy_into_verdict_table_rows_per_second"] = round(copy["verdict_table"])
            for name, key in (
                ("", "temp_table"),
                ("_into_verdict_like_table", "verdict_like"),
                ("_into_verdict_table", "verdict_table"),
            ):
                figures[f"ingest_share_of_copy{name}"] = round(rate / copy[key], 4)
            self._say(
                f"raw COPY of the same rows: {copy['temp_table']:,.0f} rows/s into a temporary table without "
                f"indexes (ingest is {100 * rate / copy['temp_table']:.1f}% of it); {copy['verdict_like']:,.0f} rows/s "
                f"into a logged table with the verdict table's indexes ({100 * rate / copy['verdict_like']:.1f}%); "
                f"{copy['verdict_table']:,.0f} rows/s into one with its indexes and foreign keys, that is into the "
                f"verdict table ({100 * rate / copy['verdict_table']:.1f}%)"
            )

        cli = figures.get("ingest_cli")
        if copy and cli:
            baseline = copy["verdict_table"]
            folder = cli["scores_command_verdicts_per_second"]
            figures["ingest_folder_share_of_copy_into_verdict_table"] = round(folder / baseline, 4)
            figures["ingest_cli_share_of_copy_into_verdict_table"] = round(cli["verdicts_per_second"] / baseline, 4)
            self._say(
                f"the results folder through the CLI as a user runs it (`manage.py ingest octobench-scores FOLDER`, "
                f"start-up included): {folder:,.0f} verdicts/s = {folder / baseline:.2f}x the COPY rate into a table "
                f"with the verdict table's indexes and foreign keys ({baseline:,.0f} rows/s); with the instances "
                f"file's command before it {cli['verdicts_per_second']:,.0f} verdicts/s = "
                f"{cli['verdicts_per_second'] / baseline:.2f}x; in process {rate:,.0f} verdicts/s = {rate / baseline:.2f}x"
            )

        seconds, notebook = sb.timed(lambda: sb.notebook_leaderboard(files))
        figures["notebook_leaderboard_seconds"] = round(seconds, 3)
        self._say(f"notebook way (pandas over the source files): {seconds:.2f} s")

        big = root / "trajectory-large.jsonl"
        ids = files.instance_ids[:20]
        nbytes = sb.trajectory_write(big, instance_ids=ids, megabytes=o["trajectory_mb"])
        env = {**os.environ}
        seconds, rss, status, out = sb.peak_rss_of_command(
            [
                sys.executable,
                "manage.py",
                "ingest",
                "octobench-trajectories",
                str(big),
                "--benchmark",
                SLUG,
                "--model",
                "model-0",
                "--run",
                "model-0-r1",
                "--no-progress",
            ],
            env,
        )
        if status != 0:
            raise CommandError(f"ingest of the large trajectory failed:\n{out}")
        figures["large_trajectory"] = {
            "file_mb": round(nbytes / 2**20, 1),
            "seconds": round(seconds, 1),
            "peak_rss_mb": round(rss / 2**20, 1),
        }
        self._say(
            f"large trajectory: {nbytes / 2**20:.0f} MB ingested in {seconds:.1f} s, peak RSS {rss / 2**20:.0f} MB"
        )
        five = root / "trajectory-5mb.jsonl"
        sb.trajectory_write(five, instance_ids=[ids[0]], megabytes=5)
        ingest("octobench-trajectories", [Source.of(five)], Options(benchmark=SLUG, model="model-1", run="model-1-r1"))
        if o["search_corpus_mb"]:
            figures["search_corpus"] = self._search_corpus(o["search_corpus_mb"])
        if connection.vendor == "postgresql":
            connection.cursor().execute("ANALYZE runs_searchtext")
        queries = (
            sb.SEARCH_QUERIES
            + (sb.real_search_queries(real) if real else [])
            + (search_corpus.corpus_queries(SLUG) if o["search_corpus_mb"] else [])
        )
        figures["search"] = sb.search_latency(SLUG, repeats=o["requests"], queries=queries)
        self._say(
            f"search: {figures['search']['search_text_mb']} MB of trajectory and response text in "
            f"{figures['search']['search_rows']:,} rows; p95 over {len(queries)} queries "
            f"{figures['search']['all_queries']['p95_ms']:.0f} ms (target 300 ms at 1M verdicts and 1 GB)"
        )
        for label, _ in queries:
            found = figures["search"][label]
            self._say(
                f"  {label}: median {found['median_ms']:.0f} ms, p95 {found['p95_ms']:.0f} ms (target 300 ms), "
                f"{found['hits_on_first_page']} hits on the first page"
            )

        if not o["skip_http"]:
            figures["http"] = self._http(o)
        if not o["skip_long_trajectory"]:
            figures["long_trajectory"] = self._long_trajectory(o)
        if o["ingest_pairs"]:
            figures["ingest_pairs"] = self._ingest_pairs(size, root, o["ingest_pairs"])
        if o["json"]:
            Path(o["json"]).write_text(json.dumps(figures, indent=2))
        if not o["keep"]:
            Benchmark.objects.filter(slug=SLUG).delete()
        shutil.rmtree(
            root, ignore_errors=True
        )  # the generated files (about 300 MB at 1M verdicts); the database keeps what --keep keeps
        self.stdout.write(json.dumps(figures, indent=2))

    def _search_corpus(self, megabytes: float) -> dict:
        """The study's search corpus grown to about 1 GB, for the search target, without a half-hour import."""
        self._say(
            f"growing the search corpus by {megabytes:,.0f} MB of generated trajectories (ifportal.benchmarks.search_corpus)"
        )
        out = search_corpus.corpus_grow(SLUG, megabytes=megabytes, say=self._say)
        self._say(
            f"search corpus: {out['text_mb']:,} MB of text in {out['rows']:,} rows over {out['attempts']:,} "
            f"attempts in {out['seconds']:.0f} s (generate and COPY {out['generate_and_copy_seconds']:.0f} s, "
            f"trigram index {out.get('index_build_seconds', 0):.0f} s); sizes {out.get('sizes_mb', {})}; "
            f"rows per needle {out['needle_rows']}"
        )
        return out

    def _long_trajectory(self, o) -> dict:
        """One attempt of tens of thousands of messages, imported and read (ifportal.benchmarks.long_trajectory)."""
        return long_trajectory.long_trajectory_figures(
            messages=o["long_trajectory_messages"],
            megabytes=o["long_trajectory_mb"],
            requests=o["requests"],
            port=o["port"],
            http=not o["skip_http"],
            keep=o["keep"],
            say=self._say,
            chromium_samples=0 if o["skip_chromium"] else o["chromium_samples"],
        )

    def _ingest_batched(
        self, files: sb.StudyFiles, size: sb.StudySize, per_batch: int, *, snapshot: bool = False
    ) -> dict:
        """The results folder in batches of about `per_batch` verdicts: the first batch's rate (into an empty
        benchmark) and the last one's (at the study's full size) side by side. With `snapshot`, the database
        is copied after the first batch (`_first_batch_database`) for `_ingest_pairs`."""
        per_model = size.verdicts // size.models
        self._say(f"ingest in process, in batches of about {per_batch:,} verdicts (whole models of {per_model:,}):")
        with background.apart():  # the reasoning copy and the item health fit are timed apart (_reasoning_index)
            out = sb.ingest_in_batches(
                files.results,
                SLUG,
                per_model=per_model,
                per_batch=per_batch,
                say=self._say,
                after_first=self._first_batch_snapshot if snapshot else None,
            )
        first, last = out["first_batch"], out["last_batch"]
        self._say(
            f"ingest in process: {out['verdicts']:,} verdicts in {out['seconds']:.1f} s = {out['verdicts_per_second']:,} "
            f"verdicts/s; first batch (0 -> {first['verdicts']:,}) {first['verdicts_per_second']:,} verdicts/s, last "
            f"batch ({last['verdicts_in_benchmark_before']:,} -> {out['verdicts']:,}) {last['verdicts_per_second']:,} "
            f"verdicts/s (target: not lower at the full size)"
        )
        return out

    @staticmethod
    def _first_batch_database() -> str:
        return f"{connection.settings_dict['NAME']}_first_batch"

    def _first_batch_snapshot(self) -> None:
        """The study as its first batch left it, kept as a database of its own (vacuumed and analysed, as the whole
        study is after its ingest) until `_ingest_pairs` has used it."""
        name = self._first_batch_database()
        seconds = sb.database_copy(connection.settings_dict["NAME"], name)
        with sb.database_used(name):
            connection.cursor().execute("VACUUM ANALYZE")
        self._say(f"  the study after its first batch copied to database {name} in {seconds:.1f} s")

    def _ingest_pairs(self, size: sb.StudySize, root: Path, pairs: int) -> dict:
        """The target "ingest not slower at 10M than at 1M" on identical work: ten new models ingested into copies of
        the study after its first batch and of the whole study, back to back, the order alternating."""
        small = self._first_batch_database()
        try:
            batch = sb.batch_write(size, root / "pairs", first_model=size.models)
            self._say(f"the same batch into the study at two sizes, back to back, {pairs} pair(s):")
            with background.apart():
                out = sb.ingest_pairs(
                    batch,
                    SLUG,
                    small=small,
                    big=connection.settings_dict["NAME"],
                    pairs=pairs,
                    per_model=size.verdicts // size.models,
                    say=self._say,
                )
        finally:
            sb.database_drop(small)
            # the copies share this database's ids and the cache: what they cached must not answer for this one
            cache.clear()
        self._say(
            f"ingest of the same batch, at the full size against after the first batch: "
            f"{', '.join(f'{100 * r:+.1f}%' for r in out['big_against_small'])} (target: not lower at the full size)"
        )
        return out

    def _reasoning_index(self, stored: int, ingest_seconds: float) -> dict:
        """Time the step after the import's commit that copies its judge reasoning into the search's index
        (runs.search_index), which the timed import left pending."""
        pending = reasoning_pending()
        seconds, attempts = sb.timed(lambda: reasoning_index_catch_up(wait=True))
        figures = {
            "attempts_pending_after_import": pending,
            "attempts_copied": attempts,
            "seconds": round(seconds, 2),
            "verdicts_per_second": round(stored / seconds) if seconds else None,
            "searchable_after_import_commit_seconds": round(seconds, 2),
            "import_and_copy_verdicts_per_second": round(stored / (ingest_seconds + seconds)),
        }
        self._say(
            f"judge reasoning searchable through its index {seconds:.1f} s after the import committed (the "
            f"reasoning of {attempts:,} attempts copied; found by reading the verdicts meanwhile)"
        )
        return figures

    def _cli_ingest(self, files: sb.StudyFiles) -> dict:
        """The study the way users load it: `manage.py ingest` over the instances file, then once over the
        results folder (mini-vela layout), each a new process. Into a copy of this database as it is before the
        study, dropped afterwards: the verdict table starts as the COPY-fk baseline's does, and as the import in
        process does (an import into a table that already holds a study is `--ingest-pairs`' measure)."""
        database = f"{connection.settings_dict['NAME']}_cli"
        copy_seconds = sb.database_copy(connection.settings_dict["NAME"], database)
        out: dict = {
            "database": "a copy of this one before the study",
            "copy_seconds": round(copy_seconds, 2),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        }
        steps = (
            ("instances", ["octobench-instances", str(files.instances)]),
            ("scores", ["octobench-scores", str(files.results)]),
        )
        # as on a deployment with a worker: the import hands the copy of its judge reasoning into the search's
        # index to one (runs.search_index) and ends; none runs here, so this process makes the copy, timed apart
        env = {
            **os.environ,
            "DATABASE_URL": sb.database_url(database),
            "IFPORTAL_JOBS": "celery",
            "CELERY_BROKER_URL": CLI_BROKER,
        }
        try:
            with sb.database_used(database):
                sb.writes_settled()  # the study's files and the copy: written out before the clock starts
            for name, args in steps:
                argv = sb.manage_py("ingest", *args, "--benchmark", SLUG, "--no-progress")
                seconds, rss, status, output = sb.peak_rss_of_command(argv, env)
                if status != 0:
                    raise CommandError(f"`manage.py ingest {' '.join(args)}` failed:\n{output[-2000:]}")
                out[f"{name}_seconds"] = round(seconds, 2)
                out[f"{name}_peak_rss_mb"] = round(rss / 2**20, 1)
            with sb.database_used(database):
                verdicts = Verdict.objects.filter(attempt__run__benchmark__slug=SLUG).count()
                seconds, attempts = sb.timed(lambda: reasoning_index_catch_up(wait=True))
            out["reasoning_searchable_after_seconds"] = round(seconds, 2)
            out["reasoning_attempts_copied"] = attempts
        finally:
            sb.broker_flush(CLI_BROKER)
            sb.database_drop(database)
            # the copy shares this database's ids and the cache: what it cached must not answer for this one
            cache.clear()
        seconds = out["instances_seconds"] + out["scores_seconds"]
        out |= {
            "verdicts": verdicts,
            "commands": len(steps),
            "seconds": round(seconds, 2),
            "verdicts_per_second": round(verdicts / seconds),
            "scores_command_verdicts_per_second": round(verdicts / out["scores_seconds"]),
            "includes": "process start-up, parse, validate, upsert, rollups; one transaction per command",
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        }
        self._say(
            f"through the CLI, into a copy of the database before the study: {verdicts:,} verdicts in {seconds:.1f} s "
            f"({out['instances_seconds']:.1f} s instances, {out['scores_seconds']:.1f} s the results folder) = "
            f"{verdicts / seconds:,.0f} verdicts/s; its judge reasoning searchable through the index "
            f"{out['reasoning_searchable_after_seconds']:.1f} s after"
        )
        return out

    def _http(self, o) -> dict:
        from django.contrib.auth import get_user_model

        user, _ = get_user_model().objects.get_or_create(username="benchmark-reader")
        cookie = sb.session_cookie_for(user.username)
        trajectories = Trajectory.objects.filter(attempt__run__benchmark__slug=SLUG)
        five_mb = trajectories.filter(attempt__run__label="model-1-r1").values_list("attempt_id", "size_bytes").first()
        largest = trajectories.order_by("-size_bytes").values_list("attempt_id", "size_bytes").first()
        dialogue_run = Run.objects.filter(benchmark__kind="dialogue").values_list("label", flat=True).first()
        hierarchy = self._slug_of("hierarchy")
        pages = {
            "leaderboard": ("runs:checklist-leaderboard", {"slug": SLUG}, ""),
            "drill-down": ("runs:checklist-attempts", {"slug": SLUG}, "?model=model-0"),
            f"attempt ({five_mb[1] / 2**20:.1f} MB trajectory)" if five_mb else "attempt (5 MB trajectory)": (
                "runs:attempt",
                {"pk": five_mb[0] if five_mb else None},
                "",
            ),
            f"attempt (largest trajectory, {largest[1] / 2**20:.1f} MB)"
            if largest
            else "attempt (largest trajectory)": ("runs:attempt", {"pk": largest[0] if largest else None}, ""),
            "survival API": ("api:dialogue-metrics", {} if dialogue_run else None, f"?run={dialogue_run}"),
            "hierarchy API": ("api:hierarchy-metrics", {} if hierarchy else None, f"?benchmark={hierarchy}"),
            "search page": ("runs:search", {"slug": SLUG}, "?q=%2Fapp%2Ff7.py"),
            "compare two models (page)": ("runs:checklist-compare", {"slug": SLUG}, "?a=model-0&b=model-1"),
            "compare two models (API)": ("api:compare", {"slug": SLUG}, "?baseline=model-0&candidate=model-1"),
            "search API": ("api:search", {}, f"?benchmark={SLUG}&q=broken+in+turn+3&verdict=fail"),
        }
        if o.get("search_corpus_mb"):
            pages |= search_corpus.http_pages(SLUG)
        out: dict = {"load_average_at_start": [round(x, 2) for x in os.getloadavg()]}  # other work on the machine
        html_pages: dict[str, str] = {}  # what a reader opens in a browser: every page but the JSON APIs
        with sb.WebServer(workers=2, port=o["port"]) as server:
            for label, (name, kwargs, query) in pages.items():
                try:
                    if kwargs is None or None in kwargs.values():
                        raise NoReverseMatch(name)
                    path = reverse(name, kwargs=kwargs) + query
                except NoReverseMatch:
                    out[label] = "not available (page not built, or no data of that kind: run `manage.py demo` first)"
                    self._say(f"{label}: {out[label]}")
                    continue
                out[label] = sb.latency(server.url(path), cookie, requests=o["requests"]) | {"path": path}
                if not name.startswith("api:"):
                    html_pages[label] = path
                target = {
                    "leaderboard": " (target 20 ms warm)",
                    "drill-down": " (target 150 ms)",
                    "compare two models (page)": " (target 300 ms)",
                    "compare two models (API)": " (target 300 ms)",
                }.get(label, "")
                self._say(
                    f"{label}: median {out[label]['median_ms']:.0f} ms, p95 {out[label]['p95_ms']:.0f} ms{target} "
                    f"(HTTP {out[label]['status']})"
                )
                if label == "leaderboard":
                    out.update(self._leaderboard_after_changes(server, path, cookie, o["requests"]))
                if label == "drill-down":
                    out.update(self._drilldown_after_changes(server, path, cookie, o["requests"]))
                if label == "compare two models (page)":
                    out["compare, pairs nobody asked"] = self._compare_fresh_pairs(server, cookie, o["requests"])
            out["chromium"] = self._chromium(server, cookie, html_pages, o)
            try:
                board = server.url(reverse("runs:checklist-leaderboard", kwargs={"slug": SLUG}))
            except NoReverseMatch:
                out["leaderboard_load"] = "not available"
                return out
            # the load tests read a warm cache (what every viewer after the first, or after a job warmed it, gets)
            for label, measure in (("leaderboard_load", sb.throughput), ("leaderboard_load_wrk", sb.wrk_throughput)):
                server_cpu = server.cpu_seconds()
                load = measure(board, cookie, clients=o["clients"], seconds=o["load_seconds"])
                if load is None:
                    out[label] = "not measured: wrk is not installed (Debian: apt-get install wrk)"
                    self._say(out[label])
                    continue
                load["server_cpu_cores"] = (
                    round((server.cpu_seconds() - server_cpu) / load["seconds"], 2) if load["seconds"] else None
                )
                out[label] = load
                load["target_rps"] = 200
                p95 = (
                    f"p95 {load['latency_p95']:.0f} ms"
                    if load.get("latency_p95") is not None
                    else (
                        f"p90 {load['latency_p90']:.0f} ms, p99 {load['latency_p99']:.0f} ms"
                        if load.get("latency_p99")
                        else ""
                    )
                )
                self._say(
                    f"leaderboard under {o['clients']} clients ({load['client']}): {load['rps']:.1f} requests/s "
                    f"(target >= 200), {p95}, {load['errors']} errors; CPU cores used: web server "
                    f"{load['server_cpu_cores']}, load generator {load['client_cpu_cores']} (of {os.cpu_count()}); "
                    f"load average {os.getloadavg()[0]:.2f}"
                )
        out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        return out

    def _compare_fresh_pairs(self, server, cookie: str, requests: int) -> dict:
        """The compare page for pairs of models nobody compared before (model-i against model-i+1, each once): what
        the first reader of a pair waits for, its paired tests and bootstrap computed for it."""
        models = sorted(
            Run.objects.filter(benchmark__slug=SLUG).values_list("model__name", flat=True).distinct(),
            key=lambda name: int(name.rsplit("-", 1)[-1]) if name.rsplit("-", 1)[-1].isdigit() else 0,
        )
        pairs = list(zip(models[2:], models[3:]))[:requests]  # model-0 against model-1 is the warm series
        samples = []
        for a, b in pairs:
            url = server.url(reverse("runs:checklist-compare", kwargs={"slug": SLUG}) + f"?a={a}&b={b}")
            start = time.perf_counter()
            sb.fetch(url, cookie)
            samples.append(1000 * (time.perf_counter() - start))
        samples.sort()
        out = {
            "pairs": len(samples),
            "median_ms": statistics.median(samples) if samples else None,
            "p95_ms": samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))] if samples else None,
        }
        if samples:
            self._say(
                f"compare, pairs nobody asked ({len(samples)}): median {out['median_ms']:.0f} ms, p95 "
                f"{out['p95_ms']:.0f} ms (target 300 ms)"
            )
        return out

    def _chromium(self, server: sb.WebServer, cookie: str, pages: dict[str, str], o) -> dict | str:
        """What a reader sees of each page (ifportal.benchmarks.browser): first paint and charts drawn in Chromium on a
        cold browser cache, the server warm from the series above."""
        if o["skip_chromium"]:
            return "not measured: --skip-chromium"
        figures = browser.chromium_figures(server.url(""), cookie, pages, samples=o["chromium_samples"])
        for line in browser.chromium_lines(figures):
            self._say(line)
        return figures

    def _leaderboard_after_changes(self, server, path: str, cookie: str, requests: int) -> dict:
        """The leaderboard after each kind of change: a writer's (cold: the page is not cached, the summary
        its writer precomputed is), a job's (warmed), and a bare generation bump that no writer makes (nothing
        precomputed: every rollup scored in the request). Each request follows its own change."""
        out: dict = {}
        precompute: list[float] = []
        cold = sb.latency(
            server.url(path),
            cookie,
            requests=requests,
            before=lambda: precompute.append(sb.timed(self._data_changed)[0]),
        )
        out["leaderboard (cold cache)"] = cold | {
            "path": path,
            "writer_precompute_median_ms": round(1000 * statistics.median(precompute), 1),
            "target_p95_ms": 150,
        }
        self._say(
            f"leaderboard, cold cache (after a writer's change): median {cold['median_ms']:.0f} ms, p95 "
            f"{cold['p95_ms']:.0f} ms (target 150 ms; the writer spent {1000 * statistics.median(precompute):.0f} ms "
            f"precomputing after its commit)"
        )
        # a state no one warms (one judge, sorted by CSR) after a writer's change: its tables derived from the
        # precomputed summary, its fragment and filter form rendered in the request
        other = f"{path}?judge=judge-0&sort=csr"
        state = sb.latency(server.url(other), cookie, requests=requests, before=self._data_changed)
        out["leaderboard (cold cache, a state not warmed)"] = state | {"path": other, "target_p95_ms": 150}
        self._say(
            f"leaderboard, cold cache, a state not warmed ({other}): median {state['median_ms']:.0f} ms, p95 "
            f"{state['p95_ms']:.0f} ms (target 150 ms)"
        )
        # the same change made by a job: it warms the default page after committing (untimed, as a worker
        # would); needs a cache the web workers share (CACHE_URL)
        warming: list[float] = []
        warmed = sb.latency(
            server.url(path),
            cookie,
            requests=requests,
            before=lambda: warming.append(sb.timed(self._data_changed_by_job)[0]),
        )
        out["leaderboard (after a job's change, warmed)"] = warmed | {
            "path": path,
            "warming_median_ms": round(1000 * statistics.median(warming), 1),
            "target_p95_ms": 20,
        }
        self._say(
            f"leaderboard after a job's change: median {warmed['median_ms']:.0f} ms, p95 "
            f"{warmed['p95_ms']:.0f} ms (target 20 ms; the job spent {1000 * statistics.median(warming):.0f} ms "
            f"precomputing and warming)"
        )
        bare = sb.latency(server.url(path), cookie, requests=requests, before=self._generation_bumped)
        out["leaderboard (cold, nothing precomputed)"] = bare | {"path": path}
        self._say(
            f"leaderboard, generation bumped with nothing precomputed (no writer does this): median "
            f"{bare['median_ms']:.0f} ms, p95 {bare['p95_ms']:.0f} ms"
        )
        return out

    def _drilldown_after_changes(self, server, path: str, cookie: str, requests: int) -> dict:
        """The drill-down after each of a writer's changes (its filter choices move with the generation)."""
        cold = sb.latency(server.url(path), cookie, requests=requests, before=self._data_changed)
        self._say(
            f"drill-down after a writer's change: median {cold['median_ms']:.0f} ms, p95 {cold['p95_ms']:.0f} ms "
            f"(target 150 ms)"
        )
        return {"drill-down (cold cache)": cold | {"path": path, "target_p95_ms": 150}}

    @staticmethod
    def _generation_bumped() -> None:
        """A new data generation and nothing else: what no writer does (each precomputes after committing)."""
        Benchmark.objects.filter(slug=SLUG).update(data_generation=F("data_generation") + 1)

    @staticmethod
    def _data_changed() -> None:
        """What every committed write to the study does to cached leaderboards: a new data generation, and
        once it commits, the summary of the new generation precomputed (runs.services). What a write hands to the
        background (the item health fit, runs.background) is left out: a worker does it, not the writer."""
        with background.apart(), transaction.atomic():
            benchmarks_generation_bump(Benchmark.objects.filter(slug=SLUG).values_list("id", flat=True))

    @classmethod
    def _data_changed_by_job(cls) -> None:
        """A writer's change, then what a job does after committing one: warm the default page."""
        cls._data_changed()
        with background.apart():
            after_write(Benchmark.objects.filter(slug=SLUG).values_list("id", flat=True))

    @staticmethod
    def _slug_of(kind: str) -> str | None:
        return Benchmark.objects.filter(kind=kind).values_list("slug", flat=True).first()

    def _say(self, text: str) -> None:
        self.stderr.write(text)
