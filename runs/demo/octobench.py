"""OctoBench demo: a checklist benchmark of agent trajectories scored by three LLM judges, written as the
instances file, merged trajectories and evaluate.py's scores files."""

from __future__ import annotations

import math
import random
from pathlib import Path

from runs.categories import normalise_category
from runs.demo.plan import Plan, Scale, Step, seeded_rng, sigmoid, write_json, write_jsonl
from runs.ingest import Options

#: (slug, project, zh query, en query, files the agent touches)
OCTO_TASKS = [
    (
        "linked-list-sort",
        "C++ linked-list quicksort",
        "请用通俗的方式解释 partition 函数如何工作，并写成一份说明文档",
        "Explain how the partition function works in plain words and write it up as a short doc",
        ["/app/src/quick_sort.cpp", "/app/tests/test_sort.cpp"],
    ),
    (
        "csv-importer",
        "Python CSV importer",
        "导入 CSV 时遇到空行会崩溃，请修复并补充测试",
        "The CSV importer crashes on blank lines; fix it and add a regression test",
        ["/app/importer/reader.py", "/app/tests/test_reader.py"],
    ),
    (
        "rate-limiter",
        "Go HTTP rate limiter",
        "给限流中间件加一个按 IP 的白名单配置项",
        "Add a per-IP allowlist option to the rate-limiting middleware",
        ["/app/middleware/ratelimit.go", "/app/config/config.go"],
    ),
    (
        "todo-api",
        "Node.js todo REST API",
        "为 /todos 接口增加分页参数 page 和 size",
        "Add page and size query parameters to the /todos endpoint",
        ["/app/src/routes/todos.js", "/app/test/todos.test.js"],
    ),
    (
        "pdf-report",
        "PDF report skill",
        "用 pdf 技能把 data/sales.xlsx 生成一份季度销售报告",
        "Use the pdf skill to turn data/sales.xlsx into a quarterly sales report",
        ["/app/data/sales.xlsx", "/app/reports/q3.pdf"],
    ),
    (
        "date-parser",
        "Rust date parser",
        "日期解析不支持 ISO 周格式，请实现并说明边界情况",
        "The date parser does not accept ISO week dates; implement them and explain the edge cases",
        ["/app/src/parse.rs", "/app/tests/parse.rs"],
    ),
    (
        "cache-layer",
        "Java cache layer",
        "把缓存过期时间改为可配置，默认保持 300 秒",
        "Make the cache expiry configurable, keeping 300 seconds as the default",
        ["/app/src/main/java/cache/Store.java", "/app/src/main/resources/app.yml"],
    ),
    (
        "markdown-lint",
        "Markdown linter",
        "解释一下为什么 MD013 规则在表格里误报，不要改代码",
        "Explain why rule MD013 misfires inside tables; do not change any code",
        ["/app/rules/md013.py", "/app/docs/rules.md"],
    ),
    (
        "auth-refactor",
        "Flask auth module",
        "重构登录逻辑，把 token 校验抽成独立函数",
        "Refactor the login flow so token validation is its own function",
        ["/app/auth/views.py", "/app/auth/tokens.py"],
    ),
    (
        "chart-widget",
        "React chart widget",
        "图表在窗口缩放时不重绘，请定位原因并修复",
        "The chart does not redraw when the window is resized; find out why and fix it",
        ["/app/src/Chart.tsx", "/app/src/useResize.ts"],
    ),
    (
        "log-rotation",
        "Shell log rotation",
        "写一个按天轮转日志的脚本，保留 7 天",
        "Write a daily log rotation script that keeps seven days",
        ["/app/scripts/rotate.sh", "/app/README.md"],
    ),
    (
        "sql-migration",
        "Django app migration",
        "给订单表加一个可为空的 coupon_code 字段并生成迁移",
        "Add a nullable coupon_code field to the orders table and create the migration",
        ["/app/shop/models.py", "/app/shop/migrations/0007_coupon.py"],
    ),
]

OCTO_SCAFFOLDS = [("claudecode", "2.0.69", 0.6), ("kilo-dev", "4.98.1", 0.2), ("droid", "0.22.3", 0.2)]
OCTO_PRIMARY = [("SP", "sp"), ("Skill", "skill"), ("Claude.md", "md"), ("AGENTS.md", "agents")]

