"""GuideBench's own generate_resp.py and evaluate.py, against the portal's numbers for the same files.

generate_resp.py (../shared/reference/guidebench, unmodified) runs in a subprocess through
tests/reference_runners/guidebench_generate.py, which replaces only its vLLM model by a
deterministic fake: right and wrong answers, failed generations, prose that is not JSON,
empty and mistyped answer values, JSON without the answer key. evaluate.py is released with
mixed tabs and spaces, which Python 3 refuses (TabError); it runs from a copy made here in a
tmp folder with the tabs expanded, nothing else changed. The predictions are imported with
guidebench-tasks and guidebench-predictions, and GET /api/choice-metrics/ must give every
figure evaluate.py writes. Skipped when ../shared/reference or ../shared/data is absent.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest
from runs.models import Attempt

pytestmark = pytest.mark.django_db

TESTS = Path(__file__).resolve().parents[1]
SHARED = TESTS.parent.parent / "shared"
REFERENCE = SHARED / "reference" / "guidebench"
DATA = SHARED / "data" / "guidebench"
RUNNER = TESTS / "reference_runners" / "guidebench_generate.py"
CATEGORIES = ("price", "relevance", "math", "chat", "summary", "hallu")
METRICS = "/api/choice-metrics/"


@pytest.fixture
def workdir(tmp_path):
    if not (REFERENCE / "evaluate.py").is_file() or not (REFERENCE / "generate_resp.py").is_file():
        pytest.skip("../shared/reference/guidebench is absent")
    if not all((DATA / f"{c}_tasks.json").is_file() for c in CATEGORIES):
        pytest.skip("../shared/data/guidebench is absent")
    data = tmp_path / "data"
    data.mkdir()
    for category in CATEGORIES:
        (data / f"{category}_tasks.json").write_bytes((DATA / f"{category}_tasks.json").read_bytes())
    # generate_resp.py also generates for audit, which evaluate.py never reads: ten tasks shaped as price's
    audit = json.loads((DATA / "price_tasks.json").read_text(encoding="utf-8"))[:10]
    for task in audit:
        task["Instruction"] = "审核: " + task["Instruction"]
    (data / "audit_tasks.json").write_text(json.dumps(audit, ensure_ascii=False), encoding="utf-8")
    return tmp_path


def _run(args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def generate(workdir: Path) -> Path:
    """generate_resp.py with the fake model; the folder it writes (its own default, ./.YOUR_PATH)."""
    _run([str(RUNNER), str(REFERENCE)], workdir)
    return workdir / ".YOUR_PATH"


def evaluate(workdir: Path, predictions: Path) -> dict:
    """evaluate.py's label_score on `predictions`: {category: {Precision, Recall, F1-score, Accuracy}, "all": x}."""
    copy = workdir / "reference_copy"
    copy.mkdir()
    (copy / "guidebench_evaluate.py").write_text(
        (REFERENCE / "evaluate.py").read_text(encoding="utf-8").expandtabs(8), encoding="utf-8"
    )
    _run(
        [
            "-c",
            f"import sys; sys.path.insert(0, {str(copy)!r}); import guidebench_evaluate as e; "
            f"e.label_score({str(predictions)!r})",
        ],
        workdir,
    )
    text = (predictions / "label_result.txt").read_text(encoding="utf-8")
    written: dict = {"all": float(re.search(r"^all: ([\d.]+)$", text, re.M).group(1))}
    for block in re.findall(r"Category: (\w+)\n((?:\S[^\n]*: [\d.]+\n)+)", text):
        written[block[0]] = {k: float(v) for k, v in re.findall(r"^([\w-]+): ([\d.]+)$", block[1], re.M)}
    return written


def test_the_portal_gives_evaluate_py_figures_on_generate_resp_py_files(workdir, reviewer_client):
    predictions = generate(workdir)
    files = sorted(predictions.glob("*_tasks.json"))
    assert [f.name[: -len("_tasks.json")] for f in files] == sorted((*CATEGORIES, "audit"))
    written = evaluate(workdir, predictions)
    assert set(written) == {*CATEGORIES, "all"}

    # the odd records generate_resp.py writes are in the files evaluate.py scored
    chat = json.loads((predictions / "chat_tasks.json").read_text(encoding="utf-8"))
    assert chat[3]["LLMAnswer"] == {} and chat[3]["cleaned_response"] == ""  # a failed generation
    assert chat[4]["LLMAnswer"] == {} and chat[4]["cleaned_response"].startswith("我认为")  # not JSON
    assert chat[5]["LLMAnswer"]["OptimalOption"] == 2 and "OptimalOption" not in chat[6]["LLMAnswer"]

    ingest("guidebench-tasks", [Source.of(p) for p in sorted((workdir / "data").glob("*.json"))], Options())
    ingest("guidebench-predictions", [Source.of(p) for p in files], Options(model="fake/llama", run="fake-run"))
    body = reviewer_client.get(METRICS, {"run": "fake-run"}).json()
    for category in CATEGORIES:
        ours, theirs = body["categories"][category], written[category]
        assert {
            "Precision": round(ours["precision"] / 100, 4),
            "Recall": round(ours["recall"] / 100, 4),
            "F1-score": round(ours["f1"] / 100, 4),
            "Accuracy": round(ours["accuracy"] / 100, 4),
        } == theirs, category
    assert round(body["reference_overall_accuracy"] / 100, 4) == written["all"]
    # the portal's own overall weights the imported tasks (audit included): a different figure, labelled apart
    n = sum(c["n"] for c in body["categories"].values())
    assert n == 6 * 30 + 10 and round(body["overall_accuracy"] / 100, 4) != written["all"]
    unanswered = Attempt.objects.filter(run__label="fake-run", outcome__unanswered=True).count()
    assert body["unanswered"] == unanswered > 0


def test_where_evaluate_py_crashes_the_portal_still_scores(workdir, reviewer_client):
    """generate_resp.py stores whatever json.loads returns: a bare number as the whole answer makes evaluate.py stop
    on `.get`; the portal imports the same files and counts that answer as missing (unparsable), scored -1."""
    predictions = generate(workdir)
    path = predictions / "price_tasks.json"
    tasks = json.loads(path.read_text(encoding="utf-8"))
    tasks[1]["cleaned_response"], tasks[1]["LLMAnswer"] = "1", 1
    path.write_text(json.dumps(tasks, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="AttributeError: 'int' object has no attribute 'get'"):
        evaluate(workdir, predictions)
    ingest("guidebench-tasks", [Source.of(p) for p in sorted((workdir / "data").glob("*.json"))], Options())
    ingest(
        "guidebench-predictions",
        [Source.of(p) for p in sorted(predictions.glob("*_tasks.json"))],
        Options(model="fake/llama", run="fake-run"),
    )
    bare = Attempt.objects.get(run__label="fake-run", outcome__raw=1, instance__primary_category="price")
    assert (bare.outcome["answer"], bare.outcome["unanswered_reason"]) == (-1, "unparsable")
    assert reviewer_client.get(METRICS, {"run": "fake-run"}).json()["categories"]["price"]["n"] == 30
