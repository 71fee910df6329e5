"""GuideBench demo: guideline-following tasks in six categories (multiple choice and free answers) and the
predictions of four models with category-dependent accuracy."""

from __future__ import annotations

import json
import random
from pathlib import Path

from runs.demo.plan import Plan, Scale, Step, seeded_rng, write_json
from runs.ingest import Options

GUIDE_MODELS = {  # model -> {category: accuracy}, share of missing / unparsable answers
    "aurora-large": (
        {"chat": 0.82, "summary": 0.74, "hallu": 0.66, "math": 0.71, "price": 0.8, "relevance": 0.62},
        0.02,
    ),
    "borealis-pro": (
        {"chat": 0.76, "summary": 0.7, "hallu": 0.72, "math": 0.55, "price": 0.74, "relevance": 0.58},
        0.03,
    ),
    "cirrus-32b": ({"chat": 0.64, "summary": 0.61, "hallu": 0.5, "math": 0.62, "price": 0.69, "relevance": 0.49}, 0.05),
    "delta-mini": ({"chat": 0.52, "summary": 0.44, "hallu": 0.39, "math": 0.3, "price": 0.6, "relevance": 0.4}, 0.09),
}
GUIDE_CATEGORIES = ("chat", "summary", "hallu", "math", "price", "relevance")
_NAMES_ZH = ["小林", "王芳", "陈晨", "李雷", "赵敏", "周杰", "孙悦", "吴磊"]
_CITIES = ["上海", "成都", "广州", "杭州", "西安", "北京"]
_GOODS = [
    ("运动鞋", "运动器材"),
    ("保温杯", "家居用品"),
    ("蓝牙耳机", "数码产品"),
    ("坚果礼盒", "食品饮料"),
    ("台灯", "家居用品"),
]


def guidebench_plan(seed: int, scale: Scale, directory: Path) -> Plan:
    """~N tasks per category and predictions of four models with category-dependent accuracy."""
    rng = seeded_rng(seed, "guidebench")
    plan = Plan("GuideBench", "guidebench", ("guidebench-tasks", "guidebench-predictions"))
    tasks = {c: _guide_tasks(rng, c, scale.guidebench_per_category) for c in GUIDE_CATEGORIES}
    paths = [write_json(directory / "guidebench" / "tasks" / f"{c}_tasks.json", tasks[c]) for c in GUIDE_CATEGORIES]
    plan.steps.append(Step("guidebench-tasks", paths, Options()))
    for model, (accuracy, unanswered) in GUIDE_MODELS.items():
        model_rng = seeded_rng(seed, f"guidebench:{model}")
        files = []
        for category in GUIDE_CATEGORIES:
            predicted = [
                _guide_prediction(model_rng, category, t, accuracy[category], unanswered) for t in tasks[category]
            ]
            files.append(write_json(directory / "guidebench" / model / f"{category}_tasks.json", predicted))
        plan.steps.append(Step("guidebench-predictions", files, Options(model=model)))
    return plan


def _guide_tasks(rng: random.Random, category: str, count: int) -> list[dict]:
    maker = {
        "chat": _guide_chat,
        "summary": _guide_summary,
        "hallu": _guide_hallu,
        "math": _guide_math,
        "price": _guide_price,
        "relevance": _guide_relevance,
    }[category]
    tasks, seen = [], set()
    while len(tasks) < count:
        task = maker(rng, len(tasks))
        key = json.dumps(task, ensure_ascii=False, sort_keys=True)
        if key not in seen:
            seen.add(key)
            tasks.append(task)
    return tasks


def _options(rng: random.Random, right: str, wrong: list[str]) -> tuple[str, str]:
    choices = [right] + rng.sample(wrong, 3)
    rng.shuffle(choices)
    letters = "ABCD"
    return "\n".join(f"{letters[i]}. {c}" for i, c in enumerate(choices)), letters[choices.index(right)]


