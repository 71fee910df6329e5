"""The transcript search page in Chromium: how many hits there are, and what a search cut at its time limit says."""

import re

import pytest
from django.urls import reverse

from runs import search as s

pytestmark = pytest.mark.browser

HITS = 60  # more than a page


@pytest.fixture
def searchable(transactional_db, django_user_model):
    from runs.models import AgentModel, Attempt, Benchmark, Instance, Run
    from runs.trajectory_store import trajectory_save

    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    instance = Instance.objects.create(benchmark=bench, external_id="task-0", content_hash="x", spec={})
    run = Run.objects.create(benchmark=bench, label="r1", model=AgentModel.objects.create(name="m"))
    attempt = Attempt.objects.create(run=run, instance=instance)
    messages = [
        {"role": "assistant", "content": f"step {n}: git push --force" if n % 2 else f"step {n}"}
        for n in range(2 * HITS)
    ]
    trajectory_save(attempt_id=attempt.id, threads=[{"meta": {"thread": "main"}, "tools": [], "messages": messages}])
    django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")
    return bench


def test_the_search_page_says_how_many_hits_and_when_the_time_limit_cut_it_short(
    searchable, session, live_server, console, monkeypatch
):
    """The page showed 25 hits and nothing of how many more: it counts them once the hits are shown ("60 hits"),
    and a search its time limit cut short says it is partial and that there are at least the hits it shows."""
    page = session("reviewer", "pw-reviewer-1")
    url = live_server.url + reverse("runs:search", args=["octo"])
    page.goto(url + "?q=GIT+push")
    total = page.locator("#search-total")
    total.filter(has_text=f"{HITS} hits").wait_for()
    assert total.inner_text() == f"{HITS} hits" and page.locator("li.hit").count() == s.PAGE_SIZE
    assert page.locator("li.hit mark").first.inner_text() == "git push"

    real = s._transcript_ids

    def cut_short(*args, **kwargs):  # the limit reached after the first 7 hits of the messages
        raise s.SearchTooSlow(found=real(*args, **kwargs)[:7])

    monkeypatch.setattr(s, "_transcript_ids", cut_short)
    page.goto(url + "?q=git+push")
    assert page.locator(".search-total strong").first.inner_text() == "At least 7 hits"
    warning = page.get_by_role("status")
    assert warning.is_visible() and re.search(r"stopped at its time limit.*Narrow it", warning.inner_text())
    assert page.locator("li.hit").count() == 7 and page.get_by_role("link", name=re.compile(r"^Next")).is_visible()
    assert not console.errors, console.errors
