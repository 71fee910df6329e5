"""Admin views of audit records (read mostly; the workflow lives in the audit pages)."""

from django.contrib import admin

from audits.models import Adjudication, Assignment, AuditUnit, Campaign, Label


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "subject", "state", "size", "seed", "allocation", "created_at")
    list_filter = ("subject", "state")


@admin.register(AuditUnit)
class AuditUnitAdmin(admin.ModelAdmin):
    list_display = ("key", "campaign", "stratum", "state", "final_status", "final_source", "agreement")
    list_filter = ("state", "final_status", "final_source")
    raw_id_fields = ("instance", "item")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("unit", "annotator", "slot", "expires_at", "submitted_at")
    raw_id_fields = ("unit",)


admin.site.register(Label)
admin.site.register(Adjudication)
