"""mini-vela's own evaluate.py, run against a fake judge, and the portal's figures for its files.

The reference scorer (../shared/reference/mini-vela/evaluate.py, unmodified) runs in a subprocess
against a deterministic OpenAI-compatible judge on loopback (tests/fake_openai.py): once with a
judge that answers every instance with clean JSON, once with one that produces every record
evaluate.py writes when something goes wrong. The files it writes are imported through the
portal's ingest, and the leaderboard API must give the numbers evaluate.py printed, figure by figure.
Skipped when ../shared or the `openai` package (evaluate.py's client) is absent.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from runs.ingest import Options, Source, ingest
from runs.models import AttemptRollup, JudgeReport, ReportStatus

from ..fake_openai import Error, FakeChat, loopback_env

pytestmark = pytest.mark.django_db

EVALUATE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "mini-vela" / "evaluate.py"
MODEL = "agent-x"
SLUG = "octo-ref"

#: instance id -> checklist {category: [check ids]}; i09 has none, i10's trajectory file is empty
CHECKLISTS = {
    f"i{n:02d}": {
        "SP": [f"SP-{n}-1", f"SP-{n}-2"],
        "User query": [f"UQ-{n}-1"],
        **({"Memory": [f"MEM-{n}-1"]} if n % 2 else {}),
    }
    for n in range(1, 11)
}
CHECKLISTS["i09"] = {}


def clean_result(case: str, check_id: str, position: int) -> str:
    """The clean judge's verdict: deterministic, two of every three checks pass."""
    return "fail" if (int(case[1:]) + position) % 3 == 0 else "success"


def judged(checklist: dict, result, **extra) -> dict:
    """The checklist as the judge returns it, every check with `result(check_id, position)`."""
    out, position = {}, 0
    for category, group in checklist.items():
        checks = []
        for check in group["checks"]:
            position += 1
            checks.append(
                {**check, "reasoning": f"looked at {check['check_id']}", "result": result(check["check_id"], position)}
            )
        out[category] = {**group, "checks": checks}
    return {**out, **extra}


def answer(request: dict) -> str | Error:
    """The fake judge: which instance it judges is named in the trajectory's user message ("case iNN")."""
    prompt = request["messages"][0]["content"]
    case = re.search(r"case (i\d\d)", prompt).group(1)
    checklist = json.loads(prompt.split("=====CHECKLIST TO EVALUATE=====")[1])
    if request["model"] == "clean-judge":
        return json.dumps(judged(checklist, lambda cid, k: clean_result(case, cid, k)), ensure_ascii=False)
    behaviour = ERROR_JUDGE[case]
    return behaviour(checklist) if callable(behaviour) else behaviour


def _spellings(checklist: dict) -> str:
    """Fenced JSON (evaluate.py strips the fence) with result strings evaluate.py does not recognise."""
    words = iter(["Success", "SUCCESS", "success", "not_applicable"])
    return "```json\n" + json.dumps(judged(checklist, lambda cid, k: next(words))) + "\n```"


def _extras(checklist: dict) -> str:
    """A check the checklist lacks (passed), one repeated, one without a result: evaluate.py counts all."""
    reply = judged(checklist, lambda cid, k: "success")
    reply["SP"]["checks"] += [
        {"check_id": "SP-made-up", "result": "success"},
        {**reply["SP"]["checks"][0], "result": "fail"},
        {"check_id": reply["User query"]["checks"][0]["check_id"] + "-x"},
    ]
    return json.dumps(reply)


