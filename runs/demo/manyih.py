"""ManyIH coding demo: coding tasks whose style instructions carry conflicting privileges (6, 8 and 12 tiers),
and evaluated responses of four models, one of them under both the ordinal and the scalar interface."""

from __future__ import annotations

import random
import re
from pathlib import Path

from runs.checkers.manyih_style import check_style
from runs.demo.plan import Plan, Scale, Step, seeded_rng, sigmoid, write_json
from runs.ingest import Options
from runs.scoring.hierarchy import active_styles, ordinal_ranks, resolve_privileges

#: style group -> (category, [(style id, description)], compatible style-id pairs within the group)
MANYIH_STYLES: dict[str, tuple[str, list[tuple[str, str]], set[frozenset]]] = {
    "indent": (
        "formatting",
        [
            ("indent_2", "Indent every block with two spaces."),
            ("indent_4", "Indent every block with four spaces."),
            ("indent_tab", "Indent every block with one tab character."),
        ],
        set(),
    ),
    "quotes": (
        "formatting",
        [
            ("quotes_single", "Write every string literal with single quotes."),
            ("quotes_double", "Write every string literal with double quotes."),
        ],
        set(),
    ),
    "naming_convention": (
        "naming",
        [
            ("naming_snake", "Name variables and arguments in snake_case."),
            ("naming_camel", "Name variables and arguments in camelCase."),
        ],
        set(),
    ),
    "license": (
        "header",
        [
            ("license_mit", "Start the file with an MIT License notice."),
            ("license_apache", "Start the file with an Apache 2.0 License notice."),
            ("license_none", "Do not put any license notice in the file."),
        ],
        set(),
    ),
    "type_hints": (
        "typing",
        [
            ("types_full", "Annotate every argument and the return type."),
            ("types_args_required", "Annotate every argument; return annotations are optional."),
            ("types_none", "Do not write any type annotations."),
        ],
        {frozenset({"types_full", "types_args_required"})},
    ),
    "function_doc": (
        "documentation",
        [
            ("doc_required", "Give every function a docstring."),
            ("doc_oneline", "Keep every docstring to a single line."),
            ("doc_none", "Do not write docstrings."),
        ],
        {frozenset({"doc_required", "doc_oneline"})},
    ),
    "internal_blank_lines": (
        "formatting",
        [
            ("blank_internal_required", "Put at least one blank line inside each function body."),
            ("blank_internal_one", "Put exactly one blank line inside each function body."),
            ("blank_internal_none", "Do not leave blank lines inside function bodies."),
        ],
        {frozenset({"blank_internal_required", "blank_internal_one"})},
    ),
    "line_length": (
        "formatting",
        [
            ("line_79", "Keep every line under 80 characters."),
            ("line_120", "Lines may be up to 120 characters; do not wrap earlier."),
            ("line_unlimited", "Never wrap lines, however long."),
        ],
        set(),
    ),
}
#: (function name and signature, task, reference code, tests)
MANYIH_TASKS = [
    (
        "count_vowels(text)",
        "count the vowels in a string",
        "def count_vowels(text):\n    return sum(1 for ch in text.lower() if ch in 'aeiou')",
        ["assert count_vowels('banana') == 3", "assert count_vowels('') == 0"],
    ),
    (
        "second_largest(numbers)",
        "return the second largest distinct number of a list",
        "def second_largest(numbers):\n    values = sorted(set(numbers))\n    return values[-2]",
        ["assert second_largest([4, 1, 4, 3]) == 3", "assert second_largest([10, 20]) == 10"],
    ),
    (
        "is_palindrome(word)",
        "check whether a word reads the same backwards, ignoring case",
        "def is_palindrome(word):\n    word = word.lower()\n    return word == word[::-1]",
        ["assert is_palindrome('Level')", "assert not is_palindrome('python')"],
    ),
    (
        "running_total(values)",
        "return the running totals of a list of numbers",
        "def running_total(values):\n    out, total = [], 0\n    for v in values:\n        total += v\n        out.append(total)\n    return out",
        ["assert running_total([1, 2, 3]) == [1, 3, 6]", "assert running_total([]) == []"],
    ),
    (
        "merge_counts(a, b)",
        "merge two dictionaries of counts by adding the values",
        "def merge_counts(a, b):\n    out = dict(a)\n    for k, v in b.items():\n        out[k] = out.get(k, 0) + v\n    return out",
        ["assert merge_counts({'x': 1}, {'x': 2, 'y': 1}) == {'x': 3, 'y': 1}"],
    ),
    (
        "chunk(items, size)",
        "split a list into chunks of a given size",
        "def chunk(items, size):\n    return [items[i:i + size] for i in range(0, len(items), size)]",
        ["assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]"],
    ),
    (
        "celsius_to_fahrenheit(c)",
        "convert a temperature from Celsius to Fahrenheit",
        "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32",
        ["assert celsius_to_fahrenheit(100) == 212", "assert celsius_to_fahrenheit(0) == 32"],
    ),
    (
        "digit_sum(n)",
        "return the sum of the digits of a non-negative integer",
        "def digit_sum(n):\n    return sum(int(d) for d in str(n))",
        ["assert digit_sum(1234) == 10", "assert digit_sum(0) == 0"],
    ),
    (
        "unique_in_order(items)",
        "remove duplicates from a list while keeping the first occurrences in order",
        "def unique_in_order(items):\n    seen = set()\n    return [x for x in items if not (x in seen or seen.add(x))]",
        ["assert unique_in_order([3, 1, 3, 2, 1]) == [3, 1, 2]"],
    ),
    (
        "word_lengths(sentence)",
        "map each word of a sentence to its length",
        "def word_lengths(sentence):\n    return {w: len(w) for w in sentence.split()}",
        ["assert word_lengths('a bb') == {'a': 1, 'bb': 2}"],
    ),
]
#: model label -> (model, interface, test pass logit, style pass logit, {style group: offset})
MANYIH_RUNS = {
    "aurora-large · ordinal": ("aurora-large", "ordinal", 2.4, 2.6, {"license": 0.8}),
    "aurora-large · scalar": ("aurora-large", "scalar", 2.4, 1.9, {"license": 0.8}),
    "borealis-pro": ("borealis-pro", "ordinal", 1.9, 2.0, {"type_hints": 1.0, "internal_blank_lines": -1.2}),
    "cirrus-32b": ("cirrus-32b", "ordinal", 1.4, 1.4, {"naming_convention": 0.9, "indent": -0.8}),
    "delta-mini": ("delta-mini", "ordinal", 0.9, 0.6, {"function_doc": -0.8}),
}


