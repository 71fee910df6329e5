"""ManyIH's own coding evaluator, run on a fake model, against the portal's numbers for the same file.

The reference (../shared/reference/manyih, unmodified) runs in a subprocess through
tests/reference_runners/manyih_coding.py, which replaces only its API client by a small
deterministic fake model: clean replies, replies with no code, code its style checkers
cannot tokenise and a failed API call. Its results file is imported with manyih-data and
manyih-results, and GET /api/hierarchy-metrics/ must give every figure the evaluator
prints, at the precision it prints them. Skipped when ../shared/reference is absent.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest
from runs.models import Attempt, Verdict

pytestmark = pytest.mark.django_db

TESTS = Path(__file__).resolve().parents[1]
REFERENCE = TESTS.parent.parent / "shared" / "reference" / "manyih"
SHARED_DATA = TESTS.parent.parent / "shared" / "data" / "manyih" / "coding.json"
RUNNER = TESTS / "reference_runners" / "manyih_coding.py"
FIXTURE_DATA = TESTS / "fixtures" / "manyih" / "coding_small.json"
METRICS = "/api/hierarchy-metrics/"


@pytest.fixture
def reference():
    if not (REFERENCE / "manyih" / "coding" / "evaluator.py").is_file():
        pytest.skip("../shared/reference/manyih is absent")
    return REFERENCE


def run_evaluator(reference: Path, data_file: Path, out_dir: Path, plan: dict | None = None) -> tuple[Path, str]:
    """Run the reference evaluator on `data_file` with the fake model; (results file, its printout)."""
    output = out_dir / "results" / "coding_fake.json"
    env = {k: v for k, v in os.environ.items() if k not in ("FAKE_PLAN", "PYTHONPATH")}
    if plan is not None:
        env["FAKE_PLAN"] = json.dumps(plan)
    done = subprocess.run(
        [
            sys.executable,
            str(RUNNER),
            str(reference),
            "--data_file",
            str(data_file),
            "--model",
            "vllm:127.0.0.1:9:fake",
            "--output",
            str(output),
            "--no-cache",
            "--delay",
            "0",
            "--concurrency",
            "4",
        ],
        cwd=out_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return output, done.stdout


def printed_figures(stdout: str) -> dict:
    """The figures of the evaluator's final analysis (`_print_analysis`), as printed."""
    text = stdout[stdout.rindex("ANALYSIS:") :]
    figures: dict = {}
    for name in ("Test passed", "Style passed", "Overall passed"):
        count, pct = re.search(rf"^{name}:\s+(\d+) \(([\d.]+)%\)", text, re.M).groups()
        figures[name] = (int(count), float(pct))
    figures["total"] = int(re.search(r"^Total samples:\s+(\d+)", text, re.M).group(1))
    reasons = text[text.index("Test Failures:") : text.index("Style Failures:")]
    figures["reasons"] = {k: int(n) for k, n in re.findall(r"^\s{4}(\w+)\s*:\s+(\d+) \(", reasons, re.M)}
    match = re.search(
        r"Assertion Pass Rate \(avg per sample\): ([\d.]+)%\n\s+Total assertions: (\d+)\n"
        r"\s+Passed assertions: (\d+)",
        text,
    )
    figures["assertions"] = None if match is None else (float(match[1]), int(match[2]), int(match[3]))
    match = re.search(r"Style Satisfaction Rate \(avg per sample\): ([\d.]+)%\n\s+By category:\n((?:\s{4}.*\n)*)", text)
    figures["satisfaction"] = None if match is None else float(match[1])
    figures["by_category"] = (
        {}
        if match is None
        else {
            k: (int(p), int(t), float(r))
            for k, p, t, r in re.findall(r"^\s{4}(\S+)\s*:\s+(\d+)/\s*(\d+) \(([\d.]+)%\)", match[2], re.M)
        }
    )
    return figures


def portal_metrics(client, data_file: Path, results_file: Path) -> dict:
    ingest("manyih-data", [Source.of(data_file)], Options())
    ingest("manyih-results", [Source.of(results_file)], Options(model="fake/coder", run="fake-run"))
    response = client.get(METRICS, {"run": "fake-run"})
    assert response.status_code == 200, response.content
    return response.json()