#: what the error judge does per instance (i09 and i10 never reach it: evaluate.py fails them first)
ERROR_JUDGE = {
    "i01": 'I checked the trajectory.\n<b>Verdict</b>: mostly fine, see below.\n{"SP": {"checks": [',  # not JSON
    "i02": Error(400, "The prompt is too long for this model."),  # the API call fails
    "i03": _spellings,
    "i04": json.dumps({"error": "I cannot judge this conversation"}),  # JSON, read as an error
    "i05": "{}",  # JSON without checks
    "i06": _extras,
    "i07": "[1, 2]",  # JSON evaluate.py cannot score: its reward computation raises, success false
    "i08": lambda checklist: json.dumps(judged(checklist, lambda cid, k: "success")),
}


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """mini-vela's task file (with checklists) and a trajectory folder, one file per instance."""
    folder.mkdir()
    tasks = folder / "data.jsonl"
    with tasks.open("w", encoding="utf-8") as f:
        for case, groups in CHECKLISTS.items():
            checklist = {
                category: {
                    "description": f"{category} rules",
                    "checks": [
                        {"check_id": cid, "description": f"requirement {cid}", "check_type": "compliance"}
                        for cid in ids
                    ],
                }
                for category, ids in groups.items()
            }
            f.write(
                json.dumps(
                    {
                        "instance_id": case,
                        "user_query": [f"case {case}"],
                        "category": "SP",
                        "scaffold": {"name": "claudecode", "version": "2.0.69"},
                        "checklist": checklist,
                    }
                )
                + "\n"
            )
    trajectories = folder / "trajectories"
    trajectories.mkdir()
    for case in CHECKLISTS:
        record = {
            "meta": {"session_id": case, "model": MODEL},
            "tools": [{"type": "function", "function": {"name": "Read", "description": "read a file"}}],
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": f"case {case}: explain the partition function"},
                {"role": "assistant", "content": f"Done with case {case}."},
            ],
        }
        (trajectories / f"{case}.jsonl").write_text(
            "" if case == "i10" else json.dumps(record) + "\n", encoding="utf-8"
        )
    return tasks, trajectories