#: scaffold -> (tool name, description, typical arguments builder key)
OCTO_TOOLS = {
    "claudecode": [
        ("Task", "Launch a sub-agent for a multi-step exploration"),
        ("Bash", "Run a shell command"),
        ("Glob", "Find files by pattern"),
        ("Grep", "Search file contents"),
        ("Read", "Read a file by absolute path"),
        ("Edit", "Replace a string in a file"),
        ("Write", "Write a file"),
        ("TodoWrite", "Update the task list"),
    ],
    "kilo-dev": [
        ("read_file", "Read a file"),
        ("write_to_file", "Write a whole file"),
        ("apply_diff", "Apply a diff to a file"),
        ("execute_command", "Run a command in the terminal"),
        ("search_files", "Regex search in files"),
        ("attempt_completion", "Report the task as done"),
    ],
    "droid": [
        ("Read", "Read a file"),
        ("Edit", "Edit a file"),
        ("Create", "Create a file"),
        ("Execute", "Run a command"),
        ("Grep", "Search files"),
        ("LS", "List a directory"),
        ("TodoWrite", "Track the plan"),
    ],
}

#: source category key as the file spells it -> (check id prefix, category description en, zh)
OCTO_CATEGORIES = {
    "SP": (
        "SP",
        "Constraints the system prompt sets: role, tone, tool policy, task management.",
        "检查 assistant 是否遵循 System Prompt 中的约束：角色、语气、工具使用策略与任务管理。",
    ),
    "System reminder": (
        "SystemReminder",
        "Extra rules injected as system reminders during the session.",
        "检查 assistant 是否遵循会话中 system-reminder 强调的附加规范。",
    ),
    "User query": (
        "UserQuery",
        "Whether the answer does what the user asked, in the way they asked.",
        "检查 assistant 是否满足本轮用户请求及其表达方式。",
    ),
    "Agents.md": (
        "Agents",
        "Repository rules from the project instruction file.",
        "检查 assistant 是否遵循项目说明文件中的仓库约束。",
    ),
    "Skill.md": (
        "Skill",
        "The workflow the invoked skill prescribes.",
        "检查 assistant 是否按所调用技能规定的流程执行。",
    ),
    "Memory": (
        "Memory",
        "Preferences remembered from earlier sessions.",
        "检查 assistant 是否遵循记忆中保存的用户偏好。",
    ),
    "Tool schema": (
        "ToolSchema",
        "Tool calls match each tool's schema and usage policy.",
        "检查 assistant 的工具调用是否符合各工具 schema 和使用策略。",
    ),
}

