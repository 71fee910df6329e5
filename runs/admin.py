"""Admin: a maintenance view of the stored rows; large JSON (specs, trajectories) stays out of the lists.

Edits and deletions of rows that leaderboards read rebuild the rollups of the attempts they
touch and bump their benchmarks' data generation (cached leaderboards are keyed by it).
"""

from django.contrib import admin
from django.db import transaction
from django.utils import timezone

from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Job, Judge, Run, ShareLink, Verdict
from runs.services import leaderboard_data_changed
from runs.sharing import REVOKED_DROPS, share_link_status


class LeaderboardRowsAdmin(admin.ModelAdmin):
    """An admin whose rows feed leaderboards; subclasses say which attempts and benchmarks rows concern."""

    #: (verdict-bearing attempts lookup, benchmark lookup) from this model, for values_list on a queryset
    attempt_path: str | None = None
    benchmark_path: str = ""

    def _concerned(self, queryset) -> tuple[set[int], set[int]]:
        attempts = (
            set(queryset.filter(**{f"{self.attempt_path}__isnull": False}).values_list(self.attempt_path, flat=True))
            if self.attempt_path
            else set()
        )
        return attempts, set(queryset.values_list(self.benchmark_path, flat=True))

    def _one(self, obj) -> tuple[set[int], set[int]]:
        return self._concerned(type(obj).objects.filter(pk=obj.pk))

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            before = self._one(obj) if change else (set(), set())
            super().save_model(request, obj, form, change)
            after = self._one(obj)
            leaderboard_data_changed(attempt_ids=before[0] | after[0], benchmark_ids=before[1] | after[1])

    def delete_model(self, request, obj):
        with transaction.atomic():
            attempts, benchmarks = self._one(obj)
            super().delete_model(request, obj)
            leaderboard_data_changed(attempt_ids=attempts, benchmark_ids=benchmarks)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            attempts, benchmarks = self._concerned(queryset)
            super().delete_queryset(request, queryset)
            leaderboard_data_changed(attempt_ids=attempts, benchmark_ids=benchmarks)


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "kind", "version", "created_at"]
    list_filter = ["kind"]
    search_fields = ["slug", "name"]
    readonly_fields = ["data_generation"]

    def save_model(self, request, obj, form, change):
        if change:  # never write back data_generation: a bump made while the form was open would be undone
            obj.save(
                update_fields=[
                    f.name for f in obj._meta.concrete_fields if not f.primary_key and f.name != "data_generation"
                ]
            )
        else:
            super().save_model(request, obj, form, change)


@admin.register(Instance)
class InstanceAdmin(LeaderboardRowsAdmin):
    benchmark_path = "benchmark_id"

    list_display = ["external_id", "benchmark", "primary_category", "scaffold", "updated_at"]
    list_filter = ["benchmark"]
    list_select_related = ["benchmark"]
    search_fields = ["external_id"]
    raw_id_fields = ["benchmark"]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        return qs.defer("spec") if request.resolver_match.url_name.endswith("changelist") else qs


@admin.register(ChecklistItem)
class ChecklistItemAdmin(LeaderboardRowsAdmin):
    attempt_path = "verdicts__attempt_id"
    benchmark_path = "instance__benchmark_id"
    list_display = ["key", "instance", "category", "check_type", "group", "turn"]
    list_select_related = ["instance"]
    search_fields = ["key", "instance__external_id", "description"]
    raw_id_fields = ["instance"]


@admin.register(AgentModel)
class AgentModelAdmin(admin.ModelAdmin):
    list_display = ["name", "display_name"]
    search_fields = ["name", "display_name"]


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "kind"]
    list_filter = ["kind"]
    search_fields = ["name"]


@admin.register(Run)
class RunAdmin(LeaderboardRowsAdmin):
    attempt_path = "attempts__id"
    benchmark_path = "benchmark_id"
    list_display = ["label", "benchmark", "model", "repetition", "scaffold", "created_at"]
    list_filter = ["benchmark"]
    list_select_related = ["benchmark", "model"]
    search_fields = ["label", "model__name"]
    raw_id_fields = ["benchmark", "model"]


@admin.register(Attempt)
class AttemptAdmin(LeaderboardRowsAdmin):
    attempt_path = "id"
    benchmark_path = "run__benchmark_id"
    list_display = ["id", "run", "instance", "assistant_turns", "updated_at"]
    list_select_related = ["run", "instance"]
    search_fields = ["run__label", "instance__external_id"]
    raw_id_fields = ["run", "instance"]


@admin.register(Verdict)
class VerdictAdmin(LeaderboardRowsAdmin):
    attempt_path = "attempt_id"
    benchmark_path = "attempt__run__benchmark_id"
    list_display = ["id", "attempt", "item", "judge", "result"]
    list_filter = ["result", "judge"]
    list_select_related = ["attempt", "item", "judge"]
    raw_id_fields = ["attempt", "item", "judge"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "state", "created_by", "created_at", "finished_at", "error_count"]
    list_filter = ["state", "kind"]
    list_select_related = ["created_by"]
    readonly_fields = [f.name for f in Job._meta.fields]


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    """Every user's share links: an admin revokes a leaked one (its owner's own list only shows theirs).
    Read-only otherwise; the token itself is never stored, only its SHA-256."""

    list_display = ["id", "benchmark", "created_by", "scope", "status", "created_at", "expires_at", "revoked_at"]
    list_filter = ["scope", "benchmark", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["benchmark", "created_by"]
    search_fields = ["created_by__username", "benchmark__slug"]
    fields = ["benchmark", "created_by", "scope", "state", "data_version", "created_at", "expires_at", "revoked_at"]
    readonly_fields = fields
    actions = ["revoke"]

    @admin.display(description="status")
    def status(self, link: ShareLink) -> str:
        return share_link_status(link)

    @admin.action(description="Revoke the selected share links")
    def revoke(self, request, queryset):
        n = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now(), **REVOKED_DROPS)
        self.message_user(request, f"Revoked {n} share link(s); their URLs now answer 404.")

    def has_add_permission(self, request) -> bool:
        return False  # links are made from a leaderboard's Share form, which computes the snapshot
