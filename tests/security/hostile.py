"""A corpus of hostile strings and source files of every format that carry them.

Every active payload, if it ever ran, sets `window.__pwned` or adds an element with id
"pwned"; the browser tests assert neither happened and that the text shows literally.
The files are built from the small fixtures, with every free-text field replaced by
hostile text, and go through the real ingest (`runs.ingest.ingest`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: name -> payload; the active ones would set window.__pwned or create #pwned if rendered as HTML
PAYLOADS: dict[str, str] = {
    "script": "<script>window.__pwned=1</script>",
    "img-onerror": '<img src=x onerror="window.__pwned=1">',
    "svg-onload": '<svg onload="window.__pwned=1"><circle r="4"/></svg>',
    "javascript-link": '<a id="pwned" href="javascript:window.__pwned=1">click me</a>',
    "attribute-breakout": '" onmouseover="window.__pwned=1" autofocus onfocus="window.__pwned=1" x="',
    "single-quote-breakout": "' onfocus='window.__pwned=1' autofocus x='",
    "close-and-open": "</textarea></title></pre></script><script>window.__pwned=1</script>",
    "iframe-srcdoc": '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
    "element": '<div id="pwned">injected</div>',
    "style": "<style>body{display:none}</style>",
    "template-vars": "{{ request.user.password }} {{ csrf_token }}",
    "template-tags": "{% load static %}{% csrf_token %}{% debug %}",
    "entities": "&lt;b&gt;not bold&lt;/b&gt; &amp; &#x3C;script&#x3E;",
    "rtl-override": "invoice\u202egnp.exe",
    "nul": "before\x00after",
    "lone-surrogate": "broken\ud800surrogate",
    "plotly-markup": '<a href="javascript:window.__pwned=1">plotly link</a><b>bold</b>',
    "markdown-link": "[click](javascript:window.__pwned=1)",
    "zero-width": "zero\u200bwidth\ufeffbom",
}

#: the payloads that would execute or inject markup if a page rendered them unescaped
ACTIVE = [
    "script",
    "img-onerror",
    "svg-onload",
    "javascript-link",
    "close-and-open",
    "iframe-srcdoc",
    "element",
    "style",
    "plotly-markup",
]

#: one string carrying every payload (NUL and the lone surrogate are stored as U+FFFD)
ALL = " | ".join(PAYLOADS.values())
#: ALL as the ingest stores it
STORED = ALL.replace("\x00", "\ufffd").replace("\ud800", "\ufffd")

#: a short hostile name, fit for ids, model names and labels (no "/" so it can sit in a URL)
NAME = '<img src=x onerror="window.__pwned=1">&amp;{{x}}\u202e'

#: a model name in Plotly's own markup (charts put model names into labels and legends)
CHART_NAME = '<a href="javascript:window.__pwned=1">chart link</a><b>bold</b><img src=x onerror="window.__pwned=1">'

#: a single line of 10 MB (plus markup), for one message of a trajectory
HUGE = "<script>window.__pwned=1</script>" + "A" * (10 * 1024 * 1024)

#: markup that must never reach a page's HTML unescaped
RAW_MARKERS = [
    "<script>window.__pwned",
    "<img src=x onerror",
    "<svg onload",
    'href="javascript:',
    '<div id="pwned"',
    "<iframe srcdoc",
    "<style>body{display:none}",
]

#: pages that show the long free text (messages, reasoning, descriptions, code, answers) itself
TEXT_PAGES = {
    "attempt",
    "attempt text",
    "instance",
    "shared attempt",
    "dialogue viewer",
    "choice rules",
    "attempts",
    "shared attempts",
}
TEXT_PREFIXES = ("hierarchy sample", "choice task ")


def shows_text(page_name: str) -> bool:
    """Whether a page of `pages()` shows the hostile free text itself (not only names)."""
    return page_name in TEXT_PAGES or page_name.startswith(TEXT_PREFIXES)


def _jsonl(records: list[dict]) -> bytes:
    # ensure_ascii keeps the lone surrogate writable (as \ud800), as a JSON producer would escape it
    return "".join(json.dumps(r) + "\n" for r in records).encode("ascii")


def _json(value) -> bytes:
    return json.dumps(value, indent=1).encode("ascii")


def native_checklist() -> bytes:
    """A native checklist study whose instance text, items, messages, tool output, reasoning and verdicts are hostile."""
    thread = {
        "meta": {"session_id": ALL},
        "tools": [{"name": "bash", "description": ALL}],
        "messages": [
            {"role": "system", "content": ALL},
            {"role": "user", "content": ALL},
            {
                "role": "assistant",
                "content": ALL,
                "reasoning": ALL,
                "tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": ALL}}],
            },
            {"role": "tool", "content": ALL, "tool_call_id": "call_1", "tool_name": "bash"},
            {"role": "assistant", "content": ALL},
        ],
    }
    items = [
        {"key": "sp-1", "category": "System prompt", "check_type": "style", "description": ALL},
        {"key": "uq-1", "category": NAME, "check_type": NAME[:90], "description": ALL, "details": {"why": ALL}},
    ]
    records = [
        {"type": "benchmark", "slug": "hostile", "name": NAME, "kind": "checklist", "description": ALL},
        {
            "type": "instance",
            "id": NAME,
            "primary_category": NAME,
            "scaffold": NAME[:90],
            "spec": {"system_prompt": ALL, "user_query": [ALL, ALL]},
            "items": items,
        },
        {
            "type": "instance",
            "id": "huge",
            "primary_category": "plain",
            "spec": {"user_query": ["a huge tool output"]},
            "items": [{"key": "sp-1", "category": "System prompt", "description": "plain"}],
        },
        {"type": "run", "label": NAME, "model": NAME, "settings": {"note": ALL}},
        {"type": "run", "label": "plain-run", "model": CHART_NAME},
        {
            "type": "attempt",
            "run": NAME,
            "instance": NAME,
            "response": ALL,
            "outcome": {"note": ALL},
            "threads": [thread],
        },
        {
            "type": "attempt",
            "run": "plain-run",
            "instance": NAME,
            "response": "ok",
            "threads": [{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}],
        },
        {
            "type": "attempt",
            "run": NAME,
            "instance": "huge",
            "response": "done",
            "threads": [
                {
                    "messages": [
                        {"role": "user", "content": "run it"},
                        {"role": "tool", "content": HUGE, "tool_name": "bash"},
                        {"role": "assistant", "content": "done"},
                    ]
                }
            ],
        },
    ]
    for run in (NAME, "plain-run"):
        for key, result in (("sp-1", "pass"), ("uq-1", "fail" if run == NAME else "pass")):
            records.append(
                {
                    "type": "verdict",
                    "run": run,
                    "instance": NAME,
                    "item": key,
                    "judge": NAME,
                    "result": result,
                    "reasoning": ALL,
                    "evidence": {"quote": ALL},
                }
            )
    records.append(
        {
            "type": "verdict",
            "run": NAME,
            "instance": "huge",
            "item": "sp-1",
            "judge": NAME,
            "result": "pass",
            "reasoning": ALL,
        }
    )
    return _jsonl(records)


def native_conflict() -> bytes:
    """A conflict benchmark whose instructions, scenario, response and judge reasoning are hostile."""
    conflict = {
        "type": "UQ vs SP",
        "scenario": NAME,
        "expected": "B",
        "a": {"source": "UQ", "instruction": ALL},
        "b": {"source": "SP", "instruction": ALL},
    }
    records = [
        {
            "type": "benchmark",
            "slug": "hostile-conflict",
            "name": NAME + " conflict",
            "kind": "conflict",
            "description": ALL,
        },
        {
            "type": "instance",
            "id": NAME,
            "spec": {"system_prompt": ALL, "user_query": ALL, "conflict": conflict},
            "items": [{"key": "resolution", "category": "SP", "check_type": "conflict", "description": ALL}],
        },
        {"type": "run", "label": NAME, "model": NAME},
        {"type": "attempt", "run": NAME, "instance": NAME, "response": ALL},
        {
            "type": "verdict",
            "run": NAME,
            "instance": NAME,
            "item": "resolution",
            "judge": NAME,
            "result": "pass",
            "reasoning": ALL,
            "evidence": {"followed": "B"},
        },
    ]
    return _jsonl(records)


def evolif_dialog() -> bytes:
    """The fixture dialogue with hostile user queries and constraint descriptions."""
    lines = [json.loads(line) for line in (FIXTURES / "evolif" / "dialog_1.jsonl").read_text().splitlines() if line]
    for turn in lines:
        turn["user_query"] = turn["user_query_verified"] = ALL
        for instruction in turn["instructions"]:
            instruction["description"] = ALL
    return _jsonl(lines)


def evolif_eval() -> bytes:
    """The fixture evaluation log with hostile responses and sub-details."""
    lines = [json.loads(line) for line in (FIXTURES / "evolif" / "eval_1.jsonl").read_text().splitlines() if line]
    for turn in lines:
        turn["response"] = ALL
        turn["eval"]["sub_details"] = dict.fromkeys(turn["eval"]["details"], ALL)
    return _jsonl(lines)


def manyih_data() -> bytes:
    """The fixture ManyIH dataset with hostile prompts, reference code and instruction descriptions."""
    data = json.loads((FIXTURES / "manyih" / "coding_small.json").read_text())
    for sample in data["data"]:
        sample["prompt"] = sample["original_prompt"] = ALL
        sample["reference_code"] = sample["test_code"] = ALL
        for instruction in sample["instructions"]:
            instruction["description"] = ALL
    return _json(data)


def manyih_results() -> bytes:
    """The fixture ManyIH results with hostile code and style messages."""
    data = json.loads((FIXTURES / "manyih" / "results_small.json").read_text())
    for result in data["results"]:
        result["response"] = "```python\n" + ALL + "\n```"
        evaluation = result["evaluation"]
        evaluation["style_messages"] = dict.fromkeys(evaluation.get("each_style_passed", {}), ALL)
        evaluation["test_result"] = ALL
    return _json(data)


def guidebench_tasks() -> tuple[bytes, list[dict]]:
    """The fixture chat tasks with hostile context, rules and options (and the tasks, for the predictions)."""
    tasks = json.loads((FIXTURES / "guidebench" / "chat_tasks.json").read_text())
    for task in tasks:
        task["Instruction"] = task["Context"] = ALL
        task["MultipleOptions"] = "A. " + ALL + "\nB. no\nC. no\nD. no"
        task["Groundtruth"]["AnswerAnalysis"] = ALL
        for rule in task["Guidelines"]:
            rule["rule_text"] = rule["type"] = ALL
    return _json(tasks), tasks


def guidebench_predictions(tasks: list[dict]) -> bytes:
    """Predictions for those tasks: hostile answers and analyses (one a bare hostile string)."""
    predicted = copy.deepcopy(tasks)
    for n, task in enumerate(predicted):
        task["cleaned_response"] = ALL
        task["LLMAnswer"] = ALL if n == 0 else {"OptimalOption": NAME if n % 2 else "A", "AnswerAnalysis": ALL}
    return _json(predicted)


def ingest_all(directory: Path) -> dict[str, int]:
    """Write every hostile file under `directory` and ingest it for real; returns the attempts per benchmark slug."""
    from runs.ingest import Options, Source, ingest
    from runs.models import Attempt

    def run(format_name: str, name: str, data: bytes, **options) -> None:
        folder = directory / format_name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        ingest(format_name, [Source.of(folder / name)], Options(**options))

    run("native", "hostile.jsonl", native_checklist())
    run("native", "hostile-conflict.jsonl", native_conflict())
    run("evolif-dialogs", "dialog_1.jsonl", evolif_dialog())
    run("evolif-eval", "eval_1.jsonl", evolif_eval(), model=NAME)
    run("manyih-data", "coding_small.json", manyih_data())
    run("manyih-results", "results_small.json", manyih_results(), model=NAME)
    tasks_file, tasks = guidebench_tasks()
    run("guidebench-tasks", "chat_tasks.json", tasks_file)
    run("guidebench-predictions", "chat_tasks.json", guidebench_predictions(tasks), model=NAME)
    return {
        slug: Attempt.objects.filter(run__benchmark__slug=slug).count()
        for slug in ("hostile", "hostile-conflict", "evolif", "manyih-coding", "guidebench")
    }


def pages(directory: Path, user) -> list[tuple[str, str]]:
    """Ingest the corpus, start two uploads with hostile file names and a share link; (name, path) of every page showing them."""
    from urllib.parse import urlencode

    from django.http import QueryDict
    from django.test import TestCase

    from runs.models import Attempt, Benchmark, Instance
    from runs.selectors.checklist import checklist_query  # the state exactly as the page parses it
    from runs.sharing import share_link_create

    ingest_all(directory)
    with TestCase.captureOnCommitCallbacks(execute=True):  # the jobs run (inline) as after a real commit
        failed, done = _hostile_uploads(user)
    hostile_run = Attempt.objects.filter(run__benchmark__slug="hostile", run__label=NAME)
    attempt = hostile_run.get(instance__external_id=NAME)
    huge = hostile_run.get(instance__external_id="huge")
    instance = Instance.objects.get(benchmark__slug="hostile", external_id=NAME)
    dialog = Attempt.objects.filter(run__benchmark__slug="evolif").order_by("pk").first()
    samples = Attempt.objects.filter(run__benchmark__slug="manyih-coding").order_by("pk")
    tasks = Instance.objects.filter(benchmark__slug="guidebench").order_by("pk")
    benchmark = Benchmark.objects.get(slug="hostile")
    state = checklist_query(benchmark, QueryDict("")).state
    _, token = share_link_create(user=user, benchmark=benchmark, state=state, include_attempts=True)
    by_model = urlencode({"model": NAME})
    result = [
        ("home", "/"),
        ("import", "/import/"),
        ("jobs", "/jobs/"),
        ("failed job", f"/jobs/{failed.id}/"),
        ("done job", f"/jobs/{done.id}/"),
        ("leaderboard", "/b/hostile/leaderboard/"),
        ("leaderboard by category", "/b/hostile/leaderboard/?group=category"),
        ("attempts", f"/b/hostile/attempts/?{by_model}"),
        ("judges", "/b/hostile/judges/"),
        ("length", "/b/hostile/length/"),
        ("compare", f"/b/hostile/compare/?a={attempt.run_id}"),
        ("attempt", f"/attempts/{attempt.pk}/"),
        ("attempt text", f"/attempts/{attempt.pk}/text/?thread=0&msg=1"),
        ("huge attempt", f"/attempts/{huge.pk}/"),
        ("instance", f"/instances/{instance.pk}/"),
        ("share links", "/share-links/"),
        ("shared leaderboard", f"/s/{token}/"),
        ("shared attempts", f"/s/{token}/attempts/?{by_model}"),
        ("shared attempt", f"/s/{token}/attempts/{attempt.pk}/"),
        ("dialogue metrics", "/b/evolif/dialogue/"),
        ("dialogue survival", "/b/evolif/dialogue/survival/"),
        ("dialogue groups", "/b/evolif/dialogue/groups/"),
        ("dialogues", "/b/evolif/dialogue/dialogues/"),
        ("dialogue viewer", f"/b/evolif/dialogue/dialogues/{dialog.pk}/"),
        ("dialogue rescore", "/b/evolif/dialogue/rescore/"),
        ("hierarchy metrics", "/b/manyih-coding/hierarchy/"),
        ("hierarchy conflicts", "/b/manyih-coding/hierarchy/conflicts/"),
        ("hierarchy recheck", "/b/manyih-coding/hierarchy/recheck/"),
        ("conflict metrics", "/b/hostile-conflict/conflict/"),
        ("choice metrics", "/b/guidebench/choice/"),
        ("choice confusion", "/b/guidebench/choice/confusion/"),
        ("choice rules", "/b/guidebench/choice/rules/"),
        ("choice tasks", "/b/guidebench/choice/tasks/"),
    ]
    result += [(f"hierarchy sample {n}", f"/b/manyih-coding/hierarchy/attempts/{a.pk}/") for n, a in enumerate(samples)]
    result += [(f"choice task {n}", f"/b/guidebench/choice/tasks/{t.external_id}/") for n, t in enumerate(tasks)]
    return result


def _hostile_uploads(user):
    """Two uploads named with markup: one whose content is hostile text (fails), one the checklist study (succeeds)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from runs.forms import ingest_job_start

    failed = ingest_job_start(
        format_name="native",
        files=[SimpleUploadedFile(NAME + ".jsonl", ALL.encode("utf-8", "replace"))],
        options={},
        user=user,
    )
    done = ingest_job_start(
        format_name="native",
        files=[SimpleUploadedFile(NAME + ".jsonl", native_checklist())],
        options={"model": NAME},
        user=user,
    )
    return failed, done