def run_evaluate(tasks: Path, trajectories: Path, judge: str, base_url: str, cwd: Path) -> tuple[dict, dict]:
    """evaluate.py's scores file and the summary figures it printed."""
    output = cwd / f"scores_{judge}.json"
    done = subprocess.run(
        [
            sys.executable,
            str(EVALUATE),
            "--trajectories",
            str(trajectories),
            "--data",
            str(tasks),
            "--output",
            str(output),
            "--model",
            judge,
            "--base-url",
            base_url,
            "--api-key",
            "sk-test",
        ],
        cwd=cwd,
        env=loopback_env(dict(os.environ)) | {"PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        encoding="utf-8",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    printed = dict(re.findall(r"\[DONE\] (总数|成功|平均分|通过数): (\S+)", done.stdout))
    names = {"总数": "total", "成功": "success_count", "平均分": "avg_reward", "通过数": "pass_count"}
    return json.loads(output.read_text(encoding="utf-8")), {names[k]: json.loads(v) for k, v in printed.items()}


@pytest.fixture(scope="module")
def reference_files(tmp_path_factory):
    """evaluate.py's output for the clean and the error judge (run once for the module)."""
    if not EVALUATE.is_file():
        pytest.skip("../shared/reference/mini-vela/evaluate.py is absent")
    if importlib.util.find_spec("openai") is None:
        pytest.skip("the openai package (evaluate.py's client) is not installed")
    folder = tmp_path_factory.mktemp("minivela")
    tasks, trajectories = write_inputs(folder / "inputs")
    outputs = {}
    with FakeChat(answer) as base_url:
        for judge in ("clean-judge", "error-judge"):
            clean = judge == "clean-judge"
            data = tasks if not clean else _without(tasks, folder / "clean.jsonl", ("i09", "i10"))
            outputs[judge] = run_evaluate(data, trajectories, judge, base_url, folder)
    return tasks, trajectories, outputs


def _without(tasks: Path, target: Path, cases: tuple[str, ...]) -> Path:
    target.write_text(
        "".join(
            line for line in tasks.read_text().splitlines(keepends=True) if json.loads(line)["instance_id"] not in cases
        )
    )
    return target


def import_all(tasks: Path, trajectories: Path, outputs: dict) -> None:
    options = {"benchmark": SLUG}
    ingest("octobench-instances", [Source.of(tasks)], Options(**options))
    ingest(
        "octobench-trajectories",
        [Source.of(p) for p in sorted(trajectories.glob("*.jsonl")) if p.stat().st_size],
        Options(**options),
    )
    for judge in outputs:
        path = tasks.parent.parent / f"scores_{judge}.json"
        ingest("octobench-scores", [Source.of(path)], Options(model=MODEL, judge=judge, **options))


def test_the_reference_wrote_every_error_record(reference_files):
    _, _, outputs = reference_files
    results = {r["instance_id"]: r for r in outputs["error-judge"][0]["results"]}
    assert results["i01"]["eval_result"]["raw_response"].startswith("I checked the trajectory.")
    assert results["i02"]["success"] is False and "too long" in results["i02"]["error"]
    assert results["i03"]["reward"] == 0.25
    assert results["i04"]["eval_result"] == {"error": "I cannot judge this conversation"}
    assert (results["i05"]["success"], results["i05"]["reward"]) == (True, 0.0)
    assert results["i06"]["detailed_results"]["total_checks"] == 6 and results["i06"]["reward"] == 0.667
    assert results["i07"]["success"] is False and "items" in results["i07"]["error"]
    assert results["i08"]["binary_reward"] == 1
    assert results["i09"]["error"] == "case 中没有 checklist" and results["i10"]["error"] == "轨迹文件为空"


def test_the_portal_api_gives_the_figures_evaluate_py_printed(reference_files, reviewer_client):
    tasks, trajectories, outputs = reference_files
    import_all(tasks, trajectories, outputs)

    body = reviewer_client.get(reverse("api:leaderboard", args=[SLUG])).json()
    (row,) = body["rows"]
    for judge, (document, printed) in outputs.items():
        summary = document["summary"]
        assert printed == {k: summary[k] for k in ("total", "success_count", "avg_reward", "pass_count")}
        portal = row["per_judge"][judge]
        assert portal["n_attempts"] == summary["total"], judge
        assert portal["n_attempts"] - portal["unscored"].get(ReportStatus.FAILED, 0) == summary["success_count"], judge
        assert round(portal["macro_csr"] / 100, 3) == summary["avg_reward"], judge
        assert portal["n_success"] == summary["pass_count"], judge
        assert portal["isr"] == pytest.approx(100 * summary["pass_count"] / summary["total"]), judge
    assert row["per_judge"]["clean-judge"]["unscored"] == {} and row["per_judge"]["clean-judge"]["n_unrecognised"] == 0
    errors = row["per_judge"]["error-judge"]
    assert errors["unscored"] == {"not_json": 1, "error": 1, "no_checks": 1, "failed": 4}
    assert errors["n_unrecognised"] == 3  # "Success", "SUCCESS", "not_applicable"
    assert row["macro_csr"] == pytest.approx((row["per_judge"]["clean-judge"]["macro_csr"] + errors["macro_csr"]) / 2)


def test_each_attempt_keeps_the_reward_it_was_written_with_and_the_portal_counts_the_same(
    reference_files, reviewer_client
):
    tasks, trajectories, outputs = reference_files
    import_all(tasks, trajectories, outputs)

    attempts = reviewer_client.get(reverse("api:attempt-list") + f"?benchmark={SLUG}").json()
    attempts = attempts.get("results", attempts)
    reports = {(a["instance"], r["judge"]): r for a in attempts for r in a["judge_reports"]}
    for judge, (document, _) in outputs.items():
        for result in document["results"]:
            report = reports[(result["instance_id"], judge)]
            assert report["reward"] == result["reward"]
            assert report["binary_reward"] == result.get("binary_reward")
            rollup = AttemptRollup.objects.get(attempt__instance__external_id=result["instance_id"], judge__name=judge)
            assert round(rollup.n_passed / rollup.n_applicable, 3) == result["reward"], (judge, result["instance_id"])
    assert reports[("i01", "error-judge")]["status"] == "not_json"
    assert reports[("i01", "error-judge")]["raw_reply"] == ERROR_JUDGE["i01"]
    assert reports[("i02", "error-judge")]["status"] == "failed"
    assert JudgeReport.objects.get(attempt__instance__external_id="i03", judge__name="error-judge").unrecognised == {
        "SP-3-1": "Success",
        "SP-3-2": "SUCCESS",
        "MEM-3-1": "not_applicable",
    }
