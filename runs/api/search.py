"""GET /api/search/: the transcript search of the page /b/<slug>/search/ as JSON (selector: `runs.search.search`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from runs import search as s
from runs.access import benchmark_for
from runs.models import VerdictResult
from runs.querystring import params_with


class SearchQuerySerializer(serializers.Serializer):
    """Query parameters of GET /api/search/ (documentation; `runs.search.search_query_of` reads them)."""

    benchmark = serializers.SlugField(help_text="Benchmark slug.")
    q = serializers.CharField(
        min_length=s.MIN_QUERY,
        max_length=s.MAX_QUERY,
        help_text=f"What to find ({s.MIN_QUERY} to {s.MAX_QUERY} characters).",
    )
    mode = serializers.ChoiceField(
        choices=s.MODES,
        required=False,
        help_text="text (default): these characters in this order, ignoring case. "
        "words: every word (whitespace-separated), in any order, ignoring case.",
    )
    source = serializers.ListField(
        child=serializers.ChoiceField(choices=s.SOURCES),
        required=False,
        help_text="message, response or reasoning; repeat for several (default: all).",
    )
    run = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Run label; repeat for several."
    )
    model = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Model name; repeat for several."
    )
    judge = serializers.CharField(required=False, help_text="Judge name.")
    verdict = serializers.ChoiceField(
        choices=VerdictResult.values,
        required=False,
        help_text="Reasoning of verdicts with this result; messages and responses of "
        "attempts with such a verdict (of the judge and item, if given).",
    )
    item = serializers.CharField(required=False, help_text="Checklist item key (as judge and verdict).")
    after = serializers.CharField(required=False, help_text="The `next` cursor of the previous page.")
    count = serializers.BooleanField(
        required=False,
        help_text="1: count the hits of every page (`total`), for at "
        "most the count's time limit; without it `total` is "
        "null unless this page holds every hit.",
    )


class SearchHitSerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=s.SOURCES)
    attempt = serializers.IntegerField(source="attempt_id")
    run = serializers.CharField()
    model = serializers.CharField()
    instance = serializers.CharField(help_text="The instance's external id.")
    thread = serializers.IntegerField(allow_null=True, help_text="Messages: the thread (0 = main agent).")
    message = serializers.IntegerField(allow_null=True, help_text="Messages: the index in its thread.")
    turn = serializers.IntegerField(allow_null=True, help_text="Dialogue turn, when known.")
    item = serializers.CharField(help_text="Reasoning: the item's key.")
    judge = serializers.CharField(help_text="Reasoning: the judge.")
    result = serializers.CharField(help_text="Reasoning: the verdict (pass, fail, na).")
    snippet = serializers.SerializerMethodField(
        help_text="The text around the hit (untrusted model output: escape it)."
    )
    matches = serializers.SerializerMethodField(help_text="[start, end) character offsets of the matches in snippet.")
    url = serializers.CharField(help_text="The portal page of the attempt, at the hit.")

    def get_snippet(self, hit) -> str:
        return "".join(part for part, _ in hit.segments)

    def get_matches(self, hit) -> list[list[int]]:
        out, at = [], 0
        for part, is_match in hit.segments:
            if is_match:
                out.append([at, at + len(part)])
            at += len(part)
        return out


class SearchPageSerializer(serializers.Serializer):
    results = SearchHitSerializer(many=True)
    next = serializers.CharField(allow_null=True, help_text="The URL of the next page; null on the last.")
    partial = serializers.BooleanField(
        help_text="The time limit cut the search short: `results` are the hits found "
        "by then, `next` goes on after them; narrow the search to get all."
    )
    total = serializers.IntegerField(
        allow_null=True,
        help_text="How many hits the search has on every page (at "
        "least this many when `total_exact` is false: counting or the search was cut "
        "short); null when not counted (ask with count=1).",
    )
    total_exact = serializers.BooleanField()
    reasoning_pending = serializers.IntegerField(
        help_text="Attempts stored in the last moments whose judge reasoning is not in the search index yet "
        "(at most 10,001: more than 10,000 when so); the search reads it from the verdicts meanwhile, "
        "more slowly. 0 once the index has caught up."
    )


class SearchView(APIView):
    """Text across every trajectory message, response and judge's reasoning of a benchmark, a page at a time."""

    permission_classes = [IsAuthenticated]  # not blind_safe: blind annotators are refused by runs.access

    @extend_schema(
        operation_id="search",
        parameters=[SearchQuerySerializer],
        responses={
            200: SearchPageSerializer,
            400: OpenApiResponse(
                description="A parameter is missing or malformed, or the search took longer than "
                "the time limit (narrow it); `detail` says which."
            ),
            401: OpenApiResponse(description="No valid token or session."),
            403: OpenApiResponse(description="Blind annotators may not read verdicts, reasoning or trajectories."),
            404: OpenApiResponse(description="No benchmark with this slug."),
            429: OpenApiResponse(
                description="As many searches as the server runs at once are running (the embedded "
                "SQLite); try again after `Retry-After` seconds."
            ),
        },
        description=f"Up to {s.PAGE_SIZE} hits per page, messages first, then responses, then reasoning, each "
        "with the text around it, the match offsets and the page of the attempt at the hit. "
        "Example: `/api/search/?benchmark=octobench&q=git%20push%20--force&verdict=fail`.",
    )
    def get(self, request):
        slug = request.query_params.get("benchmark", "")
        if not slug:
            return Response({"detail": "benchmark is required (a slug)."}, status=status.HTTP_400_BAD_REQUEST)
        benchmark = benchmark_for(request, slug)
        try:
            query = s.search_query_of(request.query_params)
            page = s.search(benchmark, query)
            if page.total is None and request.query_params.get("count") in ("1", "true"):
                page.total, page.total_exact = s.hits_total(benchmark, query, known=page.known)
        except (s.SearchRefused, s.SearchTooSlow) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except s.SearchBusy as exc:
            return Response(
                {"detail": str(exc)},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(exc.retry_after)},
            )
        next_url = None
        if page.next_after:
            next_url = request.build_absolute_uri("?" + params_with(request.query_params, after=page.next_after))
        return Response(
            SearchPageSerializer(
                {
                    "results": page.hits,
                    "next": next_url,
                    "partial": page.partial,
                    "total": page.total,
                    "total_exact": page.total_exact,
                    "reasoning_pending": page.reasoning_pending,
                }
            ).data
        )
