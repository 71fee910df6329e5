"""EvolIF demo: multi-turn dialogues whose constraints evolve turn by turn, and one patience-3 evaluation log
per model and dialogue; the deterministic constraint families are checked by the portal's own checker."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

from runs.checkers.evolif import check_constraint
from runs.demo.plan import Plan, Scale, Step, seeded_rng, sigmoid, write_jsonl
from runs.ingest import Options

#: (title, task, sentences, keywords for existence) -- English topics
EVOLIF_TOPICS_EN = [
    (
        "the budget request",
        "Write a short note asking my manager about next quarter's team budget.",
        [
            "Our team plans two new projects next quarter.",
            "A clear budget lets us book training early.",
            "I would like to agree on the numbers before the planning week.",
            "Travel costs rose this year.",
            "A short meeting would be enough to settle the main points.",
            "Thank you for considering the request.",
        ],
        ["budget", "quarter", "training"],
    ),
    (
        "the garden plan",
        "Help me plan a small vegetable garden on a sunny balcony.",
        [
            "Tomatoes and herbs grow well in large pots.",
            "Water early in the morning during summer.",
            "A balcony facing south gets the most light.",
            "Use light soil mixed with compost.",
            "Start with three or four plants to learn the rhythm.",
            "Check the railing can carry the weight of wet pots.",
        ],
        ["balcony", "soil", "herbs"],
    ),
    (
        "the study schedule",
        "Draft a weekly study schedule for a student preparing for a chemistry exam.",
        [
            "Short daily sessions beat one long session on Sunday.",
            "Mix problem sets with reading.",
            "Keep one evening free to rest.",
            "Review mistakes at the end of each week.",
            "Practice exams help with timing.",
            "Sleep matters as much as revision.",
        ],
        ["chemistry", "exam", "review"],
    ),
    (
        "the bike commute",
        "Give advice to someone who wants to start cycling to work.",
        [
            "Plan a quiet route before the first day.",
            "Lights and a helmet are the first purchases.",
            "Leave a change of clothes at the office.",
            "Start with two days a week.",
            "Check the tyre pressure every week.",
            "Rain gear makes winter rides possible.",
        ],
        ["route", "helmet", "commute"],
    ),
    (
        "the product launch",
        "Write an announcement for the launch of a note-taking app.",
        [
            "The app syncs notes across phone and laptop.",
            "Offline mode keeps every note available on a plane.",
            "Sharing a notebook takes one tap.",
            "The first month is free for everyone.",
            "Feedback from the beta shaped the design.",
            "Export to plain text is always possible.",
        ],
        ["notes", "sync", "launch"],
    ),
    (
        "the museum visit",
        "Suggest how a family could spend a day at a science museum.",
        [
            "Arrive early to avoid the queues.",
            "The planetarium show fills up by noon.",
            "Children enjoy the hands-on physics hall.",
            "Pack snacks for the break.",
            "A short walk outside helps between exhibitions.",
            "Buy tickets online to save time.",
        ],
        ["museum", "planetarium", "tickets"],
    ),
    (
        "the team retrospective",
        "Outline an agenda for a one-hour team retrospective.",
        [
            "Start by restating the goal of the sprint.",
            "Give everyone five minutes to write notes alone.",
            "Group similar notes before discussing them.",
            "Pick at most two actions.",
            "Assign an owner to each action.",
            "End on time and thank the team.",
        ],
        ["sprint", "actions", "agenda"],
    ),
    (
        "the recipe",
        "Explain how to cook a simple lentil soup for four people.",
        [
            "Rinse the lentils before cooking.",
            "Soften onion and carrot in olive oil.",
            "Add cumin for warmth.",
            "Simmer for about twenty-five minutes.",
            "Season with lemon juice at the end.",
            "Serve with bread.",
        ],
        ["lentils", "cumin", "soup"],
    ),
]
EVOLIF_TOPICS_ZH = [
    (
        "周末出游",
        "帮我规划一个周末去郊外爬山的行程。",
        [
            "建议周六早上出发，避开人流。",
            "带足饮用水和简单的干粮。",
            "山顶风大，准备一件外套。",
            "下山时注意膝盖，放慢速度。",
            "提前查看天气预报。",
            "回程可以顺路去镇上吃午饭。",
        ],
        ["爬山", "天气", "外套"],
    ),
    (
        "租房须知",
        "给第一次租房的毕业生写几条建议。",
        [
            "签合同前仔细核对房屋状况。",
            "押金和租金的支付方式要写清楚。",
            "拍照记录家具和电器的现状。",
            "了解周边的交通和生活配套。",
            "保留好所有的付款凭证。",
            "与室友提前约定公共区域的规则。",
        ],
        ["合同", "押金", "室友"],
    ),
    (
        "读书会",
        "为公司读书会设计一次活动流程。",
        [
            "提前一周公布要读的章节。",
            "开场用五分钟回顾上次讨论。",
            "每人分享一个印象最深的观点。",
            "主持人控制每人发言时间。",
            "最后投票选出下一本书。",
            "活动结束后整理一份纪要。",
        ],
        ["读书会", "章节", "纪要"],
    ),
]
EVOLIF_FILLER_EN = [
    "This keeps the plan realistic.",
    "It also leaves room for changes later.",
    "Small steps make the result easier to check.",
    "Each point can be adjusted as needed.",
    "That way nothing important is forgotten.",
    "The details can be refined in a second pass.",
]
EVOLIF_FILLER_ZH = ["这样安排比较稳妥。", "之后也方便调整。", "每一步都容易检查。", "细节可以再商量。"]
EVOLIF_ZH_NAMES = {
    "startwith": "开头",
    "endwith": "结尾",
    "format": "格式",
    "punctuation": "标点",
    "countableItems": "要点数量",
    "length": "长度",
    "style": "文风",
    "reader_age": "读者年龄",
    "emotion": "情绪",
}
EVOLIF_FORBIDDEN = ["basically", "really", "very", "actually", "simply", "obviously"]
EVOLIF_OPENERS = ["In short", "Here is the plan", "Quick answer", "Good question"]
EVOLIF_EMOJI = ["🙂", "🚀", "🌱", "📌", "😴", "✨"]
EVOLIF_PUNCT = ["!", ";", "`", ":", "?", "￥"]
EVOLIF_LLM = {
    "style": ["formal", "passive voice", "active voice", "humorous"],
    "reader_age": ["child", "youth", "senior"],
    "emotion": ["joyful", "calm", "angry"],
}
EVOLIF_STRUCTURED = {"csv", "json", "html"}

#: model -> (base logit, {family: offset}, decline per extra active constraint)
EVOLIF_MODELS = {
    "aurora-large": (3.4, {"length": -0.8}, 0.30),
    "borealis-pro": (3.0, {"countableItems": -1.2, "format": 0.6}, 0.35),
    "cirrus-32b": (2.7, {"reader_age": -1.0, "style": -0.8, "forbidden": 0.5}, 0.40),
    "delta-mini": (2.2, {"format": -1.2, "punctuation": -0.5}, 0.50),
    "fjord-7b": (1.7, {"case": -1.0, "endwith": -0.8}, 0.55),
}
EVOLIF_PATIENCE = 3


def evolif_plan(seed: int, scale: Scale, directory: Path) -> Plan:
    """Dialogue scripts with evolving constraints and one patience-3 evaluation log per model and dialog."""
    rng = seeded_rng(seed, "evolif")
    plan = Plan("EvolIF", "evolif", ("evolif-dialogs", "evolif-eval"))
    dialogs = []
    paths = []
    for n in range(1, scale.evolif_dialogs + 1):
        chinese = n % 4 == 3
        script = _evolif_dialog(rng, n, rng.randint(*scale.evolif_turns), chinese)
        dialogs.append((n, script, chinese))
        paths.append(write_jsonl(directory / "evolif" / "dialogs" / f"dialog_{n}.jsonl", script))
    plan.steps.append(Step("evolif-dialogs", paths, Options()))
    for model in EVOLIF_MODELS:
        model_rng = seeded_rng(seed, f"evolif:{model}")
        logs = [
            write_jsonl(
                directory / "evolif" / model / f"eval_{n}.jsonl", _evolif_log(model_rng, model, script, chinese)
            )
            for n, script, chinese in dialogs
        ]
        plan.steps.append(Step("evolif-eval", logs, Options(model=model)))
    return plan


def _evolif_args(rng: random.Random, family: str, topic: dict) -> Any:
    if family == "startwith":
        mode = rng.choice(["keyword", "emoji", "letter", "quotation"] if not topic["zh"] else ["emoji", "quotation"])
        if mode == "keyword":
            return {"mode": "keyword", "value": rng.choice(EVOLIF_OPENERS)}
        if mode == "emoji":
            return {"mode": "emoji", "value": rng.choice(EVOLIF_EMOJI)}
        if mode == "letter":
            return {"mode": "letter", "value": rng.choice("abcdefghijklmnoprstw")}
        return {"mode": "quotation", "left": "「", "right": "」"}
    if family == "endwith":
        mode = rng.choice(["emoji", "quotation"])
        return (
            {"mode": "emoji", "value": rng.choice(EVOLIF_EMOJI)}
            if mode == "emoji"
            else {"mode": "quotation", "left": "“", "right": "”"}
        )
    if family == "format":
        return {"mode": rng.choice(["markdown", "markdown", "csv", "json", "html"])}
    if family == "case":
        return {"mode": rng.choice(["all_lower", "all_upper"])}
    if family == "punctuation":
        return {"mode": rng.choice(["must_include", "must_not_include"]), "value": rng.choice(EVOLIF_PUNCT)}
    if family == "countableItems":
        return {"num": rng.randint(3, 7)}
    if family == "length":
        mode, relation = rng.choice(
            [
                ("word", "less_than"),
                ("word", "more_than"),
                ("sentence", "less_than"),
                ("paragraph", "more_than"),
                ("characters", "less_than"),
            ]
        )
        number = {
            ("word", "less_than"): rng.randint(90, 160),
            ("word", "more_than"): rng.randint(50, 80),
            ("sentence", "less_than"): rng.randint(7, 11),
            ("paragraph", "more_than"): rng.randint(1, 2),
            ("characters", "less_than"): rng.randint(500, 900),
        }[(mode, relation)]
        return {"mode": mode, "relation": relation, "number": number}
    if family == "existence":
        return {k: rng.randint(1, 2) for k in rng.sample(topic["keywords"], rng.randint(1, 2))}
    if family == "forbidden":
        return rng.sample(EVOLIF_FORBIDDEN, rng.randint(1, 2))
    return {family: rng.choice(EVOLIF_LLM[family])}


def _evolif_describe(family: str, args: Any) -> str:
    if family == "startwith":
        what = f"{args['left']}...{args['right']}" if args["mode"] == "quotation" else args["value"]
        return f"The response must start with the {args['mode']} '{what}'."
    if family == "endwith":
        what = f"{args['left']}...{args['right']}" if args["mode"] == "quotation" else args["value"]
        return f"The response must end with the {args['mode']} '{what}'."
    if family == "format":
        return f"The response must be valid {args['mode'].upper() if args['mode'] != 'markdown' else 'Markdown'}."
    if family == "case":
        return "The response must be entirely in " + (
            "lowercase letters." if args["mode"] == "all_lower" else "capital letters."
        )
    if family == "punctuation":
        verb = "must contain" if args["mode"] == "must_include" else "must not contain"
        return f"The response {verb} the punctuation '{args['value']}'."
    if family == "countableItems":
        return f"The answer must contain exactly {args['num']} bullet points (* point or - point)."
    if family == "length":
        unit = {"word": "words", "sentence": "sentences", "paragraph": "paragraphs", "characters": "characters"}[
            args["mode"]
        ]
        return f"The response must have {args['relation'].replace('_', ' ')} {args['number']} {unit}."
    if family == "existence":
        return "The response must include " + ", ".join(f"'{k}' exactly {v} time(s)" for k, v in args.items()) + "."
    if family == "forbidden":
        return "The response must not use the words " + ", ".join(f"'{w}'" for w in args) + "."
    key, value = next(iter(args.items()))
    return {
        "style": f"Write in a {value} style.",
        "reader_age": f"Write for a {value} reader.",
        "emotion": f"The response should sound {value}.",
    }[family]


def _evolif_ask(rng: random.Random, action: str, family: str, args: Any, topic: dict) -> str:
    desc = ""
    if args is not None:
        desc = (
            _evolif_describe(family, args).replace("The response must ", "").replace("The answer must ", "").rstrip(".")
        )
        desc = desc[0].lower() + desc[1:]
    if topic["zh"]:
        if action == "start":
            return f"{topic['task']}另外，回答要满足：{_evolif_describe(family, args)}"
        if action == "return":
            return f"我们回到{topic['title']}的话题。请在之前的基础上再改一版，并且：{_evolif_describe(family, args)}"
        if action == "remove":
            return f"之前关于「{EVOLIF_ZH_NAMES.get(family, family)}」的那条要求可以去掉了，其余保持不变。"
        if action == "add":
            return f"再加一个要求：{_evolif_describe(family, args)}"
        if action == "keep":
            return "谢谢！请按同样的要求再润色一遍。"
        return f"能不能调整一下：{_evolif_describe(family, args)}"
    if action == "start":
        return f"{topic['task']} Oh, and it has to {desc}."
    if action == "return":
        return f"Going back to {topic['title']}: could you redo it so that it will {desc}?"
    if action == "remove":
        return f"You can forget the {family} requirement now; keep everything else as it was."
    if action == "keep":
        return rng.choice(
            [
                "Thanks! Could you polish it once more with the same requirements?",
                "Nice. Same rules, but make it a little clearer please.",
            ]
        )
    if action == "change":
        return f"Hmm, could we tweak that? Instead, the response should {desc}."
    return rng.choice(
        ["Could you also make sure it will {d}?", "One more thing: please {d}.", "Also, can the answer {d}?"]
    ).format(d=desc)


def _evolif_dialog(rng: random.Random, n: int, turns: int, chinese: bool) -> list[dict]:
    bank = EVOLIF_TOPICS_ZH if chinese else EVOLIF_TOPICS_EN
    chosen = rng.sample(bank, rng.randint(2, min(3, len(bank))))
    topics = [
        {
            "id": rng.randint(100, 4000),
            "title": t[0],
            "task": t[1],
            "sentences": t[2],
            "keywords": t[3],
            "zh": chinese,
            "active": {},
            "visited": False,
        }
        for t in chosen
    ]
    families = [
        "startwith",
        "endwith",
        "format",
        "case",
        "punctuation",
        "countableItems",
        "length",
        "existence",
        "forbidden",
        "style",
        "reader_age",
        "emotion",
    ]
    if chinese:
        families = [f for f in families if f not in ("case", "existence", "forbidden")]
    persona = rng.choice(
        [
            ("A retired engineer who likes precise answers and gentle humour.", ["methodical", "warm", "precise"]),
            ("A busy nurse who writes in short bursts between shifts.", ["brief", "practical", "friendly"]),
            ("A curious teenager who asks many follow-up questions.", ["playful", "curious", "hesitant"]),
            ("A small-business owner who values clear plans.", ["direct", "structured", "polite"]),
        ]
    )
    style = {"uuid": hashlib.md5(f"{n}:{persona[0]}".encode()).hexdigest(), "persona": persona[0], "styles": persona[1]}
    script: list[dict] = []
    current = 0
    left_in_segment = rng.randint(3, 6)
    for turn in range(1, turns + 1):
        if left_in_segment == 0:
            others = [i for i in range(len(topics)) if i != current]
            current = rng.choice(others)
            left_in_segment = rng.randint(3, 6)
        left_in_segment -= 1
        topic = topics[current]
        active: dict[str, Any] = topic["active"]
        free = [f for f in families if f not in active and not _evolif_clash(f, active)]
        if not topic["visited"]:
            action = "start"
        elif turn > 1 and script[-1]["active_topic"] != topic["id"]:
            action = "return"
        else:
            action = rng.choices(["add", "change", "remove", "keep"], weights=[0.45, 0.3, 0.15, 0.1])[0]
            if action == "add" and (len(active) >= 5 or not free):
                action = "change"
            if action == "remove" and len(active) < 2:
                action = "add" if free else "keep"
            if action == "change" and not active:
                action = "add"
        family = ""
        if action in ("start", "return", "add") and free:
            family = rng.choice(free)
            active[family] = _evolif_args(rng, family, topic)
        elif action == "change":
            family = rng.choice(list(active))
            active[family] = _evolif_args(rng, family, topic)
        elif action == "remove":
            family = rng.choice(list(active))
            del active[family]
        else:
            action = "keep"
        topic["visited"] = True
        query = _evolif_ask(rng, action if family else "keep", family, active.get(family), topic)
        if action == "start" and turn > 1 and not topic["zh"]:
            query = "New topic. " + query
        instructions = [{"id": f, "args": a, "description": _evolif_describe(f, a)} for f, a in active.items()]
        script.append(
            {
                "turn": turn,
                "active_topic": topic["id"],
                "user_query_verified": query,
                "user_query": query,
                "instructions": json.loads(json.dumps(instructions)),
                "style": style,
                "instruction_success": True,
                "topic_success": True,
            }
        )
    return script


def _evolif_clash(family: str, active: dict) -> bool:
    """Combinations the demo keeps apart so an answer can satisfy all constraints at once."""
    structured = active.get("format", {}).get("mode") in EVOLIF_STRUCTURED
    if family in ("startwith", "endwith", "countableItems") and structured:
        return True
    if family == "format" and any(f in active for f in ("startwith", "endwith", "countableItems")):
        return True
    return False


def _evolif_log(rng: random.Random, model: str, script: list[dict], chinese: bool) -> list[dict]:
    """One evaluated line per turn until patience runs out; deterministic families are checked for real."""
    base, offsets, decline = EVOLIF_MODELS[model]
    lines = []
    streak = 0
    for record in script:
        turn = record["turn"]
        active = record["instructions"]
        intended = {}
        for instruction in active:
            logit = (
                base
                + offsets.get(instruction["id"], 0.0)
                - decline * (len(active) - 1)
                - 0.03 * turn
                + rng.gauss(0, 0.4)
            )
            intended[instruction["id"]] = rng.random() < sigmoid(logit)
        sentences = _evolif_topic_sentences(record["active_topic"], script, chinese)
        response = _evolif_response(rng, sentences, active, intended, chinese)
        details, sub_details = {}, {}
        for instruction in active:
            verdict = check_constraint(instruction["id"], instruction["args"], response)
            if verdict is None:
                details[instruction["id"]] = intended[instruction["id"]]
                # as eval.py logs an LLM judge: [score 1-10 (passed above 6), rationale]
                sub_details[instruction["id"]] = (
                    [8.0, "consistent with the request"]
                    if intended[instruction["id"]]
                    else [4.0, "does not match the requested register"]
                )
            else:
                details[instruction["id"]] = verdict.passed
                sub_details[instruction["id"]] = verdict.reason
        ok = all(details.values())
        streak = 0 if ok else streak + 1
        lines.append(
            {
                "turn": turn,
                "response": response,
                "eval": {"overall_ok": ok, "details": details, "sub_details": sub_details},
                "remaining_patience": EVOLIF_PATIENCE - streak,
            }
        )
        if streak == EVOLIF_PATIENCE:
            break
    return lines


def _evolif_topic_sentences(topic_id: int, script: list[dict], chinese: bool) -> list[str]:
    first = next(r for r in script if r["active_topic"] == topic_id)
    for t in EVOLIF_TOPICS_ZH if chinese else EVOLIF_TOPICS_EN:
        if t[1] in first["user_query_verified"]:
            return list(t[2])
    return list((EVOLIF_TOPICS_ZH if chinese else EVOLIF_TOPICS_EN)[0][2])


def _evolif_response(
    rng: random.Random, sentences: list[str], active: list[dict], intended: dict, chinese: bool
) -> str:
    """An answer that tries to satisfy each constraint whose `intended` is True and neglects the others."""
    args = {i["id"]: i["args"] for i in active}
    want = intended
    filler = EVOLIF_FILLER_ZH if chinese else EVOLIF_FILLER_EN
    body = rng.sample(sentences, rng.randint(3, len(sentences)))
    if "existence" in args:
        for keyword, count in args["existence"].items():
            times = count if want["existence"] else rng.choice([0, count + 1])
            body = [s for s in body if keyword.lower() not in s.lower()]
            body += [f"The {keyword} matters here." for _ in range(times)]
    if "forbidden" in args:
        words = args["forbidden"]
        body = [s for s in body if not any(w in s.lower() for w in words)]
        if not want["forbidden"]:
            body.insert(1, f"This is {words[0]} the key point.")
    if "length" in args:
        spec = args["length"]
        if (spec["relation"] == "less_than") == want["length"]:
            body = body[:2]
        else:
            for k in range(80):
                measured = _evolif_measure(spec, _evolif_layout(body, args, want))
                if measured > spec["number"] or (spec["relation"] == "less_than" and measured >= spec["number"]):
                    break
                body.append(filler[k % len(filler)])
    text = _evolif_layout(body, args, want)
    if "punctuation" in args:
        mark, mode = args["punctuation"]["value"], args["punctuation"]["mode"]
        present = (mode == "must_include") == want["punctuation"]
        text = text.replace(mark, "" if mark != "." else "")
        if present:
            text += {
                "!": " Good luck!",
                ";": " Plan it; then do it.",
                "`": " See the `plan` section.",
                ":": " Note: keep it simple.",
                "?": " Does that work for you?",
                "￥": " Budget about ￥200.",
            }.get(mark, f" {mark}")
    if "startwith" in args and want["startwith"]:
        a = args["startwith"]
        text = (
            f"{a['left']}{text}{a['right']}"
            if a["mode"] == "quotation"
            else f"{a['value']} {text}"
            if a["mode"] != "letter"
            else f"{a['value'].upper()}{'s' if a['value'] not in 'aeiou' else 'n'} overview: {text}"
        )
    if "endwith" in args and want["endwith"]:
        a = args["endwith"]
        text = f"{text} {a['left']}Hope this helps{a['right']}" if a["mode"] == "quotation" else f"{text} {a['value']}"
    if "case" in args and want["case"]:
        text = text.lower() if args["case"]["mode"] == "all_lower" else text.upper()
    return text


def _evolif_layout(body: list[str], args: dict, want: dict) -> str:
    joiner = "" if body and not body[0].isascii() else " "
    fmt = args.get("format", {}).get("mode")
    ok_format = want.get("format", True)
    if "countableItems" in args:
        num = args["countableItems"]["num"]
        wanted = num if want["countableItems"] else num + (1 if len(body) <= num else -1)
        items = [body[i % len(body)] for i in range(max(1, wanted))]
        rest = body[wanted:] if len(body) > wanted else []
        lines = [f"- {s}" for s in items]
        text = (
            ("要点如下：" if joiner == "" else "Here are the points:")
            + "\n"
            + "\n".join(lines)
            + ("\n\n" + joiner.join(rest) if rest else "")
        )
    else:
        paragraphs = [joiner.join(body[i : i + 2]) for i in range(0, len(body), 2)]
        text = "\n\n".join(paragraphs)
    if fmt == "markdown":
        text = "## Summary\n\n" + text + ("" if ok_format else "\n\n```text\nunfinished")
    elif fmt == "csv":
        rows = ["point,detail"] + [f'{n},"{s}"' for n, s in enumerate(body, 1)]
        if not ok_format:
            rows[-1] += ",extra"
        text = "\n".join(rows)
    elif fmt == "json":
        text = json.dumps({"points": body}, ensure_ascii=False, indent=2)
        if not ok_format:
            text = text[:-1]
    elif fmt == "html":
        text = "<div>" + "".join(f"<p>{s}</p>" for s in body) + ("</div>" if ok_format else "<p>")
    return text


def _evolif_measure(spec: dict, text: str) -> int:
    mode = spec["mode"]
    if mode == "word":
        return len(re.findall(r"\w+", text))
    if mode == "paragraph":
        return len([p for p in re.split(r"(?:\r?\n\s*){2,}", text.strip()) if p.strip()])
    if mode == "characters":
        return len(text)
    return len(re.findall(r"[.!?。！？]+(?=\s|$)", text))