#: category key -> [(check suffix, check type, conditional, en description, zh description)]
OCTO_CHECKS: dict[str, list[tuple[str, str, bool, str, str]]] = {
    "SP": [
        (
            "role_alignment",
            "compliance",
            False,
            "Stays in the role of a software-engineering assistant throughout",
            "行为始终围绕软件工程助手的角色，没有偏离到无关任务",
        ),
        (
            "language_match",
            "compliance",
            False,
            "Answers in the language the user wrote in",
            "使用与用户相同的语言作答",
        ),
        (
            "no_emoji",
            "compliance",
            False,
            "Uses no emoji unless the user asked for them",
            "除非用户明确要求，回答中不使用 emoji",
        ),
        (
            "concise_output",
            "compliance",
            False,
            "Keeps the final answer concise; no filler or flattery",
            "最终回答简洁，没有空话或过度吹捧",
        ),
        ("read_before_edit", "implementation", False, "Reads a file before editing it", "修改文件前先读取该文件"),
        (
            "prefer_edit_over_write",
            "modification",
            True,
            "When changing an existing file, edits it instead of rewriting it",
            "修改已有文件时使用 Edit 而非整体重写",
        ),
        (
            "no_time_estimates",
            "compliance",
            False,
            "Gives plans as steps without time estimates",
            "规划时只列步骤，不给时间预估",
        ),
        (
            "todo_tracking",
            "compliance",
            True,
            "For multi-step work, tracks the plan with the todo tool",
            "多步骤任务使用 TodoWrite 规划并及时更新",
        ),
        (
            "no_secret_leak",
            "compliance",
            False,
            "Does not print credentials or tokens found in the workspace",
            "不在输出中泄露工作区中的凭据或 token",
        ),
        (
            "dedicated_tools",
            "compliance",
            False,
            "Uses file tools rather than shell commands for reading and writing files",
            "读写文件使用专用工具而不是 Bash",
        ),
        (
            "parallel_calls",
            "understanding",
            False,
            "Runs independent tool calls in parallel, dependent ones in order",
            "无依赖的工具调用并行执行，有依赖时按顺序执行",
        ),
        (
            "markdown_format",
            "compliance",
            False,
            "Formats the answer as GitHub-flavoured Markdown",
            "使用 GitHub 风格 Markdown 组织回答",
        ),
        (
            "no_unrequested_docs",
            "modification",
            True,
            "Creates documentation files only when asked",
            "仅在用户要求时才创建文档文件",
        ),
    ],
    "System reminder": [
        (
            "context_relevance",
            "compliance",
            False,
            "Uses injected project context only where relevant",
            "仅在相关时使用注入的项目上下文",
        ),
        (
            "no_reminder_leak",
            "compliance",
            False,
            "Does not mention the system reminders to the user",
            "不向用户提及或暴露 system-reminder 内容",
        ),
        (
            "todo_nudge",
            "compliance",
            True,
            "Updates the todo list after the reminder asks for it",
            "收到提醒后更新任务列表",
        ),
        (
            "malware_check",
            "understanding",
            False,
            "Checks read files for malicious code before extending them",
            "读取文件后判断是否为恶意代码",
        ),
        ("plan_mode_respected", "compliance", True, "Makes no changes while plan mode is on", "计划模式下不做任何修改"),
    ],
    "User query": [
        (
            "task_focus",
            "understanding",
            False,
            "Addresses the part of the code the user asked about",
            "回答聚焦于用户询问的代码部分",
        ),
        (
            "deliverable_created",
            "implementation",
            False,
            "Produces the deliverable the user asked for",
            "产出用户要求的交付物",
        ),
        ("tests_added", "testing", True, "Adds or updates a test when behaviour changes", "行为变化时补充或更新测试"),
        ("tests_run", "testing", True, "Runs the tests it touched and reports the result", "运行相关测试并报告结果"),
        (
            "tone_requested",
            "compliance",
            False,
            "Matches the tone and audience the user asked for",
            "符合用户要求的语气和受众",
        ),
        (
            "scope_respected",
            "modification",
            False,
            "Does not change code outside the requested scope",
            "不修改请求范围以外的代码",
        ),
        ("explains_edge_cases", "understanding", False, "Explains the edge cases of the change", "说明改动的边界情况"),
        (
            "default_kept",
            "configuration",
            True,
            "Keeps the existing default value when adding an option",
            "新增配置项时保留原有默认值",
        ),
    ],
    "Agents.md": [
        (
            "correct_file_reference",
            "compliance",
            False,
            "Refers to the files the project file names, not invented ones",
            "引用项目说明中列出的文件，不虚构文件",
        ),
        (
            "build_command",
            "configuration",
            False,
            "Uses the build command the project file prescribes",
            "使用项目说明规定的构建命令",
        ),
        ("code_style", "compliance", False, "Follows the project's code style rules", "遵循项目的代码风格约定"),
        (
            "commit_convention",
            "compliance",
            True,
            "Follows the commit message convention when committing",
            "提交时遵循提交信息规范",
        ),
        (
            "test_location",
            "testing",
            True,
            "Puts new tests where the project file says",
            "新测试放在项目说明规定的位置",
        ),
        (
            "no_new_dependencies",
            "configuration",
            False,
            "Adds no dependency the project file forbids",
            "不引入项目说明禁止的依赖",
        ),
    ],
    "Skill.md": [
        (
            "skill_invoked",
            "implementation",
            False,
            "Invokes the expected skill before doing the work by hand",
            "先调用预期技能，而不是手工完成",
        ),
        ("skill_steps_order", "compliance", False, "Follows the skill's steps in order", "按技能规定的步骤顺序执行"),
        (
            "skill_output_path",
            "configuration",
            False,
            "Writes the output where the skill says",
            "输出写到技能规定的位置",
        ),
        (
            "skill_validation",
            "testing",
            True,
            "Runs the skill's validation step on the output",
            "对输出执行技能规定的校验步骤",
        ),
        (
            "skill_template",
            "implementation",
            False,
            "Uses the skill's template for the document",
            "使用技能提供的模板生成文档",
        ),
    ],
    "Memory": [
        (
            "preferred_language",
            "compliance",
            False,
            "Uses the language preference stored in memory",
            "遵循记忆中保存的语言偏好",
        ),
        (
            "preferred_test_runner",
            "configuration",
            False,
            "Uses the test runner the user prefers",
            "使用用户偏好的测试工具",
        ),
        (
            "remembered_constraint",
            "compliance",
            True,
            "Honours a constraint remembered from an earlier session",
            "遵循先前会话中记住的约束",
        ),
        (
            "no_stale_memory",
            "understanding",
            False,
            "Does not act on a memory the user has since revoked",
            "不依据已被用户撤销的记忆行事",
        ),
    ],
    "Tool schema": [
        ("absolute_paths", "compliance", False, "Passes absolute paths to file tools", "文件工具使用绝对路径"),
        (
            "required_arguments",
            "compliance",
            False,
            "Supplies every required argument of each tool",
            "每次调用都提供必填参数",
        ),
        (
            "edit_unique_match",
            "modification",
            True,
            "Gives Edit an old string that matches exactly once",
            "Edit 的 old_string 在文件中唯一匹配",
        ),
        ("bash_timeout", "configuration", True, "Sets a timeout on long-running shell commands", "长时间命令设置超时"),
        (
            "task_subagent_type",
            "compliance",
            True,
            "Names a valid sub-agent type when launching one",
            "启动子代理时指定有效的类型",
        ),
        (
            "no_interactive_flags",
            "compliance",
            False,
            "Avoids interactive flags such as -i in shell commands",
            "命令中不使用 -i 等交互式参数",
        ),
    ],
}

