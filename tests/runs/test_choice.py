"""runs.scoring.choice: the GuideBench reference comparison and its metrics, checked against scikit-learn."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from runs.metrics.choice import ChoiceRow, category_metrics, run_metrics
from runs.scoring.choice import (
    choice_answer_normalised,
    choice_answer_scored,
    choice_kind,
    choice_task_scored,
)

MISSING = object()


def _task(category, truth_key, truth, answer):
    """A predicted task: `answer` is the LLMAnswer, or MISSING for a task without one."""
    task = {"Groundtruth": {truth_key: truth}}
    if answer is not MISSING:
        task["LLMAnswer"] = answer
    return task


# the exact comparison ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("category", "llm_answer", "truth", "answer", "correct", "reason"),
    [
        ("chat", {"OptimalOption": "A"}, "A", "A", True, ""),
        ("chat", {"OptimalOption": "a"}, "A", "a", False, ""),
        ("summary", {"OptimalOption": "A."}, "A", "A.", False, ""),
        ("hallu", {}, "A", "E", False, "unparsable"),
        ("hallu", MISSING, "A", "E", False, "missing"),
        ("chat", {"OptimalOption": None}, "B", "E", False, "missing"),
        ("chat", {"OptimalOption": 2}, "B", "E", False, "unparsable"),
        ("chat", {"OptimalOption": ""}, "B", "", False, "empty"),
        ("chat", "B", "B", "E", False, "unparsable"),
        ("price", {"CandidateAnswer": 1}, 1, 1, True, ""),
        ("price", {"CandidateAnswer": 1.0}, 1, 1.0, True, ""),
        ("price", {"CandidateAnswer": "1"}, 1, "1", False, ""),
        ("price", {"CandidateAnswer": ""}, 0, -1, False, "empty"),
        ("price", {"CandidateAnalysis": "x"}, 0, -1, False, "missing"),
        ("math", {"CandidateAnswer": "170"}, "170", "170", True, ""),
        ("math", {"CandidateAnswer": "170.0"}, "170", "170.0", False, ""),
        ("math", {"CandidateAnswer": 170}, "170", 170, False, ""),
        ("math", {"CandidateAnswer": ""}, "170", "", False, "empty"),
        ("math", MISSING, "0", "0", True, "missing"),
        ("relevance", {"CandidateAnswer": "2（强相关）"}, "2（强相关）", "2（强相关）", True, ""),
        ("relevance", {"CandidateAnswer": "2"}, "2（强相关）", "2", False, ""),
        ("relevance", {"CandidateAnswer": None}, "1（弱相关）", "-1(No Result)", False, "missing"),
        ("relevance", {"CandidateAnswer": ""}, "1（弱相关）", "", False, "empty"),
        ("relevance", {"CandidateAnswer": ["2"]}, "2（强相关）", ["2"], False, "unparsable"),
    ],
)
def test_it_compares_as_the_reference_scorer(category, llm_answer, truth, answer, correct, reason):
    key = "OptimalOption" if category in ("chat", "summary", "hallu") else "ReferenceAnswer"

    scored = choice_task_scored(category, _task(category, key, truth, llm_answer))

    assert scored.answer == answer and type(scored.answer) is type(answer)
    assert (scored.correct, scored.reason, scored.unanswered) == (correct, reason, bool(reason))


def test_it_counts_a_missing_ground_truth_option_as_e_like_the_reference():
    scored = choice_answer_scored("chat", {"OptimalOption": "E"}, {"AnswerAnalysis": "none"})

    assert (scored.ground_truth, scored.correct) == ("E", True)


def test_it_decides_the_kind_of_an_unknown_category_by_its_ground_truth():
    assert choice_kind("audit", {"OptimalOption": "A"}) == "option"
    assert choice_kind("audit", {"ReferenceAnswer": 1}) == "answer"
    assert choice_kind("Chat", {"ReferenceAnswer": 1}) == "option"
    assert choice_answer_scored("audit", {"CandidateAnswer": ""}, {"ReferenceAnswer": 1}).answer == -1


# the lenient comparison ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("category", "candidate", "truth", "correct"),
    [
        ("relevance", "2", "2（强相关）", True),
        ("relevance", "2(强相关)", "2（强相关）", True),
        ("relevance", "1（弱相关）", "2（强相关）", False),
        ("math", "170.0", "170", True),
        ("math", 170, "170", True),
        ("math", "170元", "170", True),
        ("math", "497.50", "497.5", True),
        ("math", "１７０", "170", True),
        ("price", "1", 1, True),
        ("price", True, 1, True),
        ("price", "", 0, False),
        ("price", None, 0, False),
        ("chat", "B.", "B", True),
        ("chat", "b", "B", True),
        ("chat", "选项B", "B", True),
        ("chat", "(C)", "B", False),
        ("chat", None, "B", False),
    ],
)
def test_it_offers_a_separate_lenient_comparison(category, candidate, truth, correct):
    key, truth_key = (("OptimalOption",) * 2) if category == "chat" else ("CandidateAnswer", "ReferenceAnswer")

    lenient = choice_answer_normalised(category, {key: candidate}, {truth_key: truth})
    exact = choice_answer_scored(category, {key: candidate}, {truth_key: truth})

    assert lenient.correct is correct
    if candidate != truth:
        assert exact.correct is False or candidate is True


# metrics against scikit-learn ----------------------------------------------------------
def _rows(category, tasks):
    """The portal's rows for scored tasks (what runs.metrics.choice reads from the database)."""
    return [
        ChoiceRow("run", "model", category, i, f"t{i}", s.ground_truth, s.answer, s.unanswered)
        for i, s in enumerate(choice_task_scored(category, t) for t in tasks)
    ]


