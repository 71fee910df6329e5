"""Checkers for the 41 coding-style instructions of ManyIH (paper Table 5), on source text only.

Model code is parsed with `ast` and `tokenize`; it is never imported or executed. Each
checker takes a `Code` (parsed once) and returns a `StyleVerdict`. Where the paper's
one-line description leaves a choice open, the docstring of the checker says what we do.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)


def extract_code(response: str) -> str:
    """The Python code in a model response: the first ```python block, else the longest fenced
    block, else the whole text."""
    blocks = _FENCE.findall(response or "")
    for lang, body in blocks:
        if lang.lower() in ("python", "py", "python3"):
            return body
    if blocks:
        return max((body for _, body in blocks), key=len)
    return response or ""


@dataclass(frozen=True)
class StyleVerdict:
    """Whether the code follows one style instruction, and why not."""

    passed: bool
    reason: str = ""


PASS = StyleVerdict(True)


def _fail(reason: str) -> StyleVerdict:
    return StyleVerdict(False, reason)


@dataclass
class Code:
    """A piece of source text with its syntax tree and tokens, computed on demand."""

    text: str
    _errors: list[str] = field(default_factory=list)

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def tree(self) -> ast.Module | None:
        try:
            return ast.parse(self.text)
        except (SyntaxError, ValueError) as exc:
            self._errors.append(f"the code does not parse: {exc}")
            return None

    @cached_property
    def tokens(self) -> list[tokenize.TokenInfo] | None:
        try:
            return list(tokenize.generate_tokens(io.StringIO(self.text).readline))
        except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
            self._errors.append(f"the code cannot be tokenised: {exc}")
            return None

    @cached_property
    def functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        if self.tree is None:
            return []
        return [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    @cached_property
    def outer_functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions not nested inside another function (methods count as outer)."""
        out = []

        def visit(node: ast.AST, inside: bool) -> None:
            for child in ast.iter_child_nodes(node):
                is_fn = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                if is_fn and not inside:
                    out.append(child)
                visit(child, inside or is_fn)

        if self.tree is not None:
            visit(self.tree, False)
        return out

    @cached_property
    def docstring_nodes(self) -> list[ast.Constant]:
        """The string constants that are docstrings (module, class, function)."""
        if self.tree is None:
            return []
        nodes = []
        for node in [self.tree, *ast.walk(self.tree)]:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                body = getattr(node, "body", [])
                if (
                    body
                    and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)
                ):
                    nodes.append(body[0].value)
        return list({id(n): n for n in nodes}.values())

    @cached_property
    def docstring_lines(self) -> set[int]:
        return {n.lineno for n in self.docstring_nodes}

    @cached_property
    def string_line_spans(self) -> set[int]:
        """Lines inside multi-line string tokens (their blank lines are not code blank lines)."""
        spans: set[int] = set()
        for tok in self.tokens or []:
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                spans.update(range(tok.start[0] + 1, tok.end[0] + 1))
        return spans

    @cached_property
    def variable_names(self) -> list[tuple[str, int]]:
        """Names a program binds as variables or function arguments (not self/cls/_ or dunders)."""
        if self.tree is None:
            return []
        names = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append((node.id, node.lineno))
            elif isinstance(node, ast.arg):
                names.append((node.arg, node.lineno))
        return [
            (n, line)
            for n, line in names
            if n not in ("self", "cls", "_") and not (n.startswith("__") and n.endswith("__"))
        ]

    def unparsable(self) -> StyleVerdict | None:
        if self.tree is None:
            return _fail(self._errors[-1] if self._errors else "the code does not parse")
        return None


# indentation ---------------------------------------------------------------------------
def _indent_steps(code: Code) -> Iterator[tuple[int, str, str]]:
    """(line, previous indentation, new indentation) for every block that opens."""
    stack = [""]
    for tok in code.tokens or []:
        if tok.type == tokenize.INDENT:
            yield tok.start[0], stack[-1], tok.string
            stack.append(tok.string)
        elif tok.type == tokenize.DEDENT and len(stack) > 1:
            stack.pop()


def _indent_spaces(code: Code, width: int | None) -> StyleVerdict:
    if code.tokens is None:
        return code.unparsable() or _fail("the code cannot be tokenised")
    for line, before, after in _indent_steps(code):
        if "\t" in after:
            return _fail(f"line {line} is indented with a tab")
        if width is not None and len(after) - len(before) != width:
            return _fail(f"line {line} indents by {len(after) - len(before)} spaces, not {width}")
    return PASS


def indent_tab(code: Code) -> StyleVerdict:
    """Every block is indented with tabs only."""
    if code.tokens is None:
        return code.unparsable() or _fail("the code cannot be tokenised")
    for line, _, after in _indent_steps(code):
        if set(after) - {"\t"}:
            return _fail(f"line {line} is indented with spaces")
    return PASS


# docstrings ------------------------------------------------------------------------------
def _function_docstrings(code: Code) -> list[tuple[ast.AST, str | None]]:
    return [(fn, ast.get_docstring(fn, clean=False)) for fn in code.functions]


def doc_none(code: Code) -> StyleVerdict:
    """No function has a docstring."""
    if bad := code.unparsable():
        return bad
    for fn, doc in _function_docstrings(code):
        if doc is not None:
            return _fail(f"function '{fn.name}' has a docstring")
    return PASS


def doc_oneline(code: Code) -> StyleVerdict:
    """Docstrings that exist fit on one line (functions without one are not held against it)."""
    if bad := code.unparsable():
        return bad
    for fn, doc in _function_docstrings(code):
        if doc is not None and "\n" in doc.strip():
            return _fail(f"function '{fn.name}' has a multi-line docstring")
    return PASS


def doc_required(code: Code) -> StyleVerdict:
    """Every function has a docstring."""
    if bad := code.unparsable():
        return bad
    if not code.functions:
        return _fail("there is no function to document")
    for fn, doc in _function_docstrings(code):
        if doc is None:
            return _fail(f"function '{fn.name}' has no docstring")
    return PASS


# blank lines inside functions --------------------------------------------------------------
def _blank_lines_in(code: Code, fn: ast.AST) -> int:
    first = fn.body[0].lineno
    if (
        code.docstring_nodes
        and fn.body
        and isinstance(fn.body[0], ast.Expr)
        and fn.body[0].value in code.docstring_nodes
    ):
        first = fn.body[0].end_lineno or first
    last = fn.end_lineno or first
    skip = code.string_line_spans
    return sum(
        1 for n in range(first, last + 1) if n not in skip and n - 1 < len(code.lines) and not code.lines[n - 1].strip()
    )


def _blank_lines(code: Code, ok: Callable[[int], bool], want: str) -> StyleVerdict:
    if bad := code.unparsable():
        return bad
    if not code.outer_functions:
        return _fail("there is no function body to check")
    for fn in code.outer_functions:
        n = _blank_lines_in(code, fn)
        if not ok(n):
            return _fail(f"function '{fn.name}' has {n} blank line(s) inside; wanted {want}")
    return PASS


# license -------------------------------------------------------------------------------------
_APACHE = re.compile(r"apache\s+license.{0,40}2\.0|apache[- ]2\.0|licensed under the apache", re.I | re.S)
_MIT = re.compile(r"\bmit\s+license\b|permission is hereby granted, free of charge", re.I)
_ANY_LICENSE = re.compile(r"\blicen[cs]e[ds]?\b|spdx-license-identifier|\bcopyright\b|\(c\)\s*\d{4}", re.I)


def license_apache(code: Code) -> StyleVerdict:
    """The file carries an Apache 2.0 notice."""
    return PASS if _APACHE.search(code.text) else _fail("no Apache 2.0 License notice")


def license_mit(code: Code) -> StyleVerdict:
    """The file carries an MIT notice."""
    return PASS if _MIT.search(code.text) else _fail("no MIT License notice")


def license_none(code: Code) -> StyleVerdict:
    """No licence or copyright notice anywhere in the file."""
    match = _ANY_LICENSE.search(code.text)
    return _fail(f"a license notice appears: {match.group(0)!r}") if match else PASS


# line length -----------------------------------------------------------------------------------
def _max_line(limit: int | None) -> Callable[[Code], StyleVerdict]:
    def check(code: Code) -> StyleVerdict:
        if limit is None:
            return PASS
        for n, line in enumerate(code.lines, 1):
            if len(line) > limit:
                return _fail(f"line {n} has {len(line)} characters (limit {limit})")
        return PASS

    check.__doc__ = f"No line is longer than {limit} characters." if limit else "Any line length passes."
    return check


# naming ------------------------------------------------------------------------------------------
_SNAKE = re.compile(r"^_{0,2}[a-z][a-z0-9]*(_[a-z0-9]+)*_?$|^_[a-z0-9_]*$")
_CAMEL = re.compile(r"^_?[a-z][a-zA-Z0-9]*$")
_CONSONANTS = set("bcdfghjklmnpqrstvwxyz")


def _names(code: Code, ok: Callable[[str], bool], what: str) -> StyleVerdict:
    if bad := code.unparsable():
        return bad
    for name, line in code.variable_names:
        if not ok(name):
            return _fail(f"'{name}' (line {line}) is not {what}")
    return PASS


def naming_snake(code: Code) -> StyleVerdict:
    """Variables and arguments are lower_case_with_underscores."""
    return _names(code, lambda n: bool(_SNAKE.match(n)), "snake_case")


def naming_camel(code: Code) -> StyleVerdict:
    """Variables and arguments are camelCase: no underscores, lower-case first letter."""
    return _names(code, lambda n: bool(_CAMEL.match(n)), "camelCase")


def naming_consonant_start(code: Code) -> StyleVerdict:
    """Every variable name begins with a consonant letter (either case)."""
    return _names(code, lambda n: n[:1].lower() in _CONSONANTS, "started with a consonant")


def _name_length(ok: Callable[[int], bool], what: str) -> Callable[[Code], StyleVerdict]:
    def check(code: Code) -> StyleVerdict:
        return _names(code, lambda n: ok(len(n)), what)

    check.__doc__ = f"Every variable and argument name is {what}."
    return check


# operator spacing ----------------------------------------------------------------------------------
_ARITH = {"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^"}
_COMPARE = {"==", "!=", "<", ">", "<=", ">="}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", ">>=", "<<=", ":="}
_UNARY_AFTER = (
    {
        "(",
        "[",
        "{",
        ",",
        ":",
        ";",
        "=",
        "->",
        "**",
        "*",
        "@",
        "lambda",
        "return",
        "yield",
        "in",
        "not",
        "and",
        "or",
        "if",
        "else",
        "elif",
        "while",
        "is",
        "print",
        "assert",
        "del",
        "await",
    }
    | _ARITH
    | _COMPARE
    | _ASSIGN
)


@dataclass(frozen=True)
class _Op:
    op: str
    line: int
    space_before: bool | None  # None: at a line edge, not judged
    space_after: bool | None


def _binary_operators(code: Code) -> list[_Op] | None:
    """Binary, comparison and statement-assignment operators with their spacing; keyword
    arguments and defaults (`f(x=1)`) are left out, as PEP 8 wants them unspaced."""
    if code.tokens is None:
        return None
    ops = []
    significant = [
        t
        for t in code.tokens
        if t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    ]
    depth = 0
    for i, tok in enumerate(significant):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth = max(0, depth - 1)
        if tok.type != tokenize.OP or tok.string not in _ARITH | _COMPARE | _ASSIGN:
            continue
        prev = significant[i - 1] if i else None
        nxt = significant[i + 1] if i + 1 < len(significant) else None
        if tok.string == "=" and depth > 0:
            continue  # keyword argument or default value
        if tok.string == "@" and (prev is None or prev.type == tokenize.NEWLINE):
            continue  # a decorator, not matrix multiplication
        if tok.string in ("+", "-", "*", "**", "~") and (
            prev is None or prev.type in (tokenize.NEWLINE, tokenize.INDENT) or prev.string in _UNARY_AFTER
        ):
            continue  # unary sign, or *args / **kwargs
        before = None if prev is None or prev.end[0] != tok.start[0] else prev.end[1] < tok.start[1]
        after = (
            None
            if nxt is None or nxt.start[0] != tok.end[0] or nxt.type == tokenize.NEWLINE
            else nxt.start[1] > tok.end[1]
        )
        ops.append(_Op(tok.string, tok.start[0], before, after))
    return ops


def _spacing(code: Code, rule: Callable[[_Op], bool | None], what: str) -> StyleVerdict:
    ops = _binary_operators(code)
    if ops is None:
        return code.unparsable() or _fail("the code cannot be tokenised")
    for op in ops:
        want = rule(op)
        if want is None:
            continue
        sides = [s for s in (op.space_before, op.space_after) if s is not None]
        if any(s != want for s in sides):
            return _fail(f"'{op.op}' on line {op.line} {'lacks' if want else 'has'} surrounding spaces ({what})")
    return PASS


def op_space_around(code: Code) -> StyleVerdict:
    """Spaces around every binary, comparison and assignment operator."""
    return _spacing(code, lambda op: True, "spaces around all operators")


def op_space_arithmetic(code: Code) -> StyleVerdict:
    """Spaces around arithmetic and comparison operators; assignment is not judged."""
    return _spacing(
        code, lambda op: True if op.op in _ARITH | _COMPARE else None, "spaces around arithmetic and comparison"
    )


def op_space_minimal(code: Code) -> StyleVerdict:
    """Spaces around assignment only; arithmetic operators unspaced (comparisons not judged)."""
    return _spacing(
        code, lambda op: True if op.op in _ASSIGN else (False if op.op in _ARITH else None), "spaces around = only"
    )


def op_space_none(code: Code) -> StyleVerdict:
    """No spaces around any binary, comparison or assignment operator."""
    return _spacing(code, lambda op: False, "no spaces around operators")


# quotes -----------------------------------------------------------------------------------------------
_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}")


def _string_tokens(code: Code) -> list[tokenize.TokenInfo] | None:
    if code.tokens is None:
        return None
    return [t for t in code.tokens if t.type == tokenize.STRING]


def _quotes(code: Code, quote: str) -> StyleVerdict:
    strings = _string_tokens(code)
    if strings is None:
        return code.unparsable() or _fail("the code cannot be tokenised")
    docstring_starts = {(n.lineno, n.col_offset) for n in code.docstring_nodes}
    other = "'" if quote == '"' else '"'
    for tok in strings:
        if tok.start in docstring_starts:
            continue  # docstrings have their own instruction
        body = _PREFIX.sub("", tok.string)
        if body.startswith(other):
            inner = body.strip(other)
            if quote in inner:
                continue  # PEP 8: the other quote avoids a backslash
            return _fail(f"line {tok.start[0]} uses {other} quotes: {tok.string[:40]}")
    return PASS


def quotes_docstring_triple_double(code: Code) -> StyleVerdict:
    """Every docstring is written with triple double quotes."""
    if bad := code.unparsable():
        return bad
    starts = {(n.lineno, n.col_offset) for n in code.docstring_nodes}
    for tok in _string_tokens(code) or []:
        if tok.start in starts and not _PREFIX.sub("", tok.string).startswith('"""'):
            return _fail(f"the docstring on line {tok.start[0]} does not use triple double quotes")
    return PASS


# return style -----------------------------------------------------------------------------------------
def _returns(fn: ast.AST) -> Iterator[ast.Return]:
    """Return statements of `fn` itself, not of nested functions."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def return_direct(code: Code) -> StyleVerdict:
    """No `x = <expr>` immediately followed by `return x`."""
    if bad := code.unparsable():
        return bad
    for node in ast.walk(code.tree):
        body = getattr(node, "body", None)
        for block in (body, getattr(node, "orelse", None), getattr(node, "finalbody", None)):
            if not isinstance(block, list):
                continue
            for a, b in zip(block, block[1:]):
                if (
                    isinstance(b, ast.Return)
                    and isinstance(b.value, ast.Name)
                    and isinstance(a, (ast.Assign, ast.AnnAssign))
                    and any(
                        isinstance(t, ast.Name) and t.id == b.value.id
                        for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
                    )
                ):
                    return _fail(
                        f"line {b.lineno} returns '{b.value.id}', stored just before instead of returned directly"
                    )
    return PASS


def return_variable(code: Code) -> StyleVerdict:
    """Every returned value is a variable (or a constant); no computation in a return."""
    if bad := code.unparsable():
        return bad
    for fn in code.functions:
        for ret in _returns(fn):
            if ret.value is not None and not isinstance(ret.value, (ast.Name, ast.Constant)):
                return _fail(f"line {ret.lineno} returns an expression, not a variable")
    return PASS


def _ends_explicitly(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _ends_explicitly(last.body) and _ends_explicitly(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _ends_explicitly(last.body)
    if isinstance(last, ast.Try):
        return (_ends_explicitly(last.body) or _ends_explicitly(last.orelse)) and all(
            _ends_explicitly(h.body) for h in last.handlers
        )
    if isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value is True:
        return True
    return False


def return_explicit_none(code: Code) -> StyleVerdict:
    """No bare `return`, and no function falls off its end without a return."""
    if bad := code.unparsable():
        return bad
    for fn in code.functions:
        for ret in _returns(fn):
            if ret.value is None:
                return _fail(f"line {ret.lineno} has a bare return")
        if not _ends_explicitly(fn.body):
            return _fail(f"function '{fn.name}' can end without an explicit return")
    return PASS


# singleton comparisons ----------------------------------------------------------------------------------
def _is_singleton(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and (node.value is None or node.value is True or node.value is False)


def _singleton_comparisons(code: Code) -> Iterator[tuple[ast.cmpop, ast.AST, ast.AST, int]]:
    for node in ast.walk(code.tree):
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if _is_singleton(left) or _is_singleton(right):
                    yield op, left, right, node.lineno
                left = right


def singleton_eq(code: Code) -> StyleVerdict:
    """Comparisons with True, False or None use == or !=."""
    if bad := code.unparsable():
        return bad
    for op, _, _, line in _singleton_comparisons(code):
        if isinstance(op, (ast.Is, ast.IsNot)):
            return _fail(f"line {line} compares with a singleton using 'is'")
    return PASS


def singleton_is(code: Code) -> StyleVerdict:
    """No == or != against True, False or None."""
    if bad := code.unparsable():
        return bad
    for op, _, _, line in _singleton_comparisons(code):
        if isinstance(op, (ast.Eq, ast.NotEq)):
            return _fail(f"line {line} compares with a singleton using == or !=")
    return PASS


def singleton_variable_first(code: Code) -> StyleVerdict:
    """The singleton stands on the right: `x is None`."""
    if bad := code.unparsable():
        return bad
    for _, left, right, line in _singleton_comparisons(code):
        if _is_singleton(left) and not _is_singleton(right):
            return _fail(f"line {line} puts the singleton first")
    return PASS


def singleton_yoda(code: Code) -> StyleVerdict:
    """The singleton stands on the left: `None is x`."""
    if bad := code.unparsable():
        return bad
    for _, left, right, line in _singleton_comparisons(code):
        if _is_singleton(right) and not _is_singleton(left):
            return _fail(f"line {line} puts the variable first")
    return PASS


# type hints -------------------------------------------------------------------------------------------------
def _arguments(fn: ast.AST) -> list[ast.arg]:
    a = fn.args
    args = [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]
    return [x for x in args if x.arg not in ("self", "cls")]


def _hints(code: Code, *, args: bool | None, returns: bool | None, variables: bool | None = None) -> StyleVerdict:
    """args/returns/variables: True must be annotated, False must not be, None not judged."""
    if bad := code.unparsable():
        return bad
    for fn in code.functions:
        for arg in _arguments(fn):
            if args is True and arg.annotation is None:
                return _fail(f"argument '{arg.arg}' of '{fn.name}' has no type hint")
            if args is False and arg.annotation is not None:
                return _fail(f"argument '{arg.arg}' of '{fn.name}' has a type hint")
        if returns is True and fn.returns is None:
            return _fail(f"function '{fn.name}' has no return type hint")
        if returns is False and fn.returns is not None:
            return _fail(f"function '{fn.name}' has a return type hint")
    if variables is False:
        for node in ast.walk(code.tree):
            if isinstance(node, ast.AnnAssign):
                return _fail(f"line {node.lineno} annotates a variable")
    return PASS


STYLE_CHECKERS: dict[str, Callable[[Code], StyleVerdict]] = {
    "indent_2": lambda c: _indent_spaces(c, 2),
    "indent_4": lambda c: _indent_spaces(c, 4),
    "indent_spaces": lambda c: _indent_spaces(c, None),
    "indent_tab": indent_tab,
    "doc_none": doc_none,
    "doc_oneline": doc_oneline,
    "doc_required": doc_required,
    "blank_internal_none": lambda c: _blank_lines(c, lambda n: n == 0, "none"),
    "blank_internal_one": lambda c: _blank_lines(c, lambda n: n == 1, "exactly one"),
    "blank_internal_required": lambda c: _blank_lines(c, lambda n: n >= 1, "at least one"),
    "license_apache": license_apache,
    "license_mit": license_mit,
    "license_none": license_none,
    "line_79": _max_line(79),
    "line_120": _max_line(120),
    "line_unlimited": _max_line(None),
    "naming_snake": naming_snake,
    "naming_camel": naming_camel,
    "naming_consonant_start": naming_consonant_start,
    "var_single": _name_length(lambda n: n == 1, "a single letter"),
    "var_max2": _name_length(lambda n: n <= 2, "at most two characters"),
    "var_min3": _name_length(lambda n: n >= 3, "at least three characters"),
    "var_min5": _name_length(lambda n: n >= 5, "at least five characters"),
    "op_space_around": op_space_around,
    "op_space_arithmetic": op_space_arithmetic,
    "op_space_minimal": op_space_minimal,
    "op_space_none": op_space_none,
    "quotes_double": lambda c: _quotes(c, '"'),
    "quotes_single": lambda c: _quotes(c, "'"),
    "quotes_docstring_triple_double": quotes_docstring_triple_double,
    "return_direct": return_direct,
    "return_variable": return_variable,
    "return_explicit_none": return_explicit_none,
    "singleton_eq": singleton_eq,
    "singleton_is": singleton_is,
    "singleton_variable_first": singleton_variable_first,
    "singleton_yoda": singleton_yoda,
    "types_none": lambda c: _hints(c, args=False, returns=False, variables=False),
    "types_args_only": lambda c: _hints(c, args=True, returns=False),
    "types_args_required": lambda c: _hints(c, args=True, returns=None),
    "types_full": lambda c: _hints(c, args=True, returns=True),
}


def check_style(code: str | Code, style_id: str) -> StyleVerdict:
    """Whether `code` follows the style instruction `style_id`; an unknown id is an error."""
    if style_id not in STYLE_CHECKERS:
        raise KeyError(f"no checker for style {style_id!r}")
    parsed = code if isinstance(code, Code) else Code(code)
    return STYLE_CHECKERS[style_id](parsed)
