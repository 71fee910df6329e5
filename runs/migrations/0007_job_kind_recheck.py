"""The two re-check job kinds become one, "recheck" (runs.recheck dispatches on the benchmark's kind), so a
failed re-check job made before can still be retried (runs.jobs.JOB_KINDS knows only "recheck")."""
from django.db import migrations

OLD_KINDS = {"rescore-evolif": "dialogue", "restyle-manyih": "hierarchy"}


def forward(apps, schema_editor):
    apps.get_model("runs", "Job").objects.filter(kind__in=list(OLD_KINDS)).update(kind="recheck")


def backward(apps, schema_editor):
    Job, Run = apps.get_model("runs", "Job"), apps.get_model("runs", "Run")
    by_kind = {kind: old for old, kind in OLD_KINDS.items()}
    for job in Job.objects.filter(kind="recheck").only("id", "params"):
        run = Run.objects.filter(id__in=job.params.get("run_ids") or []).select_related("benchmark").first()
        old = by_kind.get(run.benchmark.kind if run else None, "rescore-evolif")
        Job.objects.filter(pk=job.pk).update(kind=old)


class Migration(migrations.Migration):
    dependencies = [("runs", "0006_search_text")]

    operations = [migrations.RunPython(forward, backward, elidable=True)]
