"""Forms of the audit pages: campaign creation, labels from a rubric, adjudication, item rewrites, exclusion policy."""
from __future__ import annotations

from django import forms

from runs.models import Benchmark

from .models import Allocation, FinalStatus, Subject
from .rubrics import Rubric
from .sampling import STRATA
from .selectors import POLICIES, SUBJECT_KINDS
from .services import REWRITE_MAX_TEXT


class CampaignForm(forms.Form):
    """What a lead chooses when creating a campaign."""

    name = forms.CharField(max_length=200)
    subject = forms.ChoiceField(choices=Subject.choices)
    benchmarks = forms.ModelMultipleChoiceField(queryset=Benchmark.objects.all(), widget=forms.CheckboxSelectMultiple)
    strata = forms.MultipleChoiceField(choices=list(STRATA.items()), required=False, widget=forms.CheckboxSelectMultiple,
                                       help_text="Dimensions the sample is stratified by; none = simple random sample.")
    allocation = forms.ChoiceField(choices=Allocation.choices, initial=Allocation.PROPORTIONAL)
    minimum_per_stratum = forms.IntegerField(min_value=0, max_value=100_000, initial=0, required=False,
                                             help_text="Only for the minimum allocation.")
    size = forms.IntegerField(min_value=1, max_value=100_000, initial=100)
    seed = forms.IntegerField(initial=1, min_value=-(2**63), max_value=2**63 - 1,
                              help_text="The same seed re-creates the same sample.")
    annotators_per_unit = forms.IntegerField(min_value=2, max_value=10, initial=2)
    reservation_minutes = forms.IntegerField(min_value=1, max_value=24 * 60, initial=30,
                                             help_text="An unsaved item returns to the pool after this long.")

    def clean(self):
        data = super().clean()
        subject, benchmarks = data.get("subject"), data.get("benchmarks")
        if subject and benchmarks:
            wrong = [b.slug for b in benchmarks if b.kind not in SUBJECT_KINDS[subject]]
            if wrong:
                raise forms.ValidationError(f"{', '.join(wrong)}: not a {', '.join(SUBJECT_KINDS[subject])} benchmark, "
                                            f"so it has nothing to audit for this subject.")
        data["minimum_per_stratum"] = data.get("minimum_per_stratum") or 0
        return data


def label_form_class(rubric: Rubric, *, with_link: bool):
    """A form with one radio group per rubric criterion, a note, and (checklist items) the duplicated item's key."""
    fields = {
        c.name: forms.ChoiceField(label=c.question, choices=c.choices, widget=forms.RadioSelect)
        for c in rubric.criteria
    }
    if with_link:
        fields["link"] = forms.CharField(required=False, max_length=300, label="Duplicated / conflicting item (key)")
    fields["note"] = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Note")
    return type("LabelForm", (forms.Form,), fields)


class AdjudicationForm(forms.Form):
    """A lead's decision: final status, reason from the rubric's issues, which shown label it agrees with."""

    final_status = forms.ChoiceField(choices=FinalStatus.choices, widget=forms.RadioSelect)
    reason = forms.ChoiceField(choices=(), required=False)
    upheld = forms.ChoiceField(choices=(), required=False, label="Agrees with")
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, rubric: Rubric, shown: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"].choices = [("", "—")] + list(rubric.issues)
        self.fields["upheld"].choices = [("", "neither / own decision")] + [
            (str(n), f"Annotator {n}") for n in range(1, shown + 1)]


class ItemRewriteForm(forms.Form):
    """A lead's new text for an item (check type and category prefilled, changeable) and why; `back` says which page to return to."""

    description = forms.CharField(max_length=REWRITE_MAX_TEXT, widget=forms.Textarea(attrs={"rows": 4}),
                                  label="New text of the item")
    check_type = forms.CharField(max_length=100, required=False)
    category = forms.CharField(max_length=200, required=False, help_text="Source category, in any of the spellings listed on the metrics help page (checklist section).")
    reason = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}),
                             label="Reason for the rewrite")
    back = forms.ChoiceField(choices=[("unit", "unit"), ("adjudicate", "adjudicate")], required=False,
                             widget=forms.HiddenInput)


class EffectForm(forms.Form):
    """Which exclusion policy the effect page shows."""

    exclude = forms.ChoiceField(choices=list(POLICIES.items()), required=False, initial="adjudicated_invalid")