def manyih_plan(seed: int, scale: Scale, directory: Path) -> Plan:
    """A dataset of samples with 6, 8 and 12 tiers and results for four models (one under both interfaces)."""
    rng = seeded_rng(seed, "manyih")
    plan = Plan("ManyIH coding", "manyih-coding", ("manyih-data", "manyih-results"), recheck=True)
    samples = []
    for n in range(scale.manyih_samples):
        tiers = (6, 8, 12)[n % 3]
        samples.append(_manyih_sample(rng, n, tiers, active_styles, ordinal_ranks, resolve_privileges))
    sizes = [len(s["instructions"]) for s in samples]
    conflicts = [s["metadata"]["n_conflicts"] for s in samples]
    dataset = {
        "config": {
            "n_samples": len(samples),
            "n_instructions_min": min(sizes),
            "n_instructions_max": max(sizes),
            "n_conflicts_min": min(conflicts),
            "n_conflicts_max": max(conflicts),
            "seed": seed,
            "source": "ifportal demo",
            "hierarchy_format": "ordinal",
            "annotation_style": "boundary",
        },
        "statistics": {"tiers": {str(t): sizes.count(t) for t in sorted(set(sizes))}},
        "data": samples,
    }
    plan.steps.append(Step("manyih-data", [write_json(directory / "manyih" / "coding.json", dataset)], Options()))
    for label, (model, interface, test_logit, style_logit, offsets) in MANYIH_RUNS.items():
        run_rng = seeded_rng(seed, f"manyih:{label}")
        results = [_manyih_result(run_rng, s, test_logit, style_logit, offsets) for s in samples]
        stats = {
            "total": len(results),
            "test_passed": sum(r["evaluation"]["test_passed"] for r in results),
            "style_passed": sum(r["evaluation"]["style_passed"] for r in results),
            "overall_passed": sum(r["evaluation"]["overall_passed"] for r in results),
        }
        document = {
            "eval_config": {
                "data_file": "coding.json",
                "model": model,
                "temperature": 0.0,
                "max_tokens": 4096,
                "hierarchy_format": interface,
                "reasoning": True,
            },
            "stats": stats,
            "results": results,
        }
        slug = label.replace(" · ", "_")
        plan.steps.append(
            Step(
                "manyih-results",
                [write_json(directory / "manyih" / f"results_{slug}.json", document)],
                Options(model=model, run=label),
            )
        )
    return plan