def assert_same_figures(printed: dict, body: dict) -> None:
    """Every printed figure equals the portal's at the printed precision (counts exactly)."""
    ev = body["evaluator"]
    n = printed["total"]
    assert body["samples"] == ev["total"] == n
    for name, count_key, pct_key in (
        ("Test passed", "test_passed", "acc_test"),
        ("Style passed", "style_passed", "acc_style"),
        ("Overall passed", "overall_passed", "acc"),
    ):
        count, pct = printed[name]
        assert ev[count_key] == count, name
        assert round(body[pct_key], 1) == pytest.approx(pct), name
    assert ev["test_failure_reasons"] == printed["reasons"]
    if printed["assertions"] is None:
        assert ev["assertion_pass_rate"] is None
    else:
        rate, total, passed = printed["assertions"]
        assert round(ev["assertion_pass_rate"] * 100, 1) == pytest.approx(rate)
        assert (ev["total_assertions"], ev["passed_assertions"]) == (total, passed)
    if printed["satisfaction"] is None:
        assert ev["style_satisfaction_rate"] is None
    else:
        assert round(ev["style_satisfaction_rate"] * 100, 1) == pytest.approx(printed["satisfaction"])
    groups = {g: (c["passed"], c["total"], round(c["rate"], 1)) for g, c in body["style_groups"].items() if c["total"]}
    assert groups == {g: (p, t, pytest.approx(r)) for g, (p, t, r) in printed["by_category"].items()}
    rates = {g: r for g, r in body["by_style_group"].items() if r is not None}
    assert {g: round(r, 1) for g, r in rates.items()} == {
        g: pytest.approx(r) for g, (_, _, r) in printed["by_category"].items()
    }


def test_the_portal_gives_the_evaluators_figures_on_the_released_samples(reference, reviewer_client, tmp_path):
    if not SHARED_DATA.is_file():
        pytest.skip("../shared/data/manyih/coding.json is absent")
    doc = json.loads(SHARED_DATA.read_text())
    doc["data"] = doc["data"][:16]
    data_file = tmp_path / "coding.json"
    data_file.write_text(json.dumps(doc))
    results_file, stdout = run_evaluator(reference, data_file, tmp_path)
    written = json.loads(results_file.read_text())["results"]
    no_code = [r for r in written if r["evaluation"].get("code_extracted") is False]
    errors = [r for r in written if "error" in r]
    assert len(no_code) == 4 and all("each_style_passed" not in r["evaluation"] for r in no_code)
    assert {r["error"].split(" (")[0] for r in errors} == {
        "unindent does not match any outer indentation level",
        "HTTP 500: upstream model overloaded",
    }
    printed = printed_figures(stdout)
    body = portal_metrics(reviewer_client, data_file, results_file)
    assert_same_figures(printed, body)
    assert (body["evaluator"]["no_code"], body["evaluator"]["errors"]) == (4, 3)
    # the style groups of samples the evaluator did not style-check are left out, not failed
    assert sum(c["left_out"] for c in body["style_groups"].values()) == sum(
        len(r.get("expected_styles") or _expected(doc, r["id"])) for r in no_code + errors
    )


def _expected(doc: dict, sample_id) -> dict:
    return next(s for s in doc["data"] if s["id"] == sample_id)["metadata"]["expected_styles"]


def test_the_portal_gives_the_evaluators_figures_on_the_projects_fixture(reference, reviewer_client, tmp_path):
    plan = {"0": "clean", "1": "empty", "2": "api_failure"}
    results_file, stdout = run_evaluator(reference, FIXTURE_DATA, tmp_path, plan)
    printed = printed_figures(stdout)
    assert printed["Overall passed"] == (1, 33.3)
    body = portal_metrics(reviewer_client, FIXTURE_DATA, results_file)
    assert_same_figures(printed, body)
    empty = Attempt.objects.get(instance__external_id="1")
    assert empty.outcome["status"] == "no_code" and empty.outcome["error"] == "No code found in response"
    assert set(Verdict.objects.filter(attempt=empty).exclude(result="na").values_list("result", flat=True)) == {"fail"}