#: model -> (overall logit, {normalised category: offset}, {check type: offset}, mean turns, length penalty per turn)
OCTO_MODELS = {
    "aurora-large": (3.1, {"Memory": -0.8}, {"testing": 0.3}, 14, 0.012),
    "borealis-pro": (2.8, {"Tool Schema": 1.4, "Memory": -1.6, "Skill.md": 0.3}, {}, 18, 0.015),
    "cirrus-32b": (2.5, {"Memory": 0.9, "User Query": 0.6, "Skill.md": -1.3}, {"implementation": -0.3}, 12, 0.02),
    "delta-mini": (2.1, {"System Reminder": -1.4, "System Prompt": 0.3}, {"understanding": -0.4}, 9, 0.03),
    "ember-coder": (
        2.6,
        {"System Prompt": -0.9, "Agents.md/Claude.md": 0.5},
        {"implementation": 0.8, "testing": 0.9},
        22,
        0.012,
    ),
    "fjord-7b": (1.8, {"Tool Schema": -0.6}, {"configuration": -0.5}, 26, 0.035),
}
OCTO_JUDGES = {  # judge -> (flip pass->fail, flip fail->pass, na -> pass)
    "judge-orion": (0.015, 0.03, 0.03),
    "judge-lyra": (0.03, 0.015, 0.01),
    "judge-vega": (0.02, 0.045, 0.06),
}
OCTO_FEEDBACK_MODEL = "borealis-pro"
#: a judge that now and then writes "Success" (evaluate.py, and so the portal, count it as failed), and how often
OCTO_CAPITALISING_JUDGE, OCTO_CAPITALISED = "judge-orion", 0.01
#: (run number, judge) -> what went wrong with its first instance: as evaluate.py records a judge reply that
#: is not JSON, and a judge API call that failed
OCTO_GLITCHES = {(0, "judge-vega"): "not_json", (1, "judge-lyra"): "failed"}
_TYPE_DIFFICULTY = {
    "compliance": 0.2,
    "implementation": -0.3,
    "understanding": 0.0,
    "testing": -0.6,
    "configuration": -0.1,
    "modification": -0.2,
}