def _assert_like_sklearn(category, tasks):
    """The pages' metrics (runs.metrics.choice) on the reference scorer's comparison equal scikit-learn's."""
    scored = [choice_task_scored(category, t) for t in tasks]
    y_true = [s.ground_truth for s in scored]
    y_pred = [s.answer for s in scored]

    metrics = category_metrics(_rows(category, tasks))

    p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, average="macro", zero_division=0)
    assert metrics.accuracy == pytest.approx(100 * accuracy_score(y_true, y_pred))
    assert (metrics.precision, metrics.recall, metrics.f1) == (
        pytest.approx(100 * p),
        pytest.approx(100 * r),
        pytest.approx(100 * f),
    )
    assert metrics.n == len(tasks)
    return metrics


def test_it_equals_sklearn_with_missing_answers_and_labels_only_predicted():
    truths = ["A", "B", "C", "A", "D", "B"]
    answers = [
        {"OptimalOption": "A"},
        {},
        MISSING,
        {"OptimalOption": "F"},
        {"OptimalOption": ""},
        {"OptimalOption": "B"},
    ]
    tasks = [_task("chat", "OptimalOption", t, a) for t, a in zip(truths, answers)]

    metrics = _assert_like_sklearn("chat", tasks)

    assert metrics.unanswered == 3 and metrics.correct == 2
    assert metrics.accuracy == pytest.approx(100 * 2 / 6)


def test_it_equals_sklearn_on_price_where_empty_and_missing_count_as_minus_one():
    truths = [1, 0, 1, 0, 1]
    answers = [{"CandidateAnswer": 1}, {"CandidateAnswer": ""}, MISSING, {"CandidateAnswer": 2}, {"CandidateAnswer": 0}]

    metrics = _assert_like_sklearn("price", [_task("price", "ReferenceAnswer", t, a) for t, a in zip(truths, answers)])

    assert metrics.correct == 1 and metrics.unanswered == 2  # an empty and a missing answer, both scored as -1


OPTION_ANSWERS = st.one_of(
    st.just(MISSING),
    st.just({}),
    st.just(None),
    st.just("A"),
    st.fixed_dictionaries(
        {
            "OptimalOption": st.one_of(
                st.sampled_from(["A", "B", "C", "D", "E", "F", "", "a"]), st.none(), st.integers(0, 3)
            )
        }
    ),
)
PRICE_ANSWERS = st.one_of(
    st.just(MISSING),
    st.just({}),
    st.fixed_dictionaries({"CandidateAnswer": st.one_of(st.sampled_from([0, 1, 2, -1, ""]), st.none())}),
)
MATH_ANSWERS = st.one_of(
    st.just(MISSING),
    st.fixed_dictionaries({"CandidateAnswer": st.one_of(st.sampled_from(["0", "170", "170.0", "520", ""]), st.none())}),
)
RELEVANCE = ["2（强相关）", "1（弱相关）", "0（不相关）"]
RELEVANCE_ANSWERS = st.one_of(
    st.just(MISSING),
    st.fixed_dictionaries(
        {"CandidateAnswer": st.one_of(st.sampled_from([*RELEVANCE, "2", "-1(No Result)", ""]), st.none())}
    ),
)
CASES = {
    "hallu": ("OptimalOption", st.sampled_from(["A", "B", "C", "D"]), OPTION_ANSWERS),
    "price": ("ReferenceAnswer", st.sampled_from([0, 1]), PRICE_ANSWERS),
    "math": ("ReferenceAnswer", st.sampled_from(["0", "170", "520", "497.5"]), MATH_ANSWERS),
    "relevance": ("ReferenceAnswer", st.sampled_from(RELEVANCE), RELEVANCE_ANSWERS),
}


@pytest.mark.parametrize("category", list(CASES))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_it_equals_sklearn_on_any_mix_of_answers(category, data):
    key, truths, answers = CASES[category]
    pairs = data.draw(st.lists(st.tuples(truths, answers), min_size=1, max_size=30))

    _assert_like_sklearn(category, [_task(category, key, t, a) for t, a in pairs])


def test_it_weights_overall_accuracy_by_tasks_per_category():
    chat = [_task("chat", "OptimalOption", "A", {"OptimalOption": "A"})] * 3
    price = [_task("price", "ReferenceAnswer", 1, {"CandidateAnswer": 0})]
    (run,) = run_metrics([*_rows("chat", chat), *_rows("price", price)])

    assert run.accuracy == pytest.approx(100 * 3 / 4)
