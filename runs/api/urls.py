"""API routes, included at /api/ by ifportal/urls.py."""

from django.urls import path

from runs.api import checklist, choice, compare, conflict, core, dialogue, hierarchy, item_health, search, verdicts

app_name = "api"
urlpatterns = [
    path("ingest/", core.IngestView.as_view(), name="ingest"),
    path("jobs/", core.JobListView.as_view(), name="job-list"),
    path("jobs/<uuid:pk>/", core.JobDetailView.as_view(), name="job-detail"),
    path("benchmarks/", core.BenchmarkListView.as_view(), name="benchmark-list"),
    path("runs/", core.RunListView.as_view(), name="run-list"),
    path("attempts/", core.AttemptListView.as_view(), name="attempt-list"),
    path("attempts/<int:pk>/verdicts/", checklist.AttemptVerdictListView.as_view(), name="attempt-verdicts"),
    path("leaderboards/<slug:slug>/", checklist.LeaderboardView.as_view(), name="leaderboard"),
    path("compare/<slug:slug>/", compare.CompareView.as_view(), name="compare"),
    path("verdicts/", verdicts.VerdictStreamView.as_view(), name="verdicts"),
    path("item-health/<slug:slug>/", item_health.ItemHealthView.as_view(), name="item-health"),
    path("choice-metrics/", choice.ChoiceMetricsView.as_view(), name="choice-metrics"),
    path("conflict-metrics/", conflict.ConflictMetricsView.as_view(), name="conflict-metrics"),
    path("dialogue-metrics/", dialogue.DialogueMetricsView.as_view(), name="dialogue-metrics"),
    path("hierarchy/resolutions/", hierarchy.HierarchyResolutionsView.as_view(), name="hierarchy-resolutions"),
    path("hierarchy-metrics/", hierarchy.HierarchyMetricsView.as_view(), name="hierarchy-metrics"),
    path("search/", search.SearchView.as_view(), name="search"),
]