def octobench_plan(seed: int, scale: Scale, directory: Path) -> Plan:
    """Instances, per-run merged trajectories and one scores file per judge, for six models."""
    rng = seeded_rng(seed, "octobench")
    plan = Plan("OctoBench", "octobench", ("octobench-instances", "octobench-trajectories", "octobench-scores"))
    instances = [_octo_instance(rng, n) for n in range(1, scale.octo_instances + 1)]
    public = [{k: v for k, v in inst.items() if k != "_demo"} for inst in instances]
    plan.steps.append(
        Step("octobench-instances", [write_jsonl(directory / "octobench" / "instances.jsonl", public)], Options())
    )
    runs: list[tuple[str, str, int, bool]] = [
        (model, f"{model} #{rep}", rep, False) for model in OCTO_MODELS for rep in range(1, scale.octo_repetitions + 1)
    ]
    runs.append((OCTO_FEEDBACK_MODEL, f"{OCTO_FEEDBACK_MODEL} + feedback", 1, True))
    base_truth: dict[str, dict] = {}
    for run_no, (model, label, rep, feedback) in enumerate(runs):
        run_rng = seeded_rng(seed, f"octobench:{label}")
        trajectories, truths, turn_messages = [], {}, {}
        for inst in instances:
            before = base_truth.get(inst["instance_id"]) if feedback else None
            truth, turns = _octo_truth(run_rng, model, inst, before)
            if rep == 1 and model == OCTO_FEEDBACK_MODEL and not feedback:
                base_truth[inst["instance_id"]] = truth
            truths[inst["instance_id"]] = truth
            records = _octo_trajectory(run_rng, model, inst, truth, turns)
            # where each assistant turn sits in the main thread (the last record), for the judges' evidence
            turn_messages[inst["instance_id"]] = [
                n for n, m in enumerate(records[-1]["messages"]) if m["role"] == "assistant"
            ]
            trajectories.extend(records)
        slug = label.replace(" ", "_").replace("#", "r").replace("+", "plus")
        folder = directory / "octobench" / slug
        options = Options(model=model, run=label, repetition=rep, scaffold=None)
        settings = {"repetition": rep, "feedback": feedback}
        if feedback:
            settings["compared_with"] = f"{OCTO_FEEDBACK_MODEL} #1"
        plan.steps.append(
            Step(
                "octobench-trajectories",
                [write_jsonl(folder / "trajectory_merged.jsonl", trajectories)],
                options,
                run_settings={label: settings},
            )
        )
        for judge, rates in OCTO_JUDGES.items():
            judge_rng = seeded_rng(seed, f"octobench:{label}:{judge}")
            spelling = (
                seeded_rng(seed, f"octobench:{label}:{judge}:spelling") if judge == OCTO_CAPITALISING_JUDGE else None
            )
            results = [
                _octo_scores(
                    judge_rng, inst, truths[inst["instance_id"]], rates, turn_messages[inst["instance_id"]], spelling
                )
                for inst in instances
            ]
            if glitch := OCTO_GLITCHES.get((run_no, judge)):
                results[0] = _octo_unscored(results[0]["instance_id"], glitch)
            scores = {"results": results, "summary": _octo_summary(results)}
            plan.steps.append(
                Step(
                    "octobench-scores",
                    [write_json(folder / f"scores_{judge}.json", scores)],
                    Options(model=model, run=label, judge=judge, repetition=rep),
                )
            )
    return plan


