"""Which model, run, judge and repetition each file of a results folder belongs to.

A harness run leaves a folder; `plan_import` turns the files and folders a user names into
`Unit`s, the files ingested with one set of options. What a file belongs to is read, first
to last (the first that says a field wins):

1. the command's own options (`--model`, `--judge`, ... apply to every file);
2. the manifest (`ifportal-import.json` in a folder given, or `--manifest FILE`): entries of
   `path` (relative to the manifest; a glob pattern matches many) and the fields;
3. the file's contents, where the harness writes them (ManyIH `eval_config.model`);
4. the harness's layout below the folder given:
   - the first folder below it is the model (mini-vela `<study>/<model>/...`, EvolIF
     `<output_dir>/<model>/eval_N.jsonl`, GuideBench `<study>/<model>/<category>_tasks.json`);
     an EvolIF `eval_N.jsonl` directly in the folder given belongs to the model that folder
     is named after (the harness writes `<output_dir>/<model>/`);
   - a folder `rep<N>` (or `repetition<N>`, `rep-<N>`, `rep_<N>`) anywhere below it is
     repetition N, and the run is `<model>-r<N>`;
   - a scores file named `scores_<judge>.json` (or `scores-<judge>.json`) was written by that judge.

docs/formats.md ("A results folder in one command") is the user's description of these rules.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any

from runs.ingest.base import Options, Source, text_limit
from runs.models import AgentModel, Judge, Run

MANIFEST_NAME = "ifportal-import.json"
#: fields a manifest entry (or the layout) may set for a file
FILE_FIELDS = ("model", "run", "judge", "repetition", "scaffold")
#: the longest name each text field of FILE_FIELDS may hold: its column's
NAME_LIMITS = {
    "model": text_limit(AgentModel, "name"),
    "run": text_limit(Run, "label"),
    "judge": text_limit(Judge, "name"),
    "scaffold": text_limit(Run, "scaffold"),
}
#: the largest manifest read (it lists files, not data)
MANIFEST_MAX_BYTES = 1 << 20

#: file names each format reads when it walks a folder
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "octobench-instances": (".jsonl",),
    "octobench-trajectories": (".jsonl",),
    "octobench-scores": (".json",),
    "evolif-dialogs": (".jsonl",),
    "evolif-eval": (".jsonl",),
    "manyih-data": (".json",),
    "manyih-results": (".json",),
    "guidebench-tasks": (".json",),
    "guidebench-predictions": (".json",),
    "native": (".jsonl", ".ndjson"),
    "inspect": (".eval", ".json"),
}
_NAMES: dict[str, re.Pattern] = {
    "evolif-dialogs": re.compile(r"dialog_\d+\.jsonl$"),
    "evolif-eval": re.compile(r"eval_\d+\.jsonl$"),
    "guidebench-tasks": re.compile(r".+_tasks\.json$"),
    "guidebench-predictions": re.compile(r".+_tasks\.json$"),
}
#: files a format's own tools write beside its results that are not results: inspect_ai's log-folder index
_NOT_RESULTS: dict[str, frozenset[str]] = {"inspect": frozenset({"logs.json"})}
#: formats whose files are results of a model (the layout names model, run, judge, repetition)
RESULT_FORMATS = frozenset(
    {"octobench-trajectories", "octobench-scores", "evolif-eval", "manyih-results", "guidebench-predictions"}
)
_REPETITION = re.compile(r"^rep(?:etition)?[-_]?(\d+)$", re.I)
_SCORES_JUDGE = re.compile(r"^scores[-_](.+)$")


class LayoutError(ValueError):
    """The paths or manifest cannot be planned (a path is missing, a manifest is wrong)."""

    @property
    def where(self) -> str:
        """The file or path the message is about (before the first ': ')."""
        return str(self).split(": ", 1)[0] if ": " in str(self) else "the import"

    @property
    def reason(self) -> str:
        return str(self).split(": ", 1)[1] if ": " in str(self) else str(self)


@dataclass(frozen=True)
class Entry:
    """One file to import: on disk, and its path below the folder it was found in (the layout's input)."""

    path: Path
    relative: PurePosixPath
    #: the folder given that it was found in (None for a file named directly: no layout below a folder)
    root: Path | None = None
    #: the name in messages (default: the relative path)
    name: str | None = None


@dataclass
class Unit:
    """Files ingested with one set of options."""

    options: Options
    sources: list[Source] = field(default_factory=list)

    def describe(self) -> str:
        said = [f"{name} {getattr(self.options, name)}" for name in FILE_FIELDS if getattr(self.options, name)]
        files = f"{len(self.sources)} file" + ("s" if len(self.sources) != 1 else "")
        return f"{', '.join(said) or 'no model, run or judge from the layout'}: {files}"


def entries_of(paths: Iterable[str | Path], format_name: str) -> tuple[list[Entry], list[Path]]:
    """The files to read (folders walked, sorted) and the manifests found in the folders given."""
    entries: list[Entry] = []
    manifests: list[Path] = []
    paths = list(paths)
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            entries.append(Entry(path, PurePosixPath(path.name), name=str(raw)))
        elif path.is_dir():
            manifest = path / MANIFEST_NAME
            if manifest.is_file():
                manifests.append(manifest)
            found = [p for p in sorted(path.rglob("*")) if p.is_file() and wanted(format_name, p.name)]
            if not found:
                raise LayoutError(f"{raw}: no {format_name} files in this folder ({describe_wanted(format_name)})")
            for p in found:
                relative = PurePosixPath(p.relative_to(path).as_posix())
                # with several paths given, messages and Run.sources name a file by its folder too
                name = str(PurePosixPath(str(raw)) / relative) if len(paths) > 1 else None
                entries.append(Entry(p, relative, path, name=name))
        else:
            raise LayoutError(f"{raw}: no such file or folder")
    return entries, manifests


def wanted(format_name: str, name: str) -> bool:
    """Whether a file found in a folder is one the format reads."""
    if name == MANIFEST_NAME or name.startswith(".") or name in _NOT_RESULTS.get(format_name, ()):
        return False
    pattern = _NAMES.get(format_name)
    if pattern is not None:
        return bool(pattern.match(name))
    return name.lower().endswith(_SUFFIXES.get(format_name, (".json", ".jsonl")))


def describe_wanted(format_name: str) -> str:
    pattern = _NAMES.get(format_name)
    if pattern is not None:
        return "files named like " + pattern.pattern.rstrip("$").replace("\\d+", "N").replace("\\.", ".").replace(
            ".+", "*"
        )
    return "files ending in " + " or ".join(_SUFFIXES.get(format_name, (".json", ".jsonl")))


@dataclass
class Manifest:
    """Entries of (pattern relative to the manifest's folder, fields), and file-wide defaults."""

    folder: Path | None
    entries: list[tuple[str, dict[str, Any]]]
    used: set[int] = field(default_factory=set)

    def fields_for(self, entry: Entry) -> dict[str, Any]:
        relative = self._relative(entry)
        if relative is None:
            return {}
        for n, (pattern, values) in enumerate(self.entries):
            if relative == pattern or fnmatch.fnmatchcase(relative, pattern):
                self.used.add(n)
                return values
        return {}

    def _relative(self, entry: Entry) -> str | None:
        if self.folder is None:  # an uploaded manifest: paths are the uploads' names
            return entry.relative.as_posix()
        try:
            return entry.path.resolve().relative_to(self.folder.resolve()).as_posix()
        except ValueError:
            return None

    def unused(self) -> list[str]:
        return [pattern for n, (pattern, _) in enumerate(self.entries) if n not in self.used]


def manifest_read(path: Path, *, name: str | None = None, folder: Path | None | bool = True) -> Manifest:
    """Read and check a manifest file (LayoutError names what is wrong with it)."""
    label = name or str(path)
    if not path.is_file():
        raise LayoutError(f"{label}: no such manifest file")
    if path.stat().st_size > MANIFEST_MAX_BYTES:
        raise LayoutError(f"{label}: a manifest is at most {MANIFEST_MAX_BYTES // 1024} KB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # ValueError: an integer of too many digits
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise LayoutError(f"{label}{where}: not a valid JSON manifest") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise LayoutError(f"{label}: a manifest is an object with a 'files' list (see docs/formats.md)")
    entries = []
    for n, item in enumerate(data["files"], 1):
        if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
            raise LayoutError(f"{label}: files[{n}] needs a 'path' (a file name or pattern relative to the manifest)")
        unknown = sorted(set(item) - {"path", *FILE_FIELDS})
        if unknown:
            raise LayoutError(
                f"{label}: files[{n}] has unknown field(s) {', '.join(unknown)}; "
                f"a file may set {', '.join(FILE_FIELDS)}"
            )
        values = {}
        for key in FILE_FIELDS:
            value = item.get(key)
            if value in (None, ""):
                continue
            if key == "repetition":
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise LayoutError(f"{label}: files[{n}].repetition should be a whole number from 1")
            elif not isinstance(value, str) or len(value) > NAME_LIMITS[key]:
                raise LayoutError(
                    f"{label}: files[{n}].{key} should be a text of at most {NAME_LIMITS[key]} characters"
                )
            values[key] = value
        entries.append((item["path"].removeprefix("./"), values))
    folder_path = path.parent if folder is True else (folder or None)
    return Manifest(folder_path, entries)


def plan_import(
    format_name: str,
    entries: Sequence[Entry],
    options: Options,
    manifests: Sequence[Manifest] = (),
) -> list[Unit]:
    """Group the files by what they belong to; each group is ingested with its own options.

    Files of formats that are not results (instances, dialog scripts, datasets, tasks) all go
    in one unit with the command's options.
    """
    if format_name not in RESULT_FORMATS:
        return [Unit(options, [Source.of(e.path, _display(e)) for e in entries])]
    units: dict[tuple, Unit] = {}
    for entry in entries:
        said = file_options(format_name, entry, options, manifests)
        key = tuple(getattr(said, f.name) for f in fields(Options))
        units.setdefault(key, Unit(said)).sources.append(Source.of(entry.path, _display(entry)))
    for manifest in manifests:
        unused = manifest.unused()
        if unused:
            raise LayoutError(
                f"the manifest names {', '.join(unused[:5])}, which match no file being imported "
                "(or only files an earlier entry already matched)"
            )
    return list(units.values())


def plan_uploads(format_name: str, files: Sequence[tuple[Path, str]], options: Options) -> list[Unit]:
    """Plan uploaded files, each (where it is stored, its path in the results folder or its name): the
    folders in the paths are the layout, and an uploaded `ifportal-import.json` is the manifest."""
    entries: list[Entry] = []
    manifests: list[Manifest] = []
    for stored, name in files:
        relative = PurePosixPath(name)
        if relative.name == MANIFEST_NAME:
            manifests.append(manifest_read(stored, name=name, folder=None))
            continue
        entries.append(Entry(stored, relative, root=stored.parent if len(relative.parts) > 1 else None, name=name))
    if not entries:
        raise LayoutError(f"{MANIFEST_NAME}: the upload holds the manifest only; add the files it describes")
    return plan_import(format_name, entries, options, manifests)


def _display(entry: Entry) -> str:
    """The name of a file in messages: its path below the folder given (the name alone for a file given)."""
    return entry.name or entry.relative.as_posix()


def file_options(format_name: str, entry: Entry, options: Options, manifests: Sequence[Manifest] = ()) -> Options:
    """The options one file is ingested with: the command's, then the manifest's, the contents', the layout's."""
    said: dict[str, Any] = {}
    for manifest in manifests:
        for key, value in manifest.fields_for(entry).items():
            said.setdefault(key, value)
    for key, value in _from_contents(format_name, entry.path).items():
        said.setdefault(key, value)
    for key, value in _from_layout(format_name, entry).items():
        said.setdefault(key, value)
    if options.run and not options.model:
        # an existing run named on the command line: the files are that run's, whatever the layout says
        for key in ("model", "run", "repetition"):
            said.pop(key, None)
    if "repetition" in said and "run" not in said and "model" in said and not options.run:
        said["run"] = f"{options.model or said['model']}-r{said['repetition']}"
    chosen = {name: getattr(options, name) for name in FILE_FIELDS if getattr(options, name) not in (None, "")}
    given = {**{k: v for k, v in said.items() if k in FILE_FIELDS}, **chosen}
    for key, value in given.items():
        if isinstance(value, str) and len(value) > NAME_LIMITS[key]:
            raise LayoutError(
                f"{_display(entry)}: the {key} '{value[:40]}…' is {len(value):,} characters long; "
                f"a {key} name holds at most {NAME_LIMITS[key]}"
            )
    return replace(options, **given)


def _from_layout(format_name: str, entry: Entry) -> dict[str, Any]:
    """What the folders below the one given and the file's name say."""
    said: dict[str, Any] = {}
    if entry.root is None:
        folders: tuple[str, ...] = ()
    else:
        folders = entry.relative.parts[:-1]
    models = [part for part in folders if not _REPETITION.match(part)]
    if models:
        said["model"] = models[0]
    elif format_name == "evolif-eval" and entry.root is not None and not _REPETITION.match(entry.root.name):
        said["model"] = entry.root.resolve().name
    for part in folders:
        found = _REPETITION.match(part)
        if found:
            said["repetition"] = int(found.group(1))
    if format_name == "octobench-scores":
        judge = _SCORES_JUDGE.match(Path(entry.relative.name).stem)
        if judge:
            said["judge"] = judge.group(1)
    return said


def _from_contents(format_name: str, path: Path) -> dict[str, Any]:
    """What the file itself says: ManyIH results carry the model in `eval_config.model`."""
    if format_name != "manyih-results":
        return {}
    model = _eval_config_model(path)
    return {"model": model} if model else {}


#: how far into a ManyIH results file its eval_config is looked for (the evaluator writes it first)
_PEEK_BYTES = 64 * 1024


def _eval_config_model(path: Path) -> str | None:
    """`eval_config.model` of a ManyIH results file, read from its first 64 KB (None if not there)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_PEEK_BYTES).decode("utf-8", "ignore")
    except OSError:
        return None
    decoder = json.JSONDecoder()
    at = head.find('"eval_config"')
    if at < 0:
        return None
    colon = head.find(":", at)
    start = colon + 1
    while start < len(head) and head[start] in " \t\r\n":
        start += 1
    try:
        config, _ = decoder.raw_decode(head, start)
    except (ValueError, RecursionError):
        return None
    model = config.get("model") if isinstance(config, dict) else None
    return model if isinstance(model, str) and 0 < len(model) <= NAME_LIMITS["model"] else None
