"""Pages of the runs app. Each area keeps its routes together below its heading; a kind's pages are named
<kind>-<page> (checklist-leaderboard, dialogue-survival...), the pages of every kind plainly (attempt, share...)."""

from django.urls import path

from runs.views import (
    checklist,
    choice,
    compare,
    conflict,
    dialogue,
    hierarchy,
    home,
    item_health,
    jobs,
    recheck,
    search,
    sharing,
)
from runs.views import help as help_views

app_name = "runs"
urlpatterns = [
    # home, import, jobs
    path("", home.home, name="home"),
    path("import/", home.import_runs, name="import"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<uuid:job_id>/", jobs.job_detail, name="job"),
    path("jobs/<uuid:job_id>/retry/", jobs.job_retry, name="job-retry"),
    # help: how every number is computed (docs/metrics.md), open to share-link viewers too
    path("help/metrics/", help_views.metrics, name="help-metrics"),
    # checklist benchmarks (leaderboards, drill-down, attempts, instances, compare, share)
    path("b/<slug:slug>/leaderboard/", checklist.leaderboard, name="checklist-leaderboard"),
    path("b/<slug:slug>/attempts/", checklist.attempts, name="checklist-attempts"),
    path("b/<slug:slug>/judges/", checklist.judges, name="checklist-judges"),
    path("b/<slug:slug>/length/", checklist.length, name="checklist-length"),
    path("b/<slug:slug>/items/", item_health.health, {"kind": "checklist"}, name="checklist-item-health"),
    # the compare page of every kind (runs.views.compare; a checklist benchmark's also lists the items that flipped)
    path("b/<slug:slug>/compare/", compare.compare, name="checklist-compare"),
    path("attempts/<int:pk>/", checklist.attempt, name="attempt"),
    path("attempts/<int:pk>/text/", checklist.message_text, name="attempt-text"),
    path("attempts/<int:pk>/judge-reply/", checklist.judge_reply_text, name="attempt-judge-reply"),
    path("instances/<int:pk>/", checklist.instance, name="instance"),
    path("instances/<int:pk>/compare/", checklist.attempt_compare, name="instance-compare"),
    # share links and exports (public s/<token>/ pages need no login; the token is the credential)
    path("b/<slug:slug>/share/", sharing.share_create, name="share-create"),
    path("b/<slug:slug>/share-page/", sharing.page_share_create, name="page-share-create"),
    path("share-links/", sharing.share_list, name="share-list"),
    path("share-links/<int:pk>/revoke/", sharing.share_revoke, name="share-revoke"),
    path("s/<str:token>/", sharing.shared_leaderboard, name="share"),
    path("s/<str:token>/export/", sharing.shared_export, name="share-export"),
    path("s/<str:token>/attempts/", sharing.shared_attempts, name="share-attempts"),
    path("s/<str:token>/attempts/<int:pk>/", sharing.shared_attempt, name="share-attempt"),
    path("s/<str:token>/attempts/<int:pk>/text/", sharing.shared_attempt_text, name="share-attempt-text"),
    # dialogue benchmarks (metrics, survival, constraint groups, dialogue viewer, re-check)
    path("b/<slug:slug>/dialogue/", dialogue.metrics, name="dialogue-metrics"),
    path("b/<slug:slug>/dialogue/survival/", dialogue.survival, name="dialogue-survival"),
    path("b/<slug:slug>/dialogue/groups/", dialogue.groups, name="dialogue-groups"),
    path("b/<slug:slug>/dialogue/items/", item_health.health, {"kind": "dialogue"}, name="dialogue-item-health"),
    path("b/<slug:slug>/dialogue/dialogues/", dialogue.dialogues, name="dialogue-list"),
    path("b/<slug:slug>/dialogue/dialogues/<int:pk>/", dialogue.viewer, name="dialogue-viewer"),
    path("b/<slug:slug>/dialogue/rescore/", dialogue.recheck, name="dialogue-rescore"),
    path("b/<slug:slug>/dialogue/rescore/start/", recheck.start, {"kind": "dialogue"}, name="dialogue-rescore-start"),
    # hierarchy benchmarks (metrics, conflict resolution, samples, style re-check)
    path("b/<slug:slug>/hierarchy/", hierarchy.metrics, name="hierarchy-metrics"),
    path("b/<slug:slug>/hierarchy/conflicts/", hierarchy.conflicts, name="hierarchy-conflicts"),
    path("b/<slug:slug>/hierarchy/items/", item_health.health, {"kind": "hierarchy"}, name="hierarchy-item-health"),
    path("b/<slug:slug>/hierarchy/recheck/", hierarchy.recheck, name="hierarchy-recheck"),
    path(
        "b/<slug:slug>/hierarchy/recheck/start/", recheck.start, {"kind": "hierarchy"}, name="hierarchy-recheck-start"
    ),
    path("b/<slug:slug>/hierarchy/attempts/<int:pk>/", hierarchy.sample, name="hierarchy-attempt"),
    # choice benchmarks (metrics, confusion, rules, task viewer)
    path("b/<slug:slug>/choice/", choice.metrics, name="choice-metrics"),
    path("b/<slug:slug>/choice/confusion/", choice.confusion, name="choice-confusion"),
    path("b/<slug:slug>/choice/rules/", choice.rules, name="choice-rules"),
    path("b/<slug:slug>/choice/tasks/", choice.tasks, name="choice-tasks"),
    path("b/<slug:slug>/choice/items/", item_health.health, {"kind": "choice"}, name="choice-item-health"),
    path("b/<slug:slug>/choice/tasks/<str:external_id>/", choice.task, name="choice-task"),
    # conflict benchmarks (resolution rates per type, SP rate per scenario, drill-down to attempts)
    path("b/<slug:slug>/conflict/", conflict.metrics, name="conflict-metrics"),
    path("b/<slug:slug>/conflict/items/", item_health.health, {"kind": "conflict"}, name="conflict-item-health"),
    # search across every transcript of a benchmark (any kind)
    path("b/<slug:slug>/search/", search.search, name="search"),
]
