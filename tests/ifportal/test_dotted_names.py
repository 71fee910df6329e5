"""Every dotted name a doc or a comment points a reader at (`runs.search._walk_chunk`) exists: a name left behind
by a rename sends the next reader looking for code that is gone. Code itself is checked by running it; this
reads the prose: docs/*.md, README.md, and the comments and docstrings of runs/, audits/, ifportal/ and tests/
(migrations are history and keep the names of their day)."""

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"(?<![\w./-])((?:runs|audits|ifportal)(?:\.[A-Za-z_]\w*)+)")
#: words that look like dotted names and are not: with the reason
NOT_NAMES = {"ifportal.example.org": "a host name in a deployment example"}


def _prose(path: Path):
    """(line number, text) of a doc's lines, or of a module's comments and docstrings."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            doc = ast.get_docstring(node, clean=False)
            for offset, line in enumerate((doc or "").splitlines()):
                yield node.body[0].lineno + offset, line


def _exists(dotted: str) -> bool:
    """The longest importable prefix is a module, and the rest are attributes of it, one inside the other."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _files():
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield ROOT / "README.md"
    for app in ("runs", "audits", "ifportal", "tests"):
        yield from sorted(p for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts)


def _stale(files) -> dict[str, list[str]]:
    stale: dict[str, list[str]] = {}
    for path in files:
        for number, line in _prose(path):
            for match in NAME.finditer(line):
                name = match.group(1).rstrip(".")
                if name not in NOT_NAMES and not _exists(name):
                    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                    stale.setdefault(name, []).append(f"{shown}:{number}")
    return stale


def test_every_dotted_name_in_a_doc_or_a_comment_exists():
    assert _stale(_files()) == {}


def test_it_finds_a_name_that_is_gone_in_a_comment_a_docstring_and_a_doc(tmp_path):
    module = tmp_path / "example.py"
    module.write_text(
        '"""Built by runs.services.rollups_rebuild_for_attempts."""\n'
        "x = 1  # read by runs.search._prefix_ids\n"
        "runs = []\nruns.append(1)  # code, not prose\n"
    )
    doc = tmp_path / "example.md"
    doc.write_text("See `runs.pages.csv_safe` and runs.sharing.csv_safe.\n")
    assert _stale([module, doc]) == {
        "runs.search._prefix_ids": ["example.py:2"],
        "runs.sharing.csv_safe": ["example.md:1"],
    }
