"""EvolIF deterministic checkers: each family on passing and failing responses."""

import json

import pytest

from runs.checkers.evolif import CHECKERS, LLM_JUDGED, check_constraint, count_bullets, count_sentences


def ok(cid, args, response):
    return check_constraint(cid, args, response).passed


# start with ------------------------------------------------------------------------------
def test_it_checks_start_with_a_letter_ignoring_case_and_leading_punctuation():
    args = {"mode": "letter", "value": "z"}
    assert ok("startwith", args, "Zebras run fast.")
    assert ok("startwith", args, '\n  "zany ideas first"')
    assert not ok("startwith", args, "Apples. zebras later")


def test_it_checks_start_with_an_emoji_and_a_keyword():
    assert ok("startwith", {"mode": "emoji", "value": "😴"}, "😴 Sleepy answer")
    assert not ok("startwith", {"mode": "emoji", "value": "😴"}, "Sleepy 😴")
    kw = {"mode": "keyword", "value": "financial planning"}
    assert ok("startwith", kw, "**Financial Planning** matters because")
    assert not ok("startwith", kw, "Good financial planning matters")


def test_it_checks_start_with_a_full_width_quotation():
    args = {"mode": "quotation", "left": "（", "right": "）"}
    assert ok("startwith", args, "（a note） and then the rest")
    assert not ok("startwith", args, "(a note) with ASCII brackets")
    assert not ok("startwith", args, "（never closed")


# end with --------------------------------------------------------------------------------
def test_it_checks_end_with_an_emoji_ignoring_trailing_punctuation():
    args = {"mode": "emoji", "value": "😚"}
    assert ok("endwith", args, "That's all 😚!\n")
    assert not ok("endwith", args, "😚 That's all")


def test_it_checks_end_with_curly_quotation_marks():
    args = {"mode": "quotation", "left": "“", "right": "”"}
    assert ok("endwith", args, "As they say, “done is better than perfect”")
    assert not ok("endwith", args, 'As they say, "done is better than perfect"')
    assert not ok("endwith", args, "no opening mark here”")


def test_it_checks_end_with_a_letter_and_a_keyword():
    assert ok("endwith", {"mode": "letter", "value": "K"}, "The final word is work.")
    assert not ok("endwith", {"mode": "letter", "value": "k"}, "The final word is words.")
    assert ok("endwith", {"mode": "keyword", "value": "risk factors"}, "... and other Risk Factors.")
    assert not ok("endwith", {"mode": "keyword", "value": "risk factors"}, "risk factors are many")


# format ----------------------------------------------------------------------------------
def test_it_accepts_json_inside_a_markdown_code_fence():
    payload = json.dumps({"a": [1, 2]})
    assert ok("format", {"mode": "json"}, f"```json\n{payload}\n```")
    assert ok("format", {"mode": "json"}, payload)
    assert not ok("format", {"mode": "json"}, 'Here you go:\n```json\n{"a": 1}\n```')
    assert not ok("format", {"mode": "json"}, "{'a': 1}")


def test_it_checks_csv_for_consistent_columns_even_in_a_fence():
    good = 'name,score\n"Smith, J",3\nLee,4\n'
    assert ok("format", {"mode": "csv"}, good)
    assert ok("format", {"mode": "csv"}, f"```csv\n{good}```")
    assert not ok("format", {"mode": "csv"}, "name,score\nSmith,3,extra\n")
    assert not ok("format", {"mode": "csv"}, "\n")


def test_it_checks_xml_well_formedness_and_refuses_entities():
    assert ok("format", {"mode": "xml"}, "```xml\n<root><a>1</a></root>\n```")
    assert not ok("format", {"mode": "xml"}, "<root><a>1</root>")
    bomb = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>'
    result = check_constraint("format", {"mode": "xml"}, bomb)
    assert not result.passed and "entity" in result.reason


def test_it_checks_html_nesting():
    assert ok("format", {"mode": "html"}, "<div><p>Hi<br></p><img src=x /></div>")
    assert not ok("format", {"mode": "html"}, "<div><p>Hi</div></p>")
    assert not ok("format", {"mode": "html"}, "plain text, no tags")


def test_it_checks_markdown_fences():
    assert ok("format", {"mode": "markdown"}, "# Title\n\n```python\nx = 1\n```\n")
    assert not ok("format", {"mode": "markdown"}, "# Title\n\n```python\nx = 1\n")


