"""REST API: ingest uploads as jobs, job status, and lists of benchmarks, runs and attempts."""

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from runs import selectors
from runs.access import blind_safe, job_for, writes
from runs.forms import ImportRefused, ingest_job_start, request_size_problem, upload_type_problem
from runs.jobs import job_check_alive
from runs.selectors.state import control_character_errors
from runs.serializers import (
    AttemptFilterSerializer,
    AttemptSerializer,
    BenchmarkSerializer,
    IngestInputSerializer,
    JobCreatedSerializer,
    JobSerializer,
    RunFilterSerializer,
    RunSerializer,
)


class PageQueryView(APIView):
    """An API view that answers a page's query string with the page's data (one per kind): a parameter holding a
    control character, which the page leaves out with a note, is refused here with the same words (400) before the
    view looks anything up (PostgreSQL refuses NUL in text)."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if refused := control_character_errors(request.query_params):
            raise ValidationError(refused)


@writes
class IngestView(APIView):  # not blind_safe: a blind annotator is refused too (runs.access)
    """Start an ingest job from uploaded files (editors and leads: runs.access.writes)."""

    parser_classes = [MultiPartParser, FormParser]
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="ingest_create",
        request={"multipart/form-data": IngestInputSerializer},
        responses={
            202: JobCreatedSerializer,
            400: OpenApiResponse(
                description="Invalid format, options or files (only .json/.jsonl/.ndjson text; "
                "no compressed files or archives)."
            ),
            403: OpenApiResponse(description="The user may not write (only editors and leads import)."),
            413: OpenApiResponse(description="The upload is larger than IFPORTAL_MAX_UPLOAD_BYTES."),
        },
        description="Upload files of one format; answers 202 with the job to poll (GET its url).",
    )
    def post(self, request):
        too_large = request_size_problem(request)
        if too_large:  # runs.middleware.UploadLimitMiddleware refuses it first; kept for callers without it
            return Response({"files": [too_large]}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        data = IngestInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        wrong_type = upload_type_problem(values["files"])
        if wrong_type:
            return Response({"files": [wrong_type]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            job = ingest_job_start(
                format_name=values.pop("format"),
                files=values.pop("files"),
                paths=values.pop("paths", None),
                options=values,
                user=request.user,
                surface="api",
            )
        except ImportRefused as refused:  # a manifest that does not fit, an option no file says: no job
            return Response(refused.errors, status=status.HTTP_400_BAD_REQUEST)
        url = request.build_absolute_uri(reverse("api:job-detail", kwargs={"pk": job.pk}))
        job.refresh_from_db(fields=["state"])
        body = JobCreatedSerializer({"id": job.id, "url": url, "state": job.state}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


@blind_safe
class JobDetailView(generics.RetrieveAPIView):
    """A job's state, progress, counts and problems."""

    serializer_class = JobSerializer

    def get_object(self):
        return job_check_alive(job_for(self.request, self.kwargs["pk"]))


@blind_safe
class JobListView(generics.ListAPIView):
    """Recent jobs, newest first."""

    serializer_class = JobSerializer

    def get_queryset(self):
        return selectors.jobs_recent()


@blind_safe
class BenchmarkListView(generics.ListAPIView):
    """Every benchmark with its instance and run counts."""

    serializer_class = BenchmarkSerializer

    def get_queryset(self):
        return selectors.benchmarks_list()


@blind_safe
class RunListView(generics.ListAPIView):
    """Runs, filtered by benchmark slug and model name."""

    serializer_class = RunSerializer

    @extend_schema(parameters=[RunFilterSerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = RunFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return selectors.runs_list(**filters.validated_data)


class AttemptListView(generics.ListAPIView):
    """Attempts (without trajectories), filtered by benchmark slug, run label and instance external id."""

    serializer_class = AttemptSerializer

    @extend_schema(parameters=[AttemptFilterSerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = AttemptFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return selectors.attempts_list(**filters.validated_data)
