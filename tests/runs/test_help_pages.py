"""The metrics help page: every "How is this computed" link opens a section that exists."""

import re
from pathlib import Path

import pytest
from django.template import Context, Template, TemplateSyntaxError
from django.test import Client

from runs.help_pages import metrics_help

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
TAG = re.compile(r'\{%\s*how_computed\s+"([^"]+)"')


def test_it_serves_the_metrics_page_to_anyone_with_an_anchor_per_section(db):
    response = Client().get("/help/metrics/")
    assert response.status_code == 200
    body = response.content.decode()
    for anchor in (
        "checklist",
        "conflict",
        "dialogue",
        "dialogue-rec",
        "hierarchy",
        "choice",
        "audits",
        "audits-effect",
    ):
        assert f'id="{anchor}"' in body
    assert "Macro CSR" in body


def test_every_template_link_names_an_anchor_the_page_has():
    used = {m for path in TEMPLATES.rglob("*.html") for m in TAG.findall(path.read_text(encoding="utf-8"))}
    assert used, "no template links to the metrics help page"
    assert used <= metrics_help().anchors, used - metrics_help().anchors


def test_no_template_points_at_a_file_the_user_cannot_open():
    offenders = [
        str(p.relative_to(TEMPLATES))
        for p in TEMPLATES.rglob("*.html")
        if "METRICS.md" in p.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_the_help_page_points_at_no_file_of_the_developers_machine():
    """Found reading the help page as an annotator: it cited a sample file by its path beside the repository
    (`../shared/data/...`), which no user of the portal can open."""
    html = metrics_help().html
    assert not re.search(r"\.\./|/work/|shared/data", html)


def test_it_links_to_the_section():
    html = Template('{% load help %}{% how_computed "dialogue-rec" %}').render(Context())
    assert html == '<a class="how-computed" href="/help/metrics/#dialogue-rec">How is this computed</a>'


def test_it_refuses_an_anchor_the_page_does_not_have():
    with pytest.raises(TemplateSyntaxError, match="no section"):
        Template('{% load help %}{% how_computed "no-such-section" %}').render(Context())


def test_no_template_comment_spans_lines():
    """{# #} comments end at the line's end in Django: one left open shows its text on the page."""
    opened = [
        f"{p.relative_to(TEMPLATES)}:{n}"
        for p in TEMPLATES.rglob("*.html")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if line.count("{#") > line.count("#}")
    ]
    assert opened == []