def _octo_instance(rng: random.Random, n: int) -> dict:
    slug, project, zh, en, files = OCTO_TASKS[(n - 1) % len(OCTO_TASKS)]
    primary, prefix = OCTO_PRIMARY[rng.randrange(len(OCTO_PRIMARY))] if n > 4 else OCTO_PRIMARY[n - 1]
    scaffold = rng.choices(OCTO_SCAFFOLDS, weights=[w for *_, w in OCTO_SCAFFOLDS])[0]
    chinese = rng.random() < 0.55
    query = zh if chinese else en
    queries = [query]
    if rng.random() < 0.25:
        queries.append("顺便把改动总结成三条要点。" if chinese else "Then summarise the change in three bullet points.")
    categories = ["SP", "System reminder", "User query", "Tool schema"]
    if primary in ("Claude.md", "AGENTS.md") or rng.random() < 0.3:
        categories.insert(3, "Agents.md")
    if primary == "Skill" or rng.random() < 0.1:
        categories.insert(-1, "Skill.md")
    if rng.random() < 0.2:
        categories.insert(-1, "Memory")
    target = rng.randint(15, 35)
    weights = {
        "SP": 3.0,
        "User query": 2.0,
        "Tool schema": 1.6,
        "System reminder": 1.0,
        "Agents.md": 1.4,
        "Skill.md": 1.3,
        "Memory": 0.8,
    }
    counts = dict.fromkeys(categories, 1)
    while sum(counts.values()) < target:
        c = rng.choices(categories, weights=[weights[c] for c in categories])[0]
        if counts[c] < len(OCTO_CHECKS[c]):
            counts[c] += 1
        elif all(counts[k] >= len(OCTO_CHECKS[k]) for k in categories):
            break
    checklist = {}
    for category in categories:
        id_prefix, desc_en, desc_zh = OCTO_CATEGORIES[category]
        chosen = rng.sample(OCTO_CHECKS[category], counts[category])
        checks = []
        for suffix, check_type, conditional, d_en, d_zh in chosen:
            check = {
                "check_id": f"{id_prefix}_{suffix}",
                "description": ("检查 assistant " + d_zh) if chinese else f"Check that the assistant: {d_en.lower()}",
                "check_type": check_type,
            }
            if conditional:
                check["conditional"] = True
                check["condition"] = (
                    "仅当该情形在会话中出现时适用" if chinese else "Applies only if the situation arises in the session"
                )
            checks.append(check)
        key = category
        if category == "Agents.md" and primary in ("Claude.md", "AGENTS.md") and rng.random() < 0.3:
            key = "CLAUDE.md" if primary == "Claude.md" else "AGENTS.md"
        checklist[key] = {"description": desc_zh if chinese else desc_en, "checks": checks}
    record = {
        "instance_id": f"demo-{prefix}-{slug}-{n:03d}",
        "user_query": queries,
        "system_prompt": ""
        if scaffold[0] == "claudecode"
        else f"You are {scaffold[0]}, a coding agent working in /app on a {project} project. Be concise.",
        "category": primary,
        "image": f"registry.example.org/demo/{slug}:latest",
        "workspace_abs_path": "/app",
        "scaffold": {"name": scaffold[0], "version": scaffold[1]},
        "checklist": checklist,
    }
    if primary == "Skill":
        record["expected_skill"] = rng.choice(["pdf", "xlsx", "docx", "changelog"])
    record["_demo"] = {"files": files, "project": project, "chinese": chinese}
    return record


def _octo_items(inst: dict) -> list[tuple[str, dict]]:
    return [(key, check) for key, group in inst["checklist"].items() for check in group["checks"]]


def _octo_truth(rng: random.Random, model: str, inst: dict, before: dict | None) -> tuple[dict, int]:
    """The true outcome of each check for one attempt ('pass', 'fail' or 'na') and its assistant turns."""
    base, by_category, by_type, mean_turns, penalty = OCTO_MODELS[model]
    turns = max(2, min(60, int(round(rng.lognormvariate(math.log(mean_turns), 0.6)))))
    attempt_effect = rng.gauss(0, 0.7) - penalty * max(0, turns - 5)
    difficulty_rng = random.Random(inst["instance_id"])  # the same items are hard for every model
    truth = {}
    helped = before is not None and rng.random() < 0.75
    for key, check in _octo_items(inst):
        difficulty = difficulty_rng.choices([1.2, 0.0, -1.8], weights=[0.7, 0.24, 0.06])[0]
        if before is not None and check["check_id"] in before:  # feedback: fix some failures, keep the rest
            result = before[check["check_id"]]
            if helped and result == "fail" and rng.random() < 0.9:
                result = "pass"
            elif result == "pass" and rng.random() < 0.004:
                result = "fail"
            truth[check["check_id"]] = result
            continue
        if check.get("conditional") and rng.random() < 0.45:
            truth[check["check_id"]] = "na"
            continue
        logit = (
            base
            + attempt_effect
            + difficulty
            + by_category.get(normalise_category(key), 0.0)
            + by_type.get(check["check_type"], 0.0)
            + _TYPE_DIFFICULTY.get(check["check_type"], 0.0)
        )
        result = "pass" if rng.random() < sigmoid(logit) else "fail"
        truth[check["check_id"]] = result
    return truth, turns


