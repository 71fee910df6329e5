"""Forms of the audit pages: campaign creation, labels from a rubric, adjudication, item rewrites, exclusion policy."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from audits.models import Allocation, Campaign, CampaignState, FinalStatus, Subject
from audits.rubrics import Rubric
from audits.sampling import STRATA
from audits.selectors import POLICIES, SUBJECT_KINDS
from audits.services import REWRITE_MAX_TEXT
from runs.access import ANNOTATOR, LEAD
from runs.exclusions import exclusion_policy_unknown
from runs.models import Benchmark


class CampaignForm(forms.Form):
    """What a lead chooses when creating a campaign."""

    name = forms.CharField(max_length=200)
    subject = forms.ChoiceField(choices=Subject.choices)
    benchmarks = forms.ModelMultipleChoiceField(queryset=Benchmark.objects.all(), widget=forms.CheckboxSelectMultiple)
    strata = forms.MultipleChoiceField(
        choices=list(STRATA.items()),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Dimensions the sample is stratified by; none = simple random sample.",
    )
    allocation = forms.ChoiceField(choices=Allocation.choices, initial=Allocation.PROPORTIONAL)
    minimum_per_stratum = forms.IntegerField(
        min_value=0, max_value=100_000, initial=0, required=False, help_text="Only for the minimum allocation."
    )
    size = forms.IntegerField(min_value=1, max_value=100_000, initial=100)
    seed = forms.IntegerField(
        initial=1, min_value=-(2**63), max_value=2**63 - 1, help_text="The same seed re-creates the same sample."
    )
    stratum_sd = forms.CharField(
        required=False,
        label="Standard deviations per stratum (Neyman)",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='Only for the Neyman allocation: one "stratum = standard deviation" a line, e.g. '
        '"System Prompt / compliance = 0.3" (the stratum as the preview names it). A variance is '
        'given as "var 0.09". Lines here win over the pilot campaign\'s figures.',
    )
    sd_from = forms.ModelChoiceField(
        queryset=Campaign.objects.exclude(state=CampaignState.DRAFT),
        required=False,
        label="Pilot campaign",
        help_text="Only for the Neyman allocation: each stratum's standard deviation is read from this campaign's "
        "valid rate, sqrt(p(1-p)) with p = (valid+1)/(decided+2). Its strata must be named as this one's.",
    )
    annotators_per_unit = forms.IntegerField(min_value=2, max_value=10, initial=2)
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Only these people receive the campaign's units; none ticked = every annotator.",
    )
    pilot = forms.BooleanField(
        required=False, help_text="A trial run: exclusion policies leave it out unless chosen by name."
    )
    reservation_minutes = forms.IntegerField(
        min_value=1, max_value=24 * 60, initial=30, help_text="An unsaved item returns to the pool after this long."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["annotators"].queryset = labellers()

    def clean_stratum_sd(self) -> dict[str, float]:
        return parse_stratum_sd(self.cleaned_data.get("stratum_sd") or "")

    def clean(self):
        data = super().clean()
        subject, benchmarks = data.get("subject"), data.get("benchmarks")
        if subject and benchmarks:
            wrong = [b.slug for b in benchmarks if b.kind not in SUBJECT_KINDS[subject]]
            if wrong:
                raise forms.ValidationError(
                    f"{', '.join(wrong)}: not a {', '.join(SUBJECT_KINDS[subject])} benchmark, "
                    f"so it has nothing to audit for this subject."
                )
        data["minimum_per_stratum"] = data.get("minimum_per_stratum") or 0
        return data


def labellers():
    """The people a lead can assign to a campaign: annotators and leads."""
    return get_user_model().objects.filter(groups__name__in=(ANNOTATOR, LEAD)).distinct().order_by("username")


class CampaignAnnotatorsForm(forms.Form):
    """Who receives a campaign's units."""

    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Only the people ticked receive units; none ticked = every annotator. Taking someone off releases "
        "the units they hold; their saved labels stay.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["annotators"].queryset = labellers()


def parse_stratum_sd(text: str) -> dict[str, float]:
    """{stratum: standard deviation} from "stratum = sd" lines ("stratum = var v" gives a variance); a clear error per bad line."""
    out = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        stratum, sep, value = line.rpartition("=")
        value = value.strip()
        is_variance = value.lower().startswith("var")
        try:
            number_value = float(value[3:] if is_variance else value)
        except ValueError:
            number_value = float("nan")
        if not sep or not stratum.strip() or not 0 <= number_value < float("inf"):
            raise forms.ValidationError(
                f'line {number}: write "stratum = standard deviation" with a number >= 0, not {line.strip()[:80]!r}'
            )
        out[stratum.strip()] = number_value**0.5 if is_variance else number_value
    return out


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
        self.fields["final_status"].choices = [(v, rubric.status_label(v)) for v in FinalStatus.values]
        self.fields["reason"].choices = [("", "—")] + list(rubric.issues)
        self.fields["upheld"].choices = [("", "neither / own decision")] + [
            (str(n), f"Annotator {n}") for n in range(1, shown + 1)
        ]


class ItemRewriteForm(forms.Form):
    """A lead's new text for an item (check type and category prefilled, changeable) and why; `back` says which page to return to."""

    description = forms.CharField(
        max_length=REWRITE_MAX_TEXT, widget=forms.Textarea(attrs={"rows": 4}), label="New text of the item"
    )
    check_type = forms.CharField(max_length=100, required=False)
    category = forms.CharField(
        max_length=200,
        required=False,
        help_text="Source category, in any of the spellings listed on the metrics help page (checklist section).",
    )
    reason = forms.CharField(
        max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Reason for the rewrite"
    )
    back = forms.ChoiceField(
        choices=[("unit", "unit"), ("adjudicate", "adjudicate")], required=False, widget=forms.HiddenInput
    )


class EffectForm(forms.Form):
    """Which exclusion policy the effect page shows, and the campaigns it draws on (none ticked: the settled ones)."""

    exclude = forms.ChoiceField(choices=list(POLICIES.items()), required=False, initial="adjudicated_invalid")
    campaigns = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple, label="Campaigns the policy draws on"
    )

    def __init__(self, *args, benchmark=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["exclude"].error_messages["invalid_choice"] = exclusion_policy_unknown(
            with_none=False, policies=POLICIES
        )  # the API's words, naming the policies this page offers
        started = Campaign.objects.exclude(state=CampaignState.DRAFT).exclude(subject=Subject.VERDICT)
        if benchmark is not None:
            started = started.filter(benchmarks=benchmark)
        self.fields["campaigns"].choices = [
            (c.pk, f"{c.name}{' (pilot)' if c.pilot else ''} · {c.get_state_display()}")
            for c in started.order_by("created_at", "id")
        ]
