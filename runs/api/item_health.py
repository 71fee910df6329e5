"""GET /api/item-health/<slug>/: the item health page's items and instances, for the same query."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.access import benchmark_for
from runs.selectors.item_health import item_health_page


class ItemHealthView(APIView):
    """Per item and per instance: pass rate and interval, judge split, rest correlation, 2PL fit, audit labels
    and flags, filtered and sorted as the page is by ?flag=, ?category=, ?check_type= and ?sort=."""

    @extend_schema(
        operation_id="item_health_retrieve",
        responses={
            200: OpenApiResponse(
                description="{benchmark, unit, models, irt_fitted, state, flag_counts, items, instances}"
            ),
            400: OpenApiResponse(
                description="A parameter names a flag, category, kind of check or sort the page "
                "does not offer, as {parameter: [the page's words]}."
            ),
            404: OpenApiResponse(description="No benchmark has this slug."),
        },
        description="Item health (/help/metrics/#item-health): unit 'item' lists checklist items, 'task' a choice "
        "benchmark's tasks (then instances is empty). Refused to blind annotators: every figure is a "
        "verdict aggregate of single items.",
    )
    def get(self, request, slug):
        benchmark = benchmark_for(request, slug)
        page = item_health_page(benchmark, request.query_params)
        if page.errors:
            return Response(page.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            {
                "benchmark": benchmark.slug,
                "unit": page.report.unit,
                "models": page.report.models,
                "irt_fitted": page.report.fitted,
                "state": page.state,
                "flag_counts": page.flag_counts,
                "items": [asdict(i) for i in page.items],
                "instances": [asdict(s) for s in page.report.instances],
            }
        )