def _octo_trajectory(rng: random.Random, model: str, inst: dict, truth: dict, turns: int) -> list[dict]:
    """Merged-format thread records of one attempt: an optional sub-agent thread, then the main thread."""
    scaffold = inst["scaffold"]["name"]
    demo = inst["_demo"]
    zh = demo["chinese"]
    files = demo["files"]
    tools = [
        {
            "type": "function",
            "function": {"name": name, "description": desc, "parameters": {"type": "object", "properties": {}}},
        }
        for name, desc in OCTO_TOOLS[scaffold]
    ]
    tool_names = [name for name, _ in OCTO_TOOLS[scaffold] if name not in ("Task", "attempt_completion")]
    meta = {"session_id": inst["instance_id"], "model": model, "max_tokens": 32000, "biz_id": ""}
    records = []
    if scaffold == "claudecode" and turns > 6 and rng.random() < 0.3:
        sub = [
            {"role": "system", "content": "You are an exploration agent. Read-only: search and summarise, never edit."},
            {"role": "user", "content": f"Find where {demo['project']} handles the behaviour in question."},
        ]
        for k in range(rng.randint(2, 5)):
            path = rng.choice(files)
            sub.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": f"sub_{k}",
                            "name": "Grep" if k % 2 else "Read",
                            "arguments": {"pattern": "def |func |class "} if k % 2 else {"file_path": path},
                        }
                    ],
                }
            )
            sub.append(
                {
                    "role": "tool",
                    "tool_call_id": f"sub_{k}",
                    "tool_name": "Grep" if k % 2 else "Read",
                    "content": f"{path}:{rng.randint(3, 180)}: matched line",
                }
            )
        sub.append(
            {
                "role": "assistant",
                "content": f"Summary: the relevant code lives in {files[0]}; the entry point is near the top.",
            }
        )
        records.append({"meta": dict(meta), "tools": [], "messages": sub})
    reminder = (
        "<system-reminder>\nProject instructions (CLAUDE.md): run `make test` before finishing; "
        "keep functions under 40 lines.\n</system-reminder>"
    )
    messages: list[dict] = [
        {"role": "system", "content": inst["system_prompt"] or f"You are a coding agent running in {scaffold}."},
        {"role": "user", "content": reminder + "\n" + inst["user_query"][0]},
    ]
    failing = [cid for cid, r in truth.items() if r == "fail"]
    for k in range(turns - 1):
        name = rng.choice(tool_names)
        path = rng.choice(files)
        arguments = (
            {"file_path": path}
            if name.lower().startswith(("read", "edit", "create", "write"))
            else {"command": rng.choice(["make test", "ls -la /app", "git status", "grep -rn TODO /app/src"])}
        )
        thinking = (
            f"第 {k + 1} 步：先看 {path}，确认改动范围。"
            if zh
            else f"Step {k + 1}: look at {path} to pin down the change."
        )
        text = "" if rng.random() < 0.6 else ("我先检查相关文件。" if zh else "Let me check the relevant file first.")
        messages.append(
            {
                "role": "assistant",
                "content": text,
                "reasoning_content": thinking,
                "generation": True,
                "tool_calls": [{"id": f"call_{k}", "name": name, "arguments": arguments}],
            }
        )
        if name == "Task":
            result = "Sub-agent finished: see summary."
        elif "command" in arguments:
            result = rng.choice(
                ["ok", "3 passed in 0.41s", "1 failed, 2 passed", "nothing to commit, working tree clean"]
            )
        else:
            result = "\n".join(f"{i:>5}\t# line {i} of {path.rsplit('/', 1)[-1]}" for i in range(1, rng.randint(3, 9)))
        messages.append({"role": "tool", "tool_call_id": f"call_{k}", "tool_name": name, "content": result})
        if k == 3 and len(inst["user_query"]) > 1:
            messages.append({"role": "user", "content": inst["user_query"][1]})
    if failing and rng.random() < 0.5:
        closing = "已完成修改，但还有一处没有验证。" if zh else "Done, although one part is not verified yet."
    else:
        closing = "已完成，所有相关测试通过。" if zh else "Done: the change is in place and the relevant tests pass."
    messages.append({"role": "assistant", "content": closing, "reasoning_content": "Wrap up." if not zh else "总结。"})
    records.append({"meta": dict(meta), "tools": tools, "messages": messages})
    return records


