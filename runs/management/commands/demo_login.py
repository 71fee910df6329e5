"""python manage.py demo_login [--username demo] [--url URL]: create or reset the demo superuser and print how to log in."""
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from ifportal.signin import signin_forget


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


class Command(BaseCommand):
    help = "Create or reset the demo login (a superuser) and print its user name and password."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where the portal answers")

    def handle(self, *args, username: str, url: str, **opts):
        password = demo_password(Path(settings.VAR_DIR) / f"{username}_password")
        user, created = get_user_model().objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = user.is_active = True
        if created or not user.check_password(password):
            user.set_password(password)
        user.save()
        signin_forget(username)  # a lockout or delay from earlier wrong guesses would refuse the printed password
        self.stdout.write(f"Log in at {url} as {username} / {password}")
