"""Each ManyIH style checker on one snippet that follows the instruction and one that breaks it."""

import json

import pytest

from runs.checkers.manyih_style import STYLE_CHECKERS, Code, check_style, extract_code

T = "\t"
CASES = {
    # style_id: (follows, breaks)
    "indent_2": ("def f(a):\n  if a:\n    return 1\n  return 2\n", "def f(a):\n    return 1\n"),
    "indent_4": ("def f(a):\n    if a:\n        return 1\n    return 2\n", "def f(a):\n  return 1\n"),
    "indent_spaces": ("def f(a):\n   return a\n", f"def f(a):\n{T}return a\n"),
    "indent_tab": (f"def f(a):\n{T}if a:\n{T}{T}return 1\n{T}return 2\n", "def f(a):\n    return a\n"),
    "doc_none": ("def f(a):\n    return a\n", 'def f(a):\n    """Doc."""\n    return a\n'),
    "doc_oneline": (
        'def f(a):\n    """One line."""\n    return a\n',
        'def f(a):\n    """First.\n\n    More.\n    """\n    return a\n',
    ),
    "doc_required": (
        'def f(a):\n    """Doc."""\n    return a\n',
        'def f(a):\n    """Doc."""\n    return a\n\ndef g(b):\n    return b\n',
    ),
    "blank_internal_none": ("def f(a):\n    b = a\n    return b\n", "def f(a):\n    b = a\n\n    return b\n"),
    "blank_internal_one": (
        "def f(a):\n    b = a\n\n    return b\n",
        "def f(a):\n    b = a\n\n    c = b\n\n    return c\n",
    ),
    "blank_internal_required": (
        "def f(a):\n    b = a\n\n    return b\n",
        'def f(a):\n    s = """x\n\ny"""\n    return s\n',
    ),
    "license_apache": ("# Licensed under the Apache License, Version 2.0\nx = 1\n", "# MIT License\nx = 1\n"),
    "license_mit": (
        "# MIT License\n# Copyright (c) 2024\nx = 1\n",
        "# Licensed under the Apache License, Version 2.0\nx = 1\n",
    ),
    "license_none": ("x = 1\n", "# SPDX-License-Identifier: MIT\nx = 1\n"),
    "line_79": ("x = 1\n", "x = '" + "a" * 80 + "'\n"),
    "line_120": ("x = '" + "a" * 100 + "'\n", "x = '" + "a" * 120 + "'\n"),
    "line_unlimited": ("x = '" + "a" * 500 + "'\n", None),
    "naming_snake": (
        "def f(my_arg):\n    my_value = my_arg\n    return my_value\n",
        "def f(myArg):\n    return myArg\n",
    ),
    "naming_camel": ("def f(myArg):\n    myValue = myArg\n    return myValue\n", "def f(my_arg):\n    return my_arg\n"),
    "naming_consonant_start": (
        "def f(total):\n    result = total\n    return result\n",
        "def f(total):\n    answer = total\n    return answer\n",
    ),
    "var_single": ("def f(a):\n    b = a\n    return b\n", "def f(ab):\n    return ab\n"),
    "var_max2": ("def f(ab):\n    c = ab\n    return c\n", "def f(abc):\n    return abc\n"),
    "var_min3": ("def f(abc):\n    total = abc\n    return total\n", "def f(ab):\n    return ab\n"),
    "var_min5": (
        "def f(value):\n    total = value\n    return total\n",
        "def f(value):\n    tot = value\n    return tot\n",
    ),
    "op_space_around": ("x = 1 + 2\ny = x == 3\nf(a=1, b=-x)\n", "x = 1+2\n"),
    "op_space_arithmetic": ("x=1 + 2\ny = x >= 3\n", "x = 1 +2\n"),
    "op_space_minimal": ("x = 1+2\ny = -x*3\n", "x = 1 + 2\n"),
    "op_space_none": ("x=1+2\ny=x==3\nz=f(*args, **kw)\n", "x = 1+2\n"),
    "quotes_double": ('x = "a"\ny = \'say "hi"\'\n', "x = 'a'\n"),
    "quotes_single": ("x = 'a'\ny = \"it's\"\n", 'x = "a"\n'),
    "quotes_docstring_triple_double": (
        'def f():\n    """Doc."""\n    return 1\n',
        "def f():\n    '''Doc.'''\n    return 1\n",
    ),
    "return_direct": ("def f(a):\n    return a + 1\n", "def f(a):\n    result = a + 1\n    return result\n"),
    "return_variable": ("def f(a):\n    result = a + 1\n    return result\n", "def f(a):\n    return a + 1\n"),
    "return_explicit_none": (
        "def f(a):\n    if a:\n        return 1\n    return None\n",
        "def f(a):\n    if a:\n        return\n    return None\n",
    ),
    "singleton_eq": ("def f(a):\n    return a == None\n", "def f(a):\n    return a is None\n"),
    "singleton_is": ("def f(a):\n    return a is None\n", "def f(a):\n    return a != None\n"),
    "singleton_variable_first": ("def f(a):\n    return a is None\n", "def f(a):\n    return None is a\n"),
    "singleton_yoda": ("def f(a):\n    return None is a\n", "def f(a):\n    return a is None\n"),
    "types_none": ("def f(a):\n    return a\n", "def f(a):\n    b: int = a\n    return b\n"),
    "types_args_only": ("def f(a: int):\n    return a\n", "def f(a: int) -> int:\n    return a\n"),
    "types_args_required": ("def f(self, a: int) -> int:\n    return a\n", "def f(a, b: int):\n    return a\n"),
    "types_full": ("def f(a: int, *rest: int) -> int:\n    return a\n", "def f(a: int):\n    return a\n"),
}


