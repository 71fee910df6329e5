"""API routes, included at /api/ by ifportal/urls.py."""
from django.urls import path

from . import api, api_choice, api_dialogue, api_leaderboard
from . import api_hierarchy
from . import api_verdicts
from . import api_search

app_name = "api"
urlpatterns = [
    path("ingest/", api.IngestView.as_view(), name="ingest"),
    path("jobs/", api.JobListView.as_view(), name="job-list"),
    path("jobs/<uuid:pk>/", api.JobDetailView.as_view(), name="job-detail"),
    path("benchmarks/", api.BenchmarkListView.as_view(), name="benchmark-list"),
    path("runs/", api.RunListView.as_view(), name="run-list"),
    path("attempts/", api.AttemptListView.as_view(), name="attempt-list"),
    path("attempts/<int:pk>/verdicts/", api_leaderboard.AttemptVerdictListView.as_view(), name="attempt-verdicts"),
    path("leaderboards/<slug:slug>/", api_leaderboard.LeaderboardView.as_view(), name="leaderboard"),
    path("verdicts/", api_verdicts.VerdictStreamView.as_view(), name="verdicts"),
    path("choice-metrics/", api_choice.ChoiceMetricsView.as_view(), name="choice-metrics"),
    path("dialogue-metrics/", api_dialogue.DialogueMetricsView.as_view(), name="dialogue-metrics"),
    path("hierarchy/resolutions/", api_hierarchy.HierarchyResolutionsView.as_view(), name="hierarchy-resolutions"),
    path("hierarchy-metrics/", api_hierarchy.HierarchyMetricsView.as_view(), name="hierarchy-metrics"),
    path("search/", api_search.SearchView.as_view(), name="search"),
]
