"""The conflict page's system-prompt rate table keeps each row's model or run label on one line: its cell is a
td.run-name (portal.css keeps it from wrapping), so 'aurora-large' no longer breaks at its hyphen beside the rank
and tie-group columns."""

import re

import pytest

from .test_conflict_ties import PAGE, study  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("by", ["model", "run"])
def test_every_row_label_of_the_sp_rate_table_sits_in_a_cell_that_does_not_wrap(editor_client, study, by):  # noqa: F811
    response = editor_client.get(PAGE, {"by": by})
    page = response.content.decode()
    table = page[page.index('id="sp-rate"') :]
    labelled = re.findall(r'<td class="run-name">([^<]+)</td>', table)
    assert sorted(labelled) == sorted(label for label, *_ in response.context["scenario_table"])
