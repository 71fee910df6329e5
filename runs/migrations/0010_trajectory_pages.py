
import django.db.models.deletion
from django.db import migrations, models

from runs.trajectory_store import message_rows, thread_heads

BATCH = 2000


def split_documents(apps, schema_editor):
    """Each stored trajectory document becomes its threads' headings and one row per message, one
    trajectory in memory at a time (content hash and size stay those of the whole document)."""
    Trajectory = apps.get_model("runs", "Trajectory")
    TrajectoryMessage = apps.get_model("runs", "TrajectoryMessage")
    for pk in list(Trajectory.objects.order_by("pk").values_list("pk", flat=True)):
        attempt_id, threads = Trajectory.objects.filter(pk=pk).values_list("attempt_id", "threads").get()
        threads = threads if isinstance(threads, list) else []
        batch = []
        for row in message_rows(attempt_id, threads):
            batch.append(TrajectoryMessage(**row))
            if len(batch) >= BATCH:
                TrajectoryMessage.objects.bulk_create(batch)
                batch = []
        TrajectoryMessage.objects.bulk_create(batch)
        Trajectory.objects.filter(pk=pk).update(threads=thread_heads(threads))


def join_documents(apps, schema_editor):
    """Back: each trajectory's messages go into its document again."""
    Trajectory = apps.get_model("runs", "Trajectory")
    TrajectoryMessage = apps.get_model("runs", "TrajectoryMessage")
    for pk, attempt_id, heads in list(Trajectory.objects.order_by("pk").values_list("pk", "attempt_id", "threads")):
        threads = [{**{k: v for k, v in h.items() if k not in ("message_count", "unit_count")}, "messages": []} for h in heads]
        for thread, content, reasoning, rest in TrajectoryMessage.objects.filter(attempt_id=attempt_id).order_by(
                "thread", "index").values_list("thread", "content", "reasoning", "rest").iterator(chunk_size=BATCH):
            message = dict(rest)
            message.update({k: v for k, v in (("content", content), ("reasoning", reasoning)) if v is not None})
            threads[thread]["messages"].append(message)
        Trajectory.objects.filter(pk=pk).update(threads=threads)


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0009_benchmark_searchable'),
    ]

    operations = [
        migrations.CreateModel(
            name='TrajectoryMessage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('thread', models.PositiveIntegerField()),
                ('index', models.PositiveIntegerField()),
                ('unit', models.PositiveIntegerField()),
                ('turn', models.PositiveIntegerField(blank=True, null=True)),
                ('role', models.TextField()),
                ('content', models.TextField(blank=True, null=True)),
                ('reasoning', models.TextField(blank=True, null=True)),
                ('rest', models.JSONField(default=dict)),
                ('attempt', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.attempt')),
            ],
            options={
                'indexes': [models.Index(fields=['attempt', 'thread', 'unit'], name='trajectory_message_by_unit')],
                'constraints': [models.UniqueConstraint(fields=('attempt', 'thread', 'index'), name='trajectory_message_unique')],
            },
        ),
        migrations.RunPython(split_documents, join_documents),
    ]