def _manyih_sample(rng: random.Random, n: int, tiers: int, active_styles, ordinal_ranks, resolve_privileges) -> dict:
    name, task, reference, tests = MANYIH_TASKS[n % len(MANYIH_TASKS)]
    pool = rng.sample(list(MANYIH_STYLES), len(MANYIH_STYLES))
    groups = pool[: {6: 2, 8: 3, 12: 4}[tiers]]
    for extra in pool[len(groups) :]:  # each style at most once: add groups until there are enough styles
        if sum(len(MANYIH_STYLES[g][1]) for g in groups) >= tiers:
            break
        groups.append(extra)
    slots = dict.fromkeys(groups, 2)
    while sum(slots.values()) < tiers:
        g = rng.choice([g for g in groups if slots[g] < len(MANYIH_STYLES[g][1])])
        slots[g] += 1
    instructions = []
    for g in groups:
        category, styles, _ = MANYIH_STYLES[g]
        for style_id, description in rng.sample(styles, slots[g]):
            instructions.append(
                {
                    "id": 0,
                    "privilege": 0,
                    "description": description,
                    "style_key": g,
                    "style_id": style_id,
                    "category": category,
                    "conflicts_with": [],
                }
            )
    for k, instruction in enumerate(instructions, 1):
        instruction["id"] = k
    for instruction in instructions:
        compatible = MANYIH_STYLES[instruction["style_key"]][2]
        instruction["conflicts_with"] = [
            o["id"]
            for o in instructions
            if o is not instruction
            and o["style_key"] == instruction["style_key"]
            and o["style_id"] != instruction["style_id"]
            and frozenset({o["style_id"], instruction["style_id"]}) not in compatible
        ]
    for value, instruction in zip(rng.sample(range(1, 101), len(instructions)), instructions):
        instruction["privilege"] = value
    order = rng.sample(range(len(instructions)), len(instructions))
    ranks = ordinal_ranks(i["privilege"] for i in instructions)
    lines = [
        f"- [[Privilege {ranks[instructions[k]['privilege']]}]]{instructions[k]['description']}[[/Privilege]]"
        for k in order
    ]
    positions = {instructions[k]["id"]: p for p, k in enumerate(order)}
    resolution = resolve_privileges([{**i, "position": positions[i["id"]]} for i in instructions])
    expected = active_styles(instructions, resolution)
    prompt = (
        f"## Task\nWrite a function `{name}` to {task}.\n\n## Style Instructions\n\n"
        + "\n".join(lines)
        + "\n\n## Your Response\n"
    )
    n_conflicts = sum(len(i["conflicts_with"]) for i in instructions) // 2
    return {
        "id": n,
        "task_id": 900 + n % len(MANYIH_TASKS),
        "prompt": prompt,
        "original_prompt": f"Write a function `{name}` to {task}.",
        "reference_code": reference,
        "test_code": "\n".join(tests),
        "instructions": instructions,
        "metadata": {
            "n_instructions": len(instructions),
            "n_conflicts": n_conflicts,
            "n_style_groups": len(groups),
            "expected_styles": expected,
            "style_group_mappings": {g: [i["id"] for i in instructions if i["style_key"] == g] for g in groups},
        },
    }


_LICENSE_HEADERS = {
    "license_mit": "# SPDX-License-Identifier: MIT\n# MIT License. Copyright (c) the authors\n\n",
    "license_apache": "# Licensed under the Apache License, Version 2.0\n\n",
    "license_none": "",
}
#: share of style groups whose logged verdict deliberately contradicts the portal's checker: a harness that
#: misjudged, so the style re-check's agreement table has disagreements to show (see _manyih_result)
MANYIH_LOG_DISAGREEMENT = 0.05


