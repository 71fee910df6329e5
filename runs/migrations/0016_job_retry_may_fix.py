"""Job.retry_may_fix: a failed job whose own files were refused offers no Retry (it would fail the same way);
jobs from before keep theirs (the default)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0015_editor_role'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='retry_may_fix',
            field=models.BooleanField(default=True),
        ),
    ]
