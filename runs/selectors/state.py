"""What the page state of every kind shares: the query fields for runs, judge, grouping and the exclusion (an audit
policy and item health flags, composed: `ExclusionQuery`), their defaults, and the errors a page shows beside its defaults and its API answers with (400), in the
same words. A parameter holding a control character (a NUL byte: PostgreSQL text cannot hold one) is refused here
for every kind: left out of the page's state with a note, answered 400 by the API before any lookup."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from django import forms

from runs.exclusions import (
    excluded_item_ids,
    exclusion_policies,
    exclusion_policy_compose,
    exclusion_policy_label,
    exclusion_policy_parts,
    exclusion_policy_unknown,
)
from runs.metrics.item_health import ANY_FLAG, FLAG_LABELS, FLAGS, HEALTH_POLICIES
from runs.widgets import CheckboxDropdown

#: the words every kind's page says an unknown run or judge in (a note beside its defaults) and its API refuses it with
#: (400): a form's invalid_choice message, `%(value)s` standing for the value given
RUN_UNKNOWN = "No run of this benchmark is labelled '%(value)s'."
JUDGE_UNKNOWN = "No judge named '%(value)s' scored this benchmark."

BY = [("model", "model (runs pooled)"), ("run", "run")]
#: characters no query parameter may hold: NUL (PostgreSQL text cannot store it) and the other control characters
#: but tab and line breaks, which no run label, judge, group or filter value is made of
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CONTROL_MESSAGE = (
    "'{name}' holds a control character (e.g. a NUL byte): no run, judge, group or filter is named "
    "with one, so it was left out."
)


def _parameters(query):
    """(name, [values]) of a QueryDict or a plain mapping."""
    if hasattr(query, "lists"):
        return query.lists()
    return ((name, value if isinstance(value, list) else [value]) for name, value in query.items())


def _holds_control(name, values) -> bool:
    return bool(CONTROL.search(str(name))) or any(CONTROL.search(str(v)) for v in values)


def control_character_errors(query) -> dict[str, list[str]]:
    """{parameter: [message]} for every parameter of a query string whose name or a value holds a control
    character: the API answers 400 with it before any lookup, the page notes it (RefusesControlCharacters)."""
    refused = {}
    for name, values in _parameters(query or {}):
        if _holds_control(name, values):
            shown = CONTROL.sub("?", str(name))
            refused.setdefault(shown, [CONTROL_MESSAGE.format(name=shown)])
    return refused


def without_control_characters(query):
    """(the query without its parameters that hold a control character, their errors): what a page's form is bound
    to, so no such value reaches a lookup and the parameter's default applies."""
    refused = control_character_errors(query)
    if not refused:
        return query, {}
    kept = query.copy()
    for name, values in list(_parameters(query)):
        if _holds_control(name, values):
            del kept[name]
    return kept, refused


#: the words a page's on/off parameter takes (any case); DRF's BooleanField takes the same, so an API client's
#: `ci=no` means off on the page too
SWITCH_VALUES = {
    "on": True,
    "true": True,
    "1": True,
    "yes": True,
    "off": False,
    "false": False,
    "0": False,
    "no": False,
}


class SwitchInput(forms.CheckboxInput):
    """A checkbox whose value reaches its field as written (Django's turns any unknown word into "on")."""

    def __init__(self, attrs=None):
        super().__init__(attrs, check_test=lambda value: value is True or SWITCH_VALUES.get(str(value).lower(), False))

    def value_from_datadict(self, data, files, name):
        return data.get(name)


class SwitchField(forms.Field):
    """An on/off page parameter: absent or empty is off, a word of SWITCH_VALUES says which, any other value is an
    error (its default, off, applies; the API answers 400)."""

    widget = SwitchInput
    default_error_messages = {"invalid": "'%(value)s' is neither on nor off (on, off, true, false, 1, 0, yes, no)."}

    def __init__(self, **kwargs):
        super().__init__(**{"required": False, **kwargs})

    def to_python(self, value) -> bool:
        if value is None or isinstance(value, bool):
            return bool(value)
        word = str(value).strip().lower()
        if not word:
            return False
        if word not in SWITCH_VALUES:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})
        return SWITCH_VALUES[word]