# case ------------------------------------------------------------------------------------
def test_it_checks_all_lowercase_and_rejects_mixed_case():
    assert ok("case", {"mode": "all_lower"}, "all lower: école, straße and 123")
    assert not ok("case", {"mode": "all_lower"}, "almost all lower But one")
    assert ok("case", {"mode": "all_upper"}, "SHOUTING 123!")
    assert not ok("case", {"mode": "all_upper"}, "SHOUTING mostly")


def test_it_checks_the_uppercase_share_at_the_tolerance_boundary():
    # 3 upper of 20 letters = 15%; target 12 is exactly 3 points away
    text = "ABC" + "d" * 17
    assert ok("case", {"mode": "min_upper", "min": 12}, text)
    assert not ok("case", {"mode": "min_upper", "min": 11}, text)


# punctuation -----------------------------------------------------------------------------
def test_it_tells_full_width_punctuation_from_ascii():
    assert ok("punctuation", {"mode": "must_include", "value": "￥"}, "Price: ￥100")
    assert not ok("punctuation", {"mode": "must_include", "value": "￥"}, "Price: ¥100")
    assert ok("punctuation", {"mode": "must_not_include", "value": ","}, "No commas，only full-width ones")
    assert not ok("punctuation", {"mode": "must_not_include", "value": ","}, "One, comma")
    assert ok("punctuation", {"mode": "must_include", "value": "`"}, "use `code`")


# countable items -------------------------------------------------------------------------
def test_it_counts_bullets_at_the_exact_number():
    four = "Intro\n* one\n* two\n  - three\n- four\n**bold line**\n"
    assert count_bullets(four) == 4
    assert ok("countableItems", {"num": 4}, four)
    assert not ok("countableItems", {"num": 3}, four)
    assert not ok("countableItems", {"num": 5}, four)


# length ----------------------------------------------------------------------------------
def test_it_checks_word_counts_at_the_boundary():
    text = " ".join(["word"] * 800)
    assert ok("length", {"mode": "word", "relation": "exactly", "number": 800}, text)
    assert not ok("length", {"mode": "word", "relation": "more_than", "number": 800}, text)
    assert ok("length", {"mode": "word", "relation": "more_than", "number": 799}, text)
    assert not ok("length", {"mode": "word", "relation": "less_than", "number": 800}, text)


def test_it_checks_characters_paragraphs_and_sentences():
    assert ok("length", {"mode": "characters", "relation": "more_than", "number": 9}, "x" * 10)
    assert not ok("length", {"mode": "characters", "relation": "more_than", "number": 10}, "x" * 10)
    paras = "one\n\ntwo\n \nthree\n\n\nfour\n\nfive\n\nsix"
    assert ok("length", {"mode": "paragraph", "relation": "more_than", "number": 5}, paras)
    assert not ok("length", {"mode": "paragraph", "relation": "more_than", "number": 6}, paras)
    four = "Dr. Smith arrived. It rained! Was it e.g. cold? Yes."
    assert count_sentences(four) == 4
    assert ok("length", {"mode": "sentence", "relation": "less_than", "number": 5}, four)
    assert not ok("length", {"mode": "sentence", "relation": "less_than", "number": 4}, four)


# keywords --------------------------------------------------------------------------------
def test_it_requires_exact_keyword_counts():
    args = {"cognitive development": 2, "risk": 1}
    text = "Cognitive development and COGNITIVE DEVELOPMENT; one risk, not risky."
    assert ok("existence", args, text)
    assert not ok("existence", args, text + " Another risk.")
    assert not ok("existence", {"risk": 2}, text)


def test_it_forbids_keywords_case_insensitively_on_word_boundaries():
    args = ["manager", "mental health"]
    assert ok("forbidden", args, "Management and managers are fine.")
    assert not ok("forbidden", args, "Ask your Manager.")
    assert not ok("forbidden", args, "Mental Healthcare counts as a substring.")
    assert ok("forbidden", {"keywords": ["design"]}, "no such word")


# dispatch --------------------------------------------------------------------------------
def test_it_leaves_llm_judged_and_unknown_families_to_the_log():
    for cid in LLM_JUDGED:
        assert check_constraint(cid, {}, "text") is None
    assert check_constraint("language", {}, "text") is None
    assert len(CHECKERS) == 9 and not (set(CHECKERS) & LLM_JUDGED)


@pytest.mark.parametrize("cid", sorted(CHECKERS))
def test_it_never_raises_on_malformed_args(cid):
    result = check_constraint(cid, {"mode": 7, "value": None, "num": "x", "number": None}, "text")
    assert result is not None and isinstance(result.passed, bool)


def test_it_fails_a_missing_response():
    assert not ok("format", {"mode": "json"}, None)
