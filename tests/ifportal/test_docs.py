"""Comments and docs speak of the code as it is: a mention of a doc's section names a section that exists,
and nothing points at the issue or the work session a change came from (git keeps that history)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what is read: the project's code, templates, scripts and docs (not the virtualenv, data or git)
SCANNED_DIRS = ("runs", "audits", "ifportal", "templates", "static/js", "tests", "docs", ".ci")
SCANNED_FILES = ("Makefile", "README.md", "gunicorn.conf.py", "pyproject.toml", "manage.py")
SUFFIXES = {".py", ".md", ".html", ".js", ".txt", ".toml", ".sh", ""}
#: a mention of a section: `docs/performance.md, "The web process"` (the quoted title may run over lines of a
#: comment or docstring)
MENTION = re.compile(r'\b((?:docs/)?[\w-]+\.md),?\s+"([^"]+)"')
#: history where the code should be: "issue 17", "session 9", "sessions 8 and 9"
HISTORY = re.compile(r"\b(?:[Ii]ssues?|[Ss]essions?) \d+")


def _scanned() -> list[Path]:
    files = [ROOT / name for name in SCANNED_FILES if (ROOT / name).exists()]
    for folder in SCANNED_DIRS:
        files += [
            p
            for p in sorted((ROOT / folder).rglob("*"))
            if p.is_file()
            and p.suffix in SUFFIXES
            and "__pycache__" not in p.parts
            and p.resolve() != Path(__file__).resolve()
        ]
    return files


def _headings(doc: Path) -> set[str]:
    """The doc's section titles, without an anchor attribute (`{#usage}`)."""
    return {
        re.sub(r"\s*\{#[\w-]+\}$", "", line.lstrip("#").strip())
        for line in doc.read_text().splitlines()
        if re.match(r"#{1,6} ", line)
    }


def _names(title: str, headings: set[str]) -> bool:
    """Whether a mention names a section: its whole title, or the title before its parenthesis or subtitle
    ("Inspect AI logs" for "Inspect AI logs (`inspect`)")."""
    return any(h == title or h.startswith((f"{title} (", f"{title}: ")) for h in headings)


def _title(quoted: str) -> str:
    """The quoted title with a comment's line breaks and markers (`#`, `#:`) taken out."""
    return " ".join(re.sub(r"^\s*#:?\s?", "", line).strip() for line in quoted.splitlines()).strip()


def test_every_mention_of_a_docs_section_names_a_section_of_it():
    stale = []
    for path in _scanned():
        for match in MENTION.finditer(path.read_text(errors="replace")):
            name, title = match.group(1), _title(match.group(2))
            doc = ROOT / name if (ROOT / name).exists() else ROOT / "docs" / name
            if doc.exists() and not _names(title, _headings(doc)):
                line = path.read_text(errors="replace").count("\n", 0, match.start()) + 1
                stale.append(f'{path.relative_to(ROOT)}:{line}: {name} has no section "{title}"')
    assert stale == []


def test_no_comment_or_doc_names_the_issue_or_session_it_came_from():
    found = []
    for path in _scanned():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert found == []


def test_the_checks_find_a_stale_mention_and_a_history_note(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\n## Caching {#cache}\n\n## Session 8: what was tried\n")
    assert _headings(doc) == {"Guide", "Caching", "Session 8: what was tried"}
    mention = '# see guide.md, "The old\n    # way" and guide.md, "Caching"'
    assert [(m.group(1), _title(m.group(2))) for m in MENTION.finditer(mention)] == [
        ("guide.md", "The old way"),
        ("guide.md", "Caching"),
    ]
    assert _names("Caching", _headings(doc)) and _names("Session 8", _headings(doc))
    assert not _names("The old way", _headings(doc)) and not _names("Cach", _headings(doc))
    assert HISTORY.search("measured in session 13") and HISTORY.search("(issue 17, item 2)")
    assert not HISTORY.search("a signed-in session 's cookie") and not HISTORY.search("issues a token")
