"""Form widgets the filter bars share.

`CheckboxDropdown` chooses several of many values (runs, judges, scaffolds, categories): a closed <details> whose
summary says what is chosen ("all 19" when nothing is: no choice means every value), opening onto a scrollable list
of checkboxes. A <select multiple> showed 4 of 19 runs at a time and needed Ctrl to pick a second. No script: the
filter form's htmx `change` trigger applies each tick, and the list stays open (only the results are swapped);
static/js/portal.js rewrites the summary on each tick by the same rule as `summary`.
Written in Python, not through a template per option: a study of 100 models has 300 runs, and a filter bar
rendered through Django's widget templates took about 35 ms of a 90 ms page.
"""

from __future__ import annotations

from django import forms

from runs.html import attributes, escaped_join

#: chosen values the closed summary names before it says "and N more"
NAMED_IN_SUMMARY = 2


class CheckboxDropdown(forms.CheckboxSelectMultiple):
    """Checkboxes in a <details> dropdown whose summary names the choice (`summary_noun` names the values;
    `none_chosen`, when given, is what it says with nothing ticked, for a choice where none means none rather
    than every value, such as the item health flags whose items a leaderboard leaves out)."""

    def __init__(self, attrs=None, choices=(), *, summary_noun: str = "values", none_chosen: str = ""):
        super().__init__(attrs, choices)
        self.summary_noun = summary_noun
        self.none_chosen = none_chosen

    def summary(self, chosen: list[str], total: int, *, only: str = "") -> str:
        """What the closed dropdown says: every value when none is chosen (the value itself when it is the `only`
        one, "none" when there is none), else the chosen ones (a few by name)."""
        if not chosen:
            if self.none_chosen:
                return self.none_chosen
            if total == 0:
                return f"no {self.summary_noun}"
            return f"all {total} {self.summary_noun}" if total != 1 else f"{only} (the only one)"
        named = ", ".join(chosen[:NAMED_IN_SUMMARY])
        more = len(chosen) - NAMED_IN_SUMMARY
        return f"{len(chosen)} of {total}: {named}" + (f" and {more} more" if more > 0 else "")

    def render(self, name, value, attrs=None, renderer=None):
        chosen = {str(v) for v in (value or [])}
        base_id = (attrs or {}).get("id") or self.attrs.get("id") or f"id_{name}"
        options = [(str(v), str(label)) for v, label in self.choices]
        boxes = escaped_join(
            '<label class="multi-option"><input type="checkbox" name="{}" value="{}" id="{}_{}"{}> '
            "<span>{}</span></label>",
            (
                (name, v, base_id, n, attributes({"checked": v in chosen}), label)
                for n, (v, label) in enumerate(options)
            ),
        )
        labels = [label for v, label in options if v in chosen]
        return escaped_join(
            '<details class="multi" id="{}" data-noun="{}"{}><summary class="multi-summary">{}</summary>'
            '<div class="multi-list" role="group" aria-label="{}">{}</div></details>',
            [
                (
                    base_id,
                    self.summary_noun,
                    attributes({"data-none": self.none_chosen or False}),
                    self.summary(labels, len(options), only=options[0][1] if len(options) == 1 else ""),
                    self.summary_noun,
                    boxes,
                )
            ],
        )

    def id_for_label(self, id_, index=None):
        return id_
