"""What the page state of every kind shares: the query fields for runs, judge, grouping and the audit exclusion
policy, their defaults, and the errors a page shows beside its defaults and its API answers with (400), in the
same words."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from django import forms

from runs.exclusions import excluded_item_ids, exclusion_policies, exclusion_policy_choices

BY = [("model", "model (runs pooled)"), ("run", "run")]


class KindQuery(forms.Form):
    """Which runs and judge a page of a kind shows, how its rows are grouped and under which exclusion policy.

    A field that does not validate is left out (its default applies) and its error is kept: the page shows it,
    the API answers 400 with it."""

    run = forms.MultipleChoiceField(required=False, label="Runs",
                                    error_messages={"invalid_choice": "No run of this benchmark is labelled '%(value)s'."})
    judge = forms.ChoiceField(required=False, label="Judge",
                              error_messages={"invalid_choice": "No judge named '%(value)s' scored this benchmark."})
    by = forms.ChoiceField(required=False, choices=BY, label="Rows per")
    exclude = forms.ChoiceField(required=False, label="Audit exclusion")

    def __init__(self, data, *, runs: Sequence, judges: Sequence):
        super().__init__(data)
        self.fields["exclude"].choices = exclusion_policy_choices()
        self.fields["exclude"].error_messages["invalid_choice"] = (
            "unknown exclusion policy %(value)r; one of: none, " + ", ".join(exclusion_policies()))
        self.fields["run"].choices = [(r.label, f"{r.label} ({r.model.name})") for r in runs]
        self.fields["judge"].choices = [(j.name, f"{j.name} ({j.get_kind_display()})") for j in judges]


def kind_state(form: KindQuery, *, benchmark, runs: Sequence, judges: Sequence, default_judge=None,
               exclusion: bool = True) -> dict:
    """The state every kind's page shares: chosen runs (every run when none is chosen), judge (the default one when
    none is chosen), grouping, exclusion policy and (with `exclusion`) the items it excludes, and the query's errors."""
    form.is_valid()  # an invalid field is left out of cleaned_data: its default applies
    clean = form.cleaned_data
    chosen = [r for r in runs if r.label in clean.get("run", [])] or list(runs)
    default = default_judge if default_judge is not None else (judges[0] if judges else None)
    judge = next((j for j in judges if j.name == clean.get("judge")), default)
    exclude = clean.get("exclude") or "none"
    return {"benchmark": benchmark, "form": form, "all_runs": list(runs), "runs": chosen, "run_ids": [r.id for r in chosen],
            "judge": judge, "judges": list(judges), "by": clean.get("by") or "model", "exclude": exclude,
            "excluded": excluded_item_ids(benchmark, exclude) if exclusion else None, "errors": query_errors(form),
            "query_notes": query_notes(form, shown_beside=("exclude",))}


def query_notes(form: forms.Form, *, shown_beside: tuple[str, ...] = ()) -> list[str]:
    """The form's errors a page states apart (templates/runs/partials/query_errors.html): all but those of the fields
    its filter bar shows beside themselves."""
    return [str(m) for name, messages in form.errors.items() if name not in shown_beside for m in messages]


def query_errors(form: forms.Form, extra: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """{parameter: [messages]} of a query: the form's errors and any refusal the state adds (e.g. a patience)."""
    errors = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
    for name, message in (extra or {}).items():
        errors.setdefault(name, []).append(message)
    return errors
