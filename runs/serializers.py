"""API serializers: input serializers validate requests, output serializers shape responses."""

from __future__ import annotations

import math
from dataclasses import asdict

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from runs.forms import FORMAT_DESCRIPTIONS, MAX_REPETITION, upload_paths_problem, upload_size_problem
from runs.ingest import FORMATS
from runs.models import Attempt, Benchmark, Job, JudgeReport, Run
from runs.selectors import job_status


# input --------------------------------------------------------------------------------
class IngestInputSerializer(serializers.Serializer):
    """multipart/form-data of POST /api/ingest/."""

    format = serializers.ChoiceField(
        choices=list(FORMATS),
        help_text="One of: " + "; ".join(f"{k}: {v}" for k, v in FORMAT_DESCRIPTIONS.items()),
        error_messages={"invalid_choice": '"{input}" is not an ingest format; use one of: ' + ", ".join(FORMATS) + "."},
    )
    files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True),
        allow_empty=False,  # an empty file is a format's call (EvolIF logs)
        help_text="One or more files (repeat the 'files' field), read together in one all-or-nothing import.",
        error_messages={"empty": "Send at least one file in the 'files' field."},
    )
    paths = serializers.ListField(
        child=serializers.CharField(max_length=500),
        required=False,
        help_text="Optional, one per file in the same order (repeat the 'paths' field): the file's path in the results "
        "folder, e.g. gpt-4o/rep2/scores_judge-a.json; the folder layout then says model, repetition and "
        "judge as for `manage.py ingest FORMAT FOLDER` (docs/formats.md).",
    )
    benchmark = serializers.SlugField(
        required=False, allow_blank=True, help_text="Benchmark slug; default: the format's own."
    )
    name = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Display name of a benchmark this import creates; default: from the slug.",
    )
    model = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Model name, where the files do not say."
    )
    run = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Run label; default: the model name."
    )
    judge = serializers.CharField(
        required=False, allow_blank=True, max_length=200, help_text="Judge name for verdicts."
    )
    scaffold = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="Scaffold the run used."
    )
    repetition = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_REPETITION, help_text="Repetition number of the run (default 1)."
    )
    pass_threshold = serializers.FloatField(
        required=False,
        help_text="Least score that passes, where scores are numbers other than 0 and 1 (inspect, lm-eval).",
    )
    category_field = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="Sample metadata field whose value groups the instances (inspect, lm-eval); default: the task.",
    )

    def validate_pass_threshold(self, value):
        if value is not None and not math.isfinite(value):
            raise serializers.ValidationError("A pass threshold is a finite number.")
        return value

    def validate_files(self, files):
        problem = upload_size_problem(files)
        if problem:
            raise serializers.ValidationError(problem)
        return files

    def validate(self, attrs):
        problem = upload_paths_problem(attrs.get("files", []), attrs.get("paths"))
        if problem:
            raise serializers.ValidationError({"paths": [problem]})
        return attrs


class RunFilterSerializer(serializers.Serializer):
    """Query parameters of GET /api/runs/."""

    benchmark = serializers.CharField(required=False, help_text="Benchmark slug.")
    model = serializers.CharField(required=False, help_text="Model name.")


class AttemptFilterSerializer(serializers.Serializer):
    """Query parameters of GET /api/attempts/."""

    benchmark = serializers.CharField(required=False, help_text="Benchmark slug.")
    run = serializers.CharField(required=False, help_text="Run label (with benchmark, one run).")
    instance = serializers.CharField(required=False, help_text="Instance external id.")


# output -------------------------------------------------------------------------------
class JobCreatedSerializer(serializers.Serializer):
    """The answer to an accepted ingest: where to follow the job."""

    id = serializers.UUIDField()
    url = serializers.URLField(help_text="GET this for the job's state and progress.")
    state = serializers.CharField()


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(
        help_text="How much is done, in `unit`: an import's bytes read, a re-check's attempts checked."
    )
    total = serializers.IntegerField(help_text="How much there is to do, in `unit`.")
    percent = serializers.FloatField(help_text="done / total in percent, two decimals; 100 once succeeded.")
    unit = serializers.CharField(
        allow_null=True,
        help_text='What done and total count: "bytes" (ingest), '
        '"attempts checked" (recheck), or null for a job that reports no progress.',
    )


