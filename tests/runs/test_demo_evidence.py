"""The OctoBench demo cites, for each failed check, the assistant message of the turn its reasoning names."""

import json
import re

import pytest
from django.urls import reverse

from runs.demo import SCALES, octobench_plan
from runs.ingest import Source, ingest
from runs.models import Verdict
from runs.trajectory_view import stored_threads

TURN = re.compile(r"Violated at turn (\d+)|第 (\d+) 轮违反")


def _main_threads(path) -> dict[str, list[dict]]:
    """instance id -> main-thread messages (the record that offers tools) of one trajectory file."""
    out = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["tools"]:
            out[record["meta"]["session_id"]] = record["messages"]
    return out


def test_it_points_each_failed_check_at_the_assistant_message_of_the_named_turn(tmp_path):
    plan = octobench_plan(3, SCALES["small"], tmp_path)
    trajectories = {
        step.options.run: _main_threads(step.paths[0]) for step in plan.steps if step.format == "octobench-trajectories"
    }
    cited = 0
    for step in (s for s in plan.steps if s.format == "octobench-scores"):
        for result in json.loads(step.paths[0].read_text())["results"]:
            messages = trajectories[step.options.run][result["instance_id"]]
            assistant = [n for n, m in enumerate(messages) if m["role"] == "assistant"]
            if "eval_result" not in result or "raw_response" in result["eval_result"]:
                continue  # the demo's judge glitches: nothing scored
            for group in result["eval_result"].values():
                for check in group["checks"]:
                    if check["result"] != "fail":
                        assert "evidence" not in check
                        continue
                    turn = int(next(g for g in TURN.search(check["reasoning"]).groups() if g))
                    assert check["evidence"] == assistant[turn - 1]
                    assert messages[check["evidence"]]["role"] == "assistant"
                    cited += 1
    assert cited > 50


@pytest.mark.django_db
def test_the_demo_attempt_page_links_a_failed_item_to_its_message(tmp_path, reviewer_client):
    plan = octobench_plan(3, SCALES["small"], tmp_path)
    run = next(s.options.run for s in plan.steps if s.format == "octobench-trajectories")
    for step in plan.steps:
        if step.format == "octobench-instances" or step.options.run == run:
            ingest(step.format, [Source.of(p) for p in step.paths], step.options)
    verdict = Verdict.objects.filter(result="fail").exclude(evidence=None).select_related("attempt").first()
    message = verdict.evidence["message"]
    assert stored_threads(verdict.attempt_id)[0]["messages"][message]["role"] == "assistant"

    body = reviewer_client.get(reverse("runs:attempt", args=[verdict.attempt_id])).content.decode()

    assert f"at={message}#m-0-{message}" in body and f'id="m-0-{message}"' in body
