"""Where a template lives says what it is (docs/adding-a-page.md, "6. The template"):

- a partial (a template another one includes, or a view renders as a fragment) has a name that starts with `_`;
  a page's name never does;
- a partial of one folder's pages (a kind, the share pages) lives beside them, in `templates/runs/<folder>/`, and
  only that folder's templates include it; one shared across folders lives in `templates/runs/partials/`;
- the audit pages have no kinds: their partials live in `templates/audits/partials/`.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
SHARED = ("runs/partials", "audits/partials")
#: a template named as a string in code: `{% include "x" %}`, `inclusion_tag("x")`, `render(request, "x")`...
NAMED = re.compile(r"""["']((?:runs|audits)/[\w/]+\.html)(?:#[\w-]+)?["']""")
INCLUDED = re.compile(r"""\{%\s*include\s+["']([^"']+)["']""")


def _templates() -> dict[str, str]:
    return {
        path.relative_to(TEMPLATES).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(TEMPLATES.rglob("*.html"))
    }


def _included() -> dict[str, set[str]]:
    """Each template a template includes by name -> the folders of the templates that include it."""
    includers: dict[str, set[str]] = {}
    for name, text in _templates().items():
        for target in INCLUDED.findall(text):
            includers.setdefault(target, set()).add(name.rsplit("/", 1)[0])
    return includers


def _is_partial(name: str) -> bool:
    return name.rsplit("/", 1)[-1].startswith("_")


def test_every_included_template_is_named_as_a_partial():
    assert sorted(name for name in _included() if not _is_partial(name)) == []


def test_every_partial_is_included_or_rendered_somewhere():
    code = "\n".join(
        [
            *(
                p.read_text(encoding="utf-8")
                for folder in ("runs", "audits", "ifportal")
                for p in (ROOT / folder).rglob("*.py")
            ),
            *_templates().values(),
        ]
    )
    assert sorted(name for name in _templates() if _is_partial(name) and name.rsplit("/", 1)[-1] not in code) == []


def test_every_template_named_in_code_exists():
    code = {
        name
        for folder in ("runs", "audits", "ifportal")
        for p in (ROOT / folder).rglob("*.py")
        for name in NAMED.findall(p.read_text(encoding="utf-8"))
    }
    assert sorted(code - set(_templates())) == []


def test_a_partial_lives_with_the_pages_that_include_it_or_among_the_shared_ones():
    misplaced = []
    for name in _templates():
        folder = name.rsplit("/", 1)[0]
        if folder in SHARED:
            if not _is_partial(name):
                misplaced.append(f"{name}: a page among the shared partials")
        elif _is_partial(name) and folder in ("runs", "audits"):
            misplaced.append(f"{name}: a partial outside a kind's folder and the shared partials")
        elif _is_partial(name) and _included().get(name, {folder}) != {folder}:
            misplaced.append(f"{name}: included from {sorted(_included()[name])}, so it belongs in {SHARED}")
    assert misplaced == []
