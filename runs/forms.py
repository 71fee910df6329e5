"""Forms of the runs pages, and starting an ingest job from uploaded files (page and API share it)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils.text import get_valid_filename

from runs.ingest import FORMATS, Options
from runs.ingest.options import OPTION_WORDS, upload_problems
from runs.jobs import job_create, job_enqueue, upload_dir
from runs.models import Job, JobState

#: one line per ingest format, shown next to its name on the import page and in the API schema
FORMAT_DESCRIPTIONS: dict[str, str] = {
    "octobench-instances": "OctoBench instances JSONL: one task per line with its checklist by source category.",
    "octobench-trajectories": "OctoBench trajectories JSONL: merged threads or raw proxy logs, one session per attempt.",
    "octobench-scores": "OctoBench scores JSON (mini-vela evaluate output), one file per judge; needs judge and model.",
    "evolif-dialogs": "EvolIF dialogue scripts dialog_<n>.jsonl, one turn per line.",
    "evolif-eval": "EvolIF evaluation logs eval_<n>.jsonl, one evaluated turn per line; needs model.",
    "manyih-data": "ManyIH dataset JSON: config, statistics and samples with privilege-tagged instructions.",
    "manyih-results": "ManyIH results JSON: eval_config and per-sample test and style results; needs model.",
    "guidebench-tasks": "GuideBench tasks: one JSON list per category (<category>_tasks.json).",
    "guidebench-predictions": "GuideBench predictions: the task lists with LLMAnswer added; needs model.",
    "native": "ifportal's native JSONL for any checklist- or dialogue-scored benchmark.",
    "inspect": "Inspect AI eval logs (.eval or .json): one run per log and epoch, each scorer a judge; "
    "numeric scores need a pass threshold.",
    "lm-eval": "lm-evaluation-harness --log_samples output: the results_<time>.json and samples_<task>_<time>.jsonl "
    "files of one run (IFEval: judges strict and loose).",
}
FORMAT_CHOICES = [(name, name) for name in FORMATS]
OPTION_NAMES = (
    "benchmark",
    "name",
    "model",
    "run",
    "judge",
    "scaffold",
    "repetition",
    "pass_threshold",
    "category_field",
)
#: room for form fields and multipart boundaries around the files themselves
MULTIPART_OVERHEAD_BYTES = 64 * 1024
#: the largest repetition number: what Run.repetition (a PositiveIntegerField) holds on every database
MAX_REPETITION = 2**31 - 1


def upload_size_problem(files: Sequence[UploadedFile]) -> str | None:
    """Why these files are too large together, or None when they fit IFPORTAL_MAX_UPLOAD_BYTES."""
    total = sum(f.size or 0 for f in files)
    limit = settings.IFPORTAL_MAX_UPLOAD_BYTES
    if total > limit:
        return (
            f"The files total {filesizeformat(total)}; one import takes at most {filesizeformat(limit)}. "
            "Split them into several imports, or use `manage.py ingest` on the server."
        )
    return None


#: the ingest formats are UTF-8 JSON or JSON Lines; nothing else is accepted as an upload, but for
#: Inspect AI's .eval logs (zip archives the inspect format reads entry by entry, each entry's size capped)
UPLOAD_SUFFIXES = (".json", ".jsonl", ".ndjson", ".eval")
ARCHIVE_SUFFIXES = {".eval": "zip"}
#: leading bytes of compressed files and archives, refused so that no decompression bomb reaches the ingest
COMPRESSED_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"PK\x03\x04": "zip",
    b"PK\x05\x06": "zip",
    b"PK\x07\x08": "zip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"7z\xbc\xaf\x27\x1c": "7z",
    b"Rar!\x1a\x07": "rar",
    b"\x04\x22\x4d\x18": "lz4",
    b"\x1f\x9d": "compress",
}
SNIFF_BYTES = 8192


def _head(upload: UploadedFile) -> bytes:
    upload.seek(0)
    head = upload.read(SNIFF_BYTES)
    upload.seek(0)
    return head


def upload_type_problem(files: Sequence[UploadedFile]) -> str | None:
    """Why these files are not uploads the ingest reads (name, compression, binary content), or None."""
    if len(files) > settings.IFPORTAL_MAX_UPLOAD_FILES:
        return upload_count_problem(len(files))
    problems = []
    for upload in files:
        name = Path(upload.name or "upload").name
        head = _head(upload)
        packed = next((kind for magic, kind in COMPRESSED_MAGIC.items() if head.startswith(magic)), None)
        if packed is None and head[257:262] == b"ustar":
            packed = "tar"
        suffix = Path(name).suffix.lower()
        if suffix in ARCHIVE_SUFFIXES:
            if packed != ARCHIVE_SUFFIXES[suffix]:
                problems.append(f"{name} is not an Inspect AI .eval log (a zip archive).")
        elif packed:
            problems.append(
                f"{name} is a {packed} file: compressed files and archives are not accepted; "
                "upload the .json/.jsonl files themselves."
            )
        elif not name.lower().endswith(UPLOAD_SUFFIXES):
            problems.append(
                f"{name}: only {', '.join(UPLOAD_SUFFIXES)} files are accepted (every format is JSON or JSON Lines, "
                "and Inspect AI's .eval logs)."
            )
        elif b"\x00" in head:
            problems.append(f"{name} contains binary data (NUL bytes); the formats are UTF-8 text.")
    return " ".join(problems) or None


def upload_count_problem(count: int | None = None) -> str:
    """Why an upload has too many files (IFPORTAL_MAX_UPLOAD_FILES, which Django's own cap equals)."""
    limit = settings.IFPORTAL_MAX_UPLOAD_FILES
    sent = f"{count} files" if count is not None else f"More than {limit} files"
    return f"{sent}; one import takes at most {limit}. Split them into several imports."


def request_size_problem(request) -> str | None:
    """Why a request body is too large to be an upload within the limit (checked before it is read)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    limit = settings.IFPORTAL_MAX_UPLOAD_BYTES
    if length > limit + MULTIPART_OVERHEAD_BYTES:
        return (
            f"The upload is {filesizeformat(length)}; one import takes at most {filesizeformat(limit)}. "
            "Split the files into several imports, or use `manage.py ingest` on the server."
        )
    return None


def upload_paths_problem(files: Sequence[UploadedFile], paths: Sequence[str] | None) -> str | None:
    """Why the relative paths sent with the uploads (one per file, in order) cannot be used, or None."""
    if not paths:
        return None
    if len(paths) != len(files):
        return f"{len(paths)} paths for {len(files)} files: send one path per file, in the same order."
    for path in paths:
        parts = PurePosixPath(path).parts
        if not parts or path.startswith("/") or ".." in parts or "\\" in path or len(path) > 500:
            return (
                f"{path[:100]!r} is not a relative path below the results folder (like gpt-4o/rep1/scores_judge.json)."
            )
    if len(set(paths)) != len(paths):
        return "two files have the same path."
    return None


class ImportRefused(Exception):
    """Uploads that cannot be imported with the options sent (a manifest that does not fit them, an option
    that no file says): field -> messages, found before any job exists."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(errors)
        self.errors = errors


def ingest_job_start(
    *,
    format_name: str,
    files: Sequence[UploadedFile],
    options: dict[str, Any],
    user,
    paths: Sequence[str] | None = None,
    surface: str = "api",
) -> Job:
    """Store the uploads under the job's folder (streamed in chunks) and queue an ingest job for them.

    `paths`, one per file, are the files' places in the results folder they came from (the layout
    says model, repetition and judge by them); without, a file is known by its name. The files are
    planned as the job will plan them first: if that fails, or a file lacks an option its format
    needs, ImportRefused says why (in the words of `surface`, "form" or "api") and no job is left
    behind, so no job fails in a way its Retry would repeat.
    """
    options = {k: v for k, v in options.items() if k in OPTION_NAMES and v not in (None, "")}
    directory = None
    try:
        with transaction.atomic():
            job = job_create(
                kind="ingest", params={"format": format_name, "options": options, "surface": surface}, user=user
            )
            directory = upload_dir(job.id)
            stored = []
            for n, upload in enumerate(files, 1):
                name = paths[n - 1] if paths else Path(upload.name or "upload").name
                path = directory / f"{n:02d}-{get_valid_filename(PurePosixPath(name).name) or 'upload'}"
                with open(path, "wb") as out:
                    for chunk in upload.chunks():
                        out.write(chunk)
                stored.append({"path": str(path), "name": name})
            refused = upload_problems(
                format_name, [(Path(f["path"]), f["name"]) for f in stored], Options(**options, surface=surface)
            )
            if refused:
                raise ImportRefused(refused)
            job.files = stored
            job.save(update_fields=["files"])
            job_enqueue(job)
    except ImportRefused:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return job


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more files from one <input type=file multiple>."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        uploads = data if isinstance(data, (list, tuple)) else [data] if data else []
        if not uploads:
            raise forms.ValidationError(self.error_messages["required"], code="required")
        return [super(MultipleFileField, self).clean(upload, initial) for upload in uploads]


class ImportForm(forms.Form):
    """The import page: a format, its files, and the options the files do not say themselves."""

    format = forms.ChoiceField(choices=FORMAT_CHOICES, widget=forms.RadioSelect)
    files = MultipleFileField(
        allow_empty_file=True,  # whether an empty file means something is the format's call (an EvolIF log can be empty)
        widget=MultipleFileInput(attrs={"accept": ",".join(UPLOAD_SUFFIXES)}),
        help_text="One or more .json/.jsonl files (not compressed), read together in one all-or-nothing import. "
        "Add an ifportal-import.json manifest to say each file's model, run, judge and repetition.",
    )
    # labels from runs.ingest.options.OPTION_WORDS: the import's problems name a field by its label
    benchmark = forms.SlugField(
        required=False,
        label=OPTION_WORDS["benchmark"][0],
        help_text="Benchmark slug; default: the format's own (e.g. octobench).",
    )
    name = forms.CharField(
        required=False,
        max_length=200,
        label=OPTION_WORDS["name"][0],
        help_text="Display name of a benchmark this import creates; default: from the slug.",
    )
    model = forms.CharField(
        required=False,
        max_length=200,
        label=OPTION_WORDS["model"][0],
        help_text="Model name, where the files do not say.",
    )
    run = forms.CharField(
        required=False, max_length=200, label=OPTION_WORDS["run"][0], help_text="Run label; default: the model name."
    )
    judge = forms.CharField(
        required=False,
        max_length=200,
        label=OPTION_WORDS["judge"][0],
        help_text="Judge name, for verdicts (scores files).",
    )
    scaffold = forms.CharField(
        required=False, max_length=100, label=OPTION_WORDS["scaffold"][0], help_text="Scaffold the run used."
    )
    repetition = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_REPETITION,
        label=OPTION_WORDS["repetition"][0],
        help_text="Repetition number of the run (default 1).",
    )
    pass_threshold = forms.FloatField(
        required=False,
        label=OPTION_WORDS["pass_threshold"][0],
        help_text="Least score that passes, where scores are numbers "
        "other than 0 and 1 (inspect, lm-eval); stated on the run's pages.",
    )
    category_field = forms.CharField(
        required=False,
        max_length=100,
        label=OPTION_WORDS["category_field"][0],
        help_text="Sample metadata field whose value groups the instances (inspect, lm-eval); default: the task.",
    )

    def format_options(self) -> list[tuple[str, str, bool]]:
        """(name, description, checked) for each format, for the radio list."""
        current = self["format"].value()
        return [(name, FORMAT_DESCRIPTIONS.get(name, ""), name == current) for name in FORMATS]

    def clean_files(self):
        files = self.cleaned_data["files"]
        problem = upload_size_problem(files)
        if problem:
            raise forms.ValidationError(problem, code="too_large")
        problem = upload_type_problem(files)
        if problem:
            raise forms.ValidationError(problem, code="wrong_type")
        return files

    def save(self, *, user) -> Job | None:
        """Start the ingest job of this valid form; None, with the form's errors added, when its files cannot be
        imported with its options (`ImportRefused`: no job is created)."""
        data = self.cleaned_data
        try:
            return ingest_job_start(
                format_name=data["format"],
                files=data["files"],
                options={k: data.get(k) for k in OPTION_NAMES},
                user=user,
                surface="form",
            )
        except ImportRefused as refused:
            for name, messages in refused.errors.items():
                for message in messages:
                    self.add_error(name, message)
            return None


class JobFilterForm(forms.Form):
    """The jobs list's filter (in the query string)."""

    state = forms.ChoiceField(choices=[("", "all"), *JobState.choices], required=False)
