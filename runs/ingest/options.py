"""How an import names its options to the person importing, and which options a format's files need.

One option is `--judge NAME` on the command line (`manage.py ingest`), the Judge field of the import
page and the 'judge' field of POST /api/ingest/: a problem says what to do in the words of the place
the import was started from (`Options.surface`). `options_missing` is what the import page and the API
check before a job is created, on the files as planned (`runs.ingest.layout`), so that no job fails
for an option that a retry of the same job could not add.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from runs.ingest.base import Options
from runs.ingest.layout import MANIFEST_NAME, LayoutError, Unit, plan_uploads

#: where an import's options come from: the command line, the import page, the API
SURFACES = ("cli", "form", "api")
#: option -> (its label on the import page, its value's placeholder on the command line)
OPTION_WORDS: dict[str, tuple[str, str]] = {
    "benchmark": ("Benchmark", "SLUG"),
    "name": ("Benchmark name", "NAME"),
    "model": ("Model", "NAME"),
    "run": ("Run", "LABEL"),
    "judge": ("Judge", "NAME"),
    "scaffold": ("Scaffold", "NAME"),
    "repetition": ("Repetition", "N"),
    "pass_threshold": ("Pass threshold", "SCORE"),
    "category_field": ("Category field", "FIELD"),
}
#: format -> the options its files cannot do without, when neither the files nor the layout say them;
#: "model" is also met by naming a stored run (whether it exists is the job's to check)
NEEDED: dict[str, tuple[str, ...]] = {
    "octobench-scores": ("judge", "model"),
    "evolif-eval": ("model",),
    "manyih-results": ("model",),
    "guidebench-predictions": ("model",),
}
#: what a needed option is, in a sentence, and the other places the files may say it
_NEEDED_WORDS: dict[str, tuple[str, str]] = {
    "judge": (
        "the judge whose verdicts they hold",
        f", or name each file scores_<judge>.json, or list it in an {MANIFEST_NAME} manifest among the files",
    ),
    "model": (
        "the model whose results they are",
        f" (or {{run}} of a stored run), or upload them in a folder "
        f"named after the model, or list it in an {MANIFEST_NAME} manifest "
        "among the files",
    ),
}


def option_name(options: Options, name: str) -> str:
    """An option as the place the import came from names it: "--judge NAME", "the Judge field", "the 'judge' field"."""
    label, placeholder = OPTION_WORDS[name]
    if options.surface == "form":
        return f"the {label} field"
    if options.surface == "api":
        return f"the '{name}' field"
    return f"--{name.replace('_', '-')} {placeholder}"


def option_ask(options: Options, name: str) -> str:
    """How to give an option, as an instruction: "pass --judge NAME", "fill in the Judge field", "send the 'judge' field"."""
    verb = {"form": "fill in", "api": "send"}.get(options.surface, "pass")
    return f"{verb} {option_name(options, name)}"


def options_missing(format_name: str, units: Sequence[Unit]) -> dict[str, str]:
    """option -> why the planned files cannot be imported without it, in the words of where they came from;
    empty when every file has what its format needs."""
    missing: dict[str, str] = {}
    for name in NEEDED.get(format_name, ()):
        lacking = [
            unit for unit in units if not (getattr(unit.options, name) or (name == "model" and unit.options.run))
        ]
        if not lacking:
            continue
        options = lacking[0].options
        what, elsewhere = _NEEDED_WORDS[name]
        files = [source.name for unit in lacking for source in unit.sources]
        which = "" if len(lacking) == len(units) else f" ({', '.join(files[:5])}{', ...' if len(files) > 5 else ''})"
        missing[name] = (
            f"The {format_name} files{which} do not say {what}: {option_ask(options, name)}"
            f"{elsewhere.format(run=option_name(options, 'run'))}."
        )
    return missing


def run_missing(options: Options) -> str:
    """The problem of a run named (without a model) that is not stored."""
    return f"run '{options.run}' does not exist yet: {option_ask(options, 'model')} to create it"


def model_missing(options: Options, files: str) -> str:
    """The problem of results (`files`: "scores", "predictions"...) whose model nothing names."""
    return (
        f"{files} do not name the model: {option_ask(options, 'model')} (and {option_name(options, 'run')} "
        "for a run label other than the model name)"
    )


def upload_problems(format_name: str, files: Sequence[tuple[Path, str]], options: Options) -> dict[str, list[str]]:
    """field -> why these uploads (each where it is stored, and its name) cannot be imported with these options,
    planned as the job will plan them (`plan_uploads`); empty when they can. A manifest that does not fit is
    the files' problem, an option that no file says is that option's."""
    try:
        units = plan_uploads(format_name, files, options)
    except LayoutError as exc:
        return {"files": [str(exc)]}
    return {name: [reason] for name, reason in options_missing(format_name, units).items()}
