"""python manage.py signin_link NAME [--url URL]: print a one-time link that lets the user set a new password and
signs them in, for a user who forgot theirs or meets the sign-in delay (ifportal.signin)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ifportal.signin import signin_link


class Command(BaseCommand):
    help = (
        "Print a one-time sign-in link for a user: it asks for a new password, signs them in and lifts the "
        "sign-in delay on their name. It stops working once used, or after PASSWORD_RESET_TIMEOUT."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where the portal answers")

    def handle(self, *args, username: str, url: str, **opts):
        try:
            user = get_user_model()._default_manager.get_by_natural_key(username)
        except get_user_model().DoesNotExist as exc:
            raise CommandError(f"no user named {username!r}") from exc
        if not user.is_active:
            raise CommandError(f"{username!r} is deactivated: activate the account first")
        self.stdout.write(signin_link(user, base_url=url))
