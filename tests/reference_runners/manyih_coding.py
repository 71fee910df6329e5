"""Run ManyIH's own coding evaluator (`python -m manyih.coding.evaluator`) against a fake model.

Usage: python manyih_coding.py REFERENCE_DIR [evaluator arguments...]

The evaluator is the unmodified reference (imported from REFERENCE_DIR); only its API client
is replaced by `FakeModel`, a small deterministic model that answers each sample of the
data file in one of these ways, by the sample's place in the file:

- "clean": the sample's reference code in a ```python block (tests pass);
- "thinking": the same after a <think> block the evaluator strips;
- "wrong": the reference code with every `return` returning None (assertions fail);
- "empty": an empty reply, and "unclosed_think": only an unclosed <think> block; both leave
  the evaluator no code (`code_extracted: false`);
- "untokenisable": code whose dedent matches no outer level, given to a sample that asks
  for a quote style (the quote checker cannot tokenise it: a top-level `error`);
- "api_failure": the API call raises, as after its retries (a top-level `error`).

The environment variable FAKE_PLAN (JSON: sample id -> kind) overrides the plan.

The evaluator imports aiohttp only to open a session it hands to the client; the fake
client never uses it, so a stand-in module is installed when aiohttp is absent.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

UNTOKENISABLE = "def f(x):\n        y = 'a'\n    return y\n"
PLAN = ("clean", "thinking", "wrong", "empty", "clean", "unclosed_think", "wrong", "clean")


def plan_for(samples: list[dict]) -> dict[str, str]:
    """Sample prompt -> the kind of reply the fake model gives (deterministic)."""
    if os.environ.get("FAKE_PLAN"):
        plan = json.loads(os.environ["FAKE_PLAN"])
        return {s["prompt"]: plan[str(s["id"])] for s in samples}
    kinds = {s["prompt"]: PLAN[n % len(PLAN)] for n, s in enumerate(samples)}
    quoted = [s for s in samples if any(k == "quotes" for k in s.get("metadata", {}).get("expected_styles", {}))]
    for s in quoted[:2]:
        kinds[s["prompt"]] = "untokenisable"
    others = [s for s in samples if kinds[s["prompt"]] == "clean"]
    if others:
        kinds[others[-1]["prompt"]] = "api_failure"
    return kinds


def reply(kind: str, sample: dict) -> str:
    code = sample.get("reference_code", "")
    if kind == "clean":
        return f"Here is the function.\n\n```python\n{code}\n```\n"
    if kind == "thinking":
        return f"<think>Let me write it.</think>\n```python\n{code}\n```"
    if kind == "wrong":
        return "```python\n" + code.replace("return ", "return None and ") + "\n```"
    if kind == "empty":
        return ""
    if kind == "unclosed_think":
        return "<think>I will write the code once I have thought about the styles"
    if kind == "untokenisable":
        return f"```python\n{UNTOKENISABLE}```"
    raise ValueError(kind)


def main() -> None:
    reference = Path(sys.argv[1]).resolve()
    argv = sys.argv[2:]
    data_file = Path(argv[argv.index("--data_file") + 1])
    raw = json.loads(data_file.read_text())
    samples = raw["data"] if isinstance(raw, dict) else raw
    by_prompt = {s["prompt"]: s for s in samples}
    kinds = plan_for(samples)

    try:
        import aiohttp  # noqa: F401
    except ImportError:
        stand_in = types.ModuleType("aiohttp")

        class ClientSession:
            async def __aenter__(self):
                return self

            async def __aexit__(self, *exc):
                return False

        stand_in.ClientSession = ClientSession
        sys.modules["aiohttp"] = stand_in

    sys.path.insert(0, str(reference))
    from manyih.coding import evaluator

    class FakeModel(evaluator.CachingAsyncOpenRouterClient):
        async def call_api(self, session, prompt, system_prompt=None, **kwargs):
            sample = by_prompt[prompt]
            kind = kinds[prompt]
            if kind == "api_failure":
                raise Exception("HTTP 500: upstream model overloaded")
            result = {
                "model": self.model,
                "choices": [{"message": {"role": "assistant", "content": reply(kind, sample)}}],
            }
            return {
                "content": self._extract_content(result),
                "model": self.model,
                "usage": None,
                "raw_response": result,
            }

    evaluator.CachingAsyncOpenRouterClient = FakeModel
    sys.argv = ["manyih.coding.evaluator", *argv]
    evaluator.main()


if __name__ == "__main__":
    main()
