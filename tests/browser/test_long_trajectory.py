"""An attempt of 30,000 messages in Chromium: the page paints its first window with
the thread's length, "go to message" and a judge's citation land on the window holding the message
with it marked and in view, and htmx loads the windows around it. First paint and jump times are
printed and written to test-artifacts/long-trajectory.json."""

import json
import time

import pytest
from django.urls import reverse

pytestmark = pytest.mark.browser

MESSAGES = 30_000
FIRST_PAINT_MS = 1000
#: the issue's target is 300 ms for the server's answer (measured by `manage.py benchmark`); in the browser a
#: jump is a whole navigation (request, parse, paint, scroll) on a loaded 2-core machine
JUMP_MS = 1000
CITED = 25_001  # a tool result (odd indices after the first two), folded under the call at 25,000

#: milliseconds from navigation start to the first contentful paint (waiting up to 5 s for the entry)
FIRST_PAINT = """
async () => {
  const painted = () => performance.getEntriesByName('first-contentful-paint')[0];
  const start = Date.now();
  while (!painted() && Date.now() - start < 5000) { await new Promise(r => setTimeout(r, 10)); }
  return painted() ? painted().startTime : null;
}
"""


@pytest.fixture
def long_attempt(transactional_db, django_user_model):
    from runs.models import AgentModel, Attempt, Benchmark, ChecklistItem, Instance, Judge, Run, Verdict
    from runs.trajectory_store import trajectory_save

    bench = Benchmark.objects.create(slug="octo", name="Octo", kind="checklist")
    instance = Instance.objects.create(
        benchmark=bench,
        external_id="long-0",
        scaffold="claudecode",
        content_hash="x",
        spec={"system_prompt": "", "user_query": ["Fix the bug."]},
    )
    item = ChecklistItem.objects.create(
        instance=instance,
        key="c0",
        position=0,
        category="System Prompt",
        check_type="compliance",
        description="reads before writing",
        content_hash="x",
    )
    run = Run.objects.create(benchmark=bench, label="long-r1", model=AgentModel.objects.create(name="long-model"))
    attempt = Attempt.objects.create(run=run, instance=instance, assistant_turns=(MESSAGES - 2) // 2)
    messages = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."}]
    for k in range((MESSAGES - 2) // 2):
        messages += [
            {
                "role": "assistant",
                "content": f"step {k}",
                "tool_calls": [{"id": f"c{k}", "name": "Read", "arguments": {"file_path": f"/app/f{k}.py"}}],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{k}",
                "tool_name": "Read",
                "content": f"contents of f{k} <b>not bold</b>",
            },
        ]
    trajectory_save(
        attempt_id=attempt.id, threads=[{"meta": {"thread": "main"}, "tools": [{"name": "Read"}], "messages": messages}]
    )
    Verdict.objects.create(
        attempt=attempt,
        item=item,
        judge=Judge.objects.create(name="judge-1"),
        result="fail",
        reasoning="it never read f12499",
        evidence={"thread": 0, "message": CITED},
    )
    django_user_model.objects.create_user("reviewer", password="pw-reviewer-1")
    return attempt


#: whether a message's top is on screen and not under the sticky header (what a person would see)
SEEN = """e => { const r = e.getBoundingClientRect(); if (r.top < 0 || r.top >= window.innerHeight) return false;
                 const at = document.elementFromPoint(r.left + 4, r.top + 4); return !!at && e.contains(at); }"""


def _seen(page, selector: str) -> bool:
    return page.eval_on_selector(selector, SEEN)


def test_a_30000_message_attempt_paints_its_first_window_and_jumps_to_any_message(
    long_attempt, session, live_server, console, artifacts
):
    page = session("reviewer", "pw-reviewer-1")
    url = live_server.url + reverse("runs:attempt", args=[long_attempt.id])
    page.goto(url)
    first_paint = page.evaluate(FIRST_PAINT)
    assert page.get_by_text(f"{MESSAGES} messages in this thread").is_visible()
    assert page.locator("#m-0-0").is_visible() and page.locator("article.msg").count() == 40
    assert page.get_by_text("contents of f0 <b>not bold</b>").is_visible()  # model output shown as text, escaped

    start = time.perf_counter()
    page.get_by_label("Go to message #").fill("20001")
    page.get_by_role("button", name="Go").click()
    page.wait_for_selector("#m-0-20001.at")
    page.wait_for_function(f"() => ({SEEN})(document.querySelector('#m-0-20001'))")
    by_number = 1000 * (time.perf_counter() - start)
    assert page.locator("#m-0-20000").is_visible() and "step 9999" in page.locator("#m-0-20000").inner_text()

    page.goto(url)
    start = time.perf_counter()
    page.get_by_role("link", name=f"judge-1 cites message #{CITED}").click()
    page.wait_for_selector(f"#m-0-{CITED}.at")
    page.wait_for_function(f"() => ({SEEN})(document.querySelector('#m-0-{CITED}'))")
    by_citation = 1000 * (time.perf_counter() - start)
    assert _seen(page, f"#m-0-{CITED}")
    page.screenshot(path=str(artifacts / "long-trajectory-citation.png"))

    # the windows around it: htmx inserts the one before above and the one after below, each once
    before = page.locator("article.msg").count()
    page.get_by_role("link", name="Load the previous 40 messages").click()
    page.wait_for_function(f"() => document.querySelectorAll('article.msg').length === {before + 40}")
    page.get_by_role("link", name="Load the next 40 messages").click()
    page.wait_for_function(f"() => document.querySelectorAll('article.msg').length === {before + 80}")
    indices = page.eval_on_selector_all("article.msg", "es => es.map(e => Number(e.id.split('-').pop()))")
    assert indices == sorted(indices) and len(set(indices)) == len(indices)
    assert page.get_by_role("link", name="Load the previous 40 messages").count() == 1
    assert page.get_by_role("link", name="Load the next 40 messages").count() == 1

    figures = {
        "messages": MESSAGES,
        "first_paint_ms": first_paint,
        "jump_by_number_ms": round(by_number),
        "jump_by_citation_ms": round(by_citation),
    }
    (artifacts / "long-trajectory.json").write_text(json.dumps(figures, indent=1))
    print(
        f"{MESSAGES} messages: first paint {first_paint} ms, go to message {by_number:.0f} ms, "
        f"citation {by_citation:.0f} ms"
    )
    assert first_paint is not None and first_paint < FIRST_PAINT_MS
    assert by_number < JUMP_MS and by_citation < JUMP_MS
    assert not console.errors, console.errors


#: the issue's target for "Find in this thread" is 300 ms for the server's answer (measured by `manage.py benchmark`);
#: here, as for the jumps, a whole navigation in the browser
FIND_MS = 1000


def test_find_in_a_30000_message_thread_marks_the_match_and_opens_it_in_its_window(
    long_attempt, session, live_server, console, artifacts
):
    """ "Find in this thread" took 1.7 s on this thread, marked nothing, and its matches led nowhere: typed in, it
    lists the matching message with the text marked, and "Open # in context" lands on that message's window with
    the message marked and in view, its neighbours around it."""
    page = session("reviewer", "pw-reviewer-1")
    page.goto(live_server.url + reverse("runs:attempt", args=[long_attempt.id]))
    start = time.perf_counter()
    page.get_by_placeholder("Find in this thread").fill("/APP/F12345.py")
    page.get_by_role("button", name="Find").click()
    page.wait_for_selector("p.found mark")
    found_ms = 1000 * (time.perf_counter() - start)
    assert page.get_by_text("1 matching message").is_visible()
    marks = page.locator("p.found mark")
    assert marks.count() == 1 and marks.first.inner_text() == "/app/f12345.py" and marks.first.is_visible()
    assert page.locator("mark").filter(has_text="/app/f12345.py").count() == 2  # in the message's call too
    background = marks.first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent")

    target = 2 + 2 * 12345  # the assistant message that calls Read on f12345
    start = time.perf_counter()
    page.get_by_role("link", name=f"Open #{target} in context").click()
    page.wait_for_selector(f"#m-0-{target}.at")
    page.wait_for_function(f"() => ({SEEN})(document.querySelector('#m-0-{target}'))")
    context_ms = 1000 * (time.perf_counter() - start)
    assert page.locator(f"#m-0-{target - 2}").count() == 1 and page.locator(f"#m-0-{target + 2}").count() == 1
    assert page.locator("p.found").count() == 0  # the window of the whole thread, not of the matches
    page.screenshot(path=str(artifacts / "long-trajectory-find.png"))
    print(f"{MESSAGES} messages: find in thread {found_ms:.0f} ms, open in context {context_ms:.0f} ms")
    assert found_ms < FIND_MS and context_ms < JUMP_MS
    assert not console.errors, console.errors
