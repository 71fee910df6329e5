"""The import page in a real browser: files that lack an option their format needs are refused at once, in the
page's own words next to the field, and no job is started."""

import json
import re

import pytest

from runs.models import Job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_scores_without_a_judge_are_refused_next_to_the_judge_field(
    page, live_server, console, editor, log_in, tmp_path, artifacts
):
    scores = tmp_path / "scores.json"
    scores.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "instance_id": "t-1",
                        "eval_result": {"SP": {"checks": [{"check_id": "SP-1", "result": "success"}]}},
                    }
                ]
            }
        )
    )
    log_in("editor", "pw-editor-1")

    page.goto(f"{live_server.url}/import/")
    page.locator("input[name=format][value=octobench-scores]").check()
    page.locator("#id_files").set_input_files(str(scores))
    page.locator("#id_model").fill("model-a")
    page.get_by_role("button", name="Start import").click()
    page.wait_for_load_state("networkidle")

    judge = page.locator("label.field", has=page.locator("#id_judge"))
    error = judge.locator(".errorlist").inner_text()
    assert "fill in the Judge field" in error
    assert not any(re.search(r"--[a-z]", text) for text in page.locator(".errorlist").all_inner_texts())  # no CLI flag
    assert page.url.endswith("/import/") and not Job.objects.exists()
    page.screenshot(path=str(artifacts / "import-refused.png"), full_page=True)
    assert [e for e in console.errors if "/import/" not in e or "400" not in e] == []


def test_a_job_whose_file_was_refused_offers_no_retry_but_a_new_import(
    page, live_server, console, editor, log_in, tmp_path
):
    bad = tmp_path / "instances.jsonl"
    bad.write_text('{"instance_id": "t-1", "checklist": \n')
    log_in("editor", "pw-editor-1")

    page.goto(f"{live_server.url}/import/")
    page.locator("input[name=format][value=octobench-instances]").check()
    page.locator("#id_files").set_input_files(str(bad))
    page.get_by_role("button", name="Start import").click()
    page.wait_for_load_state("networkidle")

    status = page.locator("#job-status")
    assert "failed" in status.inner_text() and "instances.jsonl:1: not valid JSON" in status.inner_text()
    assert status.get_by_role("button", name="Retry").count() == 0
    status.get_by_role("link", name="Import the fixed files").click()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("/import/?format=octobench-instances")
    assert page.locator("input[name=format][value=octobench-instances]").is_checked()
    assert console.errors == []
