"""runs.widgets.CheckboxDropdown's closed summary when a filter has one value or none to choose."""

from runs.widgets import CheckboxDropdown


def test_it_names_the_only_value_and_says_when_there_is_none():
    one = CheckboxDropdown(choices=[("Memory", "Memory <tier>")], summary_noun="categories").render("c", [], None)
    assert ">Memory &lt;tier&gt; (the only one)</summary>" in one
    assert "the one of" not in one
    none = CheckboxDropdown(choices=[], summary_noun="scaffolds").render("s", [], None)
    assert ">no scaffolds</summary>" in none and "all 0" not in none
    two = CheckboxDropdown(choices=[("a", "a"), ("b", "b")], summary_noun="runs").render("r", [], None)
    assert ">all 2 runs</summary>" in two
