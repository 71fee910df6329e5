"""Run GuideBench's own generate_resp.py (as `__main__`) with a fake model in place of vLLM.

Usage (cwd: a folder holding data/<category>_tasks.json for math, audit, chat, hallu, price,
relevance and summary): python guidebench_generate.py REFERENCE_DIR

generate_resp.py is the unmodified reference; it imports vllm, openai and transformers at
the top and calls a vLLM model. Only those imports are replaced: `vllm.LLM` becomes
`FakeLLM`, a small deterministic model that finds each prompt's task in data/ and answers,
by the task's place n in its file, kind = n modulo (7 + len(category) % 4):

0 the right answer in a ```json fence, 1 a wrong answer, 2 the right answer as bare JSON,
3 nothing (a failed generation), 4 prose that is not JSON, 5 an empty or non-string answer
value, 6 JSON without the answer key, 7 and above the right answer again (so accuracy
differs between categories).

Answers keep the ground truth's type (price: integers), so evaluate.py's scikit-learn calls
see no mix of label types. The reference writes its files to ./.YOUR_PATH/ (its own default).
"""

from __future__ import annotations

import json
import runpy
import sys
import types
from pathlib import Path

OPTIONS = "ABCD"


def load_tasks(data_dir: Path) -> list[tuple[str, int, dict]]:
    """(category, place in its file, task) for every task in data_dir."""
    out = []
    for path in sorted(data_dir.glob("*_tasks.json")):
        category = path.name[: -len("_tasks.json")]
        out.extend((category, n, task) for n, task in enumerate(json.loads(path.read_text(encoding="utf-8"))))
    return out


def answer(category: str, n: int, task: dict) -> str:
    truth = task["Groundtruth"]
    if "OptimalOption" in truth and "ReferenceAnswer" not in truth:
        key, right = "OptimalOption", truth["OptimalOption"]
        wrong = OPTIONS[(OPTIONS.index(right) + 1) % 4] if right in OPTIONS else "A"
        odd = 2  # a number where a letter belongs: the reference counts it as "E"
        analysis = "AnswerAnalysis"
    else:
        key, right = "CandidateAnswer", truth["ReferenceAnswer"]
        if isinstance(right, int):
            wrong, odd = 1 - right, ""
        else:
            wrong, odd = f"{right}0", (None if category == "math" else "")
        analysis = "CandidateAnalysis"
    kind = n % (7 + len(category) % 4)
    if kind == 0 or kind >= 7:
        return "```json\n" + json.dumps({key: right, analysis: "按规则逐条比对。"}, ensure_ascii=False) + "\n```"
    if kind == 1:
        return json.dumps({key: wrong, analysis: "误读了规则。"}, ensure_ascii=False)
    if kind == 2:
        return json.dumps({key: right, analysis: "ok"}, ensure_ascii=False)
    if kind == 3:
        return ""
    if kind == 4:
        return "我认为答案是 B，因为它最符合指南。"
    if kind == 5:
        return json.dumps({key: odd, analysis: "不确定"}, ensure_ascii=False)
    return json.dumps({analysis: "没有给出答案"}, ensure_ascii=False)


class _Output:
    def __init__(self, text: str):
        self.outputs = [types.SimpleNamespace(text=text)]


def main() -> None:
    reference = Path(sys.argv[1]).resolve()
    tasks = load_tasks(Path("data"))

    class FakeLLM:
        def __init__(self, *args, **kwargs):
            pass

        def generate(self, prompts, sampling_params=None):
            replies = []
            for prompt in prompts:
                found = next(
                    (c, n, t)
                    for c, n, t in tasks
                    if t["Context"] in prompt
                    and t["Instruction"] in prompt
                    and str(t["Guidelines"]) in prompt
                    and str(t.get("MultipleOptions", "")) in prompt
                )
                replies.append(_Output(answer(*found)))
            return replies

    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM
    vllm.SamplingParams = lambda **kwargs: kwargs
    transformers = types.ModuleType("transformers")
    transformers.AutoModelForCausalLM = transformers.AutoTokenizer = object
    sys.modules.update(vllm=vllm, transformers=transformers)
    try:
        import openai
    except ImportError:
        openai = types.ModuleType("openai")
        openai.OpenAI = object
        sys.modules["openai"] = openai
    runpy.run_path(str(reference / "generate_resp.py"), run_name="__main__")


if __name__ == "__main__":
    main()