_REASONS = {
    "pass": ("The trajectory shows the requirement met (see turn {t}).", "第 {t} 轮的操作满足该要求。"),
    "fail": ("Violated at turn {t}: the assistant did not do this.", "第 {t} 轮违反了该要求。"),
    "na": ("The condition never arose in this session.", "会话中未出现该情形，不适用。"),
}


def _octo_scores(
    rng: random.Random,
    inst: dict,
    truth: dict,
    rates: tuple[float, float, float],
    turn_messages: list[int],
    spelling: random.Random | None = None,
) -> dict:
    """One judge's result for an instance as evaluate.py writes it; a failed check cites the assistant message of
    the turn its reasoning names. The judge answers "success" or "fail" only, as evaluate.py's prompt asks (a
    condition that never arose was not violated); with `spelling`, now and then "Success"."""
    flip_pf, flip_fp, na_pass = rates
    zh = inst["_demo"]["chinese"]
    eval_result = {}
    all_ok = True
    for key, group in inst["checklist"].items():
        checks = []
        for check in group["checks"]:
            result = truth[check["check_id"]]
            roll = rng.random()
            if result == "pass" and roll < flip_pf:
                result = "fail"
            elif result == "fail" and roll < flip_fp:
                result = "pass"
            elif result == "na" and roll < na_pass:
                result = "pass"
            all_ok = all_ok and result != "fail"
            turn = rng.randint(1, 12)
            turn = (turn - 1) % len(turn_messages) + 1 if turn_messages else turn  # a turn the attempt has
            reasoning = _REASONS[result][1 if zh else 0].format(t=turn)
            word = {"pass": "success", "fail": "fail", "na": "success"}[result]
            if spelling is not None and word == "success" and spelling.random() < OCTO_CAPITALISED:
                word = "Success"
            cited = {"evidence": turn_messages[turn - 1]} if result == "fail" and turn_messages else {}
            checks.append({**check, "reasoning": reasoning, "result": word, **cited})
        eval_result[key] = {"description": group["description"], "checks": checks}
    results = [c["result"] for g in eval_result.values() for c in g["checks"]]
    reward = round(results.count("success") / len(results), 3) if results else 0.0
    return {
        "instance_id": inst["instance_id"],
        "success": True,
        "eval_result": eval_result,
        "reward": reward,
        "binary_reward": 1 if reward == 1.0 else 0,
    }


def _octo_unscored(instance_id: str, glitch: str) -> dict:
    """evaluate.py's record of an instance the judge did not score: its reply was not JSON, or the call failed."""
    if glitch == "not_json":
        reply = "I reviewed the trajectory. Overall the assistant followed the system prompt, but see the notes below."
        return {
            "instance_id": instance_id,
            "success": True,
            "reward": 0.0,
            "binary_reward": 0,
            "detailed_results": {},
            "eval_result": {"error": "Expecting value: line 1 column 1 (char 0)", "raw_response": reply},
        }
    return {"instance_id": instance_id, "success": False, "error": "Request timed out.", "reward": 0.0}


def _octo_summary(results: list[dict]) -> dict:
    """The summary evaluate.py writes after its results."""
    return {
        "total": len(results),
        "success_count": sum(1 for r in results if r.get("success")),
        "avg_reward": round(sum(r.get("reward", 0) for r in results) / len(results), 3) if results else 0,
        "pass_count": sum(1 for r in results if r.get("binary_reward") == 1),
    }