class RefusesControlCharacters(forms.Form):
    """A page-state form whose parameters holding a control character are left out (their default applies) and
    stated as errors (a page note; the API's 400)."""

    def __init__(self, data=None, *args, **kwargs):
        data, self.refused = without_control_characters(data)
        super().__init__(data, *args, **kwargs)

    def full_clean(self):
        super().full_clean()
        for name, messages in self.refused.items():
            self._errors.setdefault(name, self.error_class()).extend(messages)


#: what a health policy's name starts with (runs.metrics.item_health.HEALTH_POLICIES: health:<flag>, health:any)
HEALTH_PREFIX = "health:"
#: the words a page says an unknown item health flag in and its API refuses it with (400): a form's invalid_choice
#: message, `%(value)s` standing for the flag given
HEALTH_UNKNOWN = "unknown item health flag '%(value)s'; one of: " + ", ".join((*FLAGS, ANY_FLAG))


def health_flags(flags) -> list[str]:
    """Item health flags in one order (FLAGS', any last), without repeats; `any` alone when chosen (it leaves out
    every flagged item, so the other flags add nothing)."""
    chosen = set(flags or ())
    if ANY_FLAG in chosen:
        return [ANY_FLAG]
    return [flag for flag in FLAGS if flag in chosen]


def exclusion_policy_of(exclude: str | None, health: list[str]) -> str:
    """The policy a page applies (runs.exclusions, composed): the audit policy `exclude`, then health:<flag> for
    each chosen item health flag; the items left out are the union of what each leaves out."""
    return exclusion_policy_compose([exclude, *(f"{HEALTH_PREFIX}{flag}" for flag in health_flags(health))])


def exclusion_parameters(policy: str) -> tuple[str, list[str]]:
    """The (exclude, health) parameters that give a policy back (`exclusion_policy_of`'s inverse): its audit part
    as `exclude` ("none" without one), its health parts as flags."""
    parts = exclusion_policy_parts(policy)
    audit = [p for p in parts if not p.startswith(HEALTH_PREFIX)]
    flags = health_flags(p.removeprefix(HEALTH_PREFIX) for p in parts if p.startswith(HEALTH_PREFIX))
    return exclusion_policy_compose(audit), flags


def audit_policy_choices() -> list[tuple[str, str]]:
    """(name, label) of the `exclude` control: none first, then every registered policy but the item health ones
    (the `health` control chooses those)."""
    return [("none", "none (every item)")] + [
        (p, exclusion_policy_label(p)) for p in exclusion_policies() if p not in HEALTH_POLICIES
    ]


def health_flag_choices() -> list[tuple[str, str]]:
    """(flag, label) of the `health` control: every item health flag, then any flag."""
    return [*FLAG_LABELS.items(), (ANY_FLAG, "any flag")]


def with_health_exclusion_folded(query):
    """The query with an `exclude` naming an item health policy (`exclude=health:floor`, as links made before the
    `health` parameter say it) moved into `health` (`health=floor`): it leaves out the same items, and the page's
    controls show it where they show item health flags."""
    if not query or not hasattr(query, "getlist"):
        return query
    policy = query.get("exclude") or ""
    if policy not in HEALTH_POLICIES:
        return query
    folded = query.copy()
    folded.setlist("health", [*folded.getlist("health"), policy.removeprefix(HEALTH_PREFIX)])
    del folded["exclude"]
    return folded


