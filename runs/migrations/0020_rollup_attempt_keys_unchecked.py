"""The rollup tables' attempt keys are no longer checked by the database: every rollup and judge split is built
from verdicts or judge reports of the same transaction, whose attempt key the database checks (and whose check
locks the attempt until the commit); checking the copy again cost 2.8 s of a 1M-verdict import's commit. Deleting
an attempt still deletes its rollups (Django cascades). Dropping a constraint rewrites nothing."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0019_attempt_rollup_item_lists"),
    ]

    operations = [
        migrations.AlterField(
            model_name="attemptrollup",
            name="attempt",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="rollups",
                to="runs.attempt",
            ),
        ),
        migrations.AlterField(
            model_name="grouprollup",
            name="attempt",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="group_rollups",
                to="runs.attempt",
            ),
        ),
        migrations.AlterField(
            model_name="judgedisagreement",
            name="attempt",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="runs.attempt",
            ),
        ),
    ]
