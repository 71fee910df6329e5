# Where the tokens and the time went, per attempt (docs/metrics.md, "Tokens, time and tool calls"): null = not logged.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0007_job_kind_recheck"),
    ]

    operations = [
        migrations.AddField(model_name="attempt", name="input_tokens",
                            field=models.PositiveBigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="attempt", name="output_tokens",
                            field=models.PositiveBigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="attempt", name="total_tokens",
                            field=models.PositiveBigIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="attempt", name="model_seconds", field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name="attempt", name="wall_seconds", field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name="attempt", name="model_calls",
                            field=models.PositiveIntegerField(blank=True, null=True)),
        migrations.AddField(model_name="attempt", name="tool_calls",
                            field=models.PositiveIntegerField(blank=True, null=True)),
    ]