class ExclusionQuery(forms.Form):
    """The exclusion fields every kind's page state shares: `exclude`, an audit exclusion policy, and `health`, item
    health flags (several), composed into one policy (`exclusion_policy_of`) whose excluded items are the union.
    An `exclude` naming an item health policy is read as the flag it names (`with_health_exclusion_folded`)."""

    exclude = forms.ChoiceField(required=False, label="Audit exclusion")
    health = forms.MultipleChoiceField(
        required=False,
        label="Item health exclusion",
        widget=CheckboxDropdown(summary_noun="flags", none_chosen="none (every item)"),
        error_messages={"invalid_choice": HEALTH_UNKNOWN},
    )

    def __init__(self, data=None, *args, **kwargs):
        super().__init__(with_health_exclusion_folded(data), *args, **kwargs)
        self.fields["exclude"].choices = audit_policy_choices()
        self.fields["exclude"].error_messages["invalid_choice"] = exclusion_policy_unknown()  # the API's words
        self.fields["health"].choices = health_flag_choices()


class KindQuery(ExclusionQuery, RefusesControlCharacters):
    """Which runs and judge a page of a kind shows, how its rows are grouped and under which exclusion (an audit policy
    and item health flags, ExclusionQuery).

    A field that does not validate is left out (its default applies) and its error is kept: the page shows it,
    the API answers 400 with it."""

    run = forms.MultipleChoiceField(
        required=False,
        label="Runs",
        widget=CheckboxDropdown(summary_noun="runs"),
        error_messages={"invalid_choice": RUN_UNKNOWN},
    )
    judge = forms.ChoiceField(required=False, label="Judge", error_messages={"invalid_choice": JUDGE_UNKNOWN})
    by = forms.ChoiceField(required=False, choices=BY, label="Rows per")

    def __init__(self, data, *, runs: Sequence, judges: Sequence):
        super().__init__(data)
        self.fields["run"].choices = [(r.label, f"{r.label} ({r.model.name})") for r in runs]
        self.fields["judge"].choices = [(j.name, f"{j.name} ({j.get_kind_display()})") for j in judges]


def kind_state(
    form: KindQuery,
    *,
    benchmark,
    runs: Sequence,
    judges: Sequence,
    default_judge=None,
    default_by: str = "model",
    exclusion: bool = True,
) -> dict:
    """The state every kind's page shares: chosen runs (every run when none is chosen), judge (the default one when
    none is chosen), grouping (`default_by` when none valid is chosen), exclusion policy (`exclude`: the audit policy
    and the item health flags `health` composed) and (with `exclusion`) the items it excludes, and the query's
    errors."""
    form.is_valid()  # an invalid field is left out of cleaned_data: its default applies
    clean = form.cleaned_data
    chosen = [r for r in runs if r.label in clean.get("run", [])] or list(runs)
    default = default_judge if default_judge is not None else (judges[0] if judges else None)
    judge = next((j for j in judges if j.name == clean.get("judge")), default)
    health = health_flags(clean.get("health"))
    exclude = exclusion_policy_of(clean.get("exclude"), health)
    return {
        "benchmark": benchmark,
        "form": form,
        "all_runs": list(runs),
        "runs": chosen,
        "run_ids": [r.id for r in chosen],
        "judge": judge,
        "judges": list(judges),
        "by": clean.get("by") or default_by,
        "exclude": exclude,
        "health": health,
        "excluded": excluded_item_ids(benchmark, exclude) if exclusion else None,
        "errors": query_errors(form),
        "query_notes": query_notes(form, shown_beside=("exclude", "health")),
    }


def query_notes(form: forms.Form, *, shown_beside: tuple[str, ...] = ()) -> list[str]:
    """The form's errors a page states apart (templates/runs/partials/_query_errors.html): all but those of the fields
    its filter bar shows beside themselves."""
    return [str(m) for name, messages in form.errors.items() if name not in shown_beside for m in messages]


def query_errors(form: forms.Form, extra: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """{parameter: [messages]} of a query: the form's errors and any refusal the state adds (e.g. a patience)."""
    errors = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
    for name, message in (extra or {}).items():
        errors.setdefault(name, []).append(message)
    return errors