def _guide_chat(rng: random.Random, n: int) -> dict:
    name, city = rng.choice(_NAMES_ZH), rng.choice(_CITIES)
    hour, rate = rng.randint(7, 21), rng.randint(80, 97)
    follows = rng.random() < 0.5
    reply = (
        f"为您找到准点率 {rate}% 的航班，{hour} 点从{city}起飞，可在 App 内直接预订。"
        if follows
        else f"您好，{city}的天气不错，建议您改天再出行。"
    )
    options, answer = _options(
        rng,
        "遵循规定，客服按准点率要求搜索并介绍了航班和预订方式"
        if follows
        else "不遵循规定，客服没有按用户的准点率要求搜索航班",
        [
            "遵循规定，客服询问了用户的舱位偏好",
            "不遵循规定，客服没有说明价格",
            "不遵循规定，客服应先确认用户身份",
            "遵循规定，客服推荐了其他城市的航班",
        ]
        if follows
        else [
            "遵循规定，客服回应了用户的问候",
            "不遵循规定，客服没有推荐酒店",
            "遵循规定，客服提供了天气信息",
            "不遵循规定，客服语气不够热情",
        ],
    )
    return {
        "Instruction": "航空公司客服场景：判断客服回复是否遵循客服规则",
        "Guidelines": [
            {
                "type": "预订相关规则",
                "rule_id": f"rule_{10 + n % 7}",
                "rule_text": "当用户要预订且对准点率有要求时，应搜索准点率符合要求的航班，介绍航班信息并提供预订方案；没有可用航班时说明原因并致歉",
            }
        ],
        "Context": f"【user】我是{name}，想订一张从{city}出发的机票，准点率最好在 {rate - 5}% 以上。【assistant】{reply}",
        "MultipleOptions": options,
        "Groundtruth": {"OptimalOption": answer, "AnswerAnalysis": "依据规则判断客服是否按要求搜索并介绍航班。"},
    }


def _guide_summary(rng: random.Random, n: int) -> dict:
    a, b = rng.sample(_NAMES_ZH, 2)
    year = rng.randint(1990, 2020)
    city = rng.choice(_CITIES)
    context = (
        f"{year} 年，{a}在{city}创办了一家小型书店。起初生意冷清，{a}邀请作家{b}举办读书分享会，"
        f"吸引了许多年轻读者。两年后，书店开设了咖啡区，并成为当地有名的文化空间。"
    )
    options, answer = _options(
        rng,
        f"{year} 年{a}在{city}创办书店；{b}举办分享会后读者增加；两年后增设咖啡区，成为文化空间。",
        [
            f"{a}开了一家书店，后来很有名。",
            f"{b}是一位作家，经常举办活动。",
            f"{city}有很多书店和咖啡馆。",
            f"{a}和{b}一起经营咖啡馆。",
        ],
    )
    return {
        "Instruction": "按照特定规则生成文本的总结",
        "Guidelines": [
            {
                "type": "文本事件过程处理",
                "rule_id": "rule_49",
                "rule_text": "如果文本涉及事件过程，总结时需按时间顺序写出关键步骤",
            },
            {
                "type": "文本人物信息处理",
                "rule_id": "rule_75",
                "rule_text": "如果文本中有人物，总结时需写出人物及其作用",
            },
        ],
        "Context": context,
        "MultipleOptions": options,
        "Groundtruth": {"OptimalOption": answer, "AnswerAnalysis": "最佳选项按时间顺序覆盖了事件过程和人物作用。"},
    }


def _guide_hallu(rng: random.Random, n: int) -> dict:
    fact = rng.choice(
        [
            ("水在标准大气压下 100 摄氏度沸腾", True),
            ("月球距离地球约 38 万公里", True),
            ("长城全长约 500 公里", False),
            ("光速约为每秒 30 万公里", True),
            ("人体有 12 块骨头", False),
            ("地球绕太阳一周约 365 天", True),
            ("珠穆朗玛峰高约 2000 米", False),
        ]
    )
    who = rng.choice(_NAMES_ZH)
    context = f"{who}在科普文章中写道：{fact[0]}。因此，日常生活中应当注意相关常识。"
    right = "这段内容没有出现幻觉问题，陈述符合常识" if fact[1] else "这段内容出现了事实性幻觉，陈述的数据与事实不符"
    options, answer = _options(
        rng,
        right,
        [
            "这段内容出现了语义性幻觉，存在多义词歧义",
            "这段内容出现了逻辑性幻觉，推理前后矛盾",
            "这段内容出现了事实性幻觉，数据没有注明来源",
            "这段内容没有出现幻觉问题，陈述符合常识"
            if not fact[1]
            else "这段内容出现了事实性幻觉，陈述的数据与事实不符",
        ],
    )
    return {
        "Instruction": "判断大模型生成内容是否出现幻觉问题并分类",
        "Guidelines": [
            {
                "type": "事实性幻觉",
                "rule_id": "rule_12",
                "rule_text": "如果生成内容中的数据与公认事实不符，判定为事实性幻觉",
            },
            {"type": "逻辑性幻觉", "rule_id": "rule_20", "rule_text": "如果生成内容的推理前后矛盾，判定为逻辑性幻觉"},
        ],
        "Context": context,
        "MultipleOptions": options,
        "Groundtruth": {"OptimalOption": answer, "AnswerAnalysis": "对照常识判断陈述是否属实。"},
    }


