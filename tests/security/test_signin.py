"""Guessing passwords stays bounded and no one can lock another person out (ifportal.signin): an address that fails
too often is refused, a user name failed from many addresses meets a growing wait for tries from addresses it
never signed in from, and the user signs in at once from an address they used, or through an admin's link."""

import re
import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from ifportal import signin
from ifportal.models import SignInDelay

PASSWORD = "right-horse-battery-1"
HOME = "203.0.113.10"  # where the lead always signs in from


@pytest.fixture
def lead(django_user_model, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # many sign-ins per test
    return django_user_model.objects.create_superuser("lead", password=PASSWORD)


@pytest.fixture
def clock(monkeypatch):
    """The time ifportal.signin reads, moved by hand."""

    class Clock:
        now = timezone.now()

        def advance(self, seconds: float) -> None:
            self.now += timedelta(seconds=seconds)

    fixed = Clock()
    monkeypatch.setattr(signin.timezone, "now", lambda: fixed.now)
    return fixed


def sign_in(address: str, password: str, username: str = "lead", path: str = "/login/"):
    client = Client(REMOTE_ADDR=address)
    return client, client.post(path, {"username": username, "password": password})


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.django_db
def test_an_attacker_from_many_addresses_cannot_lock_the_user_out(lead, settings):
    assert signed_in(sign_in(HOME, PASSWORD)[0])  # the lead's usual address
    limit = settings.AXES_FAILURE_LIMIT

    for n in range(6):  # each address fails as often as it may, and more
        attacker = Client(REMOTE_ADDR=f"198.51.100.{n}")
        for guess in range(limit + 1):
            attacker.post("/login/", {"username": "lead", "password": f"guess-{n}-{guess}"})

    client, response = sign_in(HOME, PASSWORD)
    assert response.status_code == 302 and signed_in(client)
    admin_client, admin_response = sign_in(HOME, PASSWORD, path="/admin/login/")
    assert admin_response.status_code == 302 and signed_in(admin_client)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_an_address_that_fails_too_often_is_refused_and_only_it(lead, django_user_model, settings, path):
    django_user_model.objects.create_user("bystander", password="bystander-pass-77", is_staff=True)
    limit = settings.AXES_FAILURE_LIMIT
    attacker = Client(REMOTE_ADDR="198.51.100.7")

    statuses = [attacker.post(path, {"username": "lead", "password": f"guess-{n}"}).status_code for n in range(limit)]
    right = attacker.post(path, {"username": "bystander", "password": "bystander-pass-77"})

    assert statuses == [200] * (limit - 1) + [429]  # the failure that reaches the limit is answered with the lock
    assert right.status_code == 429 and not signed_in(attacker)  # every name, from the address that failed
    assert "Too many failed sign-ins" in right.content.decode()
    assert int(right["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
    other, response = sign_in("198.51.100.8", "bystander-pass-77", username="bystander", path=path)
    assert response.status_code == 302 and signed_in(other)


@pytest.mark.django_db
def test_a_try_inside_the_wait_is_refused_without_its_password_being_read(lead, settings, monkeypatch):
    limit = settings.AXES_FAILURE_LIMIT
    for n in range(limit):
        assert sign_in(f"198.51.100.{n}", f"guess-{n}")[1].status_code == 200
    checked = []
    monkeypatch.setattr(User, "check_password", lambda self, raw: checked.append(raw) or False)

    client, response = sign_in("198.51.100.99", PASSWORD)  # the right password, from yet another address

    assert response.status_code == 429 and not signed_in(client) and checked == []
    page = response.content.decode()
    wait = int(re.search(r"Try again in (\d+) s", page).group(1))
    assert wait == settings.IFPORTAL_LOGIN_DELAY_SECONDS == int(response["Retry-After"])


@pytest.mark.django_db
def test_guessing_one_password_from_a_new_address_each_time_is_bounded(lead, settings, clock):
    """A day of guessing, each guess from a fresh address the moment the wait allows: the guesses whose password
    was checked are the free ones, the doublings up to the maximum, and one per maximum delay after that."""
    settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS = 3600
    assert signed_in(sign_in(HOME, PASSWORD)[0])
    day = 24 * 3600
    start, checked, refused, n = clock.now, 0, 0, 0
    while clock.now - start < timedelta(seconds=day):
        n += 1
        response = sign_in(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}", f"guess-{n}")[1]
        if response.status_code == 429:
            refused += 1
            clock.advance(int(response["Retry-After"]))
        else:
            checked += 1
            clock.advance(1)

    doublings = (settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS // settings.IFPORTAL_LOGIN_DELAY_SECONDS).bit_length()
    assert checked <= settings.AXES_FAILURE_LIMIT + doublings + day // settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS
    assert checked > settings.AXES_FAILURE_LIMIT and refused > 0  # the free guesses went, then the waits began
    # and through all of it the lead signs in from home, and the waits have grown to the maximum
    client, response = sign_in(HOME, PASSWORD)
    assert response.status_code == 302 and signed_in(client)
    row = SignInDelay.objects.get(username="lead")
    assert (row.retry_at - row.last_failure).total_seconds() == settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS


@pytest.mark.django_db
def test_the_victim_from_an_address_they_signed_in_from_is_never_slowed(lead, settings, clock):
    assert signed_in(sign_in(HOME, PASSWORD)[0])
    for n in range(settings.AXES_FAILURE_LIMIT + 3):
        clock.advance(settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS)
        assert sign_in(f"198.51.100.{n}", f"guess-{n}")[1].status_code == 200
    assert sign_in("198.51.100.200", PASSWORD)[1].status_code == 429  # a stranger's address waits

    client, response = sign_in(HOME, PASSWORD)

    assert response.status_code == 302 and signed_in(client)


@pytest.mark.django_db
def test_a_right_password_from_a_new_address_costs_nothing(lead, settings):
    for n in range(settings.AXES_FAILURE_LIMIT * 2):
        client, response = sign_in(f"198.51.100.{n}", PASSWORD)
        assert response.status_code == 302 and signed_in(client)

    assert SignInDelay.objects.get(username="lead").failures == 0


@pytest.mark.django_db
def test_a_name_that_is_no_account_meets_the_same_wait(lead, settings):
    """The wait says nothing about which names are accounts."""
    for name in ("lead", "nobody"):
        statuses = [
            sign_in(f"198.51.100.{n}", f"guess-{n}", username=name)[1].status_code
            for n in range(settings.AXES_FAILURE_LIMIT + 1)
        ]
        assert statuses == [200] * settings.AXES_FAILURE_LIMIT + [429], name


@pytest.mark.django_db
def test_an_admins_one_time_link_signs_the_user_in_and_lifts_the_delay(lead, settings, capsys):
    for n in range(settings.AXES_FAILURE_LIMIT):
        sign_in(f"198.51.100.{n}", f"guess-{n}")
    assert sign_in("198.51.100.50", PASSWORD)[1].status_code == 429

    call_command("signin_link", "lead", "--url", "http://testserver/")
    link = capsys.readouterr().out.strip()
    client = Client(REMOTE_ADDR="198.51.100.50")
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": "a-new-long-pass-42", "new_password2": "a-new-long-pass-42"}
    )

    assert done.status_code == 302 and signed_in(client)
    assert not SignInDelay.objects.filter(username="lead").exists()
    assert "does not work" in Client().get(link, follow=True).content.decode()  # once only
    again, response = sign_in("198.51.100.51", "a-new-long-pass-42")
    assert response.status_code == 302 and signed_in(again)


@pytest.mark.django_db
def test_the_user_admin_makes_a_one_time_link(lead, django_user_model):
    colleague = django_user_model.objects.create_user("colleague", password="pw-colleague-1")
    admin = Client()
    admin.force_login(lead)

    page = admin.post(
        "/admin/auth/user/", {"action": "make_signin_link", "_selected_action": [colleague.pk]}, follow=True
    ).content.decode()

    link = re.search(r"One-time sign-in link for colleague: (http://testserver/login/link/[^<\s]+)", page).group(1)
    assert "Choose a new password" in Client().get(link, follow=True).content.decode()


@pytest.mark.django_db
def test_the_login_page_states_both_rules(client, settings):
    page = client.get("/login/").content.decode()

    assert (
        f"After {settings.AXES_FAILURE_LIMIT} failed sign-ins from one address, for one user name or for several, "
        f"that address is refused for {int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)} minutes"
    ) in page
    assert (
        f"waits {settings.IFPORTAL_LOGIN_DELAY_SECONDS} s, doubling up to {settings.IFPORTAL_LOGIN_DELAY_MAX_SECONDS} s"
        in page
    )


@pytest.mark.django_db(transaction=True)
def test_tries_sent_at_once_cannot_share_one_slot(postgres, settings):
    """When the wait is over, one try gets the slot, however many arrive together from as many addresses."""
    SignInDelay.objects.create(
        username="lead", failures=settings.AXES_FAILURE_LIMIT, last_failure=timezone.now(), retry_at=timezone.now()
    )
    start = threading.Barrier(8)
    outcomes = []

    def attempt() -> None:
        try:
            start.wait()
            outcomes.append(signin.signin_charge("lead")[0] is None)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == [False] * 7 + [True]
    assert SignInDelay.objects.get(username="lead").failures == settings.AXES_FAILURE_LIMIT + 1
