"""manage.py demo_login: the demo's logins, one per kind of team member, each printed with a password that works."""

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client

from runs.access import can_write, roles_of

pytestmark = pytest.mark.django_db


def _logins(settings, tmp_path) -> dict[str, str]:
    settings.VAR_DIR = tmp_path
    out = io.StringIO()
    call_command("demo_login", url="http://portal.test/", stdout=out)
    return dict(re.findall(r"as (\S+) / (\S+) \(", out.getvalue()))


def test_it_prints_a_superuser_an_editor_and_a_reviewer_whose_passwords_sign_in(settings, tmp_path, django_user_model):
    logins = _logins(settings, tmp_path)

    assert set(logins) == {"demo", "demo-editor", "demo-reviewer"}
    for name, password in logins.items():
        client = Client()
        assert client.post("/login/", {"username": name, "password": password}).status_code == 302, name
    users = {u.username: u for u in django_user_model.objects.filter(username__in=logins)}
    assert users["demo"].is_superuser and can_write(users["demo"])
    assert roles_of(users["demo-editor"]) == {"editor"} and can_write(users["demo-editor"])
    assert roles_of(users["demo-reviewer"]) == {"reviewer"} and not can_write(users["demo-reviewer"])


def test_a_second_run_keeps_the_passwords(settings, tmp_path):
    assert _logins(settings, tmp_path) == _logins(settings, tmp_path)
