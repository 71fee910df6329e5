"""The "editor" role (runs.access.EDITOR): the group that may write (import, re-check, share, retry).

Before this role every signed-in user could write. So that nobody who writes today silently
loses it, the group is given to every user who has started a job or made a share link and is
not already a lead or a superuser (who write anyway); everyone else, reviewers included, reads
only from now on. Undoing the migration deletes the group (and so the memberships).
"""
from django.conf import settings
from django.db import migrations

EDITOR, LEAD = "editor", "lead"


def editors_create(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    User = apps.get_model(settings.AUTH_USER_MODEL)
    Job = apps.get_model("runs", "Job")
    ShareLink = apps.get_model("runs", "ShareLink")
    editor, _ = Group.objects.get_or_create(name=EDITOR)
    writers = (set(Job.objects.exclude(created_by=None).values_list("created_by_id", flat=True).distinct())
               | set(ShareLink.objects.values_list("created_by_id", flat=True).distinct()))
    users = User.objects.filter(pk__in=writers, is_superuser=False).exclude(groups__name=LEAD)
    editor.user_set.add(*users)


def editors_delete(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=EDITOR).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0014_search_text_walk_indexes"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [migrations.RunPython(editors_create, editors_delete)]
