"""Untrusted content: a hostile corpus, ingested through every format, renders inert and escaped.

Server side every page is read for markup that escaped escaping; the same pages in Chromium
(executed payloads, injected elements, CSP violations) are in tests/browser/test_security.py.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_stores_the_hostile_corpus_through_every_format(db, tmp_path, hostile):
    from runs.models import Attempt, Trajectory, Verdict
    from runs.trajectory_view import stored_threads

    counts = hostile.ingest_all(tmp_path)

    assert counts == {"hostile": 3, "hostile-conflict": 1, "evolif": 1, "manyih-coding": 3, "guidebench": 3}
    stored = stored_threads(Trajectory.objects.get(attempt__instance__external_id="huge").attempt_id)[0]["messages"][1][
        "content"
    ]
    assert len(stored) == len(hostile.HUGE)
    reasoning = Verdict.objects.filter(attempt__run__benchmark__slug="hostile").values_list("reasoning", flat=True)
    assert set(reasoning) == {hostile.STORED}
    response = Attempt.objects.get(
        run__benchmark__slug="hostile", run__label=hostile.NAME, instance__external_id=hostile.NAME
    ).response
    assert "before\ufffdafter" in response and "broken\ufffdsurrogate" in response  # NUL, lone surrogate made storable
    assert "<script>window.__pwned=1</script>" in response  # stored as given; escaping is the pages' job


def test_it_escapes_the_hostile_corpus_on_every_page(db, tmp_path, hostile, editor, editor_client):
    problems = {}

    for name, path in hostile.pages(tmp_path, editor):
        response = editor_client.get(path)
        body = response.content.decode("utf-8")
        found = [f"status {response.status_code}"] if response.status_code != 200 else []
        found += [f"raw {marker!r}" for marker in hostile.RAW_MARKERS if marker in body]
        if "pbkdf2_sha256$" in body:
            found.append("a password hash: template syntax was evaluated")
        if "&lt;img src=x onerror=" not in body and name not in {"import", "attempt text"}:
            found.append("no escaped hostile name")
        if hostile.shows_text(name) and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" not in body:
            found.append("no escaped hostile text")
        if hostile.shows_text(name) and "attempt" not in name and "{{ request.user.password }}" not in body:
            found.append("template syntax not shown literally")
        if found:
            problems[name] = found

    assert problems == {}


def test_it_finds_no_unsafe_output_in_templates_or_code():
    """`|safe`, `{% autoescape off %}` and mark_safe/format_html on model text are never used."""
    offenders = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for pattern in (r"\|\s*safe\b", r"\{%\s*autoescape\s+off", r"\|\s*safeseq\b"):
            offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(pattern, text)]
    #: the places that mark HTML safe, and why: the repository's own docs, never data; and the escaping joiner
    trusted = {
        "runs/help_pages.py": "docs/metrics.md rendered as the help page",
        "runs/html.py": "format_html_join's contract, faster: every value escaped unless already safe",
        "runs/frozen_html.py": "a frozen page rebuilt through its allow-list: every text and attribute escaped, "
        "only local links",
    }
    for app in ("runs", "audits", "ifportal"):
        for path in sorted((ROOT / app).rglob("*.py")):
            if str(path.relative_to(ROOT)) in trusted:
                continue
            text = path.read_text()
            offenders += [
                f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(r"\bmark_safe\(|SafeString\(", text)
            ]
            # format_html escapes its arguments; building its format string from data defeats that
            offenders += [
                f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(r"format_html\(\s*f[\"']", text)
            ]

    assert offenders == []
