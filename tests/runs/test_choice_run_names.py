"""The choice leaderboard keeps each run's label on one line: its cell is a td.run-name, which the stylesheet keeps
from wrapping (the table scrolls sideways instead)."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

from .test_views_choice import make_study

pytestmark = pytest.mark.django_db
STYLESHEET = Path(__file__).resolve().parents[2] / "static" / "css" / "portal.css"


def test_every_run_label_sits_in_a_cell_that_does_not_wrap(reviewer_client):
    bench = make_study(n_extra_runs=2)
    page = reviewer_client.get(reverse("runs:choice-metrics", args=[bench.slug])).content.decode()
    labelled = re.findall(r'<td class="run-name">(?:<a [^>]*>)?([^<]+)', page)
    assert sorted(labelled) == ["alpha", "beta", "extra-0", "extra-1"]
    rule = re.search(r"td\.run-name\s*\{([^}]*)\}", STYLESHEET.read_text())
    assert rule and "white-space: nowrap" in rule.group(1)