def _guide_math(rng: random.Random, n: int) -> dict:
    good, kind = rng.choice(_GOODS)
    price = rng.randrange(80, 400, 10)
    discount = rng.choice([0.7, 0.8, 0.85, 0.9])
    other = rng.randrange(20, 120, 5)
    coupon = rng.choice([5, 10, 15, 20])
    total = round(price * discount + other - coupon, 2)
    answer = str(int(total)) if total == int(total) else str(total)
    who = rng.choice(_NAMES_ZH)
    return {
        "Instruction": "优惠券数学计算题目",
        "Guidelines": [
            {
                "type": "折扣优惠券",
                "rule_id": "rule_51",
                "rule_text": f"{int(discount * 100) / 10:g} 折优惠券，适用于{kind}类商品，每单限用一次，可与固定金额优惠券叠加",
            },
            {
                "type": "固定金额优惠券",
                "rule_id": "rule_29",
                "rule_text": f"{coupon} 元优惠券，无门槛，适用于食品饮料类商品",
            },
        ],
        "Context": f"{who}想买一件 {price} 元的{good}（{kind}），再买 {other} 元的食品饮料，两张优惠券都可使用。使用优惠券后总共需要支付多少钱？",
        "Groundtruth": {
            "ReferenceAnswer": answer,
            "ReferenceAnalysis": f"{price}×{discount} + {other} − {coupon} = {answer}",
        },
    }


def _guide_price(rng: random.Random, n: int) -> dict:
    good, _ = rng.choice(_GOODS)
    same = rng.random() < 0.5
    size_a = rng.randint(20, 40)
    size_b = size_a if same else size_a + rng.randint(5, 15)
    city_a, city_b = rng.sample(_CITIES, 2)
    return {
        "Instruction": "根据商品文字描述比较两个商品是否满足同品定义",
        "Guidelines": [
            {"type": "商品生产产地", "rule_id": "rule_90", "rule_text": "比较时忽略商品生产产地的不同"},
            {"type": "关键特性参数", "rule_id": "rule_31", "rule_text": "关键规格参数不同则判定为不同品"},
        ],
        "Context": f"商品A：{good}，规格 {size_a}，产地{city_a}。商品B：{good}，规格 {size_b}，产地{city_b}。",
        "Groundtruth": {
            "ReferenceAnswer": 1 if same else 0,
            "ReferenceAnalysis": "规格一致，产地差异可忽略，判定为同品。" if same else "规格不同，判定为不同品。",
        },
    }


_RELEVANCE = ["2（强相关）", "1（弱相关）", "0（不相关）"]


def _guide_relevance(rng: random.Random, n: int) -> dict:
    good, _ = rng.choice(_GOODS)
    level = rng.randrange(3)
    doc = [
        f"关于{good}常见故障的排查步骤：先检查电量和连接，再恢复出厂设置。",
        f"{good}的发展历史可以追溯到上世纪，早期产品功能单一。",
        "本店周末举行会员积分活动，积分可兑换礼品。",
    ][level]
    return {
        "Instruction": "判定检索内容与用户提问的相关性",
        "Guidelines": [
            {"type": "强相关", "rule_id": "rule_3", "rule_text": "检索内容直接回答问题核心，判定为强相关"},
            {"type": "弱相关", "rule_id": "rule_9", "rule_text": "检索内容只提供背景知识，判定为弱相关"},
            {"type": "不相关", "rule_id": "rule_27", "rule_text": "检索内容与提问主题无关，判定为不相关"},
        ],
        "Context": f"【query】我上个月买的{good}用了第 {n + 2} 天就出问题了，怎么办？【doc】{doc}",
        "Groundtruth": {
            "ReferenceAnswer": _RELEVANCE[level],
            "ReferenceAnalysis": "根据检索内容是否回答问题核心判断。",
        },
    }


def _guide_prediction(rng: random.Random, category: str, task: dict, accuracy: float, unanswered: float) -> dict:
    out = dict(task)
    truth = task["Groundtruth"]
    roll = rng.random()
    if roll < unanswered / 2:
        return out  # no LLMAnswer at all: the model's output was lost
    if roll < unanswered:
        out["cleaned_response"] = rng.choice(["抱歉，我无法判断。", '{"OptimalOption": ', "I think the answer is"])
        out["LLMAnswer"] = {}
        return out
    correct = rng.random() < accuracy
    if "OptimalOption" in truth:
        letter = truth["OptimalOption"] if correct else rng.choice([c for c in "ABCD" if c != truth["OptimalOption"]])
        out["LLMAnswer"] = {"OptimalOption": letter, "AnswerAnalysis": f"选项 {letter} 最符合规则要求。"}
        return out
    reference = truth["ReferenceAnswer"]
    if correct:
        value = reference
    elif category == "price":
        value = 1 - reference
    elif category == "relevance":
        value = rng.choice([r for r in _RELEVANCE if r != reference])
    else:
        value = str(round(float(reference) + rng.choice([-10, -5, 5, 10, 2.5]), 2)).removesuffix(".0")
    out["LLMAnswer"] = {"CandidateAnswer": value, "CandidateAnalysis": "根据规则逐条比对后得出结论。"}
    return out
