"""Smoke: a person logs in through the form and sees the home page, with no errors in the console."""

import pytest

pytestmark = pytest.mark.browser


def test_it_sends_an_anonymous_visitor_to_the_login_form(page, live_server, console):
    page.goto(f"{live_server.url}/")

    assert page.url == f"{live_server.url}/login/?next=/"
    assert page.get_by_role("button", name="Sign in").is_visible()
    assert console.errors == []


def test_it_logs_in_through_the_form_and_shows_the_home_page(page, live_server, console, reviewer, log_in, artifacts):
    log_in("reviewer", "pw-reviewer-1")

    assert page.url == f"{live_server.url}/"
    assert "ifportal" in page.title()
    assert page.locator("header.topbar").inner_text().count("reviewer") == 1
    assert page.get_by_role("button", name="Log out").is_visible()
    assert page.locator("h1").first.is_visible()
    assert page.get_by_role("button", name="Sign in").count() == 0
    page.screenshot(path=str(artifacts / "smoke-home.png"), full_page=True)
    assert console.errors == []


def test_it_refuses_a_wrong_password(page, live_server, console, reviewer, log_in):
    log_in("reviewer", "not-the-password")

    assert page.url.startswith(f"{live_server.url}/login/")
    assert page.get_by_role("alert").is_visible()
    assert page.get_by_role("button", name="Log out").count() == 0