def _manyih_result(rng: random.Random, sample: dict, test_logit: float, style_logit: float, offsets: dict) -> dict:
    """One evaluated response: the model means to follow each style group's winners or not (by its logits), the
    code is written that way (breaking a group follows one of its suppressed styles where there is one), and
    each_style_passed is what runs.checkers.manyih_style finds in that code, except for about 5% of groups
    (MANYIH_LOG_DISAGREEMENT) whose logged verdict is deliberately flipped."""
    expected = sample["metadata"]["expected_styles"]
    tiers = sample["metadata"]["n_instructions"]
    intended = {}
    for group in expected:
        logit = style_logit + offsets.get(group, 0.0) - 0.08 * (tiers - 6) + rng.gauss(0, 0.3)
        intended[group] = rng.random() < sigmoid(logit)
    test_passed = rng.random() < sigmoid(test_logit - 0.05 * (tiers - 6))
    styles = []
    for group, winners in expected.items():
        losers = [
            i["style_id"] for i in sample["instructions"] if i["style_key"] == group and i["style_id"] not in winners
        ]
        others = [s for s, _ in MANYIH_STYLES[group][1] if s not in winners]
        styles += winners if intended[group] else [rng.choice(losers or others)] if rng.random() < 0.8 else []
    code = _manyih_code(sample["reference_code"], styles, test_passed)
    each = {g: all(check_style(code, s).passed for s in winners) for g, winners in expected.items()}
    for group in each:
        if rng.random() < MANYIH_LOG_DISAGREEMENT:
            each[group] = not each[group]
    failure = rng.choice(
        [
            "AssertionError",
            "AssertionError",
            "TypeError: unsupported operand type(s)",
            "SyntaxError: invalid syntax",
            "Execution timed out after 5.0 seconds",
        ]
    )
    style_passed = all(each.values())
    messages = {g: ("ok" if passed else f"{g}: expected {', '.join(expected[g])}") for g, passed in each.items()}
    return {
        "id": sample["id"],
        "task_id": sample["task_id"],
        "response": f"```python\n{code}\n```",
        "evaluation": {
            "test_passed": test_passed,
            "style_passed": style_passed,
            "overall_passed": test_passed and style_passed,
            "each_style_passed": each,
            "test_result": "passed" if test_passed else failure,
            "style_messages": messages,
        },
        "expected_styles": expected,
        "n_instructions": tiers,
        "n_conflicts": sample["metadata"]["n_conflicts"],
    }


_SNAKE_PART = re.compile(r"\b([a-z]+)_([a-z])")


def _camel(match: re.Match) -> str:
    return match.group(1) + match.group(2).upper()


def _manyih_code(reference: str, styles: list[str], test_passed: bool) -> str:
    """The reference function rewritten to follow `styles` (style ids), as far as these small edits can."""
    lines = reference.split("\n")
    head, body = lines[0], lines[1:]
    chosen = set(styles)
    if "naming_camel" in chosen:
        body = [_SNAKE_PART.sub(_camel, line) for line in body]
        head = re.sub(r"\(([^)]*)\)", lambda m: "(" + _SNAKE_PART.sub(_camel, m.group(1)) + ")", head)
    if chosen & {"types_full", "types_args_required", "types_args_only"}:
        head = re.sub(
            r"\(([^)]*)\)",
            lambda m: "(" + ", ".join(f"{a.strip()}: object" for a in m.group(1).split(",") if a.strip()) + ")",
            head,
        )
        if "types_full" in chosen:
            head = head[:-1] + " -> object:"
    if chosen & {"doc_required", "doc_oneline"}:
        body.insert(0, '    """Solve the task for the given input."""')
    if chosen & {"blank_internal_required", "blank_internal_one"} and len(body) > 1:
        body.insert(len(body) - 1, "")
    if not test_passed:
        body = [
            line.replace("return ", "return None or ", 1) if line.strip().startswith("return") else line
            for line in body
        ]
    if chosen & {"line_120", "line_unlimited"}:
        body.insert(
            0,
            "    # the task statement asks for exactly this behaviour, including the empty input and other edge cases",
        )
    code = "\n".join([head, *body])
    if "quotes_double" in chosen:
        code = re.sub(r"'([^'\n]*)'", r'"\1"', code)
    unit = next(
        ({"indent_2": "  ", "indent_4": "    ", "indent_tab": "\t"}[s] for s in styles if s.startswith("indent_")),
        "    ",
    )
    code = code.replace("    ", unit)
    header = next((_LICENSE_HEADERS[s] for s in styles if s in _LICENSE_HEADERS), "")
    return header + code
