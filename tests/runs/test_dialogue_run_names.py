"""The dialogue metrics table keeps each row's model or run label on one line: its cell is a td.run-name
(portal.css keeps it from wrapping), so 'aurora-large' no longer breaks at its hyphen beside the rank and tie-group
columns."""

import re

import pytest

from .test_dialogue_ties import PAGE, study  # noqa: F401  (the fixture)


@pytest.mark.parametrize("by", ["model", "run"])
def test_every_row_label_of_the_metrics_table_sits_in_a_cell_that_does_not_wrap(editor_client, study, by):  # noqa: F811
    response = editor_client.get(PAGE, {"by": by})
    labelled = re.findall(r'<td class="sticky-first run-name">(?:<a [^>]*>)?([^<]+)', response.content.decode())
    assert sorted(labelled) == sorted(line["row"].label for line in response.context["lines"])
