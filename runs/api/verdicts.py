"""GET /api/verdicts/: the verdicts of some runs (and judges) streamed as JSON lines or CSV, for scripts and notebooks.

Rows are read with `.iterator(chunk_size=CHUNK)` and written out chunk by chunk through a
StreamingHttpResponse, so a million verdicts cost the server a chunk's worth of memory,
not the whole answer. Auth is the API's own (token or session), via DRF.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import renderers, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.models import Judge, Run, Verdict
from runs.pages import csv_safe

CHUNK = 2000  # rows per database fetch and per streamed piece
COLUMNS = (
    "benchmark",
    "run",
    "model",
    "attempt",
    "instance",
    "item",
    "category",
    "check_type",
    "judge",
    "result",
    "reasoning",
)
_FIELDS = (
    "attempt__run__benchmark__slug",
    "attempt__run__label",
    "attempt__run__model__name",
    "attempt_id",
    "attempt__instance__external_id",
    "item__key",
    "item__category",
    "item__check_type",
    "judge__name",
    "result",
    "reasoning",
)


class JSONLinesRenderer(renderers.BaseRenderer):
    """application/x-ndjson: one JSON object per line (errors are one line too)."""

    media_type = "application/x-ndjson"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")


class CSVRenderer(renderers.BaseRenderer):
    """text/csv: a header line, then one line per row (an error is a one-column table)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["error"])
        writer.writerow([csv_safe(json.dumps(data, ensure_ascii=False))])
        return out.getvalue().encode("utf-8")


class VerdictQuerySerializer(serializers.Serializer):
    """Query parameters of GET /api/verdicts/."""

    run = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Run label; repeat for several (default: every run)."
    )
    judge = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Judge name; repeat for several (default: every judge).",
    )
    benchmark = serializers.CharField(required=False, help_text="Benchmark slug: only runs of this benchmark.")
    format = serializers.ChoiceField(
        choices=["jsonl", "csv"],
        required=False,
        help_text="jsonl (default) or csv; an Accept header of text/csv works too.",
    )


class VerdictStreamView(APIView):
    """Every verdict of the chosen runs and judges, streamed: JSON lines by default, CSV with ?format=csv."""

    renderer_classes = [JSONLinesRenderer, CSVRenderer]

    @extend_schema(
        operation_id="verdicts_stream",
        parameters=[VerdictQuerySerializer],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR,
                description="One JSON object per line with the keys " + ", ".join(COLUMNS) + ".",
                examples=[
                    OpenApiExample(
                        "a verdict",
                        value={
                            "benchmark": "octobench",
                            "run": "model-x #1",
                            "model": "model-x",
                            "attempt": 17,
                            "instance": "repo-fix-001",
                            "item": "SP_01",
                            "category": "System Prompt",
                            "check_type": "compliance",
                            "judge": "gpt-4.1",
                            "result": "fail",
                            "reasoning": "Violated at turn 8.",
                        },
                    )
                ],
            ),
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="A header line (" + ",".join(COLUMNS) + ") then one line per verdict; "
                "cells starting with = + - @ are prefixed with ' so spreadsheets do not run them.",
            ),
            400: OpenApiResponse(description="A parameter is malformed, or names a run or judge that does not exist."),
            401: OpenApiResponse(description="No valid token or session."),
        },
        description="Verdicts (pass, fail, na) with run, model, instance external id, item key, category, check type, "
        "judge and reasoning, grouped by attempt. Streamed: memory stays flat however many rows match. "
        "Example: `curl -H 'Authorization: Token …' '/api/verdicts/?run=model-x%20%231&judge=gpt-4.1&format=csv'`.",
    )
    def get(self, request):
        query = VerdictQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        problems = _unknown(params)
        if problems:
            return Response(problems, status=status.HTTP_400_BAD_REQUEST)
        rows = _verdict_rows(params)
        if request.accepted_renderer.format == "csv":
            response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = 'attachment; filename="verdicts.csv"'
            return response
        return StreamingHttpResponse(_json_lines(rows), content_type="application/x-ndjson; charset=utf-8")


def _unknown(params: dict) -> dict:
    """{parameter: [names that match nothing]} for run labels and judge names; {} when all exist."""
    problems = {}
    runs = Run.objects.all()
    if params.get("benchmark"):
        runs = runs.filter(benchmark__slug=params["benchmark"])
    for name, qs, field in (("run", runs, "label"), ("judge", Judge.objects.all(), "name")):
        wanted = set(params.get(name) or [])
        if wanted:
            missing = wanted - set(qs.filter(**{f"{field}__in": wanted}).values_list(field, flat=True))
            if missing:
                problems[name] = [f"unknown {name} '{m}'" for m in sorted(missing)]
    if params.get("benchmark") and not runs.exists():
        problems["benchmark"] = [f"no runs in benchmark '{params['benchmark']}'"]
    return problems


def _verdict_rows(params: dict) -> Iterator[tuple]:
    """The matching verdicts as tuples in COLUMNS order, fetched CHUNK rows at a time, in (attempt, item, judge) order."""
    qs = Verdict.objects.all()
    if params.get("run"):
        qs = qs.filter(attempt__run__label__in=params["run"])
    if params.get("benchmark"):
        qs = qs.filter(attempt__run__benchmark__slug=params["benchmark"])
    if params.get("judge"):
        qs = qs.filter(judge__name__in=params["judge"])
    return qs.order_by("attempt_id", "item_id", "judge_id").values_list(*_FIELDS).iterator(chunk_size=CHUNK)


def _json_lines(rows: Iterable[tuple]) -> Iterator[str]:
    """JSON lines, CHUNK rows per piece."""
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps(dict(zip(COLUMNS, row)), ensure_ascii=False))
        if len(lines) >= CHUNK:
            yield "\n".join(lines) + "\n"
            lines = []
    if lines:
        yield "\n".join(lines) + "\n"


def _csv_lines(rows: Iterable[tuple]) -> Iterator[str]:
    """CSV with a header, CHUNK rows per piece; formula-like cells neutralised (runs.pages.csv_safe)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for n, row in enumerate(rows, 1):
        writer.writerow(["" if cell is None else csv_safe(cell) for cell in row])
        if n % CHUNK == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()