def test_it_has_a_checker_for_each_of_the_41_styles():
    assert len(STYLE_CHECKERS) == 41
    assert set(CASES) == set(STYLE_CHECKERS)


@pytest.mark.parametrize("style_id", sorted(CASES))
def test_it_passes_code_that_follows_the_style(style_id):
    follows, _ = CASES[style_id]
    verdict = check_style(follows, style_id)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize("style_id", sorted(s for s, (_, breaks) in CASES.items() if breaks is not None))
def test_it_fails_code_that_breaks_the_style_and_says_why(style_id):
    _, breaks = CASES[style_id]
    verdict = check_style(breaks, style_id)
    assert not verdict.passed
    assert verdict.reason


def test_it_fails_ast_checks_on_code_that_does_not_parse_instead_of_raising():
    verdict = check_style("def f(:\n  return", "types_full")
    assert not verdict.passed
    assert "parse" in verdict.reason


def test_it_rejects_an_unknown_style_id():
    with pytest.raises(KeyError):
        check_style("x = 1", "no_such_style")


def test_it_takes_the_python_block_out_of_a_markdown_response():
    response = "Here you go:\n```text\nnot code\n```\n```python\ndef f(a):\n    return a\n```\nDone."
    assert extract_code(response) == "def f(a):\n    return a\n"
    assert extract_code("x = 1") == "x = 1"


def test_it_parses_code_once_for_many_checks():
    code = Code("def f(a):\n    return a\n")
    assert check_style(code, "indent_4").passed and check_style(code, "types_none").passed
    assert code.tree is code.tree


def test_it_never_executes_model_code(tmp_path):
    marker = tmp_path / "ran"
    hostile = f"open({str(marker)!r}, 'w').write('x')\nimport os\nos.system('touch {marker}')\n"
    for style_id in STYLE_CHECKERS:
        check_style(hostile, style_id)
    assert not marker.exists()


def test_reference_solutions_are_judged_without_errors(shared_data):
    samples = json.loads((shared_data / "manyih" / "coding.json").read_text())["data"]
    for sample in samples:
        code = Code(sample["reference_code"])
        for instruction in sample["instructions"]:
            verdict = check_style(code, instruction["style_id"])
            assert isinstance(verdict.passed, bool)


RICH = '''# Copyright notice omitted on purpose
import functools


def logged(func):
    """Wrap a function."""
    @functools.wraps(func)
    def inner(*args, **kwargs):
        """Call it."""
        result = func(*args, **kwargs)  # keep the value
        return result
    return inner


@logged
def greet(name: str) -> str:
    """Say hello."""
    message = f"hello {name!r}, {len(name) + 1} letters"
    return message
'''


@pytest.mark.parametrize(
    "style_id, passed",
    [
        ("indent_4", True),
        ("indent_2", False),
        ("doc_required", True),
        ("doc_none", False),
        ("doc_oneline", True),
        ("quotes_double", True),
        ("quotes_single", False),
        ("quotes_docstring_triple_double", True),
        ("naming_snake", True),
        ("naming_camel", True),
        ("var_min3", True),
        ("var_min5", False),
        ("blank_internal_none", True),
        ("blank_internal_required", False),
        ("line_79", True),
        ("types_full", False),
        ("types_none", False),
        ("return_variable", True),
        ("return_direct", False),
        ("op_space_around", True),
        ("op_space_none", False),
        ("singleton_is", True),
        ("license_none", False),
    ],
)
def test_it_judges_code_with_comments_decorators_nested_functions_docstrings_and_fstrings(style_id, passed):
    verdict = check_style(RICH, style_id)
    assert verdict.passed is passed, verdict.reason


def test_a_comment_or_docstring_mentioning_an_operator_is_not_code():
    code = 'def f(a):\n    """Return a+b, i.e. x==y."""\n    # a+b here too\n    return a + 1\n'
    assert check_style(code, "op_space_around").passed
    assert check_style('x = f"{a+b}"\n', "op_space_around").passed  # inside an f-string: text on 3.11
