"""python manage.py demo_login [--username demo] [--url URL]: create or reset the demo logins (a superuser, an editor
and a reviewer) and print how to log in as each."""

import secrets
from pathlib import Path

from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from runs.access import EDITOR, REVIEWER

#: the demo's team members besides the superuser: (user name after "<username>-", role group, what the role may do)
DEMO_ROLES = (
    ("editor", EDITOR, "imports, re-checks and share links"),
    ("reviewer", REVIEWER, "reads everything, changes nothing"),
)


def demo_password(path: Path) -> str:
    """The demo password kept under var/ (made once), so a restart does not log the browser out."""
    if path.exists():
        password = path.read_text().strip()
        if password:
            return password
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    path.write_text(password + "\n")
    path.chmod(0o600)
    return password


def demo_user(username: str, *, superuser: bool = False, group: str | None = None) -> tuple[str, str]:
    """Create or reset one demo login (its password kept under var/, its role group set); (name, password)."""
    password = demo_password(Path(settings.VAR_DIR) / f"{username}_password")
    user, created = get_user_model().objects.get_or_create(username=username)
    user.is_staff = user.is_superuser = superuser
    user.is_active = True
    if created or not user.check_password(password):
        user.set_password(password)
    user.save()
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    axes_reset(username=username)  # a lockout from earlier wrong guesses would refuse the printed password
    return username, password


class Command(BaseCommand):
    help = (
        "Create or reset the demo logins (a superuser, an editor who may import, re-check and share, and a "
        "read-only reviewer) and print the user name and password of each."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--username", default="demo", help="the superuser's name; the others are NAME-editor, NAME-reviewer"
        )
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where the portal answers")

    def handle(self, *args, username: str, url: str, **opts):
        name, password = demo_user(username, superuser=True)
        self.stdout.write(f"Log in at {url} as {name} / {password} (admin: everything, the Django admin too)")
        for suffix, group, does in DEMO_ROLES:
            name, password = demo_user(f"{username}-{suffix}", group=group)
            self.stdout.write(f"  or as {name} / {password} ({suffix}: {does})")
