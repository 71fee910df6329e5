"""Browser tests: Debian's chromium driven by Playwright against pytest-django's live server.

They skip, with the reason, when /usr/bin/chromium is absent (`.ci/run` installs it).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifportal.benchmarks.browser import (  # one chromium and one set of flags for tests and benchmark
    CHROMIUM,
    CHROMIUM_ARGS,
)

# Playwright's sync API runs an event loop in this thread; Django would then refuse ORM
# calls from the test ("you cannot call this from an async context").
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

#: runs before any page script (injected through the devtools protocol, so the CSP does not apply to it):
#: every Content-Security-Policy violation lands in window.__csp and in the console as an error
WATCH_CSP = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sourceFile || '') + ':' + e.lineNumber);
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI);
});
"""


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium) to run browser tests")
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
    except Exception as exc:  # a chromium that cannot start is an environment problem, said plainly
        playwright.stop()
        pytest.skip(f"{CHROMIUM} could not be started: {exc}")
    yield browser
    browser.close()
    playwright.stop()


class Console:
    """Errors the page reported: console.error messages, uncaught exceptions, failed loads."""

    def __init__(self):
        self.errors: list[str] = []

    def on_console(self, message) -> None:
        # Chromium asks for /favicon.ico on its own, whatever base.html declares: the portal answers it
        # (ifportal.urls.FaviconView), so a 404 there is an error like any other
        if message.type == "error":
            self.errors.append(f"console: {message.text} ({message.location.get('url', '')})")

    def on_page_error(self, error) -> None:
        self.errors.append(f"uncaught: {error}")

    def on_request_failed(self, request) -> None:
        # Chromium fetches the icon on its own and drops the fetch when the test navigates on first
        # (net::ERR_ABORTED); that is not the page failing to load something.
        if "/favicon." in request.url and "ERR_ABORTED" in (request.failure or ""):
            return
        self.errors.append(f"request failed: {request.url} ({request.failure})")


@pytest.fixture
def console() -> Console:
    return Console()


@pytest.fixture
def page(browser, console) -> Iterator:
    """A fresh browser context (no cookies) whose errors land in `console.errors`."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.on("console", console.on_console)
    page.on("pageerror", console.on_page_error)
    page.on("requestfailed", console.on_request_failed)
    yield page
    context.close()


@pytest.fixture
def watch_csp() -> str:
    """The CSP-violation watcher, for `context.add_init_script`."""
    return WATCH_CSP


@pytest.fixture
def session(browser, live_server, console):
    """Open a new browser context (no cookies, CSP watched, errors into `console.errors`) as one person.

    `session()` is a visitor without an account; `session("name", "password")` signs in through the form.
    """
    contexts = []

    def _session(username: str | None = None, password: str | None = None):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US", accept_downloads=True)
        contexts.append(context)
        context.set_default_timeout(10_000)
        context.add_init_script(WATCH_CSP)
        page = context.new_page()
        page.on("console", console.on_console)
        page.on("pageerror", console.on_page_error)
        page.on("requestfailed", console.on_request_failed)
        if username:
            page.goto(f"{live_server.url}/login/")
            page.get_by_label("Username").fill(username)
            page.get_by_label("Password").fill(password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_load_state("networkidle")
            assert page.get_by_role("button", name="Log out").is_visible(), f"{username} could not sign in"
        return page

    yield _session
    for context in contexts:
        context.close()


@pytest.fixture
def artifacts() -> Path:
    """test-artifacts/ (gitignored): screenshots for a person to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def log_in(page, live_server):
    """Log in through the login form as a person would."""

    def _log_in(username: str, password: str) -> None:
        page.goto(f"{live_server.url}/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state("networkidle")

    return _log_in
