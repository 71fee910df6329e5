"""EvolIF's own harness and scorer against the portal, figure by figure.

The test runs the unmodified `src/eval.py` from ../shared/reference/evolif (skipped when that
folder or the `openai` package is absent) against a small deterministic OpenAI-compatible model
served on 127.0.0.1, in two passes over four dialogue scripts the project owns:

- pass 1: dialog_1 ends by patience, dialog_2 by its script; the model call fails at turn 4 of
  dialog_3 (eval.py stops that dialogue: a log with patience left) and at turn 1 of dialog_4
  (an empty log);
- pass 2: the same command again; eval.py resumes dialog_3 and dialog_4 by appending to their logs;
- pass 3: dialog_4's last line is cut in half, as when eval.py is killed while writing it, and
  the command runs again: eval.py skips the cut line, plays that turn again and appends it
  right after the cut text. score.py cannot read that log (it stops at the broken line); the
  portal reads it as eval.py does and must give pass 2's figures.

Emotion and reader age are judged by the fake model ("[judge N]" in a response makes it score N,
"[JUDGE NONE]" makes it reply with text that is not JSON: eval.py logs [0.0, ""]); eval.py's style
checker always fails its own call (it passes no base_url) and logs [0.0, ""] too.

After each pass `src/score.py` runs on the logs (after pass 2 also with `--patience 2`, which the
portal answers as a re-simulation at patience 2), the logs are imported through the portal's
ingest and /api/dialogue-metrics/ must give every figure score.py printed: as the portal's own
figure, or, where the portal defines the metric otherwise (REC; ROB with an empty dialogue), as
the reference figure beside it. The logs and printouts are kept under
tests/fixtures/evolif/harness/, so the same comparison runs without ../shared (and the live run
checks they are still what eval.py writes).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from runs.ingest import Options, Source, ingest
from runs.models import Verdict

pytestmark = pytest.mark.django_db

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "evolif"
HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "evolif" / "harness"
URL = "/api/dialogue-metrics/"
MODEL = "fake-model"

# The dialogue scripts: (user query, instructions, the model's reply). A reply of None means the
# model call fails (HTTP 400, which the OpenAI client does not retry) during pass 1.
_LOWER = {"id": "case", "args": {"mode": "all_lower"}, "description": "All letters must be lowercase."}
_UPPER = {"id": "case", "args": {"mode": "all_upper"}, "description": "All letters must be uppercase."}
_HAPPY = {
    "id": "emotion",
    "args": {"emotion": "happy"},
    "description": "The response should adopt a 'happy' emotional tone throughout.",
}
_CHILD = {
    "id": "reader_age",
    "args": {"reader_age": "child"},
    "description": "The response should be tailored for 'child' readers.",
}
_FORMAL = {"id": "style", "args": {"style": "formal"}, "description": "The response should be in a formal style."}
SCRIPTS = {
    1: [  # T F T F F F: patience 3 runs out at turn 6 of 8
        ("d1t1 tell me about tides, all lowercase.", [_LOWER], "tides rise and fall twice a day."),
        ("d1t2 more on tides.", [_LOWER], "Tides Follow The Moon."),
        ("d1t3 and happily, please.", [_LOWER, _HAPPY], "what a joy the sea is! [judge 8]"),
        ("d1t4 go on.", [_LOWER, _HAPPY], "THE SEA IS LOUD."),
        ("d1t5 go on.", [_LOWER, _HAPPY], "THE SEA IS LOUDER."),
        ("d1t6 go on.", [_LOWER, _HAPPY], "THE SEA IS LOUDEST."),
        ("d1t7 never asked.", [_LOWER], "unused"),
        ("d1t8 never asked.", [_LOWER], "unused"),
    ],
    2: [  # T F T T: ends with its script; score.py's Recovery divides by 0 here (inf)
        ("d2t1 a happy story.", [_HAPPY], "a sunny day at the fair [judge 8]"),
        ("d2t2 for a child, still happy.", [_HAPPY, _CHILD], "an account of regulatory frameworks [judge 4]"),
        ("d2t3 just for a child.", [_CHILD], "the cat saw a big red ball [judge 9]"),
        ("d2t4 for a child, in lowercase.", [_CHILD, _LOWER], "the dog ran home [judge 7]"),
    ],
    3: [  # T F F | stopped at turn 4 in pass 1 | T T in pass 2
        ("d3t1 SHOUT A GREETING.", [_UPPER], "HELLO THERE"),
        ("d3t2 FORMALLY NOW.", [_UPPER, _FORMAL], "GOOD DAY TO YOU"),
        ("d3t3 HAPPILY NOW.", [_UPPER, _HAPPY], "HOORAY [JUDGE NONE]"),
        ("d3t4 AGAIN.", [_UPPER], None),
        ("d3t5 BYE.", [_UPPER], "FAREWELL"),
    ],
    4: [  # empty in pass 1 (the call fails at turn 1) | T T T in pass 2
        ("d4t1 whisper something.", [_LOWER], None),
        ("d4t2 whisper more.", [_LOWER], "the night is quiet"),
        ("d4t3 and more.", [_LOWER], "the stars are out"),
    ],
}
REPLIES = {query: reply for turns in SCRIPTS.values() for query, _, reply in turns}
RECOVERED = {"d3t4 AGAIN.": "HELLO AGAIN", "d4t1 whisper something.": "hush now"}

NLTK_STUB = '''"""Stand-in for nltk (not installed): eval.py imports it; only "sentence" length checks would use it."""
import re
import types


class _Sentences:
    def tokenize(self, text):
        return [s for s in re.split(r"(?<=[.!?])\\s+", text.strip()) if s]


data = types.SimpleNamespace(load=lambda name: _Sentences())
'''


def dialog_rows(n: int) -> list[dict]:
    """dialog_<n>.jsonl in the released format (README: Record Format)."""
    style = {"uuid": f"harness-{n}", "persona": "A test persona.", "styles": ["plain"]}
    return [
        {
            "turn": t,
            "active_topic": n,
            "user_query_verified": query,
            "user_query": query,
            "instructions": instructions,
            "style": style,
            "instruction_success": True,
            "topic_success": True,
        }
        for t, (query, instructions, _) in enumerate(SCRIPTS[n], 1)
    ]


# the fake model ------------------------------------------------------------------------
class FakeModel(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: the scripted reply to the last user message, or a judge's JSON."""

    failing = True  # pass 1: the calls whose reply is None fail

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        if body["model"] != MODEL:  # eval.py's LLM judges ask for gpt-4.1
            return self._reply(body["model"], self._judge(prompt))
        reply = REPLIES.get(prompt)
        if reply is None and prompt in RECOVERED:
            if type(self).failing:
                return self._send(400, {"error": {"message": "fake failure", "type": "invalid_request_error"}})
            reply = RECOVERED[prompt]
        return self._reply(MODEL, reply if reply is not None else "no script for this query")

    @staticmethod
    def _judge(prompt: str) -> str:
        text = prompt.split("## Text", 1)[-1]
        if "[judge none]" in text.casefold():
            return "I would rather not give a score."
        found = re.search(r"\[judge (\d+)\]", text, re.IGNORECASE)
        score = int(found.group(1)) if found else 5
        return json.dumps({"rationale": f"the fake judge read marker {score}", "score": score})

    def _reply(self, model: str, content: str):
        self._send(
            200,
            {
                "id": "fake",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _send(self, status: int, payload: dict):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_model():
    FakeModel.failing = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


# running the reference -----------------------------------------------------------------
def _env(work: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**env, "PYTHONPATH": str(work / "stubs"), "PYTHONDONTWRITEBYTECODE": "1", "NO_PROXY": "127.0.0.1"}


def _prepare(work: Path) -> None:
    (work / "stubs" / "nltk").mkdir(parents=True)
    (work / "stubs" / "nltk" / "__init__.py").write_text(NLTK_STUB)
    (work / "data").mkdir()  # instruction_utils reads its topic keywords from ./data at import
    (work / "data" / "input_data_modified_keywords_v2.jsonl").write_text(
        json.dumps({"key": "sea", "keywords": ["tide"], "prompt": "Tell me about the sea."}) + "\n"
    )
    (work / "dialog").mkdir()
    for n in SCRIPTS:
        (work / "dialog" / f"dialog_{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dialog_rows(n)))


def run_eval(work: Path, base_url: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-B",
        str(REFERENCE / "src" / "eval.py"),
        "--dialogs_dir",
        "dialog",
        "--output_dir",
        "out",
        "--start_id",
        "1",
        "--end_id",
        str(len(SCRIPTS)),
        "--model_name",
        MODEL,
        "--api_key",
        "test",
        "--base_url",
        base_url,
        "--patience",
        "3",
    ]
    done = subprocess.run(command, cwd=work, env=_env(work), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def run_score(work: Path, *extra: str, readable: bool = True) -> str:
    """score.py's printout; with readable=False, its error output (it must fail)."""
    command = [
        sys.executable,
        "-B",
        str(REFERENCE / "src" / "score.py"),
        "--input_dir",
        f"out/{MODEL}",
        "--start_id",
        "1",
        "--end_id",
        str(len(SCRIPTS)),
        *extra,
    ]
    done = subprocess.run(command, cwd=work, env=_env(work), capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == readable, done.stderr[-2000:]
    return done.stdout if readable else done.stderr


# reading score.py's printout -------------------------------------------------------------
_NUMBER = re.compile(r"-?inf|nan|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def parse_printout(text: str) -> dict:
    """score.py's printed figures: {"dialogues", "act_len", "act_acc", "act_succ", "lss", "csr", "isr", "rob", "rec",
    "survival": [...], "constraints": {id: (pass, total, rate)}} (rates as printed, fractions)."""
    lines = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    numbers = lambda s: [float(x) for x in _NUMBER.findall(s.replace("np.float64", ""))]  # noqa: E731
    act = numbers(lines["Endurance"])
    survival = ast.literal_eval(lines["Turn number survival ratio"])
    while survival and survival[-1] == 0:
        survival.pop()
    return {
        "dialogues": int(lines["Total dialog number"]),
        "act_len": act[0],
        "act_acc": act[1],
        "act_succ": act[2],
        "lss": numbers(lines["Endurance_LSS"])[0],
        "csr": numbers(lines["Constraint Satisfaction Rate (CSR)"])[0],
        "isr": numbers(lines["Instruction Satisfaction Rate (ISR)"])[0],
        "rob": numbers(lines["Robustness"])[0],
        "rec": numbers(lines["Recovery"])[0],
        "survival": [int(x) for x in survival],
        "constraints": ast.literal_eval(lines["Constraint pass rate"]),
    }


RATES = ("csr", "isr", "rob", "rec")  # score.py prints fractions; the portal percent


def _same(printed: float, value: float | None, undefined: str | None = None) -> bool:
    if math.isnan(printed) or math.isinf(printed):
        return undefined == str(printed)
    return value is not None and math.isclose(value, printed, rel_tol=1e-9, abs_tol=1e-9)


def assert_matches_printout(body: dict, printed: dict) -> set[str]:
    """Every figure score.py printed is in the API body: the reference block always, the portal's own
    figure unless the metric is listed as differing. Returns the metrics that differ."""
    reference = body["reference"]
    differs = set(reference["differs"])
    assert body["dialogues"] == reference["dialogues"] == printed["dialogues"]
    for name in ("act_len", "act_acc", "act_succ", "lss", *RATES):
        scale = 100 if name in RATES else 1
        want = printed[name] * scale
        assert _same(want, reference[name], reference["undefined"].get(name)), (name, reference[name], printed[name])
        if name not in differs:
            assert _same(want, body[name]), (name, body[name], printed[name])
    assert reference["survival"] == printed["survival"]
    alive = [round(p * body["dialogues"] / 100) for p in body["survival"]]
    assert alive == printed["survival"]
    assert set(body["constraints"]) == set(printed["constraints"])
    for key, (_passed, _total, rate) in printed["constraints"].items():
        assert body["constraints"][key] == pytest.approx(100 * rate), key
    return differs


def import_pass(logs: Path, dialogs: Path, run: str = MODEL) -> None:
    ingest("evolif-dialogs", [Source.of(p) for p in sorted(dialogs.glob("dialog_*.jsonl"))], Options())
    ingest("evolif-eval", [Source.of(p) for p in sorted(logs.glob("eval_*.jsonl"))], Options(model=MODEL, run=run))


def check_pass(client, logs: Path, dialogs: Path, printout: str, run: str = MODEL) -> tuple[dict, set[str]]:
    import_pass(logs, dialogs, run)
    body = client.get(URL, {"run": run}).json()
    return body, assert_matches_printout(body, parse_printout(printout))


# the tests -------------------------------------------------------------------------------
def _check_both_passes(
    client, pass1: Path, pass2: Path, dialogs: Path, score1: str, score2: str, score2_p2: str
) -> None:
    body, differs = check_pass(client, pass1, dialogs, score1)
    assert body["dialogues"] == 4 and body["ended_by"] == {"patience": 1, "script_end": 1, "stopped": 2}
    # dialog_4's empty log: score.py's Robustness is nan (0/0), the portal's ROB leaves the 0-turn dialogue out
    assert body["reference"]["undefined"] == {"rob": "nan", "rec": "inf"} and differs == {"rob", "rec"}
    assert body["rob"] == pytest.approx(100 * (2 / 6 + 3 / 4 + 1 / 3) / 3)

    body, differs = check_pass(client, pass2, dialogs, score2)
    assert body["dialogues"] == 4 and body["ended_by"] == {"patience": 1, "script_end": 3, "stopped": 0}
    # REC: score.py divides by (turns - successes - 1) over every dialogue: 1/3, inf, 1/1, 0/-1
    assert body["reference"]["undefined"] == {"rec": "inf"} and differs == {"rec"}
    # the portal: recoveries / turns after a failed turn, over dialogues with such a turn: 1/3, 1/1, 1/2
    assert body["rec"] == pytest.approx(100 * (1 / 3 + 1 + 1 / 2) / 3) and body["rec_dialogues"] == 3
    # score.py --patience 2 on logs recorded with patience 3 stops each dialogue after 2 failures in a row: the
    # portal's re-simulation at patience 2
    body = client.get(URL, {"run": MODEL, "patience": 2}).json()
    assert body["patience"] == 2 and assert_matches_printout(body, parse_printout(score2_p2)) == {"rec"}
    assert body["ended_by"] == {"patience": 2, "script_end": 2, "stopped": 0}

    judged = {
        (v.item.key, v.attempt.instance.external_id): (v.result, v.score, v.reasoning)
        for v in Verdict.objects.filter(item__group__in=["emotion", "reader_age", "style"]).select_related(
            "item", "attempt__instance"
        )
    }
    assert judged[("t3:emotion", "dialog_1")] == ("pass", 8.0, "the fake judge read marker 8")
    assert judged[("t2:reader_age", "dialog_2")] == ("fail", 4.0, "the fake judge read marker 4")
    result, score, reasoning = judged[("t2:style", "dialog_3")]
    assert (result, score) == ("fail", 0.0) and "the LLM judge gave no score" in reasoning
    assert judged[("t3:emotion", "dialog_3")][:2] == ("fail", 0.0)


def test_the_portal_gives_score_py_figures_for_the_kept_harness_logs(reviewer_client):
    """Without ../shared: the logs and printouts eval.py and score.py wrote, kept as fixtures."""
    _check_both_passes(
        reviewer_client,
        HARNESS / "pass1",
        HARNESS / "pass2",
        HARNESS / "dialog",
        (HARNESS / "score_pass1.txt").read_text(),
        (HARNESS / "score_pass2.txt").read_text(),
        (HARNESS / "score_pass2_patience2.txt").read_text(),
    )


def test_eval_py_output_imports_and_the_api_matches_score_py(reviewer_client, fake_model, tmp_path):
    if not (REFERENCE / "src" / "eval.py").is_file():
        pytest.skip("../shared/reference/evolif is absent")
    pytest.importorskip("openai", reason="EvolIF's eval.py needs the openai package")
    _prepare(tmp_path)
    logs = tmp_path / "out" / MODEL
    run_eval(tmp_path, fake_model)
    pass1 = {p.name: p.read_text() for p in logs.glob("eval_*.jsonl")}
    assert pass1["eval_4.jsonl"] == "" and len(pass1["eval_3.jsonl"].splitlines()) == 3
    score1 = run_score(tmp_path)
    snapshot = tmp_path / "pass1"
    snapshot.mkdir()
    for name, text in pass1.items():
        (snapshot / name).write_text(text)
    FakeModel.failing = False
    run_eval(tmp_path, fake_model)  # resumes dialog_3 and dialog_4 by appending to their logs
    score2 = run_score(tmp_path)
    score2_p2 = run_score(tmp_path, "--patience", "2")
    assert (logs / "eval_3.jsonl").read_text().startswith(pass1["eval_3.jsonl"])
    _check_both_passes(reviewer_client, snapshot, logs, tmp_path / "dialog", score1, score2, score2_p2)
    # the kept fixtures are what eval.py and score.py write today
    kept = {p.name: p.read_text() for p in (HARNESS / "pass1").glob("eval_*.jsonl")}
    assert kept == pass1
    assert {p.name: p.read_text() for p in (HARNESS / "pass2").glob("eval_*.jsonl")} == {
        p.name: p.read_text() for p in logs.glob("eval_*.jsonl")
    }
    assert (HARNESS / "score_pass1.txt").read_text() == score1
    assert (HARNESS / "score_pass2.txt").read_text() == score2
    assert (HARNESS / "score_pass2_patience2.txt").read_text() == score2_p2

    # pass 3: killed while writing dialog_4's last turn, then resumed
    log4 = logs / "eval_4.jsonl"
    complete = log4.read_text()
    lines = complete.splitlines(keepends=True)
    log4.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    run_eval(tmp_path, fake_model)
    glued = log4.read_text()
    assert glued != complete and glued.endswith(lines[-1]) and len(glued.splitlines()) == len(lines)
    assert "JSONDecodeError" in run_score(tmp_path, readable=False)
    body, differs = check_pass(reviewer_client, logs, tmp_path / "dialog", score2, run="fake-model-resumed")
    assert differs == {"rec"} and body["ended_by"] == {"patience": 1, "script_end": 3, "stopped": 0}