class JobSerializer(serializers.ModelSerializer):
    """A job's state, live progress, counts and problems."""

    url = serializers.SerializerMethodField()
    format = serializers.SerializerMethodField()
    options = serializers.SerializerMethodField()
    file_names = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    counts = serializers.JSONField(help_text="created/updated/unchanged/rejected and by_kind {kind: {outcome: n}}.")
    errors = serializers.ListField(
        child=serializers.CharField(), help_text="The first problems as 'file:line: reason'."
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "url",
            "kind",
            "state",
            "format",
            "options",
            "file_names",
            "progress",
            "counts",
            "errors",
            "error_count",
            "message",
            "retry_may_fix",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_url(self, job: Job) -> str:
        path = reverse("api:job-detail", kwargs={"pk": job.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_format(self, job: Job) -> str | None:
        return job.params.get("format")

    def get_options(self, job: Job) -> dict[str, str]:
        return job.params.get("options", {})

    def get_file_names(self, job: Job) -> list[str]:
        return [f.get("name", "") for f in job.files]

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, job: Job) -> dict:
        status = job_status(job)
        return {"done": status.done, "total": status.total, "percent": status.percent, "unit": status.unit}


class BenchmarkSerializer(serializers.ModelSerializer):
    n_instances = serializers.IntegerField(read_only=True)
    n_runs = serializers.IntegerField(read_only=True)

    class Meta:
        model = Benchmark
        fields = ["slug", "name", "kind", "version", "description", "n_instances", "n_runs", "created_at"]
        read_only_fields = fields


class RunSerializer(serializers.ModelSerializer):
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    model = serializers.SlugRelatedField(slug_field="name", read_only=True)
    n_attempts = serializers.IntegerField(read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "benchmark",
            "label",
            "model",
            "repetition",
            "scaffold",
            "settings",
            "sources",
            "n_attempts",
            "created_at",
        ]
        read_only_fields = fields


class JudgeReportSerializer(serializers.ModelSerializer):
    """What one judge's scores file said about the attempt as a whole (OctoBench: evaluate.py's result record)."""

    judge = serializers.CharField(source="judge.name", read_only=True)
    status = serializers.CharField(
        read_only=True,
        help_text="scored, or why nothing was scored: not_json (the judge's "
        "reply was not JSON), error (its reply was read as an error), no_checks, failed "
        "(the judge API call failed).",
    )
    raw_reply = serializers.CharField(read_only=True, help_text="The judge's raw reply, when it could not be read.")
    unrecognised = serializers.DictField(
        read_only=True, help_text="check id -> the result string evaluate.py does not recognise (counted as failed)."
    )

    class Meta:
        model = JudgeReport
        fields = ["judge", "status", "error", "raw_reply", "reward", "binary_reward", "unrecognised", "extra_checks"]
        read_only_fields = fields


class AttemptSerializer(serializers.ModelSerializer):
    """An attempt without its trajectory (its size is given instead)."""

    benchmark = serializers.CharField(source="run.benchmark.slug", read_only=True)
    run = serializers.CharField(source="run.label", read_only=True)
    model = serializers.CharField(source="run.model.name", read_only=True)
    instance = serializers.CharField(source="instance.external_id", read_only=True)
    message_count = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="Messages in the trajectory; null without one."
    )
    trajectory_bytes = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="Size of the trajectory; null without one."
    )
    judge_reports = JudgeReportSerializer(
        many=True,
        read_only=True,
        help_text="Per judge: the reward and binary "
        "reward its scores file wrote, and why it scored nothing when it did not.",
    )

    class Meta:
        model = Attempt
        fields = [
            "id",
            "benchmark",
            "run",
            "model",
            "instance",
            "response",
            "outcome",
            "assistant_turns",
            "message_count",
            "trajectory_bytes",
            "judge_reports",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


def health_flags_field() -> serializers.ListField:
    """The `health` parameter of every kind's leaderboard API: item health flags whose items are left out too,
    composed with the audit policy `exclude` (runs.exclusions)."""
    return serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Item health flag whose items are also left out; repeat for several: floor, ceiling, "
        "low-discrimination, negative-discrimination, judge-split, annotators, any. Composes with exclude: the "
        "items left out are the union, and `exclude` in the answer names every part (e.g. "
        "flagged_by_either+health:floor).",
    )


def exclusion_effect_data(exclusion: dict | None) -> dict | None:
    """What an exclusion policy did to a kind's ranking (runs.exclusions.exclusion_box), as its API answers it:
    Kendall's tau, each row's score and rank before and after, and the pairs that swapped; None without a policy."""
    if exclusion is None:
        return None
    return {
        "tau": exclusion["tau"],
        "ranks": [asdict(line) | {"rank_change": line.rank_change} for line in exclusion["lines"].values()],
        "swaps": [{"up": s["up"], "down": s["down"]} for s in exclusion["swaps"]],
    }
