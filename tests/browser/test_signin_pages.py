"""What a person meets when someone guesses at their password: from the address they use they sign in as always;
from a new one they are told how long to wait, and an administrator's one-time link lets them in at once."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

PASSWORD = "right-horse-battery-1"


def guess_from_elsewhere(username: str, tries: int) -> None:
    for n in range(tries):
        Client(REMOTE_ADDR=f"198.51.100.{n}").post("/login/", {"username": username, "password": f"guess-{n}"})


def sign_in(page, url: str, username: str, password: str) -> None:
    page.goto(f"{url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")


@pytest.mark.django_db(transaction=True)
def test_a_guessed_at_user_signs_in_from_their_address_and_a_newcomer_is_told_to_wait_or_uses_a_link(
    page, live_server, console, django_user_model, settings
):
    settings.IFPORTAL_LOGIN_DELAY_SECONDS = 120  # a wait that outlasts the test's own steps
    django_user_model.objects.create_superuser("lead", password=PASSWORD)
    django_user_model.objects.create_user("newcomer", password="newcomer-pass-31")
    sign_in(page, live_server.url, "lead", PASSWORD)  # the lead's usual address (this browser's)
    page.get_by_role("button", name="Log out").click()
    guess_from_elsewhere("lead", settings.AXES_FAILURE_LIMIT * 2)

    sign_in(page, live_server.url, "lead", PASSWORD)
    assert page.get_by_role("button", name="Log out").is_visible()  # not locked out
    page.get_by_role("button", name="Log out").click()

    guess_from_elsewhere("newcomer", settings.AXES_FAILURE_LIMIT)
    sign_in(page, live_server.url, "newcomer", "newcomer-pass-31")  # never signed in from here
    alert = page.get_by_role("alert")
    wait = int(re.fullmatch(r"Try again in (\d+) s", alert.get_by_role("heading").inner_text()).group(1))
    assert 0 < wait <= settings.IFPORTAL_LOGIN_DELAY_SECONDS
    assert "signin_link" in alert.inner_text()

    out = StringIO()
    call_command("signin_link", "newcomer", "--url", live_server.url, stdout=out)
    page.goto(out.getvalue().strip())
    page.get_by_label("New password", exact=True).fill("a-new-long-pass-42")
    page.get_by_label("New password again").fill("a-new-long-pass-42")
    page.get_by_role("button", name="Set password and sign in").click()
    page.wait_for_load_state("networkidle")
    assert page.get_by_role("button", name="Log out").is_visible()
    # the refused sign-in is a 429, which Chromium reports in the console; nothing else went wrong
    assert [e for e in console.errors if "status of 429" not in e] == []
