"""python manage.py ingest FORMAT PATH... [--benchmark SLUG] [--model NAME] [--run LABEL] [--judge NAME] [--scaffold NAME]"""
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from runs.ingest import FORMATS, IngestFailed, Options, Source, ingest


class Command(BaseCommand):
    help = "Ingest benchmark files, all or nothing. Formats: " + ", ".join(FORMATS)

    def add_arguments(self, parser):
        parser.add_argument("format", choices=list(FORMATS))
        parser.add_argument("paths", nargs="+", help="files to read (all of them, in one transaction)")
        parser.add_argument("--benchmark", help="benchmark slug (default: the format's own)")
        parser.add_argument("--model", help="model name, where the files do not say")
        parser.add_argument("--run", help="run label (default: the model name)")
        parser.add_argument("--judge", help="judge name for verdicts")
        parser.add_argument("--scaffold", help="scaffold the run used")
        parser.add_argument("--repetition", type=int, help="repetition number of the run (default 1)")
        parser.add_argument("--pass-threshold", type=float,
                            help="least score that passes, where scores are numbers (inspect, lm-eval)")
        parser.add_argument("--category-field", help="sample metadata field to group instances by (inspect, lm-eval)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **opts):
        sources = []
        for raw in opts["paths"]:
            path = Path(raw)
            if not path.is_file():
                raise CommandError(f"{raw}: no such file")
            sources.append(Source.of(path, raw))
        options = Options(
            benchmark=opts["benchmark"], model=opts["model"], run=opts["run"], judge=opts["judge"],
            scaffold=opts["scaffold"], repetition=opts["repetition"], pass_threshold=opts["pass_threshold"],
            category_field=opts["category_field"],
        )
        bar = None
        if not opts["no_progress"]:
            bar = tqdm(total=0, unit="B", unit_scale=True, desc=opts["format"], file=sys.stderr, leave=False)

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.n = done
                bar.refresh()

        try:
            report = ingest(opts["format"], sources, options, progress=progress)
        except IngestFailed as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar is not None:
                bar.close()
        self.stdout.write(report.summary())
